"""Column-major operands (``x @ w.T``) in the TMA GEMMs: a transposed shared view, not a copy, for cuda:90.

The ``*_colmajor`` kernels load a column-major operand through a descriptor over its transpose and hand
wgmma a ``local_trans`` view. Shown in the IR: the view becomes ``ttg.memdesc_trans`` with a
``transposed = true`` NVMMA shared layout, the operand never goes through registers, and wgmma's
transpose immediates flip for exactly the transposed operand. Numerics: tests/gpu (H200) and the
interpreter test of the packaged kernels.
"""

from __future__ import annotations

import importlib
import re

import pytest
from _helpers import compile_kernel
from utlx.kernels.nvidia import hopper_tma_persistent as tp
from utlx.kernels.nvidia import hopper_tma_streamk as sk
from utlx.kernels.nvidia import hopper_ws_persistent as ws
from utlx.kernels.nvidia import hopper_ws_pingpong as pp

m = importlib.import_module("utlx.matmul")
LAYOUTS = [(False, False), (False, True), (True, False), (True, True)]


def _compile(mod, const, nw, a_col, b_col):
    fn, cols = mod.kernel_for(a_col, b_col)
    sig = mod.signature(const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"], "fp16", a_col, b_col,
                        epilogue_subtile=tp.epilogue_subtile(const))  # C's box is one epilogue slice
    return compile_kernel(fn, sig, dict(const, NUM_SMS=132, **cols), "cuda:90", nw)


def _wgmma_trans_bits(ptx: str) -> set[tuple[str, str]]:
    """(imm-trans-a, imm-trans-b) of every wgmma.mma_async in the PTX."""
    return {tuple(re.sub(r"\s", "", m_.split("}")[-1]).strip(",;").split(",")[-2:])
            for m_ in re.findall(r"wgmma\.mma_async[^;]*;", ptx)}


@pytest.fixture(scope="module", params=[("tma", tp, tp.CONFIGS[1]), ("ws", ws, ws.CONFIGS[1])], ids=["tma", "ws"])
def compiled_layouts(request):
    _, mod, (const, nw) = request.param
    return mod, {cols: _compile(mod, const, nw, *cols) for cols in LAYOUTS}


def test_transposed_operands_flip_wgmma_transpose_bits(compiled_layouts):
    _, ks = compiled_layouts
    bits = {cols: _wgmma_trans_bits(k.asm["ptx"]) for cols, k in ks.items()}
    assert all(len(b) == 1 for b in bits.values()), bits
    (ta, tb), = bits[(False, False)]
    flip = {"0": "1", "1": "0"}
    assert bits[(True, False)] == {(flip[ta], tb)}
    assert bits[(False, True)] == {(ta, flip[tb])}
    assert bits[(True, True)] == {(flip[ta], flip[tb])}


def test_transposed_view_stays_in_shared_memory(compiled_layouts):
    _, ks = compiled_layouts
    trans = {cols: k.asm["ttgir"].count("ttg.memdesc_trans") for cols, k in ks.items()}
    # one view per transposed operand per consumer (the warp-specialized kernel has two consumers)
    assert trans[(False, False)] == 0 and trans[(True, False)] == trans[(False, True)] > 0
    assert trans[(True, True)] == trans[(True, False)] + trans[(False, True)]
    for (a_col, b_col), k in ks.items():
        ttgir = k.asm["ttgir"]
        assert ("transposed = true" in ttgir) == (a_col or b_col)
        assert "ttg.local_load" not in ttgir  # no operand goes through registers
        assert "cp.async.bulk.tensor.2d" in k.asm["ptx"]
    shared = {k.metadata.shared for k in ks.values()}
    assert len(shared) == 1  # same ring and epilogue sizes whatever the layout


def test_row_major_kernel_is_the_original_entry_point(compiled_layouts):
    mod, ks = compiled_layouts
    assert mod.kernel_for(False, False)[0].__name__ in ("matmul_kernel_tma_persistent", "matmul_kernel_ws_persistent")
    assert "ttg.memdesc_trans" not in ks[(False, False)].asm["ttgir"]


@pytest.mark.parametrize(("a_col", "b_col"), LAYOUTS[1:])
def test_column_major_candidates(a_col, b_col):
    cands = m.candidates("hopper", True, a_col=a_col, b_col=b_col)
    assert {c.family for c in cands} == {"tma_persistent", "ws_persistent", "ws_pingpong", "tma_streamk"}  # no cp.async
    suffix = ("/acol" if a_col else "") + ("/bcol" if b_col else "")
    assert all(c.id.endswith(suffix) for c in cands)
    row_ids = {c.id for c in m.candidates("hopper", True)}
    assert {c.id[: len(c.id) - len(suffix)] for c in cands} <= row_ids  # the same configurations


@pytest.mark.slow
@pytest.mark.parametrize(("a_col", "b_col"), LAYOUTS[1:])
def test_every_column_major_candidate_compiles(a_col, b_col):
    for cand in m.candidates("hopper", True, a_col=a_col, b_col=b_col):
        c = {k: v for k, v in cand.config.items() if k not in ("A_COL", "B_COL")}
        mod = {"tma_persistent": tp, "tma_streamk": sk, "ws_pingpong": pp}.get(cand.family, ws)
        k = _compile(mod, c, cand.num_warps, a_col, b_col)
        assert k.metadata.shared <= m.SMEM_LIMIT, cand.id
