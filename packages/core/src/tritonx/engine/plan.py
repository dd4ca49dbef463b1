"""Apply edits to one recorded pass list: the heart of the engine, free of Triton calls.

Given the passes a stock stage added to one pass manager and the active edits, produce the steps to
run instead. Composition rules (documented in docs/pipelines.md):
- pipelines apply in activation order, global ones first, then the kernel's own; edits of one
  pipeline in the order they were written;
- several inserts at one anchor run in that order (``insert_before`` ones before the anchor);
- a pass may be replaced or disabled by several edits only if they agree: two replacements, or a
  replacement and a disable, of one pass raise :class:`PipelineConflictError` naming both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import PipelineConflictError
from ..model.passes import PassInfo
from ..model.pipeline import Edit
from .names import matches

PASS_EDITS = ("insert_before", "insert_after", "disable", "replace")


@dataclass(frozen=True)
class Step:
    """One thing to run: a recorded stock pass, or what an edit brings in."""

    kind: str  # "pass" (recorded) | "new" (edit.new)
    info: PassInfo | None = None
    edit: Edit | None = None
    #: the recorded pass an inserted/replacing step is attached to
    anchor: PassInfo | None = None


def selects(edit: Edit, info: PassInfo, stage_total: dict[str, int]) -> bool:
    """Does the edit's selector pick this recorded pass?"""
    sel = edit.selector
    if sel is None or (sel.stage is not None and sel.stage != info.stage):
        return False
    if not matches(sel.name, info.name, info.adder):
        return False
    if sel.occurrence is None:
        return True
    occ = sel.occurrence
    if occ < 0:
        occ += stage_total.get(info.name, 0)
    return occ == info.occurrence


def plan(passes: Sequence[PassInfo], edits: Sequence[Edit], stage_total: dict[str, int]) -> tuple[list[Step], set[int]]:
    """Steps to run for ``passes`` under ``edits``, and the uids of the edits that matched."""
    pass_edits = [e for e in edits if e.kind in PASS_EDITS]
    steps: list[Step] = []
    used: set[int] = set()
    for info in passes:
        hits = [e for e in pass_edits if selects(e, info, stage_total)]
        used.update(e.uid for e in hits)
        steps.extend(Step("new", edit=e, anchor=info) for e in hits if e.kind == "insert_before")
        replacing = [e for e in hits if e.kind == "replace"]
        removing = [e for e in hits if e.kind == "disable"]
        if len(replacing) > 1:
            raise PipelineConflictError(
                f"conflicting edits on pass {info.name!r} (stage {info.stage}): "
                f"{_who(replacing[0])} and {_who(replacing[1])} both replace it"
            )
        if replacing and removing:
            raise PipelineConflictError(
                f"conflicting edits on pass {info.name!r} (stage {info.stage}): "
                f"{_who(replacing[0])} replaces it but {_who(removing[0])} disables it"
            )
        if replacing:
            info.mark, info.edit = "replaced", replacing[0].pipeline
            steps.append(Step("new", edit=replacing[0], anchor=info))
        elif not removing:
            steps.append(Step("pass", info=info))
        else:
            info.mark, info.edit = "disabled", removing[0].pipeline
        steps.extend(Step("new", edit=e, anchor=info) for e in hits if e.kind == "insert_after")
    return steps, used


def is_identity(steps: Sequence[Step], passes: Sequence[PassInfo]) -> bool:
    return len(steps) == len(passes) and all(s.kind == "pass" for s in steps)


def _who(edit: Edit) -> str:
    return f"pipeline {edit.pipeline!r} {edit.describe()}"
