"""A pipeline with no edits must compile byte-identically to stock, for a corpus on every target."""

from __future__ import annotations

import pytest
import tritonx
from tritonx_corpus import CORPUS
from tritonx_testutil import compile_corpus

TARGETS = ["cuda:80", "cuda:90", "cuda:100", "hip:gfx942", "hip:gfx950"]


_compile = compile_corpus


@pytest.mark.smoke
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(CORPUS))
def test_noop_pipeline_is_byte_identical(name, target):
    try:
        stock = _compile(name, target)
    except Exception as exc:  # the stock compiler itself does not support this pair
        pytest.skip(f"stock Triton cannot compile {name} for {target}: {type(exc).__name__}: {str(exc)[:200]}")
    noop = tritonx.Pipeline("noop")
    # an edit that matches nothing on purpose still forces every stage through record-and-replay
    replay = tritonx.Pipeline("replay-all").disable("canonicalize", occurrence=99, required=False)
    for pipe in (noop, replay):
        with tritonx.activate(pipe):
            ours = _compile(name, target)
        assert set(ours.asm) == set(stock.asm)
        for stage, text in stock.asm.items():
            if stage in ("cubin", "hsaco") and ours.asm[stage] != text:
                # ptxas for sm_100 is not deterministic (stock differs from stock): the binary's input,
                # the assembly text (compared byte for byte above), must then be identical
                asm = "ptx" if stage == "cubin" else "amdgcn"
                assert ours.asm[asm] == stock.asm[asm], f"{name}/{target}: {stage} differs under {pipe.name}"
                continue
            assert ours.asm[stage] == text, f"{name}/{target}: stage {stage} differs under {pipe.name}"
