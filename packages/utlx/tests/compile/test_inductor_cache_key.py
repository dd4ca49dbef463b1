"""torch.compile's caches key utlx.inductor's mode and code (``utlx.inductor.cache_key``): a graph compiled with
the integration on is never served with it off (or in another mode, or by another utlx), and the other way round.

Shown on the real FX graph cache (local, a private directory): the same graph compiled again is a cache hit in
the same state (so the check can see hits), a miss after the state changes, and a hit again when the state
returns. On a CPU utlx adds no kernel, but the key must differ all the same: on an H200 the cached module would
hold the utlx kernels.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor")

import torch.compiler.config as cconfig  # noqa: E402
import utlx.inductor as ui  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402
from tritonx import seams  # noqa: E402
from utlx.inductor import cache_key  # noqa: E402


@pytest.fixture
def off_after():
    ui.disable()
    yield
    ui.disable()


def _fn(x):
    return torch.nn.functional.gelu(x @ x.T) * 2 + 1


def _compile_once(autograd_cache: bool) -> str:
    """Compile ``_fn`` afresh (dynamo reset, in-memory caches dropped) and say what the caches answered."""
    import torch._functorch.config as fconfig
    import torch._inductor.config as iconfig

    torch._dynamo.reset()
    counters.clear()
    with iconfig.patch(fx_graph_cache=True, fx_graph_remote_cache=False), \
            fconfig.patch(enable_autograd_cache=autograd_cache):
        torch.compile(_fn)(torch.randn(8, 8))
    hits = counters["inductor"]["fxgraph_cache_hit"] + counters["aot_autograd"]["autograd_cache_hit"]
    misses = counters["inductor"]["fxgraph_cache_miss"]
    assert hits + misses >= 1, dict(counters)  # the cache was consulted at all
    return "hit" if hits else "miss"


@pytest.mark.parametrize(("autograd_cache", "gemm_hooks"), [(False, True), (True, True), (False, False)],
                         ids=["fx-graph-cache", "with-aot-autograd-cache", "flex-only"])
def test_cached_graphs_do_not_cross_the_switch(off_after, tmp_path, monkeypatch, autograd_cache, gemm_hooks):
    """``flex-only``: a torch without the GEMM hooks (and without ``config.inductor_choices_class``, whose
    change alone moves the key on torch 2.14): only the cache key tag tells the states apart there."""
    import warnings

    from utlx import compat

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    if not gemm_hooks:
        def missing() -> dict:
            raise RuntimeError("utlx.inductor: this torch has no GEMM template hooks (test)")

        monkeypatch.setattr(compat, "inductor_gemm_hooks", missing)
        warnings.filterwarnings("ignore", message="utlx.inductor: the GEMM templates are off")
    assert _compile_once(autograd_cache) == "miss"
    assert _compile_once(autograd_cache) == "hit"  # same state: served from the cache
    ui.enable("allow")
    assert _compile_once(autograd_cache) == "miss"  # not the graph compiled with utlx off
    assert _compile_once(autograd_cache) == "hit"
    ui.enable("force")
    assert _compile_once(autograd_cache) == "miss"  # not allow's
    ui.disable()
    assert _compile_once(autograd_cache) == "hit"  # the stock key again: the first compile's entry


def test_the_tag_keeps_the_users_and_comes_out_whole(off_after):
    with cconfig.patch(cache_key_tag="my-tag"):  # (monkeypatch would delete the config entry on undo)
        ui.enable("allow")
        assert cconfig.cache_key_tag.startswith("my-tag|" + cache_key.MARK + "allow:")
        assert cache_key.SEAM in seams.active()  # tritonx doctor lists it
        ui.enable("force")
        assert cconfig.cache_key_tag.count(cache_key.MARK) == 1 and "=force:" in cconfig.cache_key_tag
        ui.disable()
        assert cconfig.cache_key_tag == "my-tag"
        assert cache_key.SEAM not in seams.active()


def test_the_tag_follows_the_configured_choices(off_after, monkeypatch):
    from utlx.inductor import gemm

    before = cache_key.tag("allow", ui._choices_now())
    monkeypatch.setattr(gemm, "WS_CONFIGS", ())  # the documented way to switch the WS GEMM choices off
    assert cache_key.tag("allow", ui._choices_now()) != before
    assert cache_key.tag("force", ui._choices_now()) != cache_key.tag("allow", ui._choices_now())


def test_a_torch_without_the_tag_refuses_before_installing_anything(off_after, monkeypatch):
    import types

    import torch.compiler

    monkeypatch.setattr(torch.compiler, "config", types.SimpleNamespace())  # a torch without cache_key_tag
    with pytest.raises(RuntimeError, match=r"no torch\.compiler\.config\.cache_key_tag"):
        ui.enable("allow")
    assert ui.mode() == "off" and not any(seams.is_installed(s.name) for s in ui.SEAMS)
