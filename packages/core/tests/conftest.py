"""Shared fixtures: every test compiles into a fresh cache and leaves no pipeline active."""

from __future__ import annotations

import pytest
import triton
import tritonx
from tritonx.integration import activation
from tritonx.plugins import registry


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    """A private Triton cache dir per test, so a cache hit can only come from this test."""
    cache = tmp_path / "triton-cache"
    cache.mkdir()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    yield cache
    activation.clear()
    registry._reset_for_tests()


@pytest.fixture
def stock_hook_slot():
    """Restore whatever was in Triton's stages-hook slot after the test."""
    from tritonx.integration import hook

    saved_slot = triton.knobs.runtime.add_stages_inspection_hook
    saved_foreign = hook._foreign
    yield
    triton.knobs.runtime.add_stages_inspection_hook = saved_slot
    hook._foreign = saved_foreign


def ptx_counts(kernel) -> dict[str, int]:
    ptx = kernel.asm["ptx"]
    return {"cp.async": ptx.count("cp.async.cg") + ptx.count("cp.async.ca"), "wgmma": ptx.count("wgmma.mma_async")}


@pytest.fixture
def compile_probe():
    """Compile the probe matmul (pipelined, 16-divisible args) for a target."""

    def run(target: str = "cuda:90", **kw):
        return tritonx.compile_for(target, **kw)

    return run
