"""Misused TLX ops are compile-time errors that name the op, what is wrong, and the kernel's source line.

Why: the issue asks for "a compile-time error naming the op and the kernel's source line" for mismatched
shapes or dtypes, wait counts that cannot be right and bad buffer indices, never an LLVM/MLIR failure
further down. The checks run while Triton traces the kernel (``utlx.compiler.common.mem_ops``), so Triton wraps the
``UtlxCompileError`` in a ``CompilationError`` that quotes the call. Every case fails before any MLIR pass
runs, so the whole file takes a second or two.
"""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from triton.compiler.errors import CompilationError
from utlx.compiler.common.errors import UtlxCompileError

BOTH = ("cuda:90", "hip:gfx942")


@triton.jit
def store_kernel(x_ptr, R: tl.constexpr, C: tl.constexpr, DT: tl.constexpr):
    bufs = tlx.local_alloc((32, 32), tl.float16, 1)
    x = tl.zeros((R, C), DT)
    tlx.local_store(tlx.local_view(bufs, 0), x)


@triton.jit
def async_load_kernel(x_ptr, n):
    bufs = tlx.local_alloc((32, 32), tl.float16, 2)
    offs = tl.arange(0, 32)
    tlx.async_load(x_ptr + offs[:, None] * 32 + offs[None, :], tlx.local_view(bufs, 0))
    tlx.async_load_commit_group()
    tlx.async_load_wait_group(n)


@triton.jit
def wait_group_kernel(x_ptr, N: tl.constexpr):
    tlx.async_load_wait_group(N)


@triton.jit
def async_dot_kernel(x_ptr, K2: tl.constexpr, ACC_N: tl.constexpr, W: tl.constexpr):
    a = tlx.local_alloc((64, 32), tl.float16, 1)
    b = tlx.local_alloc((K2, 64), tl.float16, 1)
    acc = tl.zeros((64, ACC_N), tl.float32)
    acc = tlx.async_dot(tlx.local_view(a, 0), tlx.local_view(b, 0), acc)
    acc = tlx.async_dot_wait(W, acc)


@triton.jit
def view_kernel(x_ptr, IDX: tl.constexpr, NUM: tl.constexpr):
    bufs = tlx.local_alloc((32, 32), tl.float16, NUM)
    tlx.local_view(bufs, IDX)


@triton.jit
def runtime_shape_kernel(x_ptr, n):
    tlx.local_alloc((n, 32), tl.float16, 1)


@triton.jit
def slice_kernel(x_ptr, OFF: tl.constexpr, W: tl.constexpr):
    bufs = tlx.local_alloc((32, 64), tl.float16, 1)
    tlx.local_slice(tlx.local_view(bufs, 0), [0, OFF], [32, W])


def _error(fn, signature: dict[str, str], constexprs: dict, target: str = "cuda:90") -> str:
    """Compile, expect the trace-time error, check its type and cause; return its text."""
    with pytest.raises(CompilationError) as info:
        compile_kernel(fn, signature, constexprs, target)
    assert isinstance(info.value.__cause__, UtlxCompileError), repr(info.value.__cause__)
    return str(info.value)


def _points_at(text: str, fn, line: str) -> None:
    """The message quotes ``line`` and its ``at L:C`` header is that line of the kernel's source."""
    src = fn.src.splitlines()
    number = 1 + next(i for i, s in enumerate(src) if line in s)  # Triton numbers the ``def`` line 1
    assert line in text, text
    assert f"at {number}:" in text, text
    assert "LLVM" not in text and "MLIR" not in text and "failed to legalize" not in text


def _expect_error(fn, signature: dict[str, str], constexprs: dict, line: str, *messages: str,
                  target: str = "cuda:90") -> None:
    """Compiling ``fn`` fails at trace time with every one of ``messages`` in the error, which points at ``line``."""
    text = _error(fn, signature, constexprs, target)
    for message in messages:
        assert message in text, text
    _points_at(text, fn, line)


@pytest.mark.parametrize("target", BOTH)
def test_local_store_shape_mismatch(target):
    text = _error(store_kernel, {"x_ptr": "*fp16"}, {"R": 32, "C": 64, "DT": tl.float16}, target)
    assert "utlx.local_store: shape mismatch: tensor [32, 64] vs buffer [32, 32]" in text
    assert "tlx.local_slice" in text  # what to do
    _points_at(text, store_kernel, "tlx.local_store(tlx.local_view(bufs, 0), x)")


@pytest.mark.parametrize("target", BOTH)
def test_local_store_dtype_mismatch(target):
    _expect_error(store_kernel, {"x_ptr": "*fp16"}, {"R": 32, "C": 32, "DT": tl.float32},
                  "tlx.local_store(tlx.local_view(bufs, 0), x)",
                  "utlx.local_store: dtype mismatch: tensor fp32 vs buffer fp16", "x.to(tl.float16)", target=target)


def test_async_load_dtype_mismatch():
    _expect_error(async_load_kernel, {"x_ptr": "*fp32", "n": "i32"}, {},
                  "tlx.async_load(x_ptr + offs[:, None] * 32",
                  "utlx.async_load: dtype mismatch: pointers to fp32 vs buffer fp16", "tlx.dtype_of(ptr)")


def test_async_load_wait_group_runtime_count():
    text = _error(async_load_kernel, {"x_ptr": "*fp16", "n": "i32"}, {})
    assert "utlx.async_load_wait_group: 'pendings' must be a compile-time int" in text
    assert "runtime int32 scalar" in text and "tl.constexpr" in text
    _points_at(text, async_load_kernel, "tlx.async_load_wait_group(n)")


def test_async_load_wait_group_negative_count():
    _expect_error(wait_group_kernel, {"x_ptr": "*fp16"}, {"N": -1},
                  "tlx.async_load_wait_group(N)", "utlx.async_load_wait_group: 'pendings' is -1", "NUM_STAGES >= 2")


def test_async_dot_inner_dimensions_differ():
    _expect_error(async_dot_kernel, {"x_ptr": "*fp16"}, {"K2": 64, "ACC_N": 64, "W": 0},
                  "acc = tlx.async_dot(tlx.local_view(a, 0)",
                  "utlx.async_dot: shape mismatch: A is 64x32 but B is 64x64 (inner dimensions differ)")


def test_async_dot_accumulator_of_wrong_shape():
    _expect_error(async_dot_kernel, {"x_ptr": "*fp16"}, {"K2": 32, "ACC_N": 32, "W": 0},
                  "acc = tlx.async_dot(tlx.local_view(a, 0)",
                  "utlx.async_dot: acc must be a 64x64 tensor (A is 64x32, B is 32x64), got 64x32",
                  "tl.zeros((64, 64), tl.float32)")


def test_async_dot_wait_negative_count():
    _expect_error(async_dot_kernel, {"x_ptr": "*fp16"}, {"K2": 32, "ACC_N": 64, "W": -1},
                  "acc = tlx.async_dot_wait(W, acc)",
                  "utlx.async_dot_wait: 'pendings' must be a compile-time int >= 0, got -1")


@pytest.mark.parametrize("target", BOTH)
def test_local_view_constant_index_out_of_range(target):
    _expect_error(view_kernel, {"x_ptr": "*fp16"}, {"IDX": 2, "NUM": 2},
                  "tlx.local_view(bufs, IDX)", "utlx.local_view: buffer index 2 is out of range for 2 buffers",
                  "valid indices are 0..1", target=target)


@pytest.mark.parametrize("target", BOTH)
def test_local_alloc_zero_buffers(target):
    _expect_error(view_kernel, {"x_ptr": "*fp16"}, {"IDX": 0, "NUM": 0},
                  "bufs = tlx.local_alloc((32, 32), tl.float16, NUM)",
                  "utlx.local_alloc: 'num' must be a compile-time int >= 1, got 0", target=target)


@pytest.mark.parametrize("target", BOTH)
def test_local_alloc_runtime_shape(target):
    text = _error(runtime_shape_kernel, {"x_ptr": "*fp16", "n": "i32"}, {}, target)
    assert "utlx.local_alloc: 'shape' must be a tuple of compile-time ints" in text
    assert "(a runtime int32 scalar (not a compile-time value), 32)" in text
    assert "tl.constexpr" in text and "object at 0x" not in text
    _points_at(text, runtime_shape_kernel, "tlx.local_alloc((n, 32), tl.float16, 1)")


@pytest.mark.parametrize("target", BOTH)
def test_local_slice_out_of_bounds(target):
    _expect_error(slice_kernel, {"x_ptr": "*fp16"}, {"OFF": 48, "W": 32},
                  "tlx.local_slice(tlx.local_view(bufs, 0), [0, OFF], [32, W])",
                  "utlx.local_slice: slice offset [0, 48] + shape [32, 32] exceeds the buffer shape [32, 64]",
                  target=target)
