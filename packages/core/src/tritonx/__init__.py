"""tritonx: extend the official Triton wheel at run time.

Pipelines of pass-level edits (insert, disable, replace, override a stage), Python and native
plugins, activated for every kernel or per kernel, keyed into Triton's cache.
"""

from __future__ import annotations

from .__about__ import __version__
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
    TritonxError,
    UnknownPassError,
)
from .integration.activation import activate, active, deactivate, pipeline  # noqa: E402
from .integration.capture import capture, compile_for  # noqa: E402
from .integration.context import PassContext  # noqa: E402
from .model.passes import Capture, PassInfo  # noqa: E402
from .model.pipeline import Pipeline  # noqa: E402
from .model.plugin import Plugin  # noqa: E402
from .model.target import Target  # noqa: E402

__all__ = [
    "Capture",
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
    "Target",
    "TritonxError",
    "UnknownPassError",
    "__version__",
    "activate",
    "active",
    "capture",
    "compile_for",
    "deactivate",
    "pipeline",
]
