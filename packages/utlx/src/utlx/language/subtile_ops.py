"""The fork's ``triton.language.extra.subtile_ops``: split a 2-D tile into column blocks and join them back.

Plain ``@triton.jit`` helpers (reshape, permute, split/join), so they mean the same on every target and under the
interpreter. While ``triton.language.extra.tlx`` is utlx, ``triton.language.extra.subtile_ops`` resolves to this
module (``utlx.language._alias``), as Meta's fork ships it.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _split_n_2D(x, SPLIT_FACTOR: tl.constexpr):
    """``x`` (``[M, N]``) as a tuple of ``SPLIT_FACTOR`` column blocks ``[M, N // SPLIT_FACTOR]``, left to right
    (``SPLIT_FACTOR`` a power of two)."""
    if SPLIT_FACTOR == 1:
        return (x,)
    else:
        halves = x.reshape([x.shape[0], 2, x.shape[1] // 2]).permute(0, 2, 1)
        left, right = halves.split()
        return _split_n_2D(left, SPLIT_FACTOR // 2) + _split_n_2D(right, SPLIT_FACTOR // 2)


@triton.jit
def _join_n_2D(xs):
    """The tile the column blocks ``xs`` (a tuple, a power-of-two count) were split from."""
    if len(xs) == 1:
        return xs[0]
    else:
        half: tl.constexpr = len(xs) // 2
        left = _join_n_2D(xs[:half])
        right = _join_n_2D(xs[half:])
        return tl.join(left, right).permute(0, 2, 1).reshape([left.shape[0], left.shape[1] * 2])


__all__ = ["_join_n_2D", "_split_n_2D"]
