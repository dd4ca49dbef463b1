"""Cases and helpers of the GPU flash-attention tests (importable by the parallel precompile workers).

Each case is (head dim, causal, configuration, dtype); each runs on every shape of :data:`SHAPES`, which
cover N_CTX a multiple of the tiles, one that is not (the masked last block and masked stores), one
shorter than a tile, and a 64-row multiple that is not a 128-row one (TMA stores with a masked block).
"""

from __future__ import annotations

import math

#: (B, H, N_CTX): Z*H is never 1 nor a multiple of 16, so every shape of a case shares the JIT's
#: integer specialisations except through N_CTX itself.
SHAPES = [(2, 3, 384), (1, 4, 2048), (1, 2, 1000), (1, 2, 40), (2, 3, 64)]
#: Max abs error against the float32 reference (P is rounded to the input dtype before P @ V).
TOLERANCE = {"float16": 4e-3, "bfloat16": 3e-2}


def cases() -> list[tuple[int, bool, object, str]]:
    from utlx.attention import all_configs

    return [(d, causal, cfg, dtype) for d, causal, cfg in all_configs() for dtype in ("float16", "bfloat16")]


def case_id(case: tuple) -> str:
    d, causal, cfg, dtype = case
    return f"d{d}-{'causal' if causal else 'full'}-{cfg.id}-{dtype}"


def inputs(b: int, h: int, n: int, d: int, dtype: str, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn((b, h, n, d), generator=g, device="cuda", dtype=getattr(torch, dtype)) for _ in range(3)]


def reference(q, k, v, causal: bool, sm_scale: float):
    """softmax(q k^T * sm_scale) v in float32 (row i sees key rows 0..i when causal)."""
    import torch

    s = (q.float() @ k.float().transpose(-1, -2)) * sm_scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v.float()


def run_case(case: tuple, shape: tuple[int, int, int], seed: int) -> tuple[float, bool]:
    """(max abs error, output fully written) of one configuration on fresh random data."""
    import torch
    from utlx.attention import run_config

    d, causal, cfg, dtype = case
    b, h, n = shape
    q, k, v = inputs(b, h, n, d, dtype, seed)
    scale = 1.3 / math.sqrt(d)
    out = torch.full_like(q, float("nan"))
    run_config(q, k, v, cfg, causal, scale, out=out)
    torch.cuda.synchronize()
    ref = reference(q, k, v, causal, scale)
    written = bool(torch.isfinite(out).all().item())
    err = (out.float() - ref).abs().max().item()
    return err, written


def warm_chunk(chunk: list[tuple]) -> list[str]:
    """Compile (by running once) every case of ``chunk`` on every shape class; returns error texts."""
    errors = []
    for case in chunk:
        for shape in (SHAPES[0], SHAPES[2], SHAPES[4]):  # the three specialisations of a case
            try:
                run_case(case, shape, seed=0)
            except Exception as exc:  # reported by the test of that case
                errors.append(f"{case_id(case)} {shape}: {type(exc).__name__}: {exc}"[:400])
    return errors
