"""Plugin discovery and enabling.

Installed distributions advertise plugins in the ``tritonx.plugins`` entry-point group; discovery is
lazy (nothing is imported at ``import triton`` or ``import tritonx``: only when plugins are first
listed or enabled). ``TRITONX_PLUGINS`` chooses which are enabled: a comma-separated list of names,
``all``, or ``none``; unset means "the plugins that declare ``default_enabled``".

Each runtime owns one :class:`PluginRegistry` (``Runtime.plugins``); the public functions
(``tritonx.enable_plugins``...) use the current runtime's.
One broken or ambiguous entry point never hides the others: it is reported (by name, with the
distributions involved) when it is asked for, and skipped with a warning otherwise.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from importlib import metadata
from typing import Any, Protocol

from .. import seams
from ..errors import PipelineError, PluginError
from ..integration.activation import Activation
from ..model.pipeline import Pipeline
from ..model.plugin import Plugin
from ..native.info import NativePluginInfo
from ..settings import PluginChoice, settings

ENTRY_POINT_GROUP = "tritonx.plugins"
ENV_VAR = "TRITONX_PLUGINS"  # read through tritonx.settings


class PluginWarning(UserWarning):
    """An installed plugin could not be loaded and was skipped."""


def _shadowing_note(ep: metadata.EntryPoint, dist: str) -> str:
    """Why an entry point may fail to import: another distribution ships its top-level package too."""
    from .shadowing import shadowing

    try:
        found = shadowing(ep.value.split(":")[0].split(".")[0].strip(), dist)
    except Exception:  # the note is a hint; the import error itself is what is reported
        return ""
    return f" ({found.message()})" if found else ""


def _load_entry_point(ep: metadata.EntryPoint) -> Plugin:
    """Import one entry point (and call it when it is a factory); any failure is a :class:`PluginError`.

    Why ``BaseException``: a plugin module that calls ``sys.exit()`` (``SystemExit``) or raises another
    non-``Exception`` at import must be reported as broken, not end ``import utlx`` or the CLI without a
    word. Only ``KeyboardInterrupt`` (the user asked to stop) goes through.
    """
    dist = getattr(getattr(ep, "dist", None), "name", None) or "an unknown distribution"
    try:
        obj: Any = ep.load()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise PluginError(
            f"plugin entry point {ep.name!r} ({ep.value}) of distribution {dist!r} failed to import: "
            f"{_describe(exc)}{_shadowing_note(ep, dist)}"
        ) from exc
    if callable(obj) and not isinstance(obj, Plugin):
        try:
            obj = obj()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise PluginError(
                f"plugin factory {ep.value} of distribution {dist!r} raised: {_describe(exc)}"
            ) from exc
    if not isinstance(obj, Plugin):
        raise PluginError(
            f"entry point {ep.name!r} ({ep.value}) of distribution {dist!r} gave {type(obj).__name__}, "
            f"not a tritonx.Plugin"
        )
    if obj.distribution is None:
        obj.distribution = dist
    return obj


def _describe(exc: BaseException) -> str:
    """``SystemExit: 3`` / ``ImportError: No module named 'x'``: the type always, the text when there is one."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _wanted(names: list[str] | str, known: list[str]) -> list[str]:
    if names in ("all", ["all"]):
        return sorted(known)
    return [names] if isinstance(names, str) else list(names)


class PluginHost(Protocol):
    """What enabling a plugin needs from the runtime that owns the registry (:class:`tritonx.runtime.Runtime`)."""

    def activate(self, *pipelines: Pipeline) -> Activation: ...

    def empty_activation(self) -> Activation: ...

    def set_extra_key(self, name: str, fn: Callable[[], str] | None) -> None: ...

    def load_native(self, path: str) -> NativePluginInfo: ...


class PluginRegistry:
    """Known plugins (installed and registered from code), broken entry points, enabled plugins."""

    def __init__(self, runtime: PluginHost) -> None:
        self._runtime = runtime
        self._lock = threading.RLock()
        self._registered: dict[str, Plugin] = {}
        #: entry points that failed to load or clash: name -> the error naming the distribution(s)
        self._broken: dict[str, PluginError] = {}
        self._discovered = False
        #: set while entry points are being imported: a plugin module that lists plugins at import
        #: (``tritonx.list_plugins()``) gets what is known so far instead of a second discovery, which
        #: would import that half-initialised module again and mark it broken
        self._discovering = False
        self._enabled: dict[str, Activation] = {}

    # -- discovery ------------------------------------------------------------------------------------

    def register(self, plugin: Plugin, *, replace: bool = False) -> Plugin:
        """Register a plugin from code (installed ones are found through entry points)."""
        if not isinstance(plugin, Plugin):
            raise PluginError(f"register_plugin() takes a tritonx.Plugin, got {type(plugin).__name__}")
        with self._lock:
            old = self._registered.get(plugin.name)
            if old is not None and old is not plugin and not replace:
                raise PluginError(
                    f"duplicate plugin name {plugin.name!r}: registered by {old.distribution or 'code'} and "
                    f"{plugin.distribution or 'code'}; rename one (or pass replace=True)"
                )
            self._registered[plugin.name] = plugin
            self._broken.pop(plugin.name, None)  # code chose which one this name means
        return plugin

    def discover(self, *, force: bool = False) -> dict[str, Plugin]:
        """Load every installed plugin's entry point once (or again with ``force``)."""
        with self._lock:
            if self._discovering or (self._discovered and not force):
                return dict(self._registered)
            found: dict[str, list[Plugin]] = {}
            self._discovering = True
            try:
                for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                    try:
                        plugin = _load_entry_point(ep)
                    except PluginError as exc:
                        self._broken[ep.name] = exc
                        continue
                    self._broken.pop(ep.name, None)
                    found.setdefault(plugin.name, []).append(plugin)
            finally:
                self._discovering = False
            for name, plugins in found.items():
                existing = self._registered.get(name)
                candidates = [p for p in plugins if p is not existing]
                dists = sorted({p.distribution or "code" for p in candidates})
                if len({id(p) for p in candidates}) > 1 and len(dists) > 1:
                    self._broken[name] = PluginError(
                        f"duplicate plugin name {name!r}: provided by distributions "
                        f"{', '.join(map(repr, dists))}; uninstall one of them (the plugin is left out meanwhile)"
                    )
                    continue
                if existing is None and candidates:
                    self._registered[name] = candidates[0]
            self._discovered = True
            return dict(self._registered)

    def broken(self) -> dict[str, PluginError]:
        """Installed entry points that failed to load, with the error naming their distribution."""
        self.discover()
        return dict(self._broken)

    def list(self) -> list[Plugin]:
        return [p for _, p in sorted(self.discover().items())]

    def get(self, name: str) -> Plugin:
        plugins = self.discover()
        if name in self._broken and name not in plugins:
            raise self._broken[name]
        if name not in plugins:
            known = ", ".join(sorted(plugins)) or "none installed"
            raise PluginError(f"unknown plugin {name!r} (known: {known})")
        return plugins[name]

    # -- enabling -------------------------------------------------------------------------------------

    def is_enabled(self, name: str) -> bool:
        return name in self._enabled

    def enabled(self) -> list[str]:
        return list(self._enabled)

    def enable(self, names: list[str] | str) -> list[Plugin]:
        """Enable plugins by name (``"all"`` for every one): their pipelines become globally active.

        Each plugin is enabled whole or not at all: a native library refused, or a ``cache_key`` that
        raises, leaves it disabled with an error naming it.
        """
        plugins = self.discover()
        wanted = _wanted(names, list(plugins))
        for n in wanted:
            if n not in plugins and n in self._broken:
                raise self._broken[n]
        unknown = [n for n in wanted if n not in plugins]
        if unknown:
            known = ", ".join(sorted(plugins)) or "none installed"
            raise PluginError(f"unknown plugin(s) {', '.join(map(repr, unknown))} (known: {known})")
        done = []
        with self._lock:
            for name in wanted:
                if name in self._enabled:
                    continue
                plugin = plugins[name]
                self._load_natives(plugin)
                self._switch_on_seams(plugin)
                try:
                    self._enabled[name] = self._activate(plugin)
                except Exception:
                    seams.switch_off(name)
                    raise
                done.append(plugin)
        return done

    @staticmethod
    def _switch_on_seams(plugin: Plugin) -> None:
        """Install the seams of Triton the plugin declares (its ``hooks``), before its pipelines can run."""
        if plugin.hooks is not None:
            seams.switch_on(plugin.name, plugin.hooks)

    def _activate(self, plugin: Plugin) -> Activation:
        rt = self._runtime
        key_name = f"plugin:{plugin.name}"
        if plugin.cache_key is not None:
            try:
                rt.set_extra_key(key_name, plugin.cache_key)
            except Exception as exc:
                raise PluginError(f"plugin {plugin.name!r} not enabled: {exc}") from exc
        try:
            return rt.activate(*plugin.pipelines) if plugin.pipelines else rt.empty_activation()
        except PipelineError as exc:
            rt.set_extra_key(key_name, None)
            raise PluginError(f"plugin {plugin.name!r} not enabled: {exc}") from exc

    def disable(self, names: list[str] | str) -> None:
        """Disable plugins by name (``"all"`` for every enabled one)."""
        with self._lock:
            for name in _wanted(names, list(self._enabled)):
                act = self._enabled.pop(name, None)
                if act is None:
                    raise PluginError(f"plugin {name!r} is not enabled")
                act.deactivate()
                self._runtime.set_extra_key(f"plugin:{name}", None)
                seams.switch_off(name)

    def _load_natives(self, plugin: Plugin) -> None:
        for path in plugin.native_libraries:
            try:
                self._runtime.load_native(path)
            except Exception as exc:
                raise PluginError(f"plugin {plugin.name!r}: native library {path} refused: {exc}") from exc

    def apply_environment(self, value: str | None = None) -> list[Plugin]:
        """Enable what ``TRITONX_PLUGINS`` asks for (``none``: nothing; unset: default-enabled plugins).

        ``value`` stands in for the variable's text when given.
        """
        choice = settings.plugins if value is None else PluginChoice.parse(value)
        if choice.mode == "none":
            return []
        if choice.mode == "default":
            names = [p.name for p in self.list() if p.default_enabled]
            for name, err in self.broken().items():  # not named by the user: say so, carry on
                warnings.warn(f"tritonx plugin {name!r} skipped: {err}", PluginWarning, stacklevel=3)
        elif choice.mode == "all":
            names = [p.name for p in self.list()]
        else:
            names = list(choice.names)
        return self.enable(names)

