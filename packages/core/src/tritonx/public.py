"""The public front (``tritonx.activate``, ``tritonx.enable_plugins``...): each delegates to the current runtime.

This module and ``tritonx/__init__`` (and the CLI) are the only code that asks which runtime is current
(:func:`tritonx.runtime.current`); everything below is handed the runtime part it acts on. A test that makes
its own :class:`~tritonx.runtime.Runtime` and ``use()``-s it sees these functions act on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import PipelineError, PluginError
from .integration.activation import Activation, check_pipeline
from .model.passes import Capture
from .model.pipeline import Pipeline
from .model.plugin import Plugin
from .model.target import Target
from .native.info import NativePluginInfo
from .runtime import current

# -- pipelines ----------------------------------------------------------------------------------------


def activate(*pipelines: Pipeline) -> Activation:
    """Switch pipelines on for every kernel compiled from now on (until deactivated).

    Usable as ``with tritonx.activate(p): ...``. Pipelines apply in activation order. Atomic: if one
    pipeline cannot be keyed (its ``cache_key`` raises) or names a pass the installed Triton lacks, none
    is activated and the error names it.
    """
    return current().activate(*pipelines)


def deactivate(*pipelines: Pipeline) -> None:
    """Switch pipelines off (each call undoes one :func:`activate`)."""
    current().deactivate(*pipelines)


def active() -> tuple[Pipeline, ...]:
    """The globally active pipelines, in activation order."""
    return current().active()


def active_key() -> str:
    """Digest of the globally active pipelines ('' when none): O(1), for callers that cache launches
    (utlx's fast launch path calls it per launch: a few attribute reads, no lock)."""
    return current().activations.snapshot.digest


def pipeline(*pipelines: Pipeline) -> Callable[[Any], Any]:
    """Decorator: ``@tritonx.pipeline(p)`` above ``@triton.jit`` compiles that kernel with ``p``."""
    if not pipelines:
        raise PipelineError("tritonx.pipeline() needs at least one Pipeline")
    for p in pipelines:
        check_pipeline(p)

    def decorate(kernel: Any) -> Any:
        return current().bind(kernel, pipelines)

    return decorate


def capture(target: str | Target = "cuda:90", kernel: Any = None, signature: dict[str, str] | None = None,
            constexprs: dict[str, Any] | None = None, options: dict[str, Any] | None = None) -> Capture:
    """Every stage's pass list for ``target`` (stock, or with the active pipelines' edits marked).

    Compiles ``kernel`` (default: a small pipelined matmul) with Triton's cache bypassed, so the
    stages really run. Pass lists depend on the target, the options and sometimes the kernel.
    """
    return current().capture(target, kernel, signature, constexprs, options)


# -- plugins ------------------------------------------------------------------------------------------


def register_plugin(plugin: Plugin, *, replace: bool = False) -> Plugin:
    """Register a plugin from code (installed ones are found through entry points)."""
    return current().plugins.register(plugin, replace=replace)


def discover(*, force: bool = False) -> dict[str, Plugin]:
    """Load every installed plugin's entry point once (or again with ``force``)."""
    return current().plugins.discover(force=force)


def broken_plugins() -> dict[str, PluginError]:
    """Installed entry points that failed to load (or clash), with the error naming the distribution(s)."""
    return current().plugins.broken()


def list_plugins() -> list[Plugin]:
    """Every known plugin (installed and registered), by name."""
    return current().plugins.list()


def get_plugin(name: str) -> Plugin:
    """The known plugin called ``name`` (raises naming the known ones, or the distribution of a broken one)."""
    return current().plugins.get(name)


def is_plugin_enabled(name: str) -> bool:
    """Is the plugin called ``name`` enabled?"""
    return current().plugins.is_enabled(name)


def enable_plugins(names: list[str] | str) -> list[Plugin]:
    """Enable plugins by name (``"all"`` for every one): their pipelines become globally active."""
    return current().plugins.enable(names)


def disable_plugins(names: list[str] | str) -> None:
    """Disable plugins by name (``"all"`` for every enabled one)."""
    current().plugins.disable(names)


def apply_environment(value: str | None = None) -> list[Plugin]:
    """Enable what ``TRITONX_PLUGINS`` asks for (``none``: nothing; unset: default-enabled plugins)."""
    return current().plugins.apply_environment(value)


# -- native plugins -----------------------------------------------------------------------------------


def load_native(path: str) -> NativePluginInfo:
    """Check, then load a native plugin library the way the installed Triton allows (into the current runtime)."""
    return current().load_native(path)
