"""Acceptance tests of issue 10: Meta's TLX Hopper tutorials, used as they are from its wheel, on utlx.

Fixtures: the unpacked wheel's tutorials folder (downloaded once, cached outside the repo; the tests skip
with the reason when it cannot be had) and utlx's compile path made active with a private Triton cache
(compiled artifacts are read back from it, and a kernel cached by an older lowering must not hide a
regression).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from private_cache import use_private_triton_cache

HERE = Path(__file__).resolve().parent
use_private_triton_cache("utlx-tutorials-cache-")  # removed when the process exits

INTERPRETING = os.environ.get("TRITON_INTERPRET", "0") == "1"


@pytest.fixture(scope="session")
def tutorials_dir() -> Path:
    import meta_wheel
    from tutorial_sources import tutorials_or_skip

    return tutorials_or_skip(meta_wheel)


@pytest.fixture(scope="session")
def utlx_compile_path() -> str:
    if INTERPRETING:
        pytest.skip("compile tests do not run under TRITON_INTERPRET=1")
    from utlx.plugin import ensure_active

    return ensure_active()
