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


def _private_folder(var: str, prefix: str) -> str:
    if os.environ.get(var):
        return os.environ[var]
    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ[var] = folder
    return folder


def use_private_triton_cache(prefix: str) -> str:
    """Set ``TRITON_CACHE_DIR`` to a fresh folder unless it is set already; the folder made here goes at exit.

    ``TORCHINDUCTOR_CACHE_DIR`` likewise (the utlx.inductor tests import Inductor, which otherwise makes
    ``$TMPDIR/torchinductor_$USER`` and leaves it there)."""
    _private_folder("TORCHINDUCTOR_CACHE_DIR", prefix + "inductor-")
    return _private_folder("TRITON_CACHE_DIR", prefix)
