"""Six kernels for byte-identity checks: elementwise, reduction, softmax, pipelined matmul, a
tensor-descriptor (TMA on Hopper) kernel and a Gluon kernel. Each entry: (kernel, signature,
constexprs, number of leading 16-divisible arguments)."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from tritonx.integration.probe_kernels import PROBE_CONSTEXPRS, PROBE_SIGNATURE, probe_matmul


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0))


@triton.jit
def softmax_kernel(out_ptr, in_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * row_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@triton.jit
def desc_copy_kernel(in_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tile = src.load([tl.program_id(0) * BM, 0])
    dst.store([tl.program_id(0) * BM, 0], tile * 2)


@gluon.jit
def gluon_scale_kernel(x_ptr, out_ptr, n, BLOCK: gl.constexpr, WARP: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [WARP], [4], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    gl.store(out_ptr + offs, gl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


CORPUS = {
    "elementwise": (add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                    {"BLOCK": 1024}, 3),
    "reduction": (sum_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 512}, 2),
    "softmax": (softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "row_stride": "i32", "n_cols": "i32"},
                {"BLOCK": 1024}, 3),
    "matmul": (probe_matmul, PROBE_SIGNATURE, PROBE_CONSTEXPRS, len(PROBE_SIGNATURE)),
    "descriptor": (desc_copy_kernel, {"in_ptr": "*fp16", "out_ptr": "*fp16", "M": "i32", "N": "i32"},
                   {"BM": 64, "BN": 64}, 4),
    "gluon": (gluon_scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
              {"BLOCK": 512, "WARP": 32}, 2),
}
