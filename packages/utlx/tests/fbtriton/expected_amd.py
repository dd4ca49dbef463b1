"""Which AMD tutorial kernels of the pinned fork do not compile on stock Triton, with the first error of each.

The one place to flip (the pattern of ``tests/tutorials/expected.py``): each entry is a strict xfail that only
accepts exactly the quoted first error, so a case that starts to compile (XPASS) or stops with another error
fails the test and shows what changed. Every entry has its stock-Triton reason in docs/utlx.md ("AMD:
what does not compile"). Quotes are ``run_amd_case.first_error`` on the CPU with this branch's utlx.

``COMPILE`` holds what fails on every supported Triton; ``BY_VERSION`` what fails only on one minor version.
"""

from __future__ import annotations

import re

#: The stock LDS budget of an MI355X (gfx950) that the kernels below exceed (see docs/utlx.md, "LDS overflow").
_LDS = "OutOfResources: out of resource: shared memory, Required: {}, Hardware limit: 163840. Reducing block sizes " \
       "or `num_stages` may help."

_GFX1250 = ("NoTarget: hip:gfx1250 has no compile-only stand-in (Triton has no gfx1250 shared-memory table; outside "
            "issue 17's gfx942/gfx950)")

#: case id -> first error (every supported Triton version)
COMPILE: dict[str, str] = {
    # The file's @jit helper _fast_gelu reads two plain float globals (GELU_TANH_K/_C); Triton refuses that,
    # stock and the fork alike (the fork's CodeGenerator.global_lookup at the pin). Its TLX part compiles:
    # case gfx950_gdpa.allow_globals.
    "gfx950_gdpa": "CompilationError: NameError(\"Cannot access global variable GELU_TANH_K from within @jit'ed "
                   "function. Triton kernels can only access global variables that are instanstiated as constexpr "
                   "(`x = triton.la",
    # LDS overflow on gfx950 (see docs/utlx.md, "LDS overflow"): stock Triton holds more LDS live than Meta's fork,
    # whose layout propagation (tlx-propagate-layout) stock does not have.
    "gfx9.intra_wave.a4w4": _LDS.format(171008),
    "amd_addmm_glu.tlx_optimized": _LDS.format(180224),
    # gfx1250 (TDM) files: outside issue 17's gfx942/gfx950, not counted in its figure.
    "amd_tdm_gemm_pipelined": _GFX1250,
    "amd_mxfp_gemm_tdm_pipelined": _GFX1250,
}



#: Triton minor version ("3.6") -> case id -> first error, on that version only; ``None``: the case compiles on
#: that version although ``COMPILE`` lists it.
BY_VERSION: dict[str, dict[str, str | None]] = {
    "3.6": {
        # Their copies are staged through registers on 3.6 (STAGED_BY_VERSION), with less LDS held live: they fit.
        "amd_addmm_glu.tlx_optimized": None,
        "gfx9.intra_wave.a4w4": None,
    },
}

#: Why 3.6/3.7 stage most direct-to-LDS copies (the warning utlx gives, measured on the CPU).
_PERMUTED = "Triton {} cannot copy straight into a padded layout with permuted bases"
#: The one copy of addmm_glu.tlx_simple_async, on 3.6 and 3.7 (3.8+ narrows the copy to fit instead).
_PAD_RUN = ("its buffer's padded layout pads every 128 elements, inside the 1024 contiguous bytes one wave writes per "
            "direct-to-LDS copy")

#: Triton minor version -> cases whose direct-to-LDS copies are all staged through registers on that version
#: (each with a performance warning naming why), so their AMDGCN shows no direct-to-LDS copy.
STAGED_BY_VERSION: dict[str, dict[str, str]] = {
    minor: {
        **{case: _PERMUTED.format(minor) for case in (
            "gfx9.inter_wave.a4w4", "gfx9.inter_wave.a16w16", "amd_bmm_shared_a", "amd_addmm_gfx950",
            "amd_grouped_gemm", "amd_bmm", "amd_fa_bwd", *(("gfx9.intra_wave.a4w4",) if minor == "3.6" else ()))},
        "amd_addmm_glu.tlx_simple_async": _PAD_RUN,
    }
    for minor in ("3.6", "3.7")
}


def table(minor: str) -> dict[str, str]:
    """The expected first errors on Triton ``minor`` (``"3.8"``)."""
    merged = {**COMPILE, **BY_VERSION.get(minor, {})}
    return {case: error for case, error in merged.items() if error is not None}


def normalise(error: str) -> str:
    """An error line without what changes from run to run (object addresses, temporary paths), cut to 200
    characters (long compiler messages repeat their advice)."""
    error = re.sub(r"0x[0-9a-f]+", "0x…", error)
    return re.sub(r"/tmp/[^\s'\"]+", "/tmp/…", error)[:200]
