"""Device helpers every GEMM kernel of :mod:`utlx.kernels` shares (public: kernels import them by name).

Why a module of its own: the tile order is one decision for every kernel (persistent, split-K, stream-K,
warp-specialized, AMD), and the pointer kernels (cp.async ring, register-staged ring) store C the same way, so each
lives in one place that no kernel owns.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

import utlx.language as tlx


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Map a linear program id to a (pid_m, pid_n) tile, GROUP_M tile-rows at a time (L2 reuse)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def store_tile(c_ptr, acc, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
               BLOCK_SIZE_N: tl.constexpr):
    """Store the fp32 accumulator of tile ``(pid_m, pid_n)`` to C (``c_ptr``'s dtype), rows and columns past
    ``M`` / ``N`` masked off."""
    c = acc.to(tlx.dtype_of(c_ptr))
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


#: Signature of the pointer GEMM kernels for compiling without a GPU (fp16 in, fp16 out).
POINTER_GEMM_SIGNATURE = {
    "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
    "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
    "stride_cm": "i32", "stride_cn": "i32",
}


@triton.jit
def operand_descriptor(base, rows, cols, stride_row, stride_col, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr,
                       COL_MAJOR: tl.constexpr):
    """A device-side TMA descriptor over a ``rows x cols`` GEMM operand with ``BLOCK_ROWS x BLOCK_COLS`` boxes.
    A column-major operand (``COL_MAJOR``: unit row stride, e.g. ``x.T``) is described over its transpose, boxes
    ``BLOCK_COLS x BLOCK_ROWS``, and read through a transposed shared-memory view, as the ``_colmajor`` kernels do."""
    if COL_MAJOR:
        return tl.make_tensor_descriptor(base=base, shape=[cols, rows], strides=[stride_col, 1],
                                         block_shape=[BLOCK_COLS, BLOCK_ROWS])
    else:
        return tl.make_tensor_descriptor(base=base, shape=[rows, cols], strides=[stride_row, 1],
                                         block_shape=[BLOCK_ROWS, BLOCK_COLS])


def layout_kernel(row_major: Any, col_major: Any, a_col: bool, b_col: bool) -> tuple[Any, dict[str, bool]]:
    """The JIT kernel for an operand layout and the layout constexprs it takes: ``row_major`` (none) for row-major
    A and B, else ``col_major`` with ``A_COL`` / ``B_COL`` (host side: what each kernel module's ``kernel_for``
    returns)."""
    if a_col or b_col:
        return col_major, {"A_COL": a_col, "B_COL": b_col}
    return row_major, {}
