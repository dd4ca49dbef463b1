"""CPU checks of the sweep's own design (the GPU sweep is only as good as the space it covers)."""

from __future__ import annotations

import itertools

import gemm_sweep as G
import pytest


@pytest.mark.parametrize("style", list(G.STYLES))
def test_cover_has_every_feasible_pair(style):
    feasible = G.STYLES[style].tiles()
    chosen = G.style_tiles(style)
    wanted = set().union(*(G._pairs(t) for t in feasible))
    got = set().union(*(G._pairs(t) for t in chosen))
    assert wanted <= got
    assert len(chosen) < len(feasible) or style == "ws_persistent"  # a real reduction where the grid is big
    for tile in G.shipped_tiles(style):  # every configuration a kernel ships is in its sweep
        assert tile in chosen


def test_pointer_styles_cover_the_issue_axes():
    tiles = G.style_tiles("hopper_pipelined")
    for param, values in (("bm", G.BMS), ("bn", G.BNS), ("bk", G.BKS), ("stages", G.STAGES), ("warps", G.WARPS)):
        assert {getattr(t, param) for t in tiles} == set(values), param
    assert G.Tile(64, 128, 64, 4, 4) in tiles  # the tile of issue 15


def test_all_pairs_is_complete_on_a_toy_space():
    toy = [G.Tile(bm, bn, bk, st, nw) for bm, bn, bk, st, nw in itertools.product((64, 128), (64, 256), (32,),
                                                                                  (2, 3, 4), (4, 8))]
    chosen = G.all_pairs(toy)
    assert set().union(*(G._pairs(t) for t in chosen)) == set().union(*(G._pairs(t) for t in toy))
    assert len(chosen) < len(toy)


def test_shapes_span_one_two_three_and_many_k_tiles_and_ragged_edges():
    tile = G.Tile(64, 128, 64, 3, 4)
    shapes = G.shapes(tile)
    k_tiles = {-(-k // tile.bk) for _, _, k in shapes}
    assert {1, 2, 3}.issubset(k_tiles) and max(k_tiles) >= 40
    assert any(m % tile.bm for m, _, _ in shapes) and any(n % tile.bn for _, n, _ in shapes)
    assert any(k % tile.bk for _, _, k in shapes)
    assert all(n % 8 == 0 and k % 8 == 0 for _, n, k in shapes)  # 16-byte rows (TMA)
    assert (2048, 2048, 128) in shapes  # the shape that failed in issue 15


def test_relative_error_fails_nan_and_wrong_values():
    torch = pytest.importorskip("torch")
    a, b, c = G.inputs(32, 16, 24, torch.float16, "cpu", seed=1)
    assert G.relative_error(c, a, b) != G.relative_error(c, a, b)  # NaN-poisoned output never passes
    good = (a.float() @ b.float()).half()
    assert G.relative_error(good, a, b) <= G.TOLERANCE["float16"]
    good[3, 5] += 4.0
    assert G.relative_error(good, a, b) > G.TOLERANCE["float16"]


def test_shipped_subtiled_epilogue_tiles_are_swept():
    """Configurations with a subtiled epilogue are outside the tile grid (the grid's 128x256x64 with 4 stages
    does not fit with a whole C tile), so they join their style's sweep as shipped extras, with the constexpr."""
    for style in ("tma_persistent", "ws_persistent"):
        subtiled = [t for t in G.style_tiles(style) if t.epilogue_subtile != 1]
        assert subtiled and set(subtiled) == {t for t in G.shipped_tiles(style) if t.epilogue_subtile != 1}
        assert G.Tile(128, 256, 64, 4, 8 if style == "tma_persistent" else 4, 4) in subtiled
        for tile in subtiled:
            assert tile not in G.STYLES[style].tiles() and tile.name.endswith(f"-e{tile.epilogue_subtile}")
            assert tile.constexprs()["EPILOGUE_SUBTILE"] == tile.epilogue_subtile
            assert {(s, t) for s, t, _ in G.cases()} >= {(style, tile)}
    assert "EPILOGUE_SUBTILE" not in G.Tile(128, 128, 64, 3, 8).constexprs()  # the pointer kernels take none
