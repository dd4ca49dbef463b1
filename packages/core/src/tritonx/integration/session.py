"""One compile seen through tritonx: wraps the stages, runs the edited pass lists, checks the edits.

The stages hook creates a :class:`CompileSession` per compile that has active edits (or a capture
listening). Each stage it must touch is replaced by a wrapper that runs a recording copy of the stock
stage (see :mod:`.recorder`); every ``pm.run`` of that copy becomes :meth:`StageSession.run`, which
plans the edited pass list (:mod:`tritonx.engine.plan`) and runs it on real pass managers, with Python
passes between segments. An unedited pass list runs on one pass manager exactly as stock does.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from typing import Any

from triton.runtime.errors import OutOfResources

from ..compat import libtriton
from ..engine.names import PassNames
from ..engine.plan import Step, annotate, plan
from ..errors import PassFailedError, PassNotFoundInStageError, PipelineConflictError, PipelineError, TritonxError
from ..model.edits import (
    Edit,
    NamedPass,
    OverridePipeline,
    OverrideStage,
    PassEdit,
    PythonPass,
    StageEdit,
    TransformStage,
)
from ..model.passes import PassInfo
from ..model.pipeline import BINARY_STAGES, MLIR_STAGES, TEXT_STAGES, Pipeline
from ..model.target import KernelTarget, Target
from .context import PassContext
from .recorder import RecordingPassManager, recording_stage


class CaptureSink:
    """Collects each stage's (annotated) pass list during a capture compile."""

    def __init__(self) -> None:
        self.stages: dict[str, list[PassInfo]] = {}
        self.order: list[str] = []

    def add(self, stage: str, infos: Sequence[PassInfo]) -> None:
        if stage not in self.stages:
            self.stages[stage] = []
            self.order.append(stage)
        self.stages[stage].extend(infos)


class CompileSession:
    """State of one compile with tritonx edits: who asked for what, and what matched."""

    def __init__(self, *, backend: Any, options: Any, language: Any, capability: int | None,
                 pipelines: Sequence[Pipeline], kernel: str | None, sink: CaptureSink | None,
                 names: PassNames) -> None:
        self.backend = backend
        self.names = names
        self.options = options
        self.language = str(getattr(language, "name", language)).lower()
        self.capability = capability
        self.pipelines = tuple(pipelines)
        self.kernel = kernel
        self.sink = sink
        self.target = KernelTarget.of_compile(backend.target, options)
        self.edits: list[Edit] = [e for p in self.pipelines for e in p.edits]
        self.matched: set[int] = set()
        self._check_static_conflicts()

    # -- setup ------------------------------------------------------------------------------------

    def _check_static_conflicts(self) -> None:
        seen: dict[str, OverrideStage] = {}
        for e in self.edits:
            if isinstance(e, OverrideStage):
                prev = seen.get(e.stage)
                if prev is not None:
                    raise PipelineConflictError(
                        f"conflicting edits: pipeline {prev.pipeline!r} {prev.describe()} and "
                        f"pipeline {e.pipeline!r} {e.describe()} both override stage {e.stage!r}"
                    )
                seen[e.stage] = e

    def context(self, *, pipeline: str, pass_name: str, stage: str, metadata: Any = None) -> PassContext:
        return PassContext(pipeline=pipeline, pass_name=pass_name, stage=stage, target=self.target,
                           backend=self.backend, options=self.options, metadata=metadata,
                           capability=self.capability, language=self.language, kernel=self.kernel)

    def install(self, stages: dict[str, Callable[..., Any]]) -> None:
        """Rewrite the stages dict in place for this compile."""
        for e in self.edits:
            if isinstance(e, OverridePipeline):
                before = list(stages)
                try:
                    e.fn(stages, self.context(pipeline=e.pipeline, pass_name=e.describe(), stage="*"))
                except TritonxError:
                    raise
                except Exception as exc:
                    raise PassFailedError(
                        f"override_pipeline of pipeline {e.pipeline!r} failed ({self.target}): {exc}"
                    ) from exc
                self._check_overridden_stages(e, before, stages)
                for stage in [s for s in stages if s not in before]:
                    stages[stage] = self._added(stage, stages[stage], e)
                self.matched.add(e.uid)
        pass_edits = [e for e in self.edits if isinstance(e, PassEdit)]
        for stage in list(stages):
            stage_fn = stages[stage]
            override = next((e for e in self.edits if isinstance(e, OverrideStage) and e.stage == stage), None)
            transforms = [e for e in self.edits if isinstance(e, TransformStage) and e.stage == stage]
            if override is not None:
                stage_fn = self._overridden(stage, override)
            elif pass_edits or self.sink is not None:
                stage_fn = self._recorded(stage, stage_fn, pass_edits)
            if transforms:
                stage_fn = self._transformed(stage, stage_fn, transforms)
            stages[stage] = stage_fn
        last = list(stages)[-1] if stages else None
        if last is not None:
            stages[last] = self._checked_last(stages[last])

    def _check_overridden_stages(self, edit: OverridePipeline, before: list[str], stages: Any) -> None:
        """What ``override_pipeline`` left must still be a stages dict Triton can run, or the error names the
        pipeline (Triton would fail later with ``ValueError: 'ttir' is not in list`` or worse)."""
        where = f"override_pipeline of pipeline {edit.pipeline!r} ({edit.describe()}, {self.target})"
        if not isinstance(stages, dict):
            raise PipelineError(f"{where} left the stages as {type(stages).__name__}, not a dict")
        removed = [s for s in before if s not in stages]
        if removed:
            raise PipelineError(
                f"{where} removed stage(s) {', '.join(map(repr, removed))}: Triton runs every stage it added, from "
                f"the source's own stage on; replace a stage's function (stages[name] = fn) instead of removing it"
            )
        for name, fn in stages.items():
            if not isinstance(name, str):
                raise PipelineError(f"{where} added a stage named {name!r}: stage names are str (file extensions)")
            if not callable(fn):
                raise PipelineError(
                    f"{where} set stage {name!r} to {type(fn).__name__}, not a callable (src, metadata) -> module"
                )

    def _added(self, stage: str, fn: Callable[..., Any], edit: OverridePipeline) -> Callable[..., Any]:
        """A stage ``override_pipeline`` added: its errors name the pipeline, and bytes are refused unless it is
        the backend's binary stage (Triton reads every other stage's file back as text)."""
        binary = getattr(self.backend, "binary_ext", None)

        def run(src: Any, metadata: Any) -> Any:
            out = self._call_user(edit, stage, lambda: fn(src, metadata))
            if isinstance(out, bytes | bytearray) and stage != binary:
                raise PassFailedError(
                    f"pipeline {edit.pipeline!r}: stage {stage!r} added by {edit.describe()} returned bytes while "
                    f"compiling {self.kernel or 'a kernel'} for {self.target}; Triton keeps bytes only for its binary "
                    f"stage ({binary!r}) and reads every other stage back as text: return str or an IR module"
                )
            return out

        return run

    def _overridden(self, stage: str, edit: OverrideStage) -> Callable[..., Any]:
        def run(src: Any, metadata: Any) -> Any:
            ctx = self.context(pipeline=edit.pipeline, pass_name=edit.describe(), stage=stage, metadata=metadata)
            out = self._call_user(edit, stage, lambda: edit.fn(src, metadata, ctx))
            check_stage_result(edit, stage, out, self.target)
            return out

        self.matched.add(edit.uid)
        return run

    def _transformed(self, stage: str, inner: Callable[..., Any], edits: list[TransformStage]) -> Callable[..., Any]:
        def run(src: Any, metadata: Any) -> Any:
            out = inner(src, metadata)
            for e in edits:
                ctx = self.context(pipeline=e.pipeline, pass_name=e.describe(), stage=stage, metadata=metadata)
                new = self._call_user(e, stage, lambda e=e, out=out, ctx=ctx: e.fn(out, ctx))
                if not isinstance(new, type(out)):
                    raise PassFailedError(
                        f"transform_stage of pipeline {e.pipeline!r} ({e.describe()}) returned "
                        f"{type(new).__name__} for stage {stage!r}; it must return {type(out).__name__}"
                    )
                out = new
            return out

        for e in edits:
            self.matched.add(e.uid)
        return run

    def _recorded(self, stage: str, inner: Callable[..., Any], edits: list[PassEdit]) -> Callable[..., Any]:
        stage_edits = [e for e in edits if e.selector.stage in (None, stage)]

        def run(src: Any, metadata: Any) -> Any:
            sess = StageSession(self, stage, stage_edits, metadata)
            copy = recording_stage(inner, self.backend, sess)
            if copy is None:
                if any(e.selector.stage == stage for e in stage_edits):
                    raise PipelineError(
                        f"stage {stage!r} of this Triton cannot be edited pass by pass; use override_stage"
                    )
                return inner(src, metadata)
            return copy(src, metadata)

        return run

    def _checked_last(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        def run(src: Any, metadata: Any) -> Any:
            out = inner(src, metadata)
            self.check_unmatched()
            return out

        return run

    # -- checks -----------------------------------------------------------------------------------

    def check_unmatched(self) -> None:
        missing = [e for e in self.edits if e.required and e.uid not in self.matched]
        if missing:
            e = missing[0]
            where = f"stage {e.selector.stage!r}" if isinstance(e, PassEdit) and e.selector.stage else "any stage"
            raise PassNotFoundInStageError(
                f"pipeline {e.pipeline!r}: {e.describe()} matched no pass in {where} when compiling "
                f"{self.kernel or 'the kernel'} for {self.target} ({self.language}); the pass does not run for "
                f"this target/options. Pass required=False to allow that"
            )

    def _call_user(self, edit: Edit, stage: str, thunk: Callable[[], Any]) -> Any:
        try:
            return thunk()
        except TritonxError:
            raise
        except Exception as exc:
            raise PassFailedError(
                f"pipeline {edit.pipeline!r}: {edit.describe()} raised in stage {stage!r} while compiling "
                f"{self.kernel or 'a kernel'} for {self.target}: {type(exc).__name__}: {exc}"
            ) from exc


def check_stage_result(edit: StageEdit, stage: str, out: Any, target: Target) -> None:
    """A replaced stage must hand the next stage what the stock one would; say so before Triton trips."""
    expected = stage_result_type(stage)
    if expected is None or isinstance(out, expected[0]):
        return
    raise PassFailedError(
        f"pipeline {edit.pipeline!r}: {edit.describe()} returned {type(out).__name__} for stage {stage!r} "
        f"({target}); that stage must return {expected[1]}, as the stock stage does"
    )


def stage_result_type(stage: str) -> tuple[type | tuple[type, ...], str] | None:
    """What a stage returns: an ``ir.module`` (MLIR stages), ``str`` (text) or ``bytes`` (binary)."""
    if stage in MLIR_STAGES:
        return libtriton().ir.module, "an ir.module (the module it was given, transformed, or a new one)"
    if stage in TEXT_STAGES:
        return str, "str (the stage's text)"
    if stage in BINARY_STAGES:
        return (bytes, bytearray), "bytes (the binary)"
    return None


class StageSession:
    """One stage of one compile: receives each recorded ``pm.run`` and runs the edited list."""

    def __init__(self, compile_session: CompileSession, stage: str, edits: list[PassEdit], metadata: Any) -> None:
        self.cs = compile_session
        self.stage = stage
        self.edits = edits
        self.metadata = metadata
        self.index = 0
        self.counts: dict[str, int] = {}

    def run(self, pm: RecordingPassManager, mod: Any, rest: tuple[Any, ...]) -> None:
        label = str(rest[0]) if rest else ""
        infos: list[PassInfo] = []
        for adder, fn, args in pm.calls:
            name = self.cs.names.name_of_adder(adder, fn, args, pm.context)
            occ = self.counts.get(name, 0)
            self.counts[name] = occ + 1
            infos.append(PassInfo(name=name, adder=adder, args=args, stage=self.stage, index=self.index,
                                  occurrence=occ, label=label, fn=fn))
            self.index += 1
        planned = plan(infos, self.edits, self.counts)
        self.cs.matched.update(planned.used)
        if self.cs.sink is not None:
            self.cs.sink.add(self.stage, annotate(infos, planned))
        if planned.is_identity(infos):
            real = pm.new_real()
            for info in infos:
                info.fn(real, *info.args)
            real.run(mod, *rest)
            return
        self._execute(pm, mod, rest, planned.steps)

    def _execute(self, pm: RecordingPassManager, mod: Any, rest: tuple[Any, ...], steps: Sequence[Step]) -> None:
        real = None
        for step in steps:
            if step.kind == "pass":
                real = real or pm.new_real()
                step.info.fn(real, *step.info.args)
                continue
            spec = step.edit.new
            if isinstance(spec, NamedPass):
                real = real or pm.new_real()
                self._add_named(real, step.edit, spec)
                continue
            if real is not None:
                real.run(mod, *rest)
                real = None
            self._run_python(mod, step.edit, spec)
        if real is not None:
            real.run(mod, *rest)

    def _add_named(self, real: Any, edit: Edit, spec: NamedPass) -> None:
        path, adder = self.cs.names.resolve_adder(spec.name, pipeline=edit.pipeline)
        args = tuple(spec.args or ())
        try:
            if path.startswith("native:"):
                adder(real, [str(a) for a in args])
            else:
                adder(real, *args)
        except TypeError as exc:
            raise PipelineError(
                f"pipeline {edit.pipeline!r}: {edit.describe()}: pass {spec.name!r} does not take args "
                f"{list(args)!r} ({exc})"
            ) from exc

    def _run_python(self, mod: Any, edit: Edit, spec: PythonPass) -> None:
        ctx = self.cs.context(pipeline=edit.pipeline, pass_name=spec.name, stage=self.stage, metadata=self.metadata)
        try:
            spec.fn(mod, ctx)
        except TritonxError:
            raise
        except OutOfResources:
            # a resource verdict (e.g. too much shared memory), not a pass bug: Triton's own type, so that
            # triton.autotune skips the configuration as it does when Triton itself raises it
            raise
        except Exception as exc:
            tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            raise PassFailedError(
                f"Python pass {spec.name!r} of pipeline {edit.pipeline!r} raised in stage {self.stage!r} "
                f"while compiling {self.cs.kernel or 'a kernel'} for {self.cs.target}: {tb}"
            ) from exc
        verify = getattr(mod, "verify", None)
        if verify is not None and not verify():
            raise PassFailedError(
                f"Python pass {spec.name!r} of pipeline {edit.pipeline!r} left an invalid module in stage "
                f"{self.stage!r} ({self.cs.target})"
            )

