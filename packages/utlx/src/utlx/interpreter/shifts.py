"""Integer shifts by the register width or more, under the interpreter, as the GPU computes them.

Why: numpy's ``left_shift``/``right_shift`` by >= the bit width are undefined (x86 masks the count: ``-1 << 40``
gives ``-1 << 8``), while PTX clamps the count to the width (``shl``/``shr.u``: 0; ``shr.s``: the sign). Meta's
Blackwell attention kernels build their causal mask as ``-1 << n`` with ``n`` up to the tile width, so the
interpreter masked the wrong columns (NaN rows). The wrappers below keep numpy's result for counts in range
and give PTX's for the rest (Triton 3.6-3.9 ``InterpreterBuilder.create_shl``/``create_lshr``/``create_ashr``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _too_far(lhs: Any, rhs: Any) -> np.ndarray:
    bits = np.asarray(lhs.data).dtype.itemsize * 8
    count = np.asarray(rhs.data)
    return (count < 0) | (count >= bits) if count.dtype.kind == "i" else count >= bits


def _clamped(original: Callable[..., Any], fill: Callable[[Any], np.ndarray]) -> Callable[..., Any]:
    def create(self: Any, lhs: Any, rhs: Any) -> Any:
        out = original(self, lhs, rhs)
        far = _too_far(lhs, rhs)
        if np.any(far):
            data = np.where(far, fill(lhs), out.data).astype(out.data.dtype)
            out = type(out)(data, out.dtype)
        return out

    create.__wrapped__ = original  # type: ignore[attr-defined]
    return create


def shl(original: Callable[..., Any]) -> Callable[..., Any]:
    """``create_shl``: a count >= the width shifts every bit out (0)."""
    return _clamped(original, lambda lhs: np.zeros_like(lhs.data))


def lshr(original: Callable[..., Any]) -> Callable[..., Any]:
    """``create_lshr``: a count >= the width gives 0."""
    return _clamped(original, lambda lhs: np.zeros_like(lhs.data))


def ashr(original: Callable[..., Any]) -> Callable[..., Any]:
    """``create_ashr``: a count >= the width fills with the sign bit (-1 or 0)."""
    return _clamped(original, lambda lhs: np.where(np.asarray(lhs.data).view(
        np.dtype(f"i{np.asarray(lhs.data).dtype.itemsize}")) < 0, -1, 0))
