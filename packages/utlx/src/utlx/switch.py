"""Is utlx switched on in this process? (Read by the seams' wrappers on every use, and by the plugin.)

Why a module of its own: the wrappers utlx hands to :mod:`tritonx.seams` (``utlx.fork_surface``) ask this
when they run, and the plugin (``utlx.plugin``) that declares those seams needs them too; keeping the
question here lets both import it without importing each other.
"""

from __future__ import annotations

from typing import Any

from tritonx.settings import settings as tritonx_settings

from utlx.language._op import LANGUAGE
from utlx.settings import settings

NAME = LANGUAGE.name

#: ``tritonx.is_plugin_enabled`` once looked up (keeps the already-enabled path free of imports)
_REGISTRY: list[Any] = []


def disabled_by_environment() -> bool:
    """``UTLX_DISABLE=1``, or a ``TRITONX_PLUGINS`` list that leaves utlx out, switches utlx off."""
    if settings.disable:
        return True
    return not tritonx_settings.plugins.allows(NAME, default_enabled=True)


def enabled() -> bool:
    """Is utlx switched on in this process? Off when the environment disables it, and, once tritonx manages
    utlx (:func:`utlx.plugin.ensure_active` registered it), whenever tritonx has it disabled."""
    if disabled_by_environment():
        return False
    return _REGISTRY[0](NAME) if _REGISTRY else True
