"""Pipelines: named, ordered lists of edits to Triton's compilation stages.

A pipeline is data. It says *what* to change ("disable ``tritongpu-pipeline``", "run this Python pass
after ``tritongpu-accelerate-matmul``"); the engine decides *how* when a kernel is compiled. Passes are
named by their MLIR pass argument (as ``triton-opt`` and IR dumps print them); the Python adder name
(``ttgpuir.add_pipeline``) is accepted too. Names are checked where a pipeline is switched on (the runtime
activating or binding it validates them against its pass-name table), not here: a pipeline is plain data.

Edit kinds and their LLVM PassBuilder analogues (one class each, :mod:`tritonx.model.edits`):
``insert_before``/``insert_after`` (extension points at a named pass), ``disable``, ``replace``,
``override_stage`` (own a whole stage), ``transform_stage`` (rewrite a text stage's output) and
``override_pipeline`` (edit the dict of stages itself).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import PipelineError, PipelineFrozenError
from .edits import (
    Disable,
    Edit,
    InsertAfter,
    InsertBefore,
    NamedPass,
    OverridePipeline,
    OverrideStage,
    PassSelector,
    PassSpec,
    PythonPass,
    Replace,
    TransformStage,
    callable_name,
)

#: Stage names across backends. ``llir``/``ptx``/``amdgcn`` are text stages; ``cubin``/``hsaco`` binary.
MLIR_STAGES = ("ttir", "ttgir")
TEXT_STAGES = ("llir", "ptx", "amdgcn")
BINARY_STAGES = ("cubin", "hsaco")
ALL_STAGES = MLIR_STAGES + TEXT_STAGES + BINARY_STAGES


def _check_stage(stage: str | None, *, allowed: Sequence[str] = ALL_STAGES, what: str = "stage") -> None:
    if stage is None:
        return
    if not isinstance(stage, str) or stage not in allowed:
        raise PipelineError(f"unknown {what} {stage!r}: expected one of {', '.join(allowed)}")


class Pipeline:
    """A named, ordered set of edits to Triton's compilation pipeline.

    Build it, then switch it on with :func:`tritonx.activate` (every kernel) or
    :func:`tritonx.pipeline` (one kernel). A pipeline is frozen once it is active or bound to a
    kernel, because its identity is part of Triton's cache key: edit a :meth:`copy` instead.
    """

    def __init__(self, name: str, *, description: str = "",
                 cache_key: Callable[[], str | None] | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise PipelineError(f"a pipeline needs a non-empty string name, got {name!r}")
        if cache_key is not None and not callable(cache_key):
            raise PipelineError(f"pipeline {name!r}: cache_key= takes a zero-argument callable returning a str "
                                f"(or None: never shared with another process), got {type(cache_key).__name__}")
        self.name = name
        self.description = description
        self.extra_cache_key = cache_key
        self._edits: list[Edit] = []
        self._frozen_by: str | None = None

    # -- building ---------------------------------------------------------------------------------

    @property
    def edits(self) -> tuple[Edit, ...]:
        return tuple(self._edits)

    def disable(self, name: str, *, occurrence: int | None = None, stage: str | None = None,
                required: bool = True) -> Pipeline:
        """Do not run the named pass (every occurrence unless ``occurrence`` is given)."""
        return self._add(Disable(pipeline=self.name, selector=self._selector(name, occurrence, stage),
                                 required=required))

    def insert_before(self, name: str, new: str | Callable[..., Any], *, args: Sequence[Any] | None = None,
                      occurrence: int | None = None, stage: str | None = None, required: bool = True,
                      pass_name: str | None = None) -> Pipeline:
        """Run ``new`` (a Python pass, or a stock/native pass name with ``args``) before the named pass."""
        return self._add(InsertBefore(pipeline=self.name, selector=self._selector(name, occurrence, stage),
                                      new=self._spec(new, args, pass_name), required=required))

    def insert_after(self, name: str, new: str | Callable[..., Any], *, args: Sequence[Any] | None = None,
                     occurrence: int | None = None, stage: str | None = None, required: bool = True,
                     pass_name: str | None = None) -> Pipeline:
        """Run ``new`` (a Python pass, or a stock/native pass name with ``args``) after the named pass."""
        return self._add(InsertAfter(pipeline=self.name, selector=self._selector(name, occurrence, stage),
                                     new=self._spec(new, args, pass_name), required=required))

    def replace(self, name: str, new: str | Callable[..., Any], *, args: Sequence[Any] | None = None,
                occurrence: int | None = None, stage: str | None = None, required: bool = True,
                pass_name: str | None = None) -> Pipeline:
        """Run ``new`` instead of the named pass. A named replacement without ``args`` gets none."""
        return self._add(Replace(pipeline=self.name, selector=self._selector(name, occurrence, stage),
                                 new=self._spec(new, args, pass_name), required=required))

    def override_stage(self, stage: str, fn: Callable[..., Any]) -> Pipeline:
        """Replace a whole stage: ``fn(src, metadata, ctx)`` returns what the stage would have."""
        _check_stage(stage)
        self._require_callable(fn, "override_stage")
        return self._add(OverrideStage(pipeline=self.name, stage=stage, fn=fn))

    def transform_stage(self, stage: str, fn: Callable[[str, Any], str], *, required: bool = True) -> Pipeline:
        """Rewrite a text stage's output (``llir``, ``ptx``, ``amdgcn``): ``fn(text, ctx) -> text``.
        ``required=False``: compiling for a backend without that stage (``ptx`` on AMD) is not an error."""
        _check_stage(stage, allowed=TEXT_STAGES, what="text stage")
        self._require_callable(fn, "transform_stage")
        return self._add(TransformStage(pipeline=self.name, stage=stage, fn=fn, required=required))

    def override_pipeline(self, fn: Callable[[dict[str, Any], Any], None]) -> Pipeline:
        """Edit the dict of stages itself: ``fn(stages, ctx)`` may add, remove or wrap stages."""
        self._require_callable(fn, "override_pipeline")
        return self._add(OverridePipeline(pipeline=self.name, fn=fn))

    def extend(self, other: Pipeline) -> Pipeline:
        """Append another pipeline's edits (they keep naming their own pipeline in errors)."""
        if not isinstance(other, Pipeline):
            raise PipelineError(f"extend() takes a Pipeline, got {type(other).__name__}")
        self._check_mutable()
        self._edits.extend(other._edits)
        return self

    # -- identity ---------------------------------------------------------------------------------

    def copy(self, name: str | None = None) -> Pipeline:
        """An editable copy (not frozen), optionally renamed."""
        dup = Pipeline(name or self.name, description=self.description, cache_key=self.extra_cache_key)
        dup._edits = [copy.copy(e) if name is None else e.renamed(dup.name) for e in self._edits]
        return dup

    def freeze(self, reason: str) -> None:
        """Forbid further edits (called on activation and binding)."""
        if self._frozen_by is None:
            self._frozen_by = reason

    @property
    def frozen(self) -> bool:
        return self._frozen_by is not None

    def __repr__(self) -> str:
        body = ", ".join(e.describe() for e in self._edits)
        return f"Pipeline({self.name!r}: {body or 'no edits'})"

    # -- helpers ----------------------------------------------------------------------------------

    def _check_mutable(self) -> None:
        if self._frozen_by is not None:
            raise PipelineFrozenError(
                f"pipeline {self.name!r} is {self._frozen_by} and can no longer be edited, because its edits "
                f"are part of Triton's cache key; edit a copy (pipeline.copy()) and activate that instead"
            )

    def _add(self, edit: Edit) -> Pipeline:
        self._check_mutable()
        self._edits.append(edit)
        return self

    def _selector(self, name: str, occurrence: int | None, stage: str | None) -> PassSelector:
        if not isinstance(name, str) or not name.strip():
            raise PipelineError(f"pipeline {self.name!r}: a pass name must be a non-empty string, got {name!r}")
        if occurrence is not None and (not isinstance(occurrence, int) or isinstance(occurrence, bool)):
            raise PipelineError(f"pipeline {self.name!r}: occurrence must be an int, got {occurrence!r}")
        _check_stage(stage, allowed=(*MLIR_STAGES, "llir"))
        return PassSelector(name.strip(), occurrence, stage)

    def _spec(self, new: Any, args: Sequence[Any] | None, pass_name: str | None) -> PassSpec:
        if isinstance(new, str):
            if args is not None and (isinstance(args, str | bytes) or not isinstance(args, Sequence)):
                raise PipelineError(
                    f"pipeline {self.name!r}: args for pass {new!r} must be a list, got {type(args).__name__}"
                )
            return NamedPass(new.strip(), tuple(args) if args is not None else None)
        if callable(new):
            if args is not None:
                raise PipelineError(f"pipeline {self.name!r}: args= is only for named passes, not Python callables")
            return PythonPass(new, pass_name or callable_name(new))
        raise PipelineError(
            f"pipeline {self.name!r}: a pass must be a pass name (str) or a callable(module, ctx), "
            f"got {type(new).__name__}"
        )

    def _require_callable(self, fn: Any, what: str) -> None:
        if not callable(fn):
            raise PipelineError(f"pipeline {self.name!r}: {what} needs a callable, got {type(fn).__name__}")

