"""The key of what utlx's compile path emits, as it enters Triton's cache key.

Why its own module: the ``utlx`` language (:mod:`utlx.language._op`) names this key, and the module that
lowers the language (:mod:`.stages`) imports the language: the key sits below both, so neither imports
the other back.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from . import copy_width, downgrade


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

__all__ = ["LOWERING_VERSION"]
