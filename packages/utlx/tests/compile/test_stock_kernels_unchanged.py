"""With utlx enabled, kernels that use no TLX op compile byte-identically to stock."""

from __future__ import annotations

import pytest
import tritonx
from tritonx_testutil import compile_corpus
from utlx.plugin import build_pipeline

_compile = compile_corpus


@pytest.mark.smoke
@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942", "hip:gfx950"])
@pytest.mark.parametrize("name", ["elementwise", "softmax", "matmul", "gluon"])
def test_no_tlx_op_means_stock_output(name, target):
    saved = tritonx.active()
    for p in saved:  # start from stock whatever this worker enabled before
        tritonx.deactivate(p)
    try:
        try:
            stock = _compile(name, target)
        except Exception as exc:
            pytest.skip(f"stock Triton cannot compile {name} for {target}: {type(exc).__name__}")
        with tritonx.activate(build_pipeline()):
            ours = _compile(name, target)
    finally:
        for p in saved:
            tritonx.activate(p)
    for stage in ("ttir", "ttgir", "llir", "ptx" if target.startswith("cuda") else "amdgcn"):
        if stage in stock.asm:
            assert ours.asm[stage] == stock.asm[stage], f"{name}/{target}: {stage} changed by utlx"
