"""A Triton cache private to this test process, removed when the process exits.

Why: compile tests need a cache no older lowering wrote into (a stale kernel would hide a regression), and
it must exist before anything reads ``TRITON_CACHE_DIR`` (conftest import time). Made with ``mkdtemp`` and
left behind, each run (and each xdist worker) used to leave hundreds of MB of kernels in /tmp.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile


def use_private_triton_cache(prefix: str) -> str:
    """Set ``TRITON_CACHE_DIR`` to a fresh folder unless it is set already; the folder made here goes at exit."""
    if os.environ.get("TRITON_CACHE_DIR"):
        return os.environ["TRITON_CACHE_DIR"]
    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["TRITON_CACHE_DIR"] = folder
    return folder
