"""The tritonx runtime: one object owning every piece of process state tritonx keeps.

Modelled on pluggy's ``PluginManager``: the state that used to be spread over module globals lives in
one :class:`Runtime` (the hook slot and the hook it chains, the active-pipeline snapshots, kernel
bindings, the plugin and native registries, pass names learned at run time), and the public functions
(``tritonx.activate``...) delegate to the current one. Tests make a fresh runtime and ``use()`` it
instead of resetting private names. The parts only meet here, so the layers below import nothing above
them: ``model -> engine -> integration -> plugins/native -> runtime -> cli``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from . import _current, compat
from .engine.names import PassNames
from .errors import PipelineError
from .integration.activation import Activation, ActivePipelines, KeyFunctionError
from .integration.bindings import KernelBindings
from .integration.hook import HookSlot
from .integration.unkeyed import UnkeyedWarnings
from .model.pipeline import Pipeline
from .native.info import NativePluginInfo
from .native.registry import NativeRegistry
from .plugins.registry import PluginRegistry

_swap_lock = threading.Lock()


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
        self.hook.ensure_installed()
        return self.bindings.bind(kernel, pipelines)

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

    # -- being the current runtime ----------------------------------------------------------------------

    @contextlib.contextmanager
    def use(self) -> Iterator[Runtime]:
        """Make this runtime current for the block (and its hook the one in Triton's slot, if any was)."""
        with _swap_lock:
            previous = _current.swap(self)
            slot = compat.get_stages_hook()
            took_slot = previous is not None and slot is previous.hook.function
        if took_slot:
            self.hook.ensure_installed()
        try:
            yield self
        finally:
            with _swap_lock:
                _current.swap(previous)
                compat.set_stages_hook(slot)
                if previous is not None and took_slot:
                    previous.hook.ensure_installed()


_default = Runtime()
_current.swap(_default)


def current() -> Runtime:
    """The runtime the public functions use."""
    return _current.runtime()


def default() -> Runtime:
    """The process's own runtime (what ``current()`` is outside ``Runtime.use()`` blocks)."""
    return _default
