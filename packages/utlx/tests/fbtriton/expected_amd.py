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

#: case id -> first error (every supported Triton version)
COMPILE: dict[str, str] = {}

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
