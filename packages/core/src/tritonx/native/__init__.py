"""Native (.so) Triton plugins: check them before Triton sees them, load them, find their passes.

* :func:`check_native` / :func:`diagnose_native` (:mod:`.check`): the safety checks.
* :func:`~.load.load_native` (:mod:`.load`): load into the running Triton (version rules in
  :mod:`tritonx.compat.native`), into the registry it is handed (``tritonx.load_native``: the current runtime's).
* :mod:`.registry`: what one runtime has loaded (``Runtime.natives``: ``find_pass(name)``, ``native_passes()``,
  ``loaded_natives()``).
* ``TRITONX_NATIVE_PLUGINS``: checked and loaded at interpreter start-up by :mod:`tritonx._startup`.

Attributes are imported on first use so that importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "check_native": ".check",
    "diagnose_native": ".check",
    "NativeDiagnosis": ".check",
    "CHECKS": ".check",
    "NativePluginInfo": ".info",
    "CheckResult": ".info",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
