"""Every change tritonx and its plugins make to stock Triton, declared and made in one place.

tritonx extends the unmodified Triton wheel; where Triton offers no extension point, something must be
wrapped or added (a cache-key function, a code-generator method, a constructor keyword only Meta's fork
accepts). Each such change is a :class:`Seam`: a name, the Triton versions it applies to, a one-line reason,
where it goes and how to build it from the original. This package is the only code that writes to Triton's
attributes (a test scans the sources of both packages for any other write):

* :mod:`.patching` installs a seam once (idempotently, however often it is asked for), records the original,
  and undoes it when the seam is ``reversible``;
* :mod:`.hooks` is the hook specification (pluggy) through which plugins declare their seams: a
  :class:`tritonx.Plugin` with ``hooks=`` (a module or object implementing ``tritonx_seams``) gets its seams
  installed when it is enabled and undone when it is disabled; plugins never patch Triton themselves;
* :mod:`.core` holds tritonx-core's own seams.

``tritonx doctor`` lists the seams in effect (:func:`report`).
"""

from __future__ import annotations

from typing import Any

from .hooks import SeamSpec, hookimpl, hookspec, switch_off, switch_on, switched_on
from .model import ABSENT, Seam
from .patching import (
    SeamError,
    active,
    in_place,
    install,
    is_installed,
    original,
    place_of,
    read_slot,
    release_slot,
    uninstall,
    write_slot,
)


def report() -> list[dict[str, Any]]:
    """The seams in effect, as ``tritonx doctor`` shows them (name, versions, reason, where, owner)."""
    return [{"name": s.name, "versions": s.version_text(), "reason": s.reason, "where": place_of(s),
             "owner": s.owner_name, "in_place": s.slot or in_place(s.name)} for s in active()]


__all__ = ["ABSENT", "Seam", "SeamError", "SeamSpec", "active", "hookimpl", "hookspec", "in_place", "install",
           "is_installed", "original", "place_of", "read_slot", "release_slot", "report", "switch_off", "switch_on",
           "switched_on", "uninstall", "write_slot"]
