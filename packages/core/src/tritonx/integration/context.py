"""What a Python pass or stage override is told about the compile it runs in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.target import KernelTarget


@dataclass
class PassContext:
    """Handed to Python passes (``fn(module, ctx)``), stage overrides and text transforms.

    Attributes:
        pipeline: name of the pipeline the edit belongs to.
        pass_name: name of the Python pass (or the edit) being run.
        stage: the stage (``ttir``, ``ttgir``, ``llir``, ``ptx``...).
        target: the compile's :class:`~tritonx.model.target.KernelTarget` (``str()`` is ``"cuda:90"`` /
            ``"hip:gfx942"``, and it compares equal to that text); ``tritonx.dsl`` lowerings get the same object.
        backend: Triton's backend object; options: the backend's options; metadata: the stage metadata.
        capability: CUDA compute capability (None on AMD); language: ``triton`` or ``gluon``.
        kernel: name of the kernel being compiled when known.
    """

    pipeline: str
    pass_name: str
    stage: str
    target: KernelTarget
    backend: Any = field(repr=False, default=None)
    options: Any = field(repr=False, default=None)
    metadata: Any = field(repr=False, default=None)
    capability: int | None = None
    language: str = "triton"
    kernel: str | None = None
