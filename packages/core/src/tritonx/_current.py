"""Which :class:`~tritonx.runtime.Runtime` the module-level functions use (the bottom of the layers).

Nothing here imports the rest of tritonx, not even for type checking: lower layers (pass names,
capture, the registries' public functions) ask for the current runtime through this module instead of
importing the runtime above them. :mod:`tritonx.runtime` installs the default one when ``tritonx`` is
imported; ``Runtime.use()`` swaps it (tests use a fresh runtime each instead of resetting private
names). The runtime is typed ``Any`` here for that reason; :func:`tritonx.runtime.current` returns it
typed.
"""

from __future__ import annotations

from typing import Any

_runtime: Any = None


def runtime() -> Any:
    """The current runtime (the default one unless a ``Runtime.use()`` block is open)."""
    rt = _runtime
    if rt is None:  # pragma: no cover - tritonx/__init__ installs it before anything can ask
        raise RuntimeError("the tritonx runtime is not initialised: import tritonx first")
    return rt


def swap(rt: Any) -> Any:
    """Make ``rt`` current; return the previous one."""
    global _runtime
    previous, _runtime = _runtime, rt
    return previous
