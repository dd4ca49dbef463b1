"""tools/device/skinny_sweep.py without a GPU: which configurations a sweep times for a shape."""

from __future__ import annotations

import importlib

mm = importlib.import_module("utlx.matmul")


def test_every_extra_configuration_fits_one_block(skinny_sweep_mod):
    for family, const, nw, grid in skinny_sweep_mod.EXTRA + skinny_sweep_mod.EXTRA_BIG:
        cand = mm.Candidate(family, tuple(sorted(const.items())), nw, grid)
        assert cand.smem_bytes() is not None and cand.smem_bytes() <= mm.SMEM_LIMIT, cand.id


def test_a_skinny_shape_gets_the_tuners_field_plus_the_extras_once_each(skinny_sweep_mod):
    got = skinny_sweep_mod._candidates(16, 8192, 8192, 132)
    ids = [c.id for c in got]
    assert len(ids) == len(set(ids))
    tuner = {c.id for c in mm.for_problem(mm.candidates("hopper", True, shape=(16, 8192, 8192)), 16, 8192, 132, 8192)}
    assert tuner <= set(ids)
    assert "tma_splitk/tiles/64x128x64/s2/g8/w4/k6" in ids  # an extra the tuner would not try
    assert "tma_splitk/tiles/64x128x64/s2/g8/w4/k6" not in tuner


def test_a_regular_shape_gets_the_winning_families_and_other_tile_orders(skinny_sweep_mod):
    got = skinny_sweep_mod._candidates(4096, 4096, 4096, 132)
    ids = [c.id for c in got]
    assert len(ids) == len(set(ids))
    assert {c.family for c in got} <= {"ws_persistent", "ws_pingpong", "tma_streamk", "tma_persistent", "ws_cluster"}
    assert all(c.config["BLOCK_SIZE_N"] == 256 and c.grid_mode == "persistent"
               for c in got if c.family == "tma_persistent")
    assert {"ws_persistent/persistent/128x256x64/s3/g4/w4", "ws_persistent/persistent/128x256x64/s3/g32/w4"} <= set(ids)
    assert not any(c.family == "tma_splitk" for c in got)
    assert {"ws_cluster/persistent/128x256x64/s3/g8/w4/shareb", "ws_cluster/persistent/256x128x64/s3/g8/w4"} <= set(ids)


def test_families_keeps_only_those_kernel_families(skinny_sweep_mod):
    got = skinny_sweep_mod._candidates(4096, 4096, 4096, 132, ["ws_cluster"])
    assert got and {c.family for c in got} == {"ws_cluster"}
