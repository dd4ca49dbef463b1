"""Captured passes: a stage's pass list as data."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PassInfo:
    """One pass-adder call a stage made, in order.

    ``name`` is the MLIR pass argument (``tritongpu-pipeline``), ``adder`` the Python adder path
    (``passes.ttgpuir.add_pipeline``), ``args`` the arguments after the pass manager, ``index`` its
    position in the stage and ``occurrence`` how many passes of the same name came before it there.
    """

    name: str
    adder: str
    args: tuple[Any, ...]
    stage: str
    index: int
    occurrence: int
    label: str = ""
    fn: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    #: set on the copies ``tritonx.engine.plan.annotate`` makes for a capture: "disabled", "replaced",
    #: "inserted", "replacement" (None = stock)
    mark: str | None = None
    edit: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "adder": self.adder,
            "args": [repr(a) if not isinstance(a, int | float | str | bool) else a for a in self.args],
            "stage": self.stage,
            "index": self.index,
            "occurrence": self.occurrence,
            "mark": self.mark,
            "edit": self.edit,
        }


@dataclass
class Capture:
    """Every stage's passes for one target (what ``tritonx.capture`` returns)."""

    target: str
    triton_version: str
    stages: dict[str, list[PassInfo]]
    stage_order: Sequence[str]

    def __getitem__(self, stage: str) -> list[PassInfo]:
        if stage not in self.stages:
            raise KeyError(f"stage {stage!r} runs no pass manager for {self.target}; stages: {list(self.stage_order)}")
        return self.stages[stage]

    def __iter__(self) -> Iterator[str]:
        return iter(self.stages)

    def names(self, stage: str) -> list[str]:
        return [p.name for p in self[stage]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "triton_version": self.triton_version,
            "stages": {s: [p.as_dict() for p in ps] for s, ps in self.stages.items()},
        }
