"""One ``tl.dot`` tile kernel for the interpreter tests: the stock dot (bf16 accuracy with utlx's create_dot
seam) and the fork's ``tl.dot(two_ctas=True)`` (each CTA's own dot) run the same code but for that keyword."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def dot_tile(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, TWO_CTAS: tl.constexpr):
    """``c = a @ b`` for one row-major ``M x K`` by ``K x N`` tile; ``TWO_CTAS`` passes the fork's keyword (a plain
    Triton kernel otherwise: no utlx op, no keyword stock Triton lacks)."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if TWO_CTAS:
        acc = tl.dot(a, b, two_ctas=True)
    else:
        acc = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
