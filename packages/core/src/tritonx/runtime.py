"""The tritonx runtime: one object owning every piece of process state tritonx keeps.

Modelled on pluggy's ``PluginManager``: the state that used to be spread over module globals lives in
one :class:`Runtime` (the hook slot and the hook it chains, the active-pipeline snapshots, kernel
bindings, the plugin and native registries, pass names learned at run time), and the public functions
(``tritonx.activate``...) delegate to the current one. Tests make a fresh runtime and ``use()`` it
instead of resetting private names. The parts only meet here, so the layers below import nothing above
them: ``model -> engine -> integration -> plugins/native -> runtime -> public -> cli``.

Which runtime is current is known here and only to the public front (:mod:`tritonx.public`,
``tritonx/__init__``, the CLI): the layers below are handed the runtime part they act on (its pass-name
table, native registry, hook slot) as a typed argument, never look it up (``test_layers.py`` checks).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from . import compat
from .engine.names import PassNames
from .errors import PipelineError
from .integration.activation import Activation, ActivePipelines, KeyFunctionError, check_pipeline
from .integration.bindings import KernelBindings
from .integration.hook import HookSlot
from .integration.unkeyed import UnkeyedWarnings
from .model.passes import Capture
from .model.pipeline import Pipeline
from .model.target import Target
from .native.info import NativePluginInfo
from .native.registry import NativeRegistry
from .plugins.registry import PluginRegistry

_swap_lock = threading.Lock()
#: the runtime the public functions use (the default one, or the innermost open ``Runtime.use()`` block's)
_current: Runtime | None = None


class Runtime:
    """Everything tritonx knows in one process (or in one test)."""

    def __init__(self) -> None:
        warned = UnkeyedWarnings()
        self.names = PassNames()
        self.activations = ActivePipelines(warned)
        self.bindings = KernelBindings(warned)
        self.hook = HookSlot(self.activations, self.bindings, self.names)
        self.natives = NativeRegistry(self.names)
        self.natives.sync()  # what start-up loaded reaches the names table now (cheap when nothing was)
        self.plugins = PluginRegistry(self)

    # -- pipelines --------------------------------------------------------------------------------------

    def activate(self, *pipelines: Pipeline) -> Activation:
        """Switch pipelines on for every kernel compiled from now on (see :func:`tritonx.activate`)."""
        if not pipelines:
            raise PipelineError("activate() needs at least one Pipeline")
        self._validate(pipelines)
        self.hook.ensure_installed()
        return Activation(self.activations, self.activations.push(pipelines))

    def empty_activation(self) -> Activation:
        return Activation(self.activations, [])

    def deactivate(self, *pipelines: Pipeline) -> None:
        self.activations.pop(pipelines)

    def active(self) -> tuple[Pipeline, ...]:
        return self.activations.pipelines

    def active_key(self) -> str:
        return self.activations.snapshot.digest

    def bind(self, kernel: Any, pipelines: tuple[Pipeline, ...]) -> Any:
        """Compile ``kernel`` with ``pipelines`` from now on (see :func:`tritonx.pipeline`)."""
        self._validate(pipelines)
        self.hook.ensure_installed()
        return self.bindings.bind(kernel, pipelines)

    def _validate(self, pipelines: tuple[Pipeline, ...]) -> None:
        """Refuse unknown pass names before anything changes (this runtime's table: its native passes too)."""
        for p in pipelines:
            self.names.validate_edits(check_pipeline(p).edits)

    def set_extra_key(self, name: str, fn: Callable[[], str] | None) -> None:
        """Register (or drop) a key function joining the global key; raises naming ``name`` if it fails."""
        try:
            self.activations.set_extra_key(name, fn)
        except KeyFunctionError as exc:
            raise PipelineError(f"{exc}; nothing was registered") from exc.error

    def refresh(self) -> None:
        try:
            self.activations.refresh()
        except KeyFunctionError as exc:
            raise PipelineError(f"{exc}; the previous key stays in force") from exc.error

    # -- natives --------------------------------------------------------------------------------------

    def load_native(self, path: str) -> NativePluginInfo:
        from .native.load import load_native

        return load_native(path, registry=self.natives)

    # -- capture --------------------------------------------------------------------------------------

    def capture(self, target: str | Target = "cuda:90", kernel: Any = None, signature: dict[str, str] | None = None,
                constexprs: dict[str, Any] | None = None, options: dict[str, Any] | None = None) -> Capture:
        """Every stage's pass list for ``target``, through this runtime's hook (see :func:`tritonx.capture`)."""
        from .integration.capture import capture

        return capture(target, kernel, signature, constexprs, options, slot=self.hook)

    # -- being the current runtime ----------------------------------------------------------------------

    @contextlib.contextmanager
    def use(self) -> Iterator[Runtime]:
        """Make this runtime current for the block (and its hook the one in Triton's slot, if any was)."""
        global _current
        with _swap_lock:
            previous, _current = _current, self
            slot = compat.get_stages_hook()
            took_slot = previous is not None and slot is previous.hook.function
        if took_slot:
            self.hook.ensure_installed()
        try:
            yield self
        finally:
            with _swap_lock:
                _current = previous
                compat.set_stages_hook(slot)
                if previous is not None and took_slot:
                    previous.hook.ensure_installed()


_default = Runtime()
_current = _default


def current() -> Runtime:
    """The runtime the public functions use (for the public front only: lower layers are handed theirs)."""
    rt = _current
    assert rt is not None  # set above, before anything can ask; ``use()`` only ever swaps runtimes in
    return rt


def default() -> Runtime:
    """The process's own runtime (what ``current()`` is outside ``Runtime.use()`` blocks)."""
    return _default
