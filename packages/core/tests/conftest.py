"""Shared fixtures: every test compiles into a fresh cache with a fresh tritonx runtime."""

from __future__ import annotations

import pytest
import triton
import tritonx
from tritonx.runtime import Runtime


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    """A private Triton cache dir per test, so a cache hit can only come from this test."""
    cache = tmp_path / "triton-cache"
    cache.mkdir()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    monkeypatch.setenv("TRITONX_CACHE_DIR", str(tmp_path / "tritonx-cache"))  # native verdicts stay per test
    monkeypatch.setenv("TRITONX_PLUGINS", "none")  # installed default-on plugins (utlx) stay off unless a test asks
    monkeypatch.delenv("TRITON_ALWAYS_COMPILE", raising=False)  # a knob set elsewhere leaks here via os.environ
    return cache


@pytest.fixture(autouse=True)
def runtime():
    """A fresh tritonx runtime per test: no pipeline active, no plugin enabled, nothing learned.

    The process's own runtime (with whatever other packages' tests enabled in this worker) is back,
    and back in Triton's hook slot, after the test.
    """
    saved_slot = triton.knobs.runtime.add_stages_inspection_hook
    with Runtime().use() as rt:
        yield rt
    triton.knobs.runtime.add_stages_inspection_hook = saved_slot


@pytest.fixture
def compile_probe():
    """Compile the probe matmul (pipelined, 16-divisible args) for a target."""

    def run(target: str = "cuda:90", **kw):
        return tritonx.compile_for(target, **kw)

    return run
