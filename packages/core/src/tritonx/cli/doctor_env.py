"""What ``tritonx doctor`` checks about the environment variables that choose plugins.

Why a module of its own: two variables decide which plugins a process gets, and both failed silently
in doctor while the API raised. ``TRITONX_PLUGINS=bogus`` passed doctor, but
``tritonx.apply_environment()`` raises for the unknown name. A native plugin whose library is not named
in ``TRITONX_NATIVE_PLUGINS`` showed as "incompatible" (its passes unknown) or "broken" (its pipeline
could not be built: the pass names come from the library), with no word about the variable that fixes it.
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import Any

from ..errors import UnknownPassError

NATIVE_ENV = "TRITONX_NATIVE_PLUGINS"


def unknown_env_plugins(known: set[str]) -> list[str]:
    """The names ``TRITONX_PLUGINS`` lists that are neither installed nor registered (``known``)."""
    from ..settings import settings

    choice = settings.plugins
    return [n for n in choice.names if n not in known] if choice.mode == "names" else []


def native_env_hint(paths: list[str]) -> str:
    """The fix, spelled out: Triton takes native libraries when it is first imported, so before Python starts."""
    return (f"set {NATIVE_ENV}={':'.join(paths)} before Python starts (native plugins are loaded at "
            f"interpreter start-up)")


def _loads_natives() -> Any:
    """How the installed Triton loads native plugins (:class:`tritonx.compat.native.NativeLoading`)."""
    from .. import compat
    from ..compat.native import native_loading

    return native_loading(compat.TRITON_VERSION_STR)


def unloaded_natives(plugin: Any) -> list[str]:
    """The plugin's native libraries this process has not loaded, when only start-up can load them (3.7/3.8).

    On Triton 3.9 enabling the plugin loads them at run time, so nothing is missing there.
    """
    from ..runtime import current

    if not plugin.native_libraries or not _loads_natives().reads_environment:
        return []
    loaded = {info.path for info in current().natives.loaded_natives()}
    return [p for p in plugin.native_libraries if os.path.abspath(os.path.expanduser(p)) not in loaded]


def _shared_libraries(plugin_name: str) -> list[str]:
    """The ``.so`` files of the distribution that provides the entry point ``plugin_name``."""
    from ..plugins.registry import ENTRY_POINT_GROUP

    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        if ep.name != plugin_name or dist is None:
            continue
        return sorted(str(dist.locate_file(f)) for f in dist.files or () if f.name.endswith(".so"))
    return []


def broken_native_hint(plugin_name: str, error: BaseException) -> str | None:
    """For a plugin whose pipeline named a pass this process lacks: the variable that would load it.

    A native plugin builds its pipeline from the pass names its library declares; with the library not
    loaded, building it raises ``UnknownPassError`` and the entry point is broken.
    """
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, UnknownPassError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    return unknown_pass_hint(plugin_name, guess=True)


def unknown_pass_hint(plugin_name: str, guess: bool = False) -> str | None:
    """For a plugin whose pipeline names passes this process lacks: the variable that would load them, when
    native plugins exist on this Triton and its distribution ships a ``.so`` (``guess``: say it even without)."""
    if not _loads_natives().supported:
        return None
    libraries = _shared_libraries(plugin_name)
    if libraries:
        return f"its pipeline names a pass its native library provides: {native_env_hint(libraries)}"
    if not guess:
        return None
    return (f"if that pass comes from the plugin's native library, name the library in {NATIVE_ENV} "
            f"before Python starts")
