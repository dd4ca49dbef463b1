"""Kernels calling the test language's ops (in a file: ``@triton.jit`` needs the source)."""

from __future__ import annotations

import dsl_ops as dt
import triton
import triton.language as tl


@triton.jit
def rotate_kernel(x_ptr, out_ptr, N: tl.constexpr, R: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offs, dt.rotate_left(tl.load(x_ptr + offs), R))


@triton.jit
def rotate_kernel_to_bind(x_ptr, out_ptr, N: tl.constexpr, R: tl.constexpr):
    """Only for the binding test: a binding stays on the kernel object."""
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, dt.rotate_left(tl.load(x_ptr + offs), R))


@triton.jit
def rotate_runtime_amount(x_ptr, out_ptr, r, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, dt.rotate_left(tl.load(x_ptr + offs), r))


@triton.jit
def shared_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offs, dt.via_shared(tl.load(x_ptr + offs)) * 2.0)


@triton.jit
def target_kernel(out_ptr):
    tl.store(out_ptr, dt.which_target())


@triton.jit
def cuda_only_kernel(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, dt.cuda_only(tl.load(x_ptr + offs)))


@triton.jit
def native_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offs, dt.double_native(tl.load(x_ptr + offs)) + 1.0)


@triton.jit
def plain_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0)


@triton.jit
def _helper_rotate(v, R: tl.constexpr):
    return dt.rotate_left(v, R)


@triton.jit
def helper_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, _helper_rotate(tl.load(x_ptr + offs), 5))


I32 = {"x_ptr": "*i32", "out_ptr": "*i32"}
F32 = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
