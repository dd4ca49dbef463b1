"""``utlx.attention`` under ``TRITON_INTERPRET=1`` against a float32 reference (small shapes, seconds).

The kernel runs with all its tasks (TMA producer, two consumer replicas with their named-barrier token
ring) on the CPU, with the hazard checker on. Shapes cover: several tiles per program (tile chaining and
the ring wrapping around), N_CTX not a multiple of the KV block (masked last block, masked stores), a
64-row multiple that is not a 128-row one (a consumer's rows wholly past N_CTX), a single block, and
causal tiles of every cost.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import utlx  # noqa: E402
from utlx.attention import CONFIGS, run_config  # noqa: E402

TOL = {torch.float16: 3e-3, torch.bfloat16: 3e-2}


def _reference(q, k, v, causal, scale):
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v.float()


def _inputs(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g).to(dtype) for _ in range(3)]


@pytest.mark.parametrize(("b", "h", "n", "d", "causal", "dtype"), [
    (2, 3, 256, 64, False, torch.float16),    # 6 tiles over 3 programs: chained tiles
    (1, 2, 200, 64, True, torch.bfloat16),    # ragged: masked last block and masked stores
    (2, 3, 64, 128, False, torch.float16),    # N_CTX % 128 == 64: consumer 1 past the end
    (1, 1, 96, 128, False, torch.float16),    # one block, ragged
    (1, 2, 384, 128, True, torch.float16),    # causal tiles of cost 1..3 (host schedule)
    (1, 1, 320, 128, True, torch.bfloat16),
])
def test_matches_float32_reference(b, h, n, d, causal, dtype):
    q, k, v = _inputs((b, h, n, d), dtype, seed=b * 1000 + n + d)
    o = utlx.attention(q, k, v, causal=causal)
    ref = _reference(q, k, v, causal, 1 / math.sqrt(d))
    assert o.shape == q.shape and o.dtype == dtype
    err = (o.float() - ref).abs().max().item()
    assert err <= TOL[dtype], err


@pytest.mark.parametrize(("d", "causal", "cfg"), [(d, c, cfg) for (d, c), cfgs in CONFIGS.items() for cfg in cfgs[1:]],
                         ids=lambda x: getattr(x, "id", str(x)))
def test_other_configurations(d, causal, cfg):
    q, k, v = _inputs((1, 2, 320, d), torch.float16, seed=7)
    out = torch.full_like(q, float("nan"))
    run_config(q, k, v, cfg, causal, sm_scale=0.07, out=out)
    assert (out.float() - _reference(q, k, v, causal, 0.07)).abs().max().item() <= TOL[torch.float16]


def test_non_contiguous_and_scale():
    q, k, v = (t.transpose(1, 2) for t in _inputs((1, 130, 2, 64), torch.float16, seed=3))  # (B, N, H, D) storage
    assert not q.is_contiguous()
    o = utlx.attention(q, k, v, causal=True, sm_scale=0.2)
    assert o.is_contiguous()
    assert (o.float() - _reference(q, k, v, True, 0.2)).abs().max().item() <= TOL[torch.float16]


@pytest.mark.parametrize(("n", "d", "dtype", "programs"), [(768, 64, torch.float16, 5), (700, 64, torch.bfloat16, 5),
                                                           (640, 128, torch.float16, 3)])
def test_stream_k_pieces_are_combined(n, d, dtype, programs):
    """Stream-K: the tiles of a partial last round are cut into pieces (12 tiles on 5 programs: shares of 4
    of 6 KV blocks, some spanning two tiles; 10 tiles on 3: one tile cut 4 + 1); the pieces park partial
    results and ``attn_combine`` merges them (ragged N_CTX: masked last block, masked rows)."""
    from utlx.attention import Config, stream_k_schedule

    cfg = Config(num_kv=4 if d == 64 else 2, stream_k=True)
    n_m = -(-n // 128)
    plan = stream_k_schedule(2, n_m, -(-n // 128), programs)
    assert plan.slots >= 2 and plan.splits  # the case really splits tiles
    q, k, v = _inputs((1, 2, n, d), dtype, seed=n + d)
    out = torch.full_like(q, float("nan"))
    run_config(q, k, v, cfg, False, sm_scale=0.09, out=out, num_programs=programs)
    assert (out.float() - _reference(q, k, v, False, 0.09)).abs().max().item() <= TOL[dtype]


def _computed_blocks(n: int, cfg, causal: bool) -> tuple[int, int]:
    """(blocks the consumers must compute, blocks their tiles load), summed over consumers and tiles of one
    head: a consumer needs a KV block when some row of its 64 is below N_CTX and sees a column of that block;
    a consumer whose rows are all past N_CTX computes its tile's first block only (nothing of it is stored)."""
    need = loaded = 0
    for m in range(-(-n // cfg.block_m)):
        last_col = min((m + 1) * cfg.block_m, n) if causal else n
        n_kv = -(-last_col // cfg.block_n)
        for c in range(cfg.num_consumers):
            r0 = m * cfg.block_m + 64 * c
            loaded += n_kv
            if r0 >= n:
                need += 1
            else:
                last_row = min(r0 + 63, n - 1)
                need += sum(1 for j in range(n_kv) if not causal or j * cfg.block_n <= last_row)
    return need, loaded


@pytest.mark.parametrize(("n", "causal", "num_kv"), [(704, True, 2), (704, True, 4), (640, False, 2), (448, True, 4)])
def test_consumers_skip_blocks_they_do_not_need(monkeypatch, n, causal, num_kv):
    """192-row tiles: a consumer computes only the KV blocks its own rows need (causal: up to its diagonal;
    rows past N_CTX: the first block) and drains the rest through the ring and the GEMM token. Counted here
    as the S GEMMs the kernel issues (``async_dot`` with Q from shared memory), against the blocks its tiles
    load; the output still matches the reference."""
    from utlx.attention import Config
    from utlx.interpreter import ops_mma
    from utlx.interpreter.memory import BufferView

    cfg = Config(block_m=192, num_consumers=3, num_kv=num_kv, consumer_regs=160)
    assert cfg.trims(causal, n)
    s_gemms = []
    real_operand = ops_mma._operand

    def counting(_semantic, value, op_arg, st, loc):
        if op_arg == "A" and isinstance(value, BufferView) and value.shape[0] == 64:  # Q tile: an S GEMM
            s_gemms.append(1)
        return real_operand(_semantic, value, op_arg, st, loc)

    monkeypatch.setattr(ops_mma, "_operand", counting)
    q, k, v = _inputs((1, 1, n, 64), torch.float16, seed=n + num_kv)
    out = torch.full_like(q, float("nan"))
    run_config(q, k, v, cfg, causal, sm_scale=0.08, out=out, num_programs=2)
    assert (out.float() - _reference(q, k, v, causal, 0.08)).abs().max().item() <= TOL[torch.float16]
    need, loaded = _computed_blocks(n, cfg, causal)
    assert need < loaded
    assert len(s_gemms) == need, (len(s_gemms), need, loaded)
    # the host's cost model (balanced_schedule) counts the same blocks as the kernel computes
    from utlx.attention import consumer_blocks

    per_tile = [consumer_blocks(m, n, causal, 192, 128, 3, num_kv) for m in range(-(-n // 192))]
    assert sum(w for _, w in per_tile) == need and 3 * sum(n_kv for n_kv, _ in per_tile) == loaded
