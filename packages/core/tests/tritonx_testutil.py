"""Helpers shared by the core tests (a module, not conftest: conftest names are not unique)."""

from __future__ import annotations


def ptx_counts(kernel) -> dict[str, int]:
    """cp.async copies and wgmma instructions in a compiled kernel's PTX."""
    ptx = kernel.asm["ptx"]
    return {"cp.async": ptx.count("cp.async.cg") + ptx.count("cp.async.ca"), "wgmma": ptx.count("wgmma.mma_async")}


def compile_corpus(name: str, target: str):
    """Compile one kernel of the identity corpus for a target, bypassing the cache, without line info
    (ptxas stamps line tables with file times: binaries are compared without them)."""
    import triton
    import tritonx
    from tritonx.integration.capture import divisible
    from tritonx_corpus import CORPUS

    kernel, sig, consts, ndiv = CORPUS[name]
    options = None
    if name == "gluon":
        consts = dict(consts, WARP=64 if target.startswith("hip") else 32)
        options = {"num_warps": 4}
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        triton.knobs.compilation.disable_line_info = True
        return tritonx.compile_for(target, kernel, sig, consts, options=options, attrs=divisible(ndiv))
