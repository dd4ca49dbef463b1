"""Apply edits to one recorded pass list: the heart of the engine, free of Triton calls.

Given the passes a stock stage added to one pass manager and the active edits, produce the steps to
run instead, and marks saying which recorded passes the edits disabled or replaced. Nothing given is
changed: :func:`plan` returns a :class:`Plan`, and :func:`annotate` makes the marked list a capture shows.
Composition rules (documented in docs/pipelines.md):
- pipelines apply in activation order, global ones first, then the kernel's own; edits of one
  pipeline in the order they were written;
- several inserts at one anchor run in that order (``insert_before`` ones before the anchor);
- a pass may be replaced or disabled by several edits only if they agree: two replacements, or a
  replacement and a disable, of one pass raise :class:`PipelineConflictError` naming both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import PipelineConflictError
from ..model.edits import Disable, Edit, InsertAfter, InsertBefore, PassEdit, PythonPass, Replace
from ..model.passes import PassInfo
from .names import matches


@dataclass(frozen=True)
class Step:
    """One thing to run: a recorded stock pass, or what an edit brings in."""

    kind: str  # "pass" (recorded) | "new" (edit.new)
    info: PassInfo | None = None
    edit: Edit | None = None
    #: position (in the planned pass list) of the recorded pass an inserted/replacing step is attached to
    anchor: int | None = None


@dataclass(frozen=True)
class Mark:
    """What an edit did to a recorded pass: ``"disabled"`` or ``"replaced"``, by which pipeline."""

    what: str
    pipeline: str


@dataclass(frozen=True)
class Plan:
    """The steps to run for one pass list, the uids of the edits that matched, and the marked passes."""

    steps: tuple[Step, ...]
    used: frozenset[int]
    #: position in the planned pass list -> what an edit did to that pass
    marks: Mapping[int, Mark] = field(default_factory=dict)

    def is_identity(self, passes: Sequence[PassInfo]) -> bool:
        """Does the plan run exactly the recorded passes (no edit applies)?"""
        return len(self.steps) == len(passes) and all(s.kind == "pass" for s in self.steps)


def selects(edit: PassEdit, info: PassInfo, stage_total: Mapping[str, int]) -> bool:
    """Does the edit's selector pick this recorded pass?"""
    sel = edit.selector
    if sel.stage is not None and sel.stage != info.stage:
        return False
    if not matches(sel.name, info.name, info.adder):
        return False
    if sel.occurrence is None:
        return True
    occ = sel.occurrence
    if occ < 0:
        occ += stage_total.get(info.name, 0)
    return occ == info.occurrence


def plan(passes: Sequence[PassInfo], edits: Sequence[Edit], stage_total: Mapping[str, int]) -> Plan:
    """The :class:`Plan` for ``passes`` under ``edits`` (``stage_total``: occurrences of each name so far)."""
    pass_edits = [e for e in edits if isinstance(e, PassEdit)]
    steps: list[Step] = []
    used: set[int] = set()
    marks: dict[int, Mark] = {}
    for at, info in enumerate(passes):
        hits = [e for e in pass_edits if selects(e, info, stage_total)]
        used.update(e.uid for e in hits)
        steps.extend(Step("new", edit=e, anchor=at) for e in hits if isinstance(e, InsertBefore))
        replacing = [e for e in hits if isinstance(e, Replace)]
        removing = [e for e in hits if isinstance(e, Disable)]
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
            marks[at] = Mark("replaced", replacing[0].pipeline)
            steps.append(Step("new", edit=replacing[0], anchor=at))
        elif not removing:
            steps.append(Step("pass", info=info))
        else:
            marks[at] = Mark("disabled", removing[0].pipeline)
        steps.extend(Step("new", edit=e, anchor=at) for e in hits if isinstance(e, InsertAfter))
    return Plan(tuple(steps), frozenset(used), marks)


def annotate(passes: Sequence[PassInfo], planned: Plan) -> list[PassInfo]:
    """The stock list as a capture shows it: marked copies of disabled/replaced passes, inserted passes
    interleaved (``insert_before`` ones, the pass, its replacement, ``insert_after`` ones)."""
    by_anchor: dict[int, list[Step]] = {}
    for s in planned.steps:
        if s.kind == "new" and s.anchor is not None:
            by_anchor.setdefault(s.anchor, []).append(s)
    out: list[PassInfo] = []
    for at, info in enumerate(passes):
        attached = by_anchor.get(at, [])
        mark = planned.marks.get(at)
        out.extend(_inserted(s, info, "inserted") for s in attached if isinstance(s.edit, InsertBefore))
        out.append(dataclasses.replace(info, mark=mark.what, edit=mark.pipeline) if mark is not None else info)
        out.extend(_inserted(s, info, "replacement") for s in attached if isinstance(s.edit, Replace))
        out.extend(_inserted(s, info, "inserted") for s in attached if isinstance(s.edit, InsertAfter))
    return out


def _inserted(step: Step, anchor: PassInfo, mark: str) -> PassInfo:
    spec = step.edit.new
    return PassInfo(name=spec.describe(), adder="python" if isinstance(spec, PythonPass) else spec.name,
                    args=tuple(getattr(spec, "args", None) or ()), stage=anchor.stage, index=anchor.index,
                    occurrence=0, label=anchor.label, mark=mark, edit=step.edit.pipeline)


def _who(edit: Edit) -> str:
    return f"pipeline {edit.pipeline!r} {edit.describe()}"
