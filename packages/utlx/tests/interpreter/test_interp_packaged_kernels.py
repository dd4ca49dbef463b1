"""utlx's own packaged GEMM kernels (``utlx.kernels``, written for the GPU) run unchanged on the CPU."""

from __future__ import annotations

import inspect

import pytest
import triton
from utlx_interp_host import check_against_fp32, make_inputs

kernels = pytest.importorskip("utlx.kernels")

_CONSTS = dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=2, NUM_STAGES=3)


@pytest.mark.parametrize(("module", "kernel"), [("amd_pipelined", "matmul_kernel_pipelined_amd"),
                                                ("hopper_pipelined", "matmul_kernel_pipelined_hopper")])
def test_pointer_gemm_kernels(module, kernel):
    fn = getattr(pytest.importorskip(f"utlx.kernels.{module}"), kernel)
    params = inspect.signature(fn.fn).parameters
    a, b, c = make_inputs(96, 80, 160)
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, 32) * triton.cdiv(n, 32),)
    fn[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
             **{name: v for name, v in _CONSTS.items() if name in params})
    check_against_fp32(c, a, b)


def test_tma_persistent_gemm_kernel():
    mod = pytest.importorskip("utlx.kernels.hopper_tma_persistent")
    a, b, c = make_inputs(96, 80, 160, seed=7)
    c.zero_()
    mod.launch(a, b, c, config=(dict(_CONSTS), 4), num_sms=2)
    check_against_fp32(c, a, b)


@pytest.mark.parametrize(("a_col", "b_col"), [(False, True), (True, False), (True, True)])
def test_tma_persistent_gemm_kernel_column_major_operands(a_col, b_col):
    """Transposed views (``x.T``) go in as they are: descriptors over their row-major storage and a
    ``local_trans`` view for the dot (the ``_colmajor`` kernel)."""
    mod = pytest.importorskip("utlx.kernels.hopper_tma_persistent")
    a, b, c = make_inputs(96, 80, 160, seed=11)
    a_in = a.T.contiguous().T if a_col else a
    b_in = b.T.contiguous().T if b_col else b
    assert mod.column_major(a_in) == a_col and mod.column_major(b_in) == b_col
    c.zero_()
    mod.launch(a_in, b_in, c, config=(dict(_CONSTS), 4), num_sms=2)
    check_against_fp32(c, a, b)
