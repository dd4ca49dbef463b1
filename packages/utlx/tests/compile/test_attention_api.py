"""``utlx.attention``'s host side on the CPU: input errors name the argument, the causal and stream-K
schedules balance and cover every tile (every KV block) once, configurations fit in shared memory."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

import utlx  # noqa: E402
from utlx.attention import (  # noqa: E402
    CONFIGS,
    SMEM_LIMIT,
    all_configs,
    balanced_schedule,
    config_by_id,
    stream_k_schedule,
)


def _qkv(shape=(1, 2, 128, 64), dtype=torch.float16):
    return [torch.zeros(shape, dtype=dtype) for _ in range(3)]


@pytest.mark.parametrize(("change", "exc", "words"), [
    (lambda q, k, v: (q.float(), k, v), TypeError, ["'q'", "float16 or bfloat16", "torch.float32"]),
    (lambda q, k, v: (q, k.bfloat16(), v), TypeError, ["'k'", "bfloat16", "must match"]),
    (lambda q, k, v: (q, k, v[:, :, :64]), ValueError, ["'v'", "(1, 2, 64, 64)", "same"]),
    (lambda q, k, v: (q[0], k[0], v[0]), ValueError, ["'q'", "(B, H, N_CTX, D)"]),
    (lambda q, k, v: (q[..., :48], k[..., :48], v[..., :48]), ValueError, ["head dim", "48", "64, 128"]),
    (lambda q, k, v: ("q", k, v), TypeError, ["'q'", "torch.Tensor"]),
])
def test_bad_inputs_name_the_argument(change, exc, words):
    q, k, v = change(*_qkv())
    with pytest.raises(exc) as info:
        utlx.attention(q, k, v)
    text = str(info.value)
    assert text.startswith("utlx.attention:") and all(w in text for w in words), text


def test_bad_flags_name_the_argument():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="'causal' must be a bool"):
        utlx.attention(q, k, v, causal="yes")
    with pytest.raises(TypeError, match="'sm_scale' must be a finite float"):
        utlx.attention(q, k, v, sm_scale=float("nan"))


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1", reason="the interpreter runs CPU tensors")
def test_cpu_tensors_need_a_hopper_gpu():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"'q' is on cpu; the kernel needs an NVIDIA Hopper GPU \(sm_90\)"):
        utlx.attention(q, k, v)


def test_unknown_configuration_lists_the_known_ones():
    with pytest.raises(ValueError) as info:
        config_by_id(128, False, "nope")
    assert all(c.id in str(info.value) for c in CONFIGS[(128, False)])


def test_every_configuration_fits_shared_memory():
    for d, _causal, cfg in all_configs():
        assert cfg.smem_bytes(d) <= SMEM_LIMIT, (d, cfg.id)
        assert cfg.split == 64


def _segments(plan, programs):
    """Decode a schedule: per program, its (tile, lo, hi, slot) segments in order."""
    offsets, flat = plan.sched[:programs + 1], plan.sched[programs + 1:]
    assert offsets[0] == 0 and offsets[-1] * 4 == len(flat)
    segs = [tuple(flat[i:i + 4]) for i in range(0, len(flat), 4)]
    return [segs[offsets[p]:offsets[p + 1]] for p in range(programs)]


@pytest.mark.parametrize(("zh", "n_m", "programs"), [(128, 16, 132), (128, 64, 132), (32, 32, 132), (3, 5, 4)])
def test_causal_balanced_schedule_covers_each_tile_once_and_balances(zh, n_m, programs):
    per_program = _segments(balanced_schedule(zh, n_m, programs, n_ctx=n_m * 128, head_dim=128), programs)
    segs = [s for mine in per_program for s in mine]
    assert sorted(t for t, _, _, _ in segs) == list(range(zh * n_m))
    assert all(lo == 0 and hi == t % n_m + 1 and slot == -1 for t, lo, hi, slot in segs)  # up to the diagonal
    loads = [sum(t % n_m + 2 for t, *_ in mine) for mine in per_program]
    assert min(len(mine) for mine in per_program) >= 1  # no idle CTA
    if zh * n_m >= 4 * programs:
        assert max(loads) <= 1.05 * sum(loads) / programs, (max(loads), sum(loads) / programs)
    for mine in per_program:  # within a CTA, a head group's tiles come heaviest first
        assert mine[0][0] % n_m == max(t % n_m for t, *_ in mine[:1])


def test_causal_balanced_schedule_groups_heads_by_l2_budget():
    # 4 MB of K and V per head (8192 x 128 x 2 x 2 bytes): a 16 MB budget keeps 4 heads in flight
    per_program = _segments(balanced_schedule(16, 64, 132, n_ctx=8192, head_dim=128, l2_mb=16), 132)
    first_round = [mine[0][0] for mine in per_program]
    assert {t // 64 for t in first_round} <= set(range(4 + 4))  # the first wave stays in the first head groups
    assert sum(len(mine) for mine in per_program) == 16 * 64


@pytest.mark.parametrize(("n_ctx", "short_work", "gains"), [(2048, 2, True), (4096, 1, True), (8192, 2, False)])
def test_balanced_schedule_of_non_causal_192_row_tiles(n_ctx, short_work, gains):
    """Non-causal 192-row tiles at N_CTX 2048 / 4096 / 8192: a head's last tile has consumers wholly past
    N_CTX, which compute one block instead of all (the kernel's trim), so tiles differ in cost and the host
    deals them out. The longest CTA carries at most one tile more than the average, where round robin gives
    some CTAs a whole extra round (at 8192, 43 tiles per head, both end at 42 whole tiles)."""
    from utlx.attention import Config, consumer_blocks

    cfg = Config(block_m=192, num_consumers=3, num_kv=4, consumer_regs=160)
    assert cfg.scheduled(False, n_ctx) and cfg.constexprs(64, False, n_ctx)["SCHEDULED"]
    assert not Config().scheduled(False, n_ctx)  # 128-row tiles: equal tiles, round robin as before
    zh, n_m, n_kv = 128, -(-n_ctx // 192), n_ctx // 128
    last = consumer_blocks(n_m - 1, n_ctx, False, 192, 128, 3, 4)
    assert last == (n_kv, short_work * n_kv + (3 - short_work))  # consumers past the end: one block each
    plan = balanced_schedule(zh, n_m, 132, n_ctx, 64, block_m=192, block_n=128, causal=False, num_consumers=3,
                             num_kv=4)
    per_program = _segments(plan, 132)
    segs = [s for mine in per_program for s in mine]
    assert sorted(t for t, *_ in segs) == list(range(zh * n_m))
    assert all(lo == 0 and hi == n_kv and slot == -1 for _, lo, hi, slot in segs)
    cost = {m: consumer_blocks(m, n_ctx, False, 192, 128, 3, 4)[1] / 3 + 1 for m in range(n_m)}
    loads = [sum(cost[t % n_m] for t, *_ in mine) for mine in per_program]
    assert max(loads) <= sum(loads) / 132 + (n_kv + 1)  # LPT: within one tile of the average
    robin = [sum(cost[t % n_m] for t in range(p, zh * n_m, 132)) for p in range(132)]
    assert max(loads) < max(robin) if gains else max(loads) <= max(robin)


def test_stream_k_schedule_splits_the_last_round_at_2048():
    # B*H = 128, N_CTX = 2048, 128-row tiles: 2048 tiles on 132 SMs = 15 whole rounds + 68 tiles
    per_program = _segments(stream_k_schedule(128, 16, 16, 132), 132)
    loads = [sum(hi - lo for _, lo, hi, _ in mine) for mine in per_program]
    assert max(loads) == 15 * 16 + 9  # 68 * 16 blocks in shares of 9, where round robin gives 16 * 16
