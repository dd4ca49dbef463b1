"""The hook specification through which plugins declare their seams (pluggy), and switching them on and off.

A plugin never patches Triton itself: its :class:`tritonx.Plugin` names a hook provider (``hooks=``: a module
or object with ``@tritonx.seams.hookimpl def tritonx_seams() -> list[Seam]``). When the plugin is enabled the
provider is registered with one process-wide pluggy ``PluginManager`` (Triton is process-wide, so its seams
are too), its seams are installed through :mod:`.patching`, and when it is disabled they are undone. pluggy
checks the provider against :class:`SeamSpec`, so a misspelt hook or argument is an error naming the plugin.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pluggy

from ..compat.installed import TRITON_VERSION_STR
from ..errors import PluginError
from . import patching
from .model import Seam

PROJECT = "tritonx"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class SeamSpec:
    """The hooks a tritonx plugin may implement."""

    @hookspec
    def tritonx_seams(self) -> Sequence[Seam]:  # type: ignore[empty-body]
        """The seams of stock Triton this plugin needs while it is enabled (names start with the plugin's)."""


_lock = threading.RLock()
_manager: list[pluggy.PluginManager] = []
#: Plugin name -> how many enables (one per runtime) hold its seams on.
_holders: dict[str, int] = {}


def manager() -> pluggy.PluginManager:
    """The process's plugin manager (made on first use: declaring plugins costs nothing)."""
    with _lock:
        if not _manager:
            pm = pluggy.PluginManager(PROJECT)
            pm.add_hookspecs(SeamSpec)
            _manager.append(pm)
        return _manager[0]


def declared_by(plugin: str) -> list[Seam]:
    """The seams the enabled plugin ``plugin`` declares (its ``tritonx_seams`` hook; [] if it has none)."""
    pm = manager()
    provider = pm.get_plugin(plugin)
    if provider is None:
        return []
    others = [p for name, p in pm.list_name_plugin() if name != plugin]
    results = pm.subset_hook_caller("tritonx_seams", remove_plugins=others)()
    seams = [seam for result in results for seam in (result or ())]
    for seam in seams:
        if not isinstance(seam, Seam):
            raise PluginError(f"plugin {plugin!r}: tritonx_seams returned {type(seam).__name__}, not a "
                              f"tritonx.seams.Seam")
        if seam.owner_name != plugin:
            raise PluginError(f"plugin {plugin!r}: seam {seam.name!r} must be named '{plugin}.<name>'")
    return seams


def switch_on(plugin: str, provider: Any) -> list[Seam]:
    """Register ``provider`` (the hooks of plugin ``plugin``) and install the seams it declares.

    Counted: each runtime that enables the plugin switches its seams on once more, and they are undone only
    when the last one switches them off (Triton is shared by every runtime of the process). All or nothing: a
    seam that cannot be installed undoes the others of this call and raises a :class:`PluginError` naming the
    plugin and the seam.
    """
    pm = manager()
    with _lock:
        registered = pm.get_plugin(plugin)
        if registered is not None and registered is not provider:
            if _holders.get(plugin, 0) > 0:
                raise PluginError(f"plugin {plugin!r}: another plugin of that name has its seams switched on "
                                  f"(hooks {registered!r}); disable it first")
            pm.unregister(name=plugin)
            registered = None
        if registered is None:
            try:
                pm.register(provider, name=plugin)
                pm.check_pending()
            except (pluggy.PluginValidationError, ValueError) as exc:
                if pm.is_registered(provider):
                    pm.unregister(provider)
                raise PluginError(f"plugin {plugin!r}: its hooks do not fit tritonx's hook specification: {exc}") \
                    from exc
        done: list[Seam] = []
        try:
            seams = declared_by(plugin)
            for seam in seams:
                if not patching.is_installed(seam.name) and patching.install(seam):
                    done.append(seam)
        except Exception as exc:
            for seam in reversed(done):
                patching.uninstall(seam)
            if not _holders.get(plugin):
                pm.unregister(name=plugin)
            if isinstance(exc, PluginError):
                raise
            raise PluginError(f"plugin {plugin!r} not enabled on Triton {TRITON_VERSION_STR}: {exc}") from exc
        _holders[plugin] = _holders.get(plugin, 0) + 1
        return seams


def switch_off(plugin: str) -> None:
    """One holder fewer; the last one undoes the plugin's reversible seams (latest first) and unregisters it."""
    pm = manager()
    with _lock:
        if pm.get_plugin(plugin) is None or _holders.get(plugin, 0) == 0:
            return
        _holders[plugin] -= 1
        if _holders[plugin]:
            return
        del _holders[plugin]
        for seam in reversed(declared_by(plugin)):
            if seam.reversible:
                patching.uninstall(seam)
        pm.unregister(name=plugin)


def switched_on() -> list[str]:
    """Names of the plugins whose seams are switched on."""
    return [name for name, _ in manager().list_name_plugin()]
