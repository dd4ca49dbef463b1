"""Misuse and faults named clearly, leaving tritonx and Triton working (issue 11, items 2, 3 and 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import tritonx
from tritonx.engine.keys import pipeline_key
from tritonx.errors import PassFailedError, PipelineError
from tritonx_testutil import ptx_counts

THRESHOLD = 4  # read by a pass below: an immutable global enters the key
CONFIG = {"unroll": 2}  # read by a pass below: a mutable global the key cannot see


def _twin():
    from test_cache import _twin_kernels

    return _twin_kernels()[0]


# -- item 2: a cache_key that raises -------------------------------------------------------------------


def test_pipeline_cache_key_that_raises_names_it_and_leaves_nothing(compile_probe):
    bad = tritonx.Pipeline("bad-key", cache_key=lambda: str(1 / 0)).disable("tritongpu-pipeline")
    fine = tritonx.Pipeline("fine").disable("tritongpu-pipeline")
    with pytest.raises(PipelineError, match=r"pipeline 'bad-key': its cache_key\(\) raised ZeroDivisionError"):
        tritonx.activate(fine, bad)
    assert tritonx.active() == () and tritonx.active_key() == ""  # not even `fine`: all or nothing
    assert not bad.frozen and not fine.frozen
    with tritonx.activate(fine):  # later activations are not poisoned
        assert tritonx.active() == (fine,)
        assert ptx_counts(compile_probe())["cp.async"] == 0
    kernel = _twin()
    with pytest.raises(PipelineError, match="pipeline 'bad-key'"):
        tritonx.pipeline(bad)(kernel)
    assert getattr(kernel, "__tritonx_binding__", None) is None


def test_pass_cache_key_that_raises_names_pipeline_and_pass():
    class Broken(tritonx.CustomPass):
        def __call__(self, module, ctx):
            return None

        def cache_key(self):
            raise KeyError("missing setting")

    p = tritonx.Pipeline("bad-pass").insert_after("tritongpu-coalesce", Broken(), pass_name="broken")
    with pytest.raises(PipelineError, match=r"pipeline 'bad-pass': the cache key of insert_after.*broken.*KeyError"):
        tritonx.activate(p)
    assert tritonx.active() == ()


# -- item 3: override_stage returning the wrong type -------------------------------------------------


@pytest.mark.parametrize(("stage", "value", "expected"), [
    ("ttgir", 42, r"returned int for stage 'ttgir'.*must return an ir\.module"),
    ("llir", None, r"returned NoneType for stage 'llir'.*must return str"),
    ("cubin", "text", r"returned str for stage 'cubin'.*must return bytes"),
])
def test_override_stage_of_the_wrong_type_names_pipeline_stage_and_type(compile_probe, stage, value, expected):
    p = tritonx.Pipeline("wrong-type").override_stage(stage, lambda src, metadata, ctx: value)
    match = r"pipeline 'wrong-type': override_stage.*" + expected
    with tritonx.activate(p), pytest.raises(PassFailedError, match=match):
        compile_probe()
    assert ptx_counts(compile_probe())["cp.async"] > 0  # Triton still compiles


# -- item 8: state the key cannot see -----------------------------------------------------------------


def test_closure_with_mutable_state_warns_once_and_says_how_to_key():
    settings = {"depth": 1}

    def tweak(module, ctx):
        return settings["depth"]

    p = tritonx.Pipeline("closure").insert_after("tritongpu-coalesce", tweak, pass_name="tweak")
    with pytest.warns(tritonx.UnkeyedStateWarning, match=r"'tweak' reads closure variable 'settings' \(dict\)") as rec:
        tritonx.activate(p).deactivate()
    assert "tritonx.cache_key" in str(rec[0].message) and "cache_key=" in str(rec[0].message)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", tritonx.UnkeyedStateWarning)
        tritonx.activate(p).deactivate()  # once per pass


def test_mutable_global_warns_and_immutable_global_enters_the_key(monkeypatch):
    def reads_config(module, ctx):
        return CONFIG["unroll"]

    def reads_threshold(module, ctx):
        return THRESHOLD

    with pytest.warns(tritonx.UnkeyedStateWarning, match=r"global 'CONFIG' \(dict\)"):
        tritonx.activate(tritonx.Pipeline("g").insert_after("tritongpu-coalesce", reads_config)).deactivate()
    key = lambda: pipeline_key(tritonx.Pipeline("t").insert_after("tritongpu-coalesce", reads_threshold))
    before = key()
    monkeypatch.setattr(sys.modules[__name__], "THRESHOLD", 8)
    assert key() != before  # a changed global setting is a changed key, in every process


def test_declared_keys_silence_the_warning_and_replace_the_derived_key(recwarn):
    settings = {"depth": 1}

    @tritonx.cache_key(lambda: f"depth={settings['depth']}")
    def keyed(module, ctx):
        return settings["depth"]

    k = lambda: pipeline_key(tritonx.Pipeline("k").insert_after("tritongpu-coalesce", keyed))
    first = k()
    settings["depth"] = 2
    assert k() != first
    unkeyed = tritonx.Pipeline("whole", cache_key=lambda: "v1").insert_after(
        "tritongpu-coalesce", lambda m, c: settings["depth"])
    tritonx.activate(tritonx.Pipeline("k").insert_after("tritongpu-coalesce", keyed), unkeyed).deactivate()
    assert not [w for w in recwarn if issubclass(w.category, tritonx.UnkeyedStateWarning)]


class Unroll(tritonx.CustomPass):
    def __init__(self, factor, cacheable=True):
        self.factor, self.cacheable = factor, cacheable

    def __call__(self, module, ctx):
        return None

    def cache_key(self):
        return f"unroll-v1:{self.factor}" if self.cacheable else None


def test_custom_pass_protocol_and_opting_out_of_caching():
    key = lambda pass_: pipeline_key(tritonx.Pipeline("c").insert_after("tritongpu-coalesce", pass_, pass_name="u"))
    assert key(Unroll(2)) == key(Unroll(2)) != key(Unroll(4))
    assert isinstance(Unroll(2), tritonx.CacheKeyed)
    code = (
        "import json, tritonx; from tritonx.engine.keys import pipeline_key; import test_faults as t\n"
        "k = lambda p: pipeline_key(tritonx.Pipeline('c').insert_after('tritongpu-coalesce', p, pass_name='u'))\n"
        "print(json.dumps([k(t.Unroll(2)), k(t.Unroll(2, cacheable=False))]))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), *sys.path]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    other_cached, other_uncached = json.loads(done.stdout.strip().splitlines()[-1])
    assert other_cached == key(Unroll(2))  # a stated key is the same in every process
    assert other_uncached != key(Unroll(2, cacheable=False))  # None: never shared with another process
