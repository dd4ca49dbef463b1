"""Tiny kernel sources and signatures the CLI tests compile (helpers, not tests)."""

from __future__ import annotations

import textwrap

ADD_KERNEL = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    @triton.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


    not_a_kernel = 3
    """
)
ADD_SIG = "x_ptr=*fp32,y_ptr=*fp32,n=i32"

#: The probe matmul re-exported from a user file: pipelined on cuda:90 when its 9 args are 16-divisible.
MATMUL_FILE = "from tritonx.integration.probe_kernels import probe_matmul  # noqa: F401\n"
MATMUL_SIG = "a_ptr=*fp16,b_ptr=*fp16,c_ptr=*fp16,M=i32,N=i32,K=i32,stride_am=i32,stride_bk=i32,stride_cm=i32"
MATMUL_CONSTS = ["-c", "BLOCK_M=128", "-c", "BLOCK_N=128", "-c", "BLOCK_K=64"]
