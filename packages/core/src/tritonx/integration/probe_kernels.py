"""Small kernels compiled to observe pipelines when the user names none (capture, CLI)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def probe_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """A software-pipelined matmul: exercises every stage's passes, pipelining included."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


PROBE_SIGNATURE = {
    "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
    "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32",
}
PROBE_CONSTEXPRS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
