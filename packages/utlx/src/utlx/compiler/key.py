"""The key of what utlx's compile path emits, as it enters Triton's cache key.

Why the compile path states it: the ``utlx`` language (:mod:`utlx.language._op`) sits below the compile path,
so it cannot import it to ask; importing this module (``utlx.compiler`` does) gives the language its key.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from utlx.language._op import LANGUAGE

from .common import downgrade
from .nvidia import copy_width


def _source_digest() -> str:
    """Hash of utlx's compile-path sources: any edit to how TLX ops are traced or lowered changes it."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in [*sorted(root.rglob("*.py")), root.parent / "compat.py"]:
        h.update(str(path.relative_to(root.parent)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


#: What utlx's lowering emits, as it enters Triton's cache key (the utlx pipeline's and plugin's cache_key). Derived
#: from the sources, so a changed lowering can never be served a binary the old one built (no manual bump
#: to forget). It also names the async_load fallback mode and ``UTLX_STRICT_AMD`` (both read once at import), so
#: strict and fallback builds never share a cache entry.
LOWERING_VERSION = (f"utlx-lowering-{_source_digest()}" + ("" if copy_width.FALLBACK else "-strict-cp-async")
                    + ("-strict-amd" if downgrade.STRICT else ""))

# The language's key (it cannot import the compile path it sits below, so the compile path says it).
LANGUAGE.set_cache_key(LOWERING_VERSION)

__all__ = ["LOWERING_VERSION"]
