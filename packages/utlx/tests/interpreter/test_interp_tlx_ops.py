"""TLX's op surface under the CPU interpreter, each op against a float32/numpy reference on fresh random
data: ``bufs[i]``/``bars[i]`` indexing, replicated tasks, ``async_dot`` without an accumulator, views,
bulk and descriptor copies, fences, ids, warp votes, stochastic rounding, MXFP8, cluster-of-one remote
ops, storage alias specs (block-scaled Blackwell ops: test_interp_scaled.py); misuse raises errors naming
op, values and line.

Kernels import TLX the way Meta's tutorials do (``import triton.language.extra.tlx as tlx``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from triton.language.extra.tlx.warp_spec import get_bufidx_phase
from utlx.interpreter import UtlxHazardError
from utlx_interp_host import RNG
from utlx_interp_host import randn as _randn
from utlx_interp_host import utlx_error as _cause


def _hazard(launch) -> UtlxHazardError:
    """The hazard error ``launch()`` raises (the interpreter wraps it; :func:`_cause` unwraps it)."""
    with pytest.raises(Exception) as info:
        launch()
    err = _cause(info)
    assert isinstance(err, UtlxHazardError), repr(err)
    return err


# ------------------------------------------------------------------------------------- bufs[i] / bars[i]


@triton.jit
def _indexed_pipeline(x_ptr, y_ptr, N: tl.constexpr, STAGES: tl.constexpr, ROUNDS: tl.constexpr):
    """cp.async ring indexed as ``bufs[i]``; TMA-free mbarrier handshake between two tasks via ``bars[i]``."""
    offs = tl.arange(0, N)
    bufs = tlx.local_alloc((N,), tl.float32, STAGES)
    for r in tl.static_range(ROUNDS):
        tlx.async_load(x_ptr + r * N + offs, bufs[r % STAGES])
        tlx.async_load_commit_group()
        tlx.async_load_wait_group(0)
        tl.store(y_ptr + r * N + offs, tlx.local_load(bufs[r % STAGES]) * 2.0)
    ready = tlx.alloc_barriers(num_barriers=2, arrive_count=1)
    stage = tlx.local_alloc((N,), tl.float32, 2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_wait(ready[1], 0)
            tl.store(y_ptr + ROUNDS * N + offs, tlx.local_load(stage[1]) + 1.0)
        with tlx.async_task(num_warps=4):
            tlx.local_store(stage[1], tl.load(x_ptr + offs))
            tlx.barrier_arrive(ready[1])


def test_indexing_is_local_view():
    n, stages, rounds = 16, 2, 3
    x = _randn(rounds * n)
    y = torch.zeros((rounds + 1) * n)
    _indexed_pipeline[(1,)](x, y, N=n, STAGES=stages, ROUNDS=rounds)
    np.testing.assert_array_equal(y[: rounds * n].numpy(), x.numpy() * 2.0)
    np.testing.assert_array_equal(y[rounds * n:].numpy(), x[:n].numpy() + 1.0)


@triton.jit
def _indexed_read_before_wait(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    bufs = tlx.local_alloc((N,), tl.float32, 2)
    tlx.async_load(x_ptr + offs, bufs[1])
    tlx.async_load_commit_group()
    tl.store(y_ptr + offs, tlx.local_load(bufs[1]))  # the copy is still in flight


def test_hazard_checker_sees_indexed_views():
    err = _hazard(lambda: _indexed_read_before_wait[(1,)](_randn(8), torch.zeros(8), N=8))
    assert "local_load reads bufs[1]" in str(err) and "has not been waited for" in str(err)
    assert "_indexed_read_before_wait" in str(err)


@triton.jit
def _bar_out_of_range(y_ptr):
    bars = tlx.alloc_barriers(num_barriers=2)
    tlx.barrier_arrive(bars[2])


def test_indexing_out_of_range_names_op_value_and_line():
    with pytest.raises(Exception) as info:
        _bar_out_of_range[(1,)](torch.zeros(1))
    msg = str(_cause(info))
    assert "local_view (bars[i]): index 2 out of range for bars (2 barriers)" in msg
    assert "tlx.barrier_arrive(bars[2])" in msg


# ------------------------------------------------------------------------------------ replicated tasks


@triton.jit
def _replicated_consumers(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, REPLICAS: tl.constexpr):
    """A producer fills one buffer per replica; each replica (``replicate=``) scales its own slice."""
    rows = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    bufs = tlx.local_alloc((M, N), tl.float32, REPLICAS)
    full = tlx.alloc_barriers(num_barriers=REPLICAS, arrive_count=1)
    done = tlx.alloc_warp_barrier(num_barriers=1, num_warps=4, num_arrivals=REPLICAS)
    with tlx.async_tasks():
        with tlx.async_task("default", registers=40):
            for r in tl.static_range(REPLICAS):
                tlx.local_store(bufs[r], tl.load(x_ptr + r * M * N + rows))
                tlx.barrier_arrive(full[r])
            tlx.barrier_wait(done[0], 0)  # every replica arrived once
            tl.store(y_ptr + REPLICAS * M * N, 1.0)
        with tlx.async_task(num_warps=4, registers=232, replicate=REPLICAS):
            rid = tlx.async_task_replica_id()
            tlx.barrier_wait(tlx.local_view(full, rid), 0)
            tile = tlx.local_load(bufs[rid])
            tl.store(y_ptr + rid * M * N + rows, tile * (rid + 1))
            tlx.barrier_arrive(done[0])


def test_replicas_each_get_their_id_and_registers_are_accepted():
    m, n, replicas = 4, 8, 3
    x = _randn(replicas * m * n)
    y = torch.zeros(replicas * m * n + 1)
    _replicated_consumers[(1,)](x, y, M=m, N=n, REPLICAS=replicas)
    ref = x.numpy().reshape(replicas, -1) * np.arange(1, replicas + 1, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(y[:-1].numpy(), ref.reshape(-1))
    assert y[-1].item() == 1.0


@triton.jit
def _replica_id_is_constexpr(y_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            pass
        with tlx.async_task(num_warps=4, replicate=2):
            RID: tl.constexpr = tlx.async_task_replica_id()
            tl.static_assert(RID < 2)
            tl.store(y_ptr + RID, RID + 10)


def test_replica_id_is_a_constexpr():
    y = torch.zeros(2, dtype=torch.int32)
    _replica_id_is_constexpr[(1,)](y)
    assert y.tolist() == [10, 11]


@triton.jit
def _bad_registers(y_ptr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            pass
        with tlx.async_task(num_warps=4, registers=100, replicate=2):
            tl.store(y_ptr, 1)


@triton.jit
def _replica_id_outside(y_ptr):
    tl.store(y_ptr, tlx.async_task_replica_id())


def test_task_misuse_is_named():
    with pytest.raises(Exception) as info:
        _bad_registers[(1,)](torch.zeros(1))
    msg = str(_cause(info))
    assert "async_task: registers=100 must be a multiple of 8 in [24, 256]" in msg and "_bad_registers" in msg
    with pytest.raises(Exception) as info:
        _replica_id_outside[(1,)](torch.zeros(1))
    assert "async_task_replica_id: called outside an async_task body" in str(_cause(info))


# ------------------------------------------------------------------------------------------- async_dot


@triton.jit
def _dot_without_acc(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rk = tl.arange(0, K)
    a_idx = tl.arange(0, M)[:, None] * K + rk[None, :]
    b_idx = rk[:, None] * N + tl.arange(0, N)[None, :]
    c_idx = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    a_buf = tlx.local_alloc((M, K), tl.float16, 1)[0]
    b_buf = tlx.local_alloc((K, N), tl.float16, 1)[0]
    tlx.local_store(a_buf, tl.load(a_ptr + a_idx))
    tlx.local_store(b_buf, tl.load(b_ptr + b_idx))
    tlx.fence_async_shared()
    c = tlx.async_dot(a_buf, b_buf)  # no accumulator: A @ B
    c = tlx.async_dot_wait(0, c)
    tl.store(c_ptr + c_idx, c)
    d = tlx.async_dot(tl.load(a_ptr + a_idx), b_buf)  # A from registers
    d = tlx.async_dot_wait(0, d)
    tl.store(d_ptr + c_idx, d)


def test_async_dot_without_accumulator():
    m, n, k = 16, 32, 16
    a, b = _randn(m, k).half(), _randn(k, n).half()
    c, d = torch.zeros(m, n), torch.zeros(m, n)
    _dot_without_acc[(1,)](a, b, c, d, M=m, N=n, K=k)
    ref = a.float().numpy() @ b.float().numpy()
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d.numpy(), ref, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------ views


@triton.jit
def _views(x_ptr, trans_ptr, cols_ptr, bits_ptr, sub_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    h = tl.arange(0, N // 2)
    idx = r[:, None] * N + r[None, :]
    buf = tlx.local_alloc((N, N), tl.float32, 2)[1]
    tlx.local_store(buf, tl.load(x_ptr + idx))
    tl.store(trans_ptr + idx, tlx.local_load(tlx.local_trans(buf, (1, 0))))
    tl.store(cols_ptr + r[:, None] * (N // 2) + h[None, :], tlx.local_load(tlx.subslice(buf, N // 2, N // 2)))
    tl.store(bits_ptr + idx, tlx.local_load(tlx.local_reinterpret(buf, tl.int32)))
    part = tlx.local_slice(buf, [N // 2, N // 4], [N // 2, N // 2])
    tl.store(sub_ptr + h[:, None] * (N // 2) + h[None, :], tlx.local_load(part))


def test_trans_subslice_reinterpret_slice():
    n = 8
    x = _randn(n, n)
    trans, cols, sub = torch.zeros(n, n), torch.zeros(n, n // 2), torch.zeros(n // 2, n // 2)
    bits = torch.zeros(n, n, dtype=torch.int32)
    _views[(1,)](x, trans, cols, bits, sub, N=n)
    xn = x.numpy()
    np.testing.assert_array_equal(trans.numpy(), xn.T)
    np.testing.assert_array_equal(cols.numpy(), xn[:, n // 2:])
    np.testing.assert_array_equal(bits.numpy(), xn.view(np.int32))
    np.testing.assert_array_equal(sub.numpy(), xn[n // 2:, n // 4: n // 4 + n // 2])


# ------------------------------------------------------------------------------- bulk and TMA copies


@triton.jit
def _bulk_store(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    buf = tlx.local_alloc((N,), tl.float32, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + offs) + 3.0)
    tlx.fence("async_shared")
    tlx.async_store(y_ptr, buf, N * 4)
    tlx.async_descriptor_store_wait(0)


@triton.jit
def _bulk_store_unfenced(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    buf = tlx.local_alloc((N,), tl.float32, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + offs))
    tlx.fence("gpu")  # orders global memory, not the async proxy's view of shared memory
    tlx.async_store(y_ptr, buf, N * 4)


def test_async_store_after_fence():
    x = _randn(32)
    y = torch.zeros(32)
    _bulk_store[(1,)](x, y, N=32)
    np.testing.assert_array_equal(y.numpy(), x.numpy() + 3.0)


def test_async_store_without_async_shared_fence_is_caught():
    err = _hazard(lambda: _bulk_store_unfenced[(1,)](_randn(16), torch.zeros(16), N=16))
    assert "async_store reads buf[0]" in str(err) and "no fence_async_shared()" in str(err)


@triton.jit
def _device_descriptors(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Device-side TMA: descriptors made in the kernel (directly and through descriptor storage)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    storage = tlx.allocate_tensor_descriptor(2)
    tlx.make_tensor_descriptor(storage[0], x_ptr, [M, N], [N, 1], [BM, BN])
    x_desc = tlx.reinterpret_tensor_descriptor(storage[0], [BM, BN], tl.float32)
    y_desc = tlx.make_tensor_descriptor(None, y_ptr, [M, N], [N, 1], [BM, BN])
    tlx.async_descriptor_prefetch_tensor(x_desc, [pid_m * BM, pid_n * BN])
    buf = tlx.local_alloc((BM, BN), tl.float32, 1)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.barrier_expect_bytes(bar, BM * BN * 4)
    tlx.async_descriptor_load(x_desc, buf, [pid_m * BM, pid_n * BN], bar)
    tlx.barrier_wait(bar, 0)
    tlx.local_store(buf, tlx.local_load(buf) * -2.0)
    tlx.fence_async_shared()
    tlx.async_descriptor_store(y_desc, buf, [pid_m * BM, pid_n * BN])
    tlx.async_descriptor_store_wait(0)


def test_device_side_descriptors_copy_tiles():
    m, n = 24, 40  # not multiples of the tile: the descriptor pads and clips
    x = _randn(m, n)
    y = torch.zeros(m, n)
    _device_descriptors[(triton.cdiv(m, 16), triton.cdiv(n, 16))](x, y, m, n, BM=16, BN=16)
    np.testing.assert_array_equal(y.numpy(), x.numpy() * -2.0)


@triton.jit
def _bad_fence():
    tlx.fence("cta")


def test_fence_scope_is_checked():
    with pytest.raises(Exception) as info:
        _bad_fence[(1,)]()
    assert "fence: scope must be 'gpu', 'sys' or 'async_shared', got 'cta'" in str(_cause(info))


# ------------------------------------------------------------------------------------------------ ids


@triton.jit
def _ids(out_ptr):
    t0 = tlx.clock64()
    tl.store(out_ptr + 0, tlx.thread_id(0))
    tl.store(out_ptr + 1, tlx.thread_id(2))
    tl.store(out_ptr + 2, tlx.cluster_cta_rank())
    tl.store(out_ptr + 3, tlx.cluster_size_1d())
    tlx.cluster_barrier()  # a cluster of one CTA: nothing to wait for
    t1 = tlx.clock64()
    tl.store(out_ptr + 4, (t1 >= t0).to(tl.int64))
    tl.store(out_ptr + 5, t0)


def test_ids_and_clock():
    out = torch.full((6,), -1, dtype=torch.int64)
    _ids[(1,)](out)
    assert out[:5].tolist() == [0, 0, 0, 1, 1]  # thread 0 of a cluster of one CTA; the clock never runs back
    assert out[5].item() > 0


# ------------------------------------------------------------------------------------------ warp votes


@triton.jit
def _ballot(x_ptr, scalar_ptr, tensor_ptr, N: tl.constexpr, MASK: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(scalar_ptr + pid, tlx.vote_ballot_sync(MASK, pid % 3 == 0))
    offs = tl.arange(0, N)
    tl.store(tensor_ptr + pid * N + offs, tlx.vote_ballot_sync(MASK, tl.load(x_ptr + pid * N + offs) > 0))


@pytest.mark.parametrize("mask", [0xFFFFFFFF, 0x0F0F00FF])
def test_vote_ballot_sync(mask):
    n, progs = 64, 4
    x = _randn(progs * n)
    scalar = torch.zeros(progs, dtype=torch.int32)
    tensor = torch.zeros(progs * n, dtype=torch.int32)
    _ballot[(progs,)](x, scalar, tensor, N=n, MASK=mask)
    word = np.uint32(mask).view(np.int32)
    assert scalar.tolist() == [int(word) if p % 3 == 0 else 0 for p in range(progs)]
    # reference: each aligned group of 32 elements is one warp, lane l holding element 32 * g + l
    lanes = (x.numpy().reshape(-1, 32) > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)
    words = (lanes.sum(axis=1).astype(np.uint64) & np.uint64(mask)).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(tensor.numpy(), np.repeat(words, 32))


# ----------------------------------------------------------------------------------- stochastic rounding


@triton.jit
def _stoch_round(x_ptr, r_ptr, y_ptr, N: tl.constexpr, DST: tl.constexpr):
    offs = tl.arange(0, N)
    y = tlx.stoch_round(tl.load(x_ptr + offs), DST, tl.load(r_ptr + offs))
    tl.static_assert(y.dtype == DST)
    tl.store(y_ptr + offs, y.to(tl.float32))


def _toward_zero(x: np.ndarray, to: type) -> np.ndarray:
    """Nearest value of numpy dtype ``to`` toward zero (float32 reference; beyond the range: +-inf)."""
    with np.errstate(over="ignore"):
        near = x.astype(to)
    over = np.abs(near.astype(np.float64)) > np.abs(x.astype(np.float64))
    near[over] = np.nextafter(near[over], to(0))
    return near.astype(np.float32)


def test_stoch_round_bf16_adds_the_random_bits_below_the_kept_ones():
    n = 256
    x = _randn(n) * 100
    r = torch.from_numpy(RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.int32))
    y = torch.zeros(n)
    _stoch_round[(1,)](x, r, y, N=n, DST=tl.bfloat16)
    bits = x.numpy().view(np.uint32).astype(np.uint64)
    ref = ((bits + (r.numpy().view(np.uint32) & 0xFFFF)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(y.numpy(), ref)


def test_stoch_round_fp16_bounds_and_mean():
    n = 4096
    x = _randn(n) * 10
    x[:3] = torch.tensor([1e6, -1e6, 0.0])  # saturate to the largest finite fp16; zero stays zero
    y0, y1, ym = torch.zeros(n), torch.zeros(n), torch.zeros(n)
    _stoch_round[(1,)](x, torch.zeros(n, dtype=torch.int32), y0, N=n, DST=tl.float16)
    _stoch_round[(1,)](x, torch.full((n,), -1, dtype=torch.int32), y1, N=n, DST=tl.float16)
    lo = _toward_zero(x.numpy(), np.float16)
    lo[:2] = [65504.0, -65504.0]
    np.testing.assert_array_equal(y0.numpy(), lo)  # no random bits: truncation toward zero
    with np.errstate(over="ignore"):
        away = np.nextafter(lo.astype(np.float16), np.copysign(np.inf, x.numpy()).astype(np.float16))
    up = np.where(lo == x.numpy(), lo, away.astype(np.float32))
    up[:2] = [65504.0, -65504.0]
    np.testing.assert_array_equal(y1.numpy(), up)  # all random bits: away from zero unless exact
    # unbiased: the mean of many roundings of one value approaches it
    v = torch.full((n,), 1.2345678, dtype=torch.float32)
    r = torch.from_numpy(RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.int32))
    _stoch_round[(1,)](v, r, ym, N=n, DST=tl.float8e4nv)
    assert set(np.unique(ym.numpy())) <= {1.125, 1.25}
    assert abs(ym.numpy().mean() - 1.2345678) < 0.01


@triton.jit
def _stoch_round_bad(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tlx.stoch_round(tl.load(x_ptr + offs), tl.int8, offs.to(tl.uint32))


def test_stoch_round_misuse():
    with pytest.raises(Exception) as info:
        _stoch_round_bad[(1,)](torch.zeros(4), N=4)
    msg = str(_cause(info))
    assert "stoch_round: dst_ty must be tl.float8e5, tl.float8e4nv, tl.float16 or tl.bfloat16, got int8" in msg
    assert "_stoch_round_bad" in msg


# ------------------------------------------------------------------------------------------------ MXFP8


@triton.jit
def _mxfp8(x_ptr, q_ptr, s_ptr, M: tl.constexpr, K: tl.constexpr, VEC: tl.constexpr, DT: tl.constexpr):
    idx = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    sidx = tl.arange(0, M)[:, None] * (K // VEC) + tl.arange(0, K // VEC)[None, :]
    q_buf = tlx.local_alloc((M, K), DT, 1)[0]
    s_buf = tlx.local_alloc((M, K // VEC), tl.uint8, 1)[0]
    tlx._to_mxfp8_block(tl.load(x_ptr + idx), q_buf, s_buf, VEC, DT)
    tl.store(q_ptr + idx, tlx.local_load(q_buf).to(tl.float32))
    tl.store(s_ptr + sidx, tlx.local_load(s_buf).to(tl.int32))


@triton.jit
def _cast_through(x_ptr, y_ptr, N: tl.constexpr, DT: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(DT).to(tl.float32))


@pytest.mark.parametrize(("dt", "fmax"), [(tl.float8e4nv, 448.0), (tl.float8e5, 57344.0)])
def test_to_mxfp8_block_matches_the_mx_spec(dt, fmax):
    m, k, vec = 8, 64, 32
    x = _randn(m, k) * torch.from_numpy(np.exp2(RNG.integers(-20, 20, (m, 1))).astype(np.float32))
    x[0, :vec] = 0.0  # an all-zero block: scale 0, values 0
    q, s = torch.zeros(m, k), torch.zeros(m, k // vec, dtype=torch.int32)
    _mxfp8[(1,)](x, q, s, M=m, K=k, VEC=vec, DT=dt)
    blocks = x.numpy().reshape(m, k // vec, vec).astype(np.float64)
    ratio = (np.abs(blocks).max(axis=2) / fmax).astype(np.float32).astype(np.float64)
    exp = np.where(ratio > 0, np.ceil(np.log2(np.where(ratio > 0, ratio, 1.0))), -127)  # power of two >= ratio
    np.testing.assert_array_equal(s.numpy(), (exp + 127).astype(np.int32))
    scaled = np.clip(blocks / np.exp2(exp)[..., None], -fmax, fmax)
    scaled[0, 0] = 0.0
    # The float32 -> fp8 rounding is Triton's (its interpreter's cast rounds some values that cross a power of
    # two wrongly, e.g. 31.3 -> 16 in e4m3, an upstream bug), so the scaled values go through that same cast.
    ref = torch.zeros(m * k)
    _cast_through[(1,)](torch.from_numpy(scaled.astype(np.float32).reshape(-1)), ref, N=m * k, DT=dt)
    np.testing.assert_array_equal(q.numpy(), ref.numpy().reshape(m, k))


@triton.jit
def _ring(out_ptr, N: tl.constexpr, STAGES: tl.constexpr):
    for i in tl.static_range(N):
        idx, phase = get_bufidx_phase(i, STAGES)
        tl.store(out_ptr + 2 * i, idx)
        tl.store(out_ptr + 2 * i + 1, phase)


def test_warp_spec_get_bufidx_phase():
    out = torch.zeros(2 * 7, dtype=torch.int32)
    _ring[(1,)](out, N=7, STAGES=3)
    assert out.tolist() == [v for i in range(7) for v in (i % 3, (i // 3) & 1)]


@triton.jit
def _fp8_names(out_ptr):
    tl.static_assert(tlx.get_fp8_format_name(tl.float8e5) == "e5m2")
    tl.static_assert(tlx.get_fp8_format_name(tl.float8e4nv) == "e4m3")
    tl.store(out_ptr, 1)


def test_get_fp8_format_name():
    out = torch.zeros(1, dtype=torch.int32)
    _fp8_names[(1,)](out)
    assert out.item() == 1


# ------------------------------------------------------------------------------- remote ops (cluster of 1)
# (clusters of more CTAs: test_interp_cluster.py)


@triton.jit
def _remote_local(x_ptr, y_ptr, N: tl.constexpr, RANK: tl.constexpr):
    offs = tl.arange(0, N)
    bufs = tlx.local_alloc((N,), tl.float32, 2)
    bars = tlx.alloc_barriers(1, arrive_count=1)
    tlx.remote_shmem_store(bufs[0], tl.load(x_ptr + offs), RANK)
    bar = tlx.remote_view(bars[0], RANK)
    tlx.barrier_expect_bytes(bars[0], N * 4)
    tlx.async_remote_shmem_store(bufs[1], tl.load(x_ptr + offs) * 2.0, tlx.cluster_cta_rank(), bar)
    tlx.barrier_wait(bars[0], 0)
    tl.store(y_ptr + offs, tlx.local_load(bufs[0]) + tlx.local_load(bufs[1]))


def test_remote_ops_on_a_cluster_of_one():
    x = _randn(16)
    y = torch.zeros(16)
    _remote_local[(1,)](x, y, N=16, RANK=0)
    np.testing.assert_array_equal(y.numpy(), x.numpy() * 3.0)
    with pytest.raises(Exception) as info:
        _remote_local[(1,)](x, y, N=16, RANK=1)
    msg = str(_cause(info))
    assert "remote_shmem_store: cluster CTA rank 1 is out of range for a cluster of 1 CTA(s)" in msg


@triton.jit
def _remote_arrive(y_ptr, RANK: tl.constexpr):
    bars = tlx.alloc_barriers(1, arrive_count=1)
    tlx.barrier_arrive(bars[0], 1, remote_cta_rank=RANK)
    tlx.barrier_wait(bars[0], 0)
    tl.store(y_ptr, 1.0)


def test_remote_arrive_on_a_cluster_of_one():
    y = torch.zeros(1)
    _remote_arrive[(1,)](y, RANK=0)
    assert y.item() == 1.0
    with pytest.raises(Exception) as info:
        _remote_arrive[(1,)](y, RANK=1)
    msg = str(_cause(info))
    assert "barrier_arrive: cluster CTA rank 1 is out of range for a cluster of 1 CTA(s)" in msg
    assert "remote_cta_rank=RANK" in msg  # the kernel line


@triton.jit
def _multicast_load(x_ptr, y_ptr, TARGETS: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[16, 16], strides=[16, 1], block_shape=[16, 16])
    buf = tlx.local_alloc((16, 16), tl.float32, 1)
    bar = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bar[0], 16 * 16 * 4)
    tlx.async_descriptor_load(desc, buf[0], [0, 0], bar[0], multicast_targets=TARGETS)
    tlx.barrier_wait(bar[0], 0)
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    tl.store(y_ptr + offs, tlx.local_load(buf[0]))


def test_multicast_on_a_cluster_of_one():
    x = _randn(256)
    y = torch.zeros(256)
    _multicast_load[(1,)](x, y, TARGETS=(0,))
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    with pytest.raises(Exception) as info:
        _multicast_load[(1,)](x, y, TARGETS=(0, 1))
    msg = str(_cause(info))
    assert "async_descriptor_load: cluster CTA rank 1 is out of range for a cluster of 1 CTA(s)" in msg
    assert "multicast_targets=TARGETS" in msg  # the kernel line


# ------------------------------------------------------------------------------------ storage alias spec


@triton.jit
def _aliased(x_ptr, y_ptr, N: tl.constexpr, SIZE: tl.constexpr, BAD: tl.constexpr):
    offs = tl.arange(0, N)
    spec = tlx.storage_alias_spec(storage=tlx.storage_kind.smem, buffer_size_bytes=SIZE)
    qk = tlx.local_alloc((N, N), tl.float32, 2, reuse=spec)
    p = tlx.local_alloc((N, N), tl.float16, 4, reuse=spec)
    alpha = tlx.local_alloc((N,), tl.float32, 2, reuse=spec)
    if BAD == 1:
        other = tlx.local_alloc((N,), tl.float32, 2)
        spec.set_buffer_overlap(tlx.reuse_group(qk, alpha, other))
    elif BAD == 2:
        distinct = tlx.reuse_group(p, alpha, group_type=tlx.reuse_group_type.distinct)  # 4 vs 2 buffers
        spec.set_buffer_overlap(tlx.reuse_group(qk, distinct))
    else:
        distinct = tlx.reuse_group(tlx.reuse_group(p, group_size=2), alpha, group_type=tlx.reuse_group_type.distinct)
        spec.set_buffer_overlap(tlx.reuse_group(qk, distinct))
    tlx.local_store(alpha[1], tl.load(x_ptr + offs))
    tlx.local_store(qk[1], tl.load(x_ptr + offs[:, None] * N + offs[None, :]))
    tl.store(y_ptr + offs, tlx.local_load(alpha[1]) + 1.0)


def test_storage_alias_spec_and_reuse_groups():
    n = 8
    x = _randn(n * n)
    y = torch.zeros(n)
    # per logical buffer: qk (256 B) shared with [2 p buffers (2 x 128 B) + alpha (32 B)] -> 288 B, x 2 buffers
    _aliased[(1,)](x, y, N=n, SIZE=576, BAD=0)
    np.testing.assert_array_equal(y.numpy(), x[:n].numpy() + 1.0)
    with pytest.raises(Exception) as info:
        _aliased[(1,)](x, y, N=n, SIZE=575, BAD=0)
    assert "the reuse tree needs 2 x 288 bytes" in str(_cause(info))
    with pytest.raises(Exception) as info:
        _aliased[(1,)](x, y, N=n, SIZE=4096, BAD=1)
    assert "set_buffer_overlap: other was not allocated with reuse=storage_alias_spec(smem" in str(_cause(info))
    with pytest.raises(Exception) as info:
        _aliased[(1,)](x, y, N=n, SIZE=4096, BAD=2)
    assert "have different buffer counts [2, 4]" in str(_cause(info))


def test_interpreter_values_are_tlx_types():
    @triton.jit
    def kernel(out_ptr):
        buf = tlx.local_alloc((4,), tl.float32, 2)
        bars = tlx.alloc_barriers(2)
        ok = isinstance(buf, tlx.buffered_tensor) and isinstance(buf[0], tlx.buffered_tensor)
        ok = ok and isinstance(bars, tlx.mbarrier) and isinstance(bars[1], tlx.mbarrier)
        ok = ok and isinstance(tlx.async_load_commit_group(), tlx.async_token)
        tl.store(out_ptr, 1 if ok else 0)

    out = torch.zeros(1, dtype=torch.int32)
    kernel[(1,)](out)
    assert out.item() == 1


# ------------------------------------------------------------------------ fork-only Config(ctas_per_cga)


_BENCHED: list[float] = []


def _cpu_bench(kernel_call, quantiles):
    """The autotuner's timer on the CPU (there is no GPU driver to time with): runs the config once."""
    kernel_call()
    _BENCHED.append(1.0)
    return [1.0, 1.0, 1.0]


@triton.autotune(configs=[triton.Config({"SCALE": 2.0}, num_warps=4, ctas_per_cga=(2, 1, 1)),
                          triton.Config({"SCALE": 3.0}, num_warps=4, ctas_per_cga=(1, 1, 1))], key=["N"],
                 do_bench=_cpu_bench)
@triton.jit
def _autotuned_scale(x_ptr, y_ptr, N: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.arange(0, N)
    buf = tlx.local_alloc((N,), tl.float32, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + offs) * SCALE)
    tl.store(y_ptr + offs, tlx.local_load(buf))


def test_autotuned_tlx_kernel_with_ctas_per_cga_configs():
    x = _randn(32)
    y = torch.zeros(32)
    _BENCHED.clear()
    _autotuned_scale[(2,)](x, y, N=32)  # the interpreter runs cluster configs too (utlx.interpreter.cluster)
    assert len(_BENCHED) == 2  # both configs were run and timed
    scale = _autotuned_scale.best_config.kwargs["SCALE"]
    np.testing.assert_array_equal(y.numpy(), x.numpy() * scale)


@triton.jit
def _arrive_when(flag, out_ptr):
    bars = tlx.alloc_barriers(num_barriers=1, arrive_count=2)
    tlx.barrier_arrive(bars[0], pred=flag > 0)
    tlx.barrier_arrive(bars[0])
    tlx.barrier_wait(bars[0], 0)  # complete only if both arrived
    tl.store(out_ptr, flag)


def test_barrier_arrive_pred_arrives_only_when_true():
    from utlx.interpreter import UtlxDeadlockError

    out = torch.full((1,), -1, dtype=torch.int32)
    _arrive_when[(1,)](1, out)
    assert int(out) == 1
    with pytest.raises(Exception) as info:  # pred false: one arrival of two, the wait never completes
        _arrive_when[(1,)](0, out)
    exc = info.value
    while exc is not None and not isinstance(exc, UtlxDeadlockError):
        exc = exc.__cause__ or exc.__context__
    assert exc is not None, info.value
