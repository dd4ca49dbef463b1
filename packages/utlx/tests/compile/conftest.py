"""Compile tests: make the utlx lowering active and give each session its own Triton cache.

Why a private cache: a stale cached kernel compiled by an older lowering would hide regressions.
"""

from __future__ import annotations

import pytest
from private_cache import use_private_triton_cache

use_private_triton_cache("utlx-compile-cache-")  # removed when the process exits


@pytest.fixture(scope="session", autouse=True)
def utlx_compile_path():
    """Activate utlx the way users get it (the tritonx plugin)."""
    from utlx.plugin import ensure_active

    mode = ensure_active()
    yield mode
