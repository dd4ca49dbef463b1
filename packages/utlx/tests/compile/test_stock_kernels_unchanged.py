"""With utlx enabled, kernels that use no TLX op compile byte-identically to stock."""

from __future__ import annotations

import pytest
import triton
import tritonx
from tritonx.integration.capture import divisible
from tritonx_corpus import CORPUS
from utlx.plugin import build_pipeline


def _compile(name: str, target: str):
    kernel, sig, consts, ndiv = CORPUS[name]
    options = None
    if name == "gluon":
        consts = dict(consts, WARP=64 if target.startswith("hip") else 32)
        options = {"num_warps": 4}
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        triton.knobs.compilation.disable_line_info = True
        return tritonx.compile_for(target, kernel, sig, consts, options=options, attrs=divisible(ndiv))


@pytest.mark.smoke
@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
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
