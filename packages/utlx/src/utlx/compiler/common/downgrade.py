"""What utlx does when stock Triton can compile a TLX op only to slower code than Meta's fork does.

Why one policy: on AMD many TLX ops are schedules and hints (warp-pipeline stages, scheduling fences,
register-class contracts, pinned register layouts) or fast paths (direct-to-LDS copies) that stock Triton
3.6-3.9 cannot always express. The kernel stays correct without them, so by default utlx compiles it anyway
and says so with a :class:`UtlxPerformanceWarning` naming the op, the target and the reason.
``UTLX_STRICT_AMD=1`` turns each of these into a :class:`UtlxCompileError` instead, for users who would
rather fail than run slower code. It is read once at import and enters the compile cache key
(``utlx.compiler.key.LOWERING_VERSION``), so strict and lenient builds never share a cache entry.
"""

from __future__ import annotations

import warnings

from utlx.settings import settings

from .errors import UtlxCompileError, UtlxPerformanceWarning

STRICT_ENV = "UTLX_STRICT_AMD"
#: Read once at import (see the module docstring).
STRICT = settings.strict_amd


def downgrade(op: str, what: str, *, target: str, where: str = "", hint: str | None = None) -> None:
    """Report that ``op`` compiles to slower code than written: warn, or raise under ``UTLX_STRICT_AMD=1``."""
    place = f" ({where})" if where else ""
    if STRICT:
        raise UtlxCompileError(op, f"{what}{place}; {STRICT_ENV}=1 forbids the fallback", target=target, hint=hint)
    text = f"utlx.{op}: {what}{place} [target {target}]"
    if hint:
        text += f". {hint}"
    warnings.warn(text, UtlxPerformanceWarning, stacklevel=3)


__all__ = ["STRICT", "STRICT_ENV", "UtlxPerformanceWarning", "downgrade"]
