"""The hazard checker: each wrong kernel is caught with an error naming the op and the kernel's source line,
and its corrected twin runs and gives the right result."""

from __future__ import annotations

import re

import pytest
import torch
import utlx_interp_kernels as K
from triton.tools.tensor_descriptor import TensorDescriptor
from utlx.interpreter import CHECKS_ENV, UtlxDeadlockError, UtlxHazardError
from utlx_interp_host import check_against_fp32, make_inputs, run_hopper_pipelined, run_ws_persistent

KERNELS_FILE = "utlx_interp_kernels.py"


def _hazard(fn, *args, **kwargs) -> UtlxHazardError:
    """Run ``fn`` and return the utlx hazard it raised (the interpreter wraps kernel errors)."""
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    exc: BaseException | None = info.value
    while exc is not None and not isinstance(exc, UtlxHazardError):
        exc = exc.__cause__ or exc.__context__
    assert exc is not None, f"expected a UtlxHazardError, got {info.value!r}"
    return exc


def _names_line(err: BaseException, code: str) -> None:
    """The message points at ``utlx_interp_kernels.py:<line>`` and quotes the kernel line containing ``code``."""
    msg = str(err)
    assert re.search(rf"{re.escape(KERNELS_FILE)}:\d+ in \w+: `[^`]*{re.escape(code)}[^`]*`", msg), msg


# --------------------------------------------------------- reading a buffer whose copy was not waited for


def _copy(commit: bool, wait: bool) -> torch.Tensor:
    src = torch.arange(64, dtype=torch.float32)
    dst = torch.zeros_like(src)
    K.copy_tile_cp_async[(1,)](src, dst, BLOCK=64, COMMIT=commit, WAIT=wait)
    return dst


def test_read_before_wait_group_is_caught():
    err = _hazard(_copy, commit=True, wait=False)
    assert "local_load reads" in str(err) and "has not been waited for" in str(err)
    _names_line(err, "tlx.local_load(buf)")


def test_read_after_wait_group_passes():
    assert torch.equal(_copy(commit=True, wait=True), torch.arange(64, dtype=torch.float32))


def test_pipelined_gemm_with_wait_count_too_high_is_caught():
    a, b, c = make_inputs(64, 64, 128)
    err = _hazard(run_hopper_pipelined, a, b, c, stages=3, wait_pending=2)
    assert "async_dot reads a_ring[0]" in str(err), str(err)
    _names_line(err, "tlx.async_dot(")


def test_pipelined_gemm_with_right_wait_count_passes():
    a, b, c = make_inputs(64, 64, 128)
    check_against_fp32(run_hopper_pipelined(a, b, c, stages=3, wait_pending=1), a, b)


# --------------------------------------------------------- overwriting a buffer an async_dot still reads


def test_prefetch_before_dot_wait_is_caught():
    a, b, c = make_inputs(64, 64, 128)
    err = _hazard(run_hopper_pipelined, a, b, c, prefetch_first=True)
    msg = str(err)
    assert "async_load overwrites a_ring[0]" in msg and "async_dot issued at" in msg, msg
    assert "async_dot_wait" in msg
    _names_line(err, "tlx.async_load(a_ptrs")


def test_ws_consumer_releasing_stage_before_dot_wait_is_caught():
    a, b, c = make_inputs(64, 64, 128, seed=5)
    err = _hazard(run_ws_persistent, a, b, c, arrive_early=True)
    msg = str(err)
    assert "async_descriptor_load overwrites a_ring" in msg and "still reads it" in msg, msg
    _names_line(err, "tlx.async_descriptor_load(a_desc")


def test_ws_consumer_releasing_stage_after_dot_wait_passes():
    a, b, c = make_inputs(64, 64, 128, seed=5)
    check_against_fp32(run_ws_persistent(a, b, c, arrive_early=False), a, b)


# --------------------------------------------------------- waiting on a barrier that can never complete


def _tma_copy(expect_tiles: int = 1, wait: bool = True, fence: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.randn(32, 32).to(torch.float16)
    dst = torch.zeros_like(src)
    K.copy_tile_tma[(1,)](TensorDescriptor.from_tensor(src, [32, 32]), TensorDescriptor.from_tensor(dst, [32, 32]),
                          BLOCK=32, EXPECT_TILES=expect_tiles, WAIT=wait, FENCE=fence)
    return src, dst


def test_expect_bytes_larger_than_copies_deadlocks_with_diagnosis():
    err = _hazard(_tma_copy, expect_tiles=2)
    assert isinstance(err, UtlxDeadlockError)
    msg = str(err)
    assert "barrier_wait on bar[0] for phase parity 0" in msg and "can never complete" in msg, msg
    assert "2048 announced bytes not delivered" in msg, msg
    _names_line(err, "tlx.barrier_wait(bar, 0)")


def test_expect_bytes_matching_copies_passes():
    src, dst = _tma_copy(expect_tiles=1)
    assert torch.equal(src, dst)


def test_ws_consumers_never_releasing_stages_deadlock():
    a, b, c = make_inputs(64, 64, 128, seed=6)
    err = _hazard(run_ws_persistent, a, b, c, arrives=False)
    assert isinstance(err, UtlxDeadlockError)
    msg = str(err)
    assert "deadlock in warp-specialized region" in msg, msg
    # every task is listed with the wait it is stuck in
    assert re.search(r"task 0 \(default\): barrier_wait on empty_a\[\d\]", msg), msg
    assert re.search(r"task 1 \(num_warps=4\) replica 0: barrier_wait on full_a\[\d\]", msg), msg
    assert re.search(r"task 1 \(num_warps=4\) replica 1: barrier_wait on full_a\[\d\]", msg), msg


# --------------------------------------------------------- waiting for more groups than were committed


def test_wait_group_without_commit_is_caught():
    err = _hazard(_copy, commit=False, wait=True)
    msg = str(err)
    assert "async_load_wait_group(0)" in msg and "waits for more groups than were committed" in msg, msg
    _names_line(err, "tlx.async_load_wait_group(0)")


# --------------------------------------------------------- TMA-specific: unwaited TMA load, TMA store after local_store


def test_reading_tma_destination_without_barrier_wait_is_caught():
    err = _hazard(_tma_copy, wait=False)
    msg = str(err)
    assert "local_load reads buf" in msg and "barrier_wait on bar[0]" in msg, msg
    _names_line(err, "tlx.local_load(buf)")


def test_tma_store_of_unfenced_local_store_is_ordered_as_compiled():
    # Triton's fence insertion puts a fence.proxy.async before a TMA store whose source registers wrote
    # (compile/test_tma_store_fence.py shows it in the PTX), so this is no race; the bulk async_store
    # stays checked (test_interp_tlx_ops.test_async_store_without_async_shared_fence_is_caught).
    src, dst = _tma_copy(fence=False)
    assert torch.equal(src, dst)


def test_fenced_tma_copy_round_trip_passes():
    src, dst = _tma_copy()
    assert torch.equal(src, dst)


# --------------------------------------------------------- the switch


def test_checker_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(CHECKS_ENV, "0")
    # the racy kernel now runs (the interpreter moves data eagerly, so the numbers happen to be right)
    assert torch.equal(_copy(commit=True, wait=False), torch.arange(64, dtype=torch.float32))
    a, b, c = make_inputs(64, 64, 128)
    check_against_fp32(run_hopper_pipelined(a, b, c, prefetch_first=True), a, b)
    # a deadlock is not a hazard check: it is still reported rather than hanging
    assert isinstance(_hazard(_tma_copy, expect_tiles=2), UtlxDeadlockError)
