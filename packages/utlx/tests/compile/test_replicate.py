"""``async_task(replicate=N)``: each replica is traced on its own, with ``async_task_replica_id()`` a
compile-time constant, and becomes its own ``ttg.warp_specialize`` partition (the consumer groups of the
Hopper tutorials). Checked on small kernels of ours in TTGIR and PTX for cuda:90.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel


@triton.jit
def _replicas(out_ptr, N_REP: tl.constexpr, REGS: tl.constexpr):
    bars = tlx.alloc_barriers(N_REP, 1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for i in tl.static_range(N_REP):
                tlx.barrier_wait(bars[i], 0)
        with tlx.async_task(num_warps=4, registers=REGS, replicate=N_REP):
            cid: tl.constexpr = tlx.async_task_replica_id()
            offs = tl.arange(0, 128)
            tl.store(out_ptr + cid * 128 + offs, offs + cid * 1000)
            if cid == 1:
                tlx.named_barrier_arrive(9, 256)
            else:
                tlx.named_barrier_wait(9, 256)
            tlx.barrier_arrive(bars[cid])


def _partitions(ttgir: str) -> list[str]:
    """The text of each worker partition, in order."""
    starts = [m.start() for m in re.finditer(r"partition\d+\(", ttgir)]
    return [ttgir[s:ttgir.index("ttg.warp_return", s)] for s in starts]


@pytest.fixture(scope="module")
def two_replicas():
    return compile_kernel(_replicas, {"out_ptr": "*i32"}, {"N_REP": 2, "REGS": 232})


def test_each_replica_is_a_partition_with_its_warps_and_registers(two_replicas):
    ttgir = two_replicas.asm["ttgir"]
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert re.findall(r"partition(\d)\([^\n]*\) num_warps\((\d)\)", ttgir) == [("0", "4"), ("1", "4")]
    assert "requestedRegisters = array<i32: 232, 232>" in ttgir
    regs = re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+);", two_replicas.asm["ptx"])
    assert ("inc", "232") in regs  # each consumer group raises its budget; the 4-warp default gives up registers
    assert two_replicas.metadata.num_warps == 12  # 4 (default) + 2 x 4


def test_replica_id_is_a_compile_time_constant_per_replica(two_replicas):
    first, second = _partitions(two_replicas.asm["ttgir"])
    # replica 1 stores at +128 with values + 1000; replica 0 folds both to nothing
    assert "1000" not in first and "dense<1000>" in second
    assert "dense<128>" not in first and ("dense<128>" in second or "128 : i32" in second)
    # the constexpr branch: only replica 1 arrives on named barrier 9, only replica 0 waits there
    assert "bar.arrive 9, 256" in second and "bar.arrive" not in first
    assert "bar.sync 9, 256" in first and "bar.sync 9, 256" not in second


def test_replica_bodies_index_their_own_barrier(two_replicas):
    first, second = _partitions(two_replicas.asm["ttgir"])
    for part, idx in ((first, "%c0_i32"), (second, "%c1_i32")):
        arrive = re.search(r"(%\w+) = ttg\.memdesc_index %\w+\[(%\w+)\][^\n]*\n[^\n]*ttng\.arrive_barrier \1", part)
        assert arrive and arrive.group(2).startswith(idx), part


def test_three_replicas_without_register_requests():
    k = compile_kernel(_replicas, {"out_ptr": "*i32"}, {"N_REP": 3, "REGS": None})
    ttgir = k.asm["ttgir"]
    assert len(re.findall(r"partition\d\([^\n]*\) num_warps\(4\)", ttgir)) == 3
    assert "requestedRegisters" not in ttgir


@triton.jit
def _replicated_default(out_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default", replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            tl.store(out_ptr + cid * 128 + tl.arange(0, 128), tl.arange(0, 128) + cid)
        with tlx.async_task(num_warps=1):
            pass


def test_replicas_of_the_default_task_run_on_the_kernels_warps():
    ttgir = compile_kernel(_replicated_default, {"out_ptr": "*i32"}, {}, num_warps=8).asm["ttgir"]
    assert re.findall(r"partition(\d)\([^\n]*\) num_warps\((\d)\)", ttgir) == [("0", "8"), ("1", "1")]


@triton.jit
def _names_stay_in_their_task(out_ptr):
    x = 7
    with tlx.async_tasks():
        with tlx.async_task("default"):
            x = 1
            tl.store(out_ptr, x)
        with tlx.async_task(num_warps=4, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()  # bound once per replica: no "already defined"
            tl.store(out_ptr + 1 + cid, x)


def test_each_task_and_replica_has_its_own_scope():
    ttgir = compile_kernel(_names_stay_in_their_task, {"out_ptr": "*i32"}, {}).asm["ttgir"]
    for part in _partitions(ttgir):
        assert re.search(r"arith\.constant 7 : i32", part) or "%arg" in part  # the outer x, not the default's 1


@triton.jit
def _replica_id_outside(out_ptr):
    tl.store(out_ptr, tlx.async_task_replica_id())


def test_replica_id_outside_a_task_is_reported():
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_replica_id_outside, {"out_ptr": "*i32"}, {})
    assert "utlx.async_task_replica_id" in str(info.value) and "inside" in str(info.value)


@triton.jit
def _plain_with(out_ptr):
    with tl.range(0, 1) as r:  # noqa: F841  (not one of ours: Triton's own visit_With handles it)
        pass


def test_other_with_statements_are_left_to_triton():
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_plain_with, {"out_ptr": "*i32"}, {})
    # stock visit_With calls the context manager with _semantic (what Triton itself reports)
    assert "unexpected keyword argument '_semantic'" in str(info.value)
