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

#: Triton minor version ("3.6") -> case id -> first error, on that version only
BY_VERSION: dict[str, dict[str, str]] = {}


#: Triton minor version -> cases whose direct-to-LDS copies are all staged through registers on that version
#: (each with a performance warning naming why), so their AMDGCN shows no direct-to-LDS copy.
STAGED_BY_VERSION: dict[str, dict[str, str]] = {}


def table(minor: str) -> dict[str, str]:
    """The expected first errors on Triton ``minor`` (``"3.8"``)."""
    return {**COMPILE, **BY_VERSION.get(minor, {})}


def normalise(error: str) -> str:
    """An error line without what changes from run to run (object addresses, temporary paths), cut to 200
    characters (long compiler messages repeat their advice)."""
    error = re.sub(r"0x[0-9a-f]+", "0x…", error)
    return re.sub(r"/tmp/[^\s'\"]+", "/tmp/…", error)[:200]
