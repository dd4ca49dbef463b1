"""The utlx passes that run inside Triton's ``make_ttgir`` stage, and the key of what they emit.

The tritonx plugin (:mod:`utlx.plugin`) inserts :func:`lowering_pass` right after
``convert-triton-to-tritongpu`` and :func:`restore_waits_pass` after the software pipelines (NVIDIA's and AMD's), and
the AMD passes of :mod:`utlx.compiler.amd_passes`, through a
tritonx ``Pipeline``: tritonx owns Triton's one stages hook (and chains any other), so utlx never touches
it. utlx needs tritonx-core (a declared dependency); there is no mode without it. Both passes leave
kernels without TLX ops untouched: the lowering returns at once when no placeholder exists.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from . import copy_width, downgrade
from .lowering import lower_module, restore_async_waits


def _source_digest() -> str:
    """Hash of utlx's compile-path sources: any edit to how TLX ops are traced or lowered changes it."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in [*sorted(root.glob("*.py")), root.parent / "compat.py"]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


#: What utlx's lowering emits, as it enters Triton's cache key (the utlx pipeline's and plugin's cache_key). Derived
#: from the sources, so a changed lowering can never be served a binary the old one built (no manual bump
#: to forget). It also names the async_load fallback mode and ``UTLX_STRICT_AMD`` (both read once at import), so
#: strict and fallback builds never share a cache entry.
LOWERING_VERSION = (f"utlx-lowering-{_source_digest()}" + ("" if copy_width.FALLBACK else "-strict-cp-async")
                    + ("-strict-amd" if downgrade.STRICT else ""))


def restore_waits_pass(module: Any, ctx: Any = None) -> None:
    """tritonx Python pass (after the software pipeliner): restore TLX cp.async wait counts."""
    restore_async_waits(module)


def lowering_pass(module: Any, ctx: Any = None) -> None:
    """tritonx Python pass: lower utlx placeholders of ``module`` (a no-op for plain Triton kernels)."""
    arch = None
    options = getattr(ctx, "options", None)
    if options is not None:
        arch = getattr(options, "arch", None)
    lower_module(module, arch)
