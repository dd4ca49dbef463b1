"""The GEMM sweep of ``tests/gpu/gemm_sweep.py`` on the CPU, under ``TRITON_INTERPRET=1`` (issue 15).

Same kernels, same all-pairs tile cover, same shapes minus the two large ones, fp16 and bf16, against a
float32 reference with a NaN-poisoned output. The default suite runs the first tiles of each style's cover
(its shipped configurations first, then the tiles covering the most parameter pairs) and every shipped tile
with a subtiled epilogue; the rest of the cover is marked ``slow`` (the whole cover takes 4 CPU-minutes, too
much for every CI run on 2 cores). The interpreter ignores ``num_warps``, so tiles that differ only in warps
run once. Persistent kernels run on ``gemm_sweep.INTERPRETER_PROGRAMS`` programs so each
walks several tiles and its rings wrap across tiles.

Stock Triton's interpreter computes ``tl.dot`` on bf16 inputs from the raw bits (relative error ~1e9 on random
data); utlx fixes that in the interpreter when it is imported (``utlx.interpreter.hooks.bf16_dot``), so the
register-staged kernel (``tl.dot``) is swept in bf16 too. ``test_bf16_tl_dot_is_right_with_utlx`` shows both:
right with utlx's fix, wrong by orders of magnitude with stock's method.
"""

from __future__ import annotations

import warnings

import gemm_sweep as G
import pytest
import torch
from dot_kernels import dot_tile

#: Tiles per style (in cover order) that every default run checks.
DEFAULT_TILES_PER_STYLE = 4


def _cases() -> list:
    seen = set()
    out = []
    rank: dict[str, int] = {}
    for style, tile, dtype in G.cases():
        key = (style, tile.bm, tile.bn, tile.bk, tile.stages, tile.epilogue_subtile, dtype)
        if key in seen:
            continue
        seen.add(key)
        n = rank.setdefault((style, dtype), 0)
        rank[(style, dtype)] = n + 1
        # shipped subtiled-epilogue tiles sit outside the grid's cover (at its end): always run them (~2 s each)
        marks = [] if n < DEFAULT_TILES_PER_STYLE or tile.epilogue_subtile != 1 else [pytest.mark.slow]
        out.append(pytest.param(style, tile, dtype, marks=marks, id=f"{style}-{tile.name}-{dtype}"))
    return out


CASES = _cases()


@pytest.mark.parametrize(("style", "tile", "dtype"), CASES)
def test_sweep_interpreted(style, tile, dtype):
    bad = []
    for i, (M, N, K) in enumerate(G.shapes(tile, big=False)):
        a, b, c = G.inputs(M, N, K, getattr(torch, dtype), "cpu", seed=17 * i + 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            G.STYLES[style].launch(tile, a, b, c)
        err = G.relative_error(c, a, b)
        if not err <= G.TOLERANCE[dtype]:
            bad.append(f"{M}x{N}x{K}: rel err {err:.3g}")
    assert not bad, f"{style} {tile.name} {dtype}: " + "; ".join(bad)


def _bf16_dot_error(seed: int) -> float:
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(32, 32, generator=gen).to(torch.bfloat16)
    b = torch.randn(32, 32, generator=gen).to(torch.bfloat16)
    c = torch.empty(32, 32)
    dot_tile[(1,)](a, b, c, M=32, N=32, K=32, TWO_CTAS=False)
    ref = a.float() @ b.float()
    return float((c - ref).norm() / ref.norm())


def test_bf16_tl_dot_is_right_with_utlx(monkeypatch):
    """A plain Triton kernel (no utlx op): bf16 ``tl.dot`` under the interpreter is exact with utlx imported, and
    wrong by orders of magnitude with stock's ``create_dot``. When the second half fails, stock Triton fixed it:
    drop ``utlx.interpreter.hooks.bf16_dot``."""
    from tritonx import seams
    from utlx import compat

    assert _bf16_dot_error(0) < 1e-6  # float32 accumulation of exact bf16 products
    builder = compat.interpreter_builder_class()
    stock = seams.original("utlx.interpreter-bf16-dot")
    monkeypatch.setattr(builder, "create_dot", stock)
    assert _bf16_dot_error(0) > 1.0
