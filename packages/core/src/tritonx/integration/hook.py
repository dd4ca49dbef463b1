"""tritonx's seat in Triton's single ``add_stages_inspection_hook`` slot, and its compile-time key.

Triton calls the slot two ways (see :mod:`tritonx.compat.cache`). With no arguments (3.7+), on every
*launch* for the in-memory key and once per compile: that path returns a precomputed pair, O(1). With
``(backend, stages, options, language, capability)`` at the end of ``add_stages``: that path runs the
hook that was there before tritonx (chained, never dropped), then rewrites the stages.

Which pipelines a compile uses is decided once, by :meth:`HookSlot.compile_key`, which Triton calls
(through the wrapped ``get_cache_key``) while it builds the on-disk key: it freezes a
:class:`~.snapshot.CompileSnapshot` on the compiling thread, and the stage call of that same compile
edits with exactly it. Another thread activating or binding pipelines in between changes nothing.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from .. import compat
from ..engine.names import PassNames
from .activation import ActivePipelines
from .bindings import KernelBindings
from .session import CaptureSink, CompileSession
from .snapshot import STOCK, CompileSnapshot, digest_in


class HookReplacedWarning(UserWarning):
    """Someone overwrote Triton's stages hook after tritonx installed itself."""


class HookSlot:
    """Owns the function tritonx puts in the slot, the hook it chains, and per-thread compile state."""

    def __init__(self, activations: ActivePipelines, bindings: KernelBindings, names: PassNames) -> None:
        self._activations = activations
        self._bindings = bindings
        self._names = names
        self._local = threading.local()
        self._installed = False
        #: the hook found in the slot, chained (its stage edits and key are kept)
        self.foreign: Callable[..., Any] | None = None
        self.function = self._make_function()

    # -- the function in the slot -----------------------------------------------------------------

    def _make_function(self) -> Callable[..., Any]:
        snapshot_owner = self._activations
        local = self._local
        slot = self

        def tritonx_stages_hook(*args: Any) -> Any:
            """The function tritonx puts in ``triton.knobs.runtime.add_stages_inspection_hook``."""
            if not args:  # every launch on 3.7+: keep it two attribute reads
                pair = snapshot_owner.snapshot.pair
                if slot.foreign is None or getattr(local, "busy", False):
                    return pair
                return slot._with_foreign_key(pair)
            return slot._stage_call(*args)

        tritonx_stages_hook.__tritonx__ = True  # type: ignore[attr-defined]
        tritonx_stages_hook.__tritonx_slot__ = self  # type: ignore[attr-defined]
        return tritonx_stages_hook

    def _with_foreign_key(self, pair: tuple[str, str]) -> tuple[str, str]:
        foreign = self.foreign
        self._local.busy = True
        try:
            fkey, fhash = foreign()
        finally:
            self._local.busy = False
        return (f"{fkey}{pair[0]}", f"{fhash}{pair[1]}")

    def _stage_call(self, backend: Any, stages: dict[str, Any], options: Any, language: Any,
                    capability: Any) -> None:
        if getattr(self._local, "busy", False):  # a chained hook called us back: do nothing twice
            return None
        foreign = self.foreign
        if foreign is not None:
            self._local.busy = True
            try:
                foreign(backend, stages, options, language, capability)
            finally:
                self._local.busy = False
        sink: CaptureSink | None = getattr(self._local, "sink", None)
        plan = self._snapshot_for_stages()
        # The kernel is traced right after add_stages, on this thread: DSL ops ask which pipelines apply.
        self._local.compiling = plan
        if sink is None and not any(p.edits for p in plan.pipelines):
            return None  # nothing to change: the stages stay Triton's own objects
        session = CompileSession(backend=backend, options=options, language=language, capability=capability,
                                 pipelines=plan.pipelines, kernel=plan.kernel, sink=sink, names=self._names)
        session.install(stages)
        return None

    def compiling_pipelines(self) -> tuple | None:
        """The pipelines of the compile whose stages this thread set up last (its kernel is traced next),
        or None when tritonx is not the hook in Triton's slot (then no pipeline applies to any compile)."""
        if compat.get_stages_hook() is not self.function:
            return None
        plan: CompileSnapshot | None = getattr(self._local, "compiling", None)
        return None if plan is None else plan.pipelines

    # -- one snapshot per compile -------------------------------------------------------------------

    def compile_key(self, src: Any) -> str:
        """What Triton's on-disk key gets for this compile; freezes the compile's pipelines on this thread.

        Called by the wrapped ``get_cache_key`` from inside ``triton.compile``, before the stages exist.
        A compile serving a launch on this thread uses the snapshot that launch was keyed with, so the
        in-memory key, the on-disk key and the edits agree.
        """
        frame = compat.compile_frame()
        active = None
        launch = compat.launch_key(frame)
        if launch is not None:
            active = self._activations.lookup(digest_in(launch))
        if active is None:
            active = self._activations.snapshot
        fn = compat.source_kernel(src)
        plan = CompileSnapshot(active, self._bindings.of(fn), getattr(src, "name", None), src)
        self._local.pending = plan
        return plan.suffix

    def _snapshot_for_stages(self) -> CompileSnapshot:
        pending: CompileSnapshot | None = getattr(self._local, "pending", None)
        self._local.pending = None
        src = compat.frame_source(compat.compile_frame())
        if src is None:  # stages built outside triton.compile: no key was made, use what is active now
            return CompileSnapshot(self._activations.snapshot)
        if pending is not None and pending.src is src:
            return pending
        return STOCK  # this compile's key names no pipeline (it was keyed before tritonx was installed)

    # -- installing ---------------------------------------------------------------------------------

    def ensure_installed(self) -> None:
        """Put tritonx in the slot, chaining whatever was there; warn if someone replaced us since."""
        current = compat.get_stages_hook()
        if current is self.function:
            self._install_keys()
            return
        if self._installed and not _is_tritonx(current):
            warnings.warn(
                f"Triton's stages hook was replaced by {describe(current)} after tritonx installed itself; "
                f"tritonx re-installs itself and chains it (its passes and cache key are kept)",
                HookReplacedWarning,
                stacklevel=4,
            )
        if current is not None and not _is_tritonx(current):
            self.foreign = current
        compat.set_stages_hook(self.function)
        self._install_keys()
        self._installed = True

    @staticmethod
    def _install_keys() -> None:
        compat.install_compile_key(_compile_key_of_slot_owner)
        compat.install_memory_key(_memory_key_of_slot_owner)

    def memory_key(self) -> str:
        return self._activations.snapshot.pair[1]

    def status(self) -> dict[str, Any]:
        current = compat.get_stages_hook()
        return {
            "installed": current is self.function,
            "slot": describe(current),
            "chained": describe(self.foreign) if self.foreign is not None else None,
        }

    def capturing(self) -> _Capturing:
        """Record every stage's pass list of compiles on this thread (for :func:`tritonx.capture`)."""
        return _Capturing(self)


class _Capturing:
    def __init__(self, slot: HookSlot) -> None:
        self._slot = slot

    def __enter__(self) -> CaptureSink:
        self._slot.ensure_installed()
        local = self._slot._local
        self.prev = getattr(local, "sink", None)
        local.sink = CaptureSink()
        return local.sink

    def __exit__(self, *exc: object) -> None:
        self._slot._local.sink = self.prev


def _slot_owner() -> HookSlot | None:
    """The tritonx slot whose function is in Triton's slot now (None if someone else's hook is)."""
    return getattr(compat.get_stages_hook(), "__tritonx_slot__", None)


def _compile_key_of_slot_owner(src: Any) -> str:
    """Keys follow the stages: only the runtime whose hook will edit this compile may name pipelines."""
    owner = _slot_owner()
    return owner.compile_key(src) if owner is not None else ""


def _memory_key_of_slot_owner() -> str:
    """Triton 3.6's per-launch in-memory key part (kept to one call and a few attribute reads)."""
    owner = getattr(compat.get_stages_hook(), "__tritonx_slot__", None)
    return owner._activations.snapshot.pair[1] if owner is not None else ""


def _is_tritonx(fn: Any) -> bool:
    return getattr(fn, "__tritonx_slot__", None) is not None


def describe(fn: Any) -> str:
    if fn is None:
        return "nothing"
    mod = getattr(fn, "__module__", "?")
    return f"{mod}.{getattr(fn, '__qualname__', repr(fn))}"



def compiling_pipelines() -> tuple | None:
    """The pipelines of the compile this thread is tracing, as the tritonx slot in Triton's slot froze them
    (None when no tritonx runtime holds Triton's slot: then no pipeline applies to any compile).

    For code that runs inside a compile and holds no runtime (a DSL op traced by Triton's code generator):
    the runtime editing the compile is the one whose hook Triton calls, so it is asked through the slot.
    """
    owner = _slot_owner()
    return None if owner is None else owner.compiling_pipelines()
