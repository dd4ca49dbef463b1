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
    monkeypatch.setenv("TRITONX_PLUGINS", "none")  # installed default-on plugins (utlx) stay off unless a test asks
    saved = _save_state()
    activation.clear()  # core tests start from stock (other packages' plugins may be on in this worker)
    registry._enabled.clear()
    yield cache
    _restore_state(saved)


def _save_state():
    return (list(activation._order), dict(activation._counts), dict(activation._extra_keys),
            dict(registry._registered), registry._discovered, dict(registry._enabled), dict(registry._broken))


def _restore_state(saved) -> None:
    """Put back exactly the pipelines and plugins that were on before the test."""
    order, counts, extra, registered, discovered, enabled, broken = saved
    with activation._lock:
        activation._order[:] = order
        activation._counts.clear()
        activation._counts.update(counts)
        activation._extra_keys.clear()
        activation._extra_keys.update(extra)
        activation._rebuild()
    registry._registered.clear()
    registry._registered.update(registered)
    registry._discovered = discovered
    registry._enabled.clear()
    registry._enabled.update(enabled)
    registry._broken.clear()
    registry._broken.update(broken)


@pytest.fixture
def stock_hook_slot():
    """Restore whatever was in Triton's stages-hook slot after the test."""
    from tritonx.integration import hook

    saved_slot = triton.knobs.runtime.add_stages_inspection_hook
    saved_foreign = hook._foreign
    yield
    triton.knobs.runtime.add_stages_inspection_hook = saved_slot
    hook._foreign = saved_foreign


@pytest.fixture
def compile_probe():
    """Compile the probe matmul (pipelined, 16-divisible args) for a target."""

    def run(target: str = "cuda:90", **kw):
        return tritonx.compile_for(target, **kw)

    return run
