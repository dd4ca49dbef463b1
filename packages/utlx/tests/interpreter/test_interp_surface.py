"""The op surface under the interpreter: every op is a builtin with a CPU body, the hooks install and undo
themselves, ``triton.language.extra.tlx`` aliases utlx, and warp-specialized tasks behave like tasks."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
import utlx
import utlx_interp_kernels as K
from triton.language import core as tl_core
from utlx import local_alloc as imported_local_alloc
from utlx import local_view as imported_local_view
from utlx.interpreter import UtlxInterpreterError, installed
from utlx.language import _dispatch, registered_ops


def test_every_op_is_a_documented_builtin_with_a_cpu_body():
    assert len(utlx.OPS) >= 35
    missing = [name for name in utlx.OPS if not registered_ops().get(name, (False, False))[1]]
    assert missing == []
    for name in utlx.OPS:
        fn = getattr(utlx, name)
        assert tl_core.is_builtin(fn), name
        assert (fn.__doc__ or "").strip(), f"{name} has no docstring"


def test_tlx_signatures_are_kept():
    import inspect

    assert list(inspect.signature(utlx.async_load).parameters)[:4] == ["src", "result", "mask", "other"]
    assert list(inspect.signature(utlx.local_store).parameters)[:2] == ["dst", "src"]
    assert list(inspect.signature(utlx.async_dot).parameters)[:3] == ["A", "B", "acc"]
    assert list(inspect.signature(utlx.barrier_wait).parameters)[:2] == ["bar", "phase"]


def test_hooks_are_installed_and_ops_are_restored_after_a_launch():
    assert installed()
    before = utlx.local_alloc
    src = torch.arange(16, dtype=torch.float32)
    dst = torch.zeros_like(src)
    K.copy_tile_cp_async[(1,)](src, dst, BLOCK=16, COMMIT=True, WAIT=True)
    assert torch.equal(src, dst)
    assert utlx.local_alloc is before and tl_core.is_builtin(utlx.local_alloc)


def test_calling_an_op_outside_a_kernel_says_so():
    with pytest.raises(ValueError, match=r"triton\.jit"):
        utlx.local_alloc((16,), tl.float32, 1)


def test_compile_path_error_names_the_op_and_target():
    class _Options:
        backend_name = "cuda"
        arch = "sm90"

    class _Builder:
        options = _Options()

    class _Semantic:
        builder = _Builder()

    # An op with a CPU body only (registered the way utlx registers its bodies).
    _dispatch.register_interpreter_impl("_cpu_only_probe")(lambda _semantic: None)
    with pytest.raises(_dispatch.UtlxDispatchError, match=r"utlx\._cpu_only_probe: has no implementation for target "
                                                            r"cuda:90"):
        _dispatch.dispatch("_cpu_only_probe", _Semantic())
    assert issubclass(_dispatch.UtlxDispatchError, NotImplementedError)


def test_utlx_ops_are_tritonx_dsl_ops():
    from tritonx import dsl
    from utlx.language._op import LANGUAGE

    assert all(isinstance(getattr(utlx, name), dsl.Op) and getattr(utlx, name).language is LANGUAGE
               for name in utlx.OPS)
    assert LANGUAGE.name == "utlx" and set(utlx.OPS) <= set(LANGUAGE.ops)


def test_remaining_ops_on_cpu():
    block = 8
    out = torch.zeros(4 * block * block + 2, dtype=torch.float32)
    K.ops_probe[(1,)](out, BLOCK=block)
    tile = torch.arange(block * block, dtype=torch.float32).reshape(block, block)
    half = block // 2
    assert torch.equal(out[: block * block].reshape(block, block), tile.T)
    assert torch.equal(out[block * block:].reshape(-1)[: block * block].reshape(block, block)[:half, :half],
                       tile[half:, :half])
    assert torch.equal(out[2 * block * block: 2 * block * block + block * half].reshape(block, half), tile[:, half:])
    assert torch.all(out[3 * block * block: 4 * block * block] == 1.0)
    assert out[4 * block * block].item() == 1.0  # thread 0 + rank 0 + cluster of 1
    assert out[4 * block * block + 1].item() == 1.0  # clock64 > 0


@triton.jit
def _replicas_kernel(out_ptr, REPLICAS: tl.constexpr):
    ready = utlx.alloc_barriers(num_barriers=1, arrive_count=REPLICAS)
    total = 100
    with utlx.async_tasks():
        with utlx.async_task("default"):
            utlx.barrier_wait(utlx.local_view(ready, 0), 0)  # waits for every replica: needs interleaving
            tl.store(out_ptr + REPLICAS, total)
        with utlx.async_task(num_warps=1, replicate=REPLICAS):
            rid = utlx.async_task_replica_id()
            total = total + rid  # reads the enclosing value, assigns a task-local one
            tl.store(out_ptr + rid, total)
            utlx.barrier_arrive(utlx.local_view(ready, 0))


def test_replicas_run_with_their_ids_and_outer_values():
    out = torch.zeros(4, dtype=torch.int32)
    _replicas_kernel[(1,)](out, REPLICAS=3)
    assert out.tolist() == [100, 101, 102, 100]  # the default task still sees the outer value


@triton.jit
def _failing_task_kernel(out_ptr):
    with utlx.async_tasks():
        with utlx.async_task("default"):
            tl.store(out_ptr, 1)
        with utlx.async_task(num_warps=1):
            utlx.local_view(utlx.local_alloc((4,), tl.float32, 2), 5)  # out of range


def test_an_error_inside_a_task_reaches_the_caller():
    with pytest.raises(Exception) as info:
        _failing_task_kernel[(1,)](torch.zeros(1, dtype=torch.int32))
    assert "index 5 out of range" in str(info.value)


def test_interpreter_errors_name_the_op():
    @triton.jit
    def bad_store(out_ptr):
        buf = utlx.local_view(utlx.local_alloc((4,), tl.float32, 1), 0)
        utlx.local_store(buf, tl.arange(0, 4))  # int32 into a float32 buffer

    with pytest.raises(Exception) as info:
        bad_store[(1,)](torch.zeros(4))
    cause = info.value.__cause__
    assert isinstance(cause, UtlxInterpreterError)
    assert "local_store: value of dtype int32 does not match buffer buf[0] of dtype fp32" in str(cause)


def test_tensor_descriptor_storage_round_trip():
    @triton.jit
    def copy_via_stored_desc(src_ptr, dst_ptr, BLOCK: tl.constexpr):
        storage = utlx.allocate_tensor_descriptor(2)
        utlx.make_tensor_descriptor(storage[1], src_ptr, [BLOCK, BLOCK], [BLOCK, 1], [BLOCK, BLOCK])
        desc = utlx.reinterpret_tensor_descriptor(storage[1], [BLOCK, BLOCK], tl.float32)
        offs = tl.arange(0, BLOCK)
        tl.store(dst_ptr + offs[:, None] * BLOCK + offs[None, :], desc.load([0, 0]))

    src = torch.randn(16, 16)
    dst = torch.zeros_like(src)
    copy_via_stored_desc[(1,)](src, dst, BLOCK=16)
    assert torch.equal(src, dst)


_ALIAS_SCRIPT = textwrap.dedent(
    """
    import importlib.abc, importlib.machinery, sys, types
    mode = sys.argv[1]
    if mode == "real":
        class Real(importlib.abc.MetaPathFinder, importlib.abc.Loader):
            def find_spec(self, name, path=None, target=None):
                if name == "triton.language.extra.tlx":
                    return importlib.machinery.ModuleSpec(name, self)
            def create_module(self, spec):
                return types.ModuleType(spec.name)
            def exec_module(self, module):
                module.REAL = True
        sys.meta_path.insert(0, Real())
    import utlx
    import triton.language.extra.tlx as tlx
    print(tlx is utlx, getattr(tlx, "REAL", False))
    """
)


@pytest.mark.parametrize(("mode", "expected"), [("none", "True False"), ("real", "False True")])
def test_triton_language_extra_tlx_alias_yields_to_a_real_module(mode, expected):
    proc = subprocess.run([sys.executable, "-c", _ALIAS_SCRIPT, mode], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == expected


def test_bf16_operands_are_converted_exactly():
    @triton.jit
    def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        a_buf = utlx.local_view(utlx.local_alloc((N, N), utlx.dtype_of(a_ptr), 1), 0)
        b_buf = utlx.local_view(utlx.local_alloc((N, N), utlx.dtype_of(b_ptr), 1), 0)
        idx = offs[:, None] * N + offs[None, :]
        utlx.local_store(a_buf, tl.load(a_ptr + idx))
        utlx.local_store(b_buf, tl.load(b_ptr + idx))
        acc = utlx.async_dot(a_buf, b_buf, tl.zeros((N, N), dtype=tl.float32))
        acc = utlx.async_dot_wait(0, acc)
        tl.store(c_ptr + idx, acc)

    a = torch.randn(16, 16).to(torch.bfloat16)
    b = torch.randn(16, 16).to(torch.bfloat16)
    c = torch.zeros(16, 16)
    dot_kernel[(1,)](a, b, c, N=16)
    np.testing.assert_allclose(c.numpy(), (a.float() @ b.float()).numpy(), rtol=1e-5, atol=1e-5)


@triton.jit
def _named_barrier_handoff(out_ptr):
    with utlx.async_tasks():
        with utlx.async_task("default"):
            tl.store(out_ptr + 2, 1)
        with utlx.async_task(num_warps=4, replicate=2):
            rid = utlx.async_task_replica_id()
            if rid == 0:
                utlx.named_barrier_wait(3, 256)  # both warp groups (2 x 128 threads)
                tl.store(out_ptr + 1, tl.load(out_ptr) + 1)
            else:
                tl.store(out_ptr, 41)
                utlx.named_barrier_arrive(3, 256)


def test_named_barrier_orders_warp_groups():
    out = torch.zeros(3, dtype=torch.int32)
    _named_barrier_handoff[(1,)](out)
    assert out.tolist() == [41, 42, 1]  # replica 0 ran first but waited for replica 1's store


@triton.jit
def _from_imported_ops(out_ptr):
    buf = imported_local_view(imported_local_alloc((4,), tl.float32, 1), 0)
    utlx.local_store(buf, tl.full((4,), 2.5, tl.float32))
    tl.store(out_ptr + tl.arange(0, 4), utlx.local_load(buf))


def test_ops_imported_by_name_work_and_are_restored():
    out = torch.zeros(4)
    _from_imported_ops[(1,)](out)
    assert out.tolist() == [2.5] * 4
    assert tl_core.is_builtin(globals()["imported_local_alloc"])
