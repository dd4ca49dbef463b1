"""tritonx: extend the official Triton wheel at run time.

Pipelines of pass-level edits (insert, disable, replace, override a stage), Python and native
plugins, activated for every kernel or per kernel, keyed into Triton's cache.
"""

from __future__ import annotations

from .__about__ import __version__
from .compat import TRITON_VERSION, TRITON_VERSION_STR
from .compat import check_supported as _check_supported

_check_supported()

from .errors import (  # noqa: E402
    PassFailedError,
    PassNotFoundInStageError,
    PassNotInVersionError,
    PipelineConflictError,
    PipelineError,
    PipelineFrozenError,
    PluginError,
    PluginLoadError,
    RemoteCacheWarning,
    TritonxError,
    UnkeyedStateWarning,
    UnknownPassError,
)
from .integration.capture import compile_for  # noqa: E402
from .integration.context import PassContext  # noqa: E402
from .model.code_reach import package_key  # noqa: E402
from .model.keyed import CacheKeyed, CustomPass, cache_key  # noqa: E402
from .model.passes import Capture, PassInfo  # noqa: E402
from .model.pipeline import Pipeline  # noqa: E402
from .model.plugin import Plugin  # noqa: E402
from .model.target import Target  # noqa: E402
from .public import (  # noqa: E402
    activate,
    active,
    active_key,
    apply_environment,
    capture,
    deactivate,
    disable_plugins,
    discover,
    enable_plugins,
    get_plugin,
    is_plugin_enabled,
    list_plugins,
    load_native,
    pipeline,
    register_plugin,
)


def check_native(path: str):
    """Run every safety check on a native plugin library without loading it here (see tritonx.native)."""
    from .native.check import check_native as _check

    return _check(path)

__all__ = [
    "TRITON_VERSION",
    "TRITON_VERSION_STR",
    "CacheKeyed",
    "Capture",
    "CustomPass",
    "PassContext",
    "PassFailedError",
    "PassInfo",
    "PassNotFoundInStageError",
    "PassNotInVersionError",
    "Pipeline",
    "PipelineConflictError",
    "PipelineError",
    "PipelineFrozenError",
    "Plugin",
    "PluginError",
    "PluginLoadError",
    "RemoteCacheWarning",
    "Target",
    "TritonxError",
    "UnkeyedStateWarning",
    "UnknownPassError",
    "__version__",
    "activate",
    "active",
    "active_key",
    "apply_environment",
    "cache_key",
    "capture",
    "check_native",
    "compile_for",
    "deactivate",
    "disable_plugins",
    "discover",
    "enable_plugins",
    "get_plugin",
    "is_plugin_enabled",
    "list_plugins",
    "load_native",
    "package_key",
    "pipeline",
    "register_plugin",
]
