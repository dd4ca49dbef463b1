"""Plugin discovery and enabling.

Installed distributions advertise plugins in the ``tritonx.plugins`` entry-point group; discovery is
lazy (nothing is imported at ``import triton`` or ``import tritonx``: only when plugins are first
listed or enabled). ``TRITONX_PLUGINS`` chooses which are enabled: a comma-separated list of names,
``all``, or ``none``; unset means "the plugins that declare ``default_enabled``".
"""

from __future__ import annotations

import os
import threading
import warnings
from importlib import metadata
from typing import Any

from ..errors import PluginError
from ..integration import activation
from ..model.plugin import Plugin

ENTRY_POINT_GROUP = "tritonx.plugins"
ENV_VAR = "TRITONX_PLUGINS"

_lock = threading.RLock()


class PluginWarning(UserWarning):
    """An installed plugin could not be loaded and was skipped."""

_registered: dict[str, Plugin] = {}
#: entry points that failed to load: name -> the error (one broken plugin must not hide the others)
_broken: dict[str, PluginError] = {}
_discovered = False
_enabled: dict[str, activation.Activation] = {}


def register_plugin(plugin: Plugin, *, replace: bool = False) -> Plugin:
    """Register a plugin from code (installed ones are found through entry points)."""
    if not isinstance(plugin, Plugin):
        raise PluginError(f"register_plugin() takes a tritonx.Plugin, got {type(plugin).__name__}")
    with _lock:
        old = _registered.get(plugin.name)
        if old is not None and old is not plugin and not replace:
            raise PluginError(
                f"duplicate plugin name {plugin.name!r}: registered by {old.distribution or 'code'} and "
                f"{plugin.distribution or 'code'}; rename one (or pass replace=True)"
            )
        _registered[plugin.name] = plugin
    return plugin


def _load_entry_point(ep: metadata.EntryPoint) -> Plugin:
    dist = getattr(getattr(ep, "dist", None), "name", None) or "an unknown distribution"
    try:
        obj: Any = ep.load()
    except Exception as exc:
        raise PluginError(
            f"plugin entry point {ep.name!r} ({ep.value}) of distribution {dist!r} failed to import: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if callable(obj) and not isinstance(obj, Plugin):
        try:
            obj = obj()
        except Exception as exc:
            raise PluginError(f"plugin factory {ep.value} of distribution {dist!r} raised: {exc}") from exc
    if not isinstance(obj, Plugin):
        raise PluginError(
            f"entry point {ep.name!r} ({ep.value}) of distribution {dist!r} gave {type(obj).__name__}, "
            f"not a tritonx.Plugin"
        )
    if obj.distribution is None:
        obj.distribution = dist
    return obj


def discover(*, force: bool = False) -> dict[str, Plugin]:
    """Load every installed plugin's entry point once (or again with ``force``)."""
    global _discovered
    with _lock:
        if _discovered and not force:
            return dict(_registered)
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                plugin = _load_entry_point(ep)
            except PluginError as exc:
                _broken[ep.name] = exc
                continue
            existing = _registered.get(plugin.name)
            if existing is not None and existing is not plugin and existing.distribution != plugin.distribution:
                raise PluginError(
                    f"duplicate plugin name {plugin.name!r}: provided by distributions "
                    f"{existing.distribution!r} and {plugin.distribution!r}"
                )
            _registered[plugin.name] = plugin
        _discovered = True
        return dict(_registered)


def broken_plugins() -> dict[str, PluginError]:
    """Installed entry points that failed to load, with the error naming their distribution."""
    discover()
    return dict(_broken)


def list_plugins() -> list[Plugin]:
    """Every known plugin (installed and registered), by name."""
    return [p for _, p in sorted(discover().items())]


def get_plugin(name: str) -> Plugin:
    plugins = discover()
    if name in _broken and name not in plugins:
        raise _broken[name]
    if name not in plugins:
        known = ", ".join(sorted(plugins)) or "none installed"
        raise PluginError(f"unknown plugin {name!r} (known: {known})")
    return plugins[name]


def is_enabled(name: str) -> bool:
    return name in _enabled


def enable_plugins(names: list[str] | str) -> list[Plugin]:
    """Enable plugins by name (``"all"`` for every one): their pipelines become globally active."""
    plugins = discover()
    wanted = sorted(plugins) if names in ("all", ["all"]) else ([names] if isinstance(names, str) else list(names))
    for n in wanted:
        if n not in plugins and n in _broken:
            raise _broken[n]
    unknown = [n for n in wanted if n not in plugins]
    if unknown:
        known = ", ".join(sorted(plugins)) or "none installed"
        raise PluginError(f"unknown plugin(s) {', '.join(map(repr, unknown))} (known: {known})")
    done = []
    with _lock:
        for name in wanted:
            if name in _enabled:
                continue
            plugin = plugins[name]
            _load_natives(plugin)
            if plugin.cache_key is not None:
                activation.set_extra_key(f"plugin:{name}", plugin.cache_key)
            _enabled[name] = activation.Activation(activation.push(plugin.pipelines)) if plugin.pipelines else \
                activation.Activation([])
            done.append(plugin)
    return done


def disable_plugins(names: list[str] | str) -> None:
    """Disable plugins by name (``"all"`` for every enabled one)."""
    with _lock:
        wanted = list(_enabled) if names in ("all", ["all"]) else ([names] if isinstance(names, str) else names)
        for name in wanted:
            act = _enabled.pop(name, None)
            if act is None:
                raise PluginError(f"plugin {name!r} is not enabled")
            act.deactivate()
            activation.set_extra_key(f"plugin:{name}", None)


def _load_natives(plugin: Plugin) -> None:
    if not plugin.native_libraries:
        return
    from ..native import load as native_load

    for path in plugin.native_libraries:
        try:
            native_load.load_native(path)
        except Exception as exc:
            raise PluginError(f"plugin {plugin.name!r}: native library {path} refused: {exc}") from exc


def apply_environment(value: str | None = None) -> list[Plugin]:
    """Enable what ``TRITONX_PLUGINS`` asks for (``none``: nothing; unset: default-enabled plugins)."""
    value = os.environ.get(ENV_VAR) if value is None else value
    if value is not None and value.strip().lower() == "none":
        return []
    if value is None or not value.strip():
        names = [p.name for p in list_plugins() if p.default_enabled]
        for name, err in broken_plugins().items():  # not named by the user: say so, carry on
            warnings.warn(f"tritonx plugin {name!r} skipped: {err}", PluginWarning, stacklevel=2)
    elif value.strip().lower() == "all":
        names = [p.name for p in list_plugins()]
    else:
        names = [n.strip() for n in value.split(",") if n.strip()]
    return enable_plugins(names)


def _reset_for_tests() -> None:
    global _discovered
    with _lock:
        for act in _enabled.values():
            act.deactivate()
        _enabled.clear()
        _registered.clear()
        _broken.clear()
        _discovered = False
