"""Issue 28, items 1 and 2: a pass is keyed by the code it reaches, and every cache_key follows one protocol.

The defect: a Python pass calling a helper in another module (or a method of its own object) was keyed by its
own bytecode alone. Edit the helper, compile again in a new process on the same ``TRITON_CACHE_DIR``, and the
binary the old helper built came back. Each test below edits the code a pass reaches between two processes that
share a cache, and asserts the second compile ran the new code (the tag the pass writes into the module is in
the TTGIR) and got its own binary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import tritonx
from tritonx.engine.keys import pipeline_key
from tritonx.model.keyed import callable_key, unseen_state

DRIVER = """
import json, sys
import tritonx
import {pass_module} as passes

pipeline = tritonx.Pipeline("reach").insert_after("tritongpu-coalesce", passes.{pass_name}, pass_name="tag")
with tritonx.activate(pipeline):
    k = tritonx.compile_for("cuda:90")
ttgir = k.asm["ttgir"]
tag = ttgir.split('tritonx.tag = "', 1)[1].split('"', 1)[0] if 'tritonx.tag = "' in ttgir else None
print(json.dumps({{"hash": k.hash, "tag": tag}}))
"""

TAG_PASS = """
from triton._C.libtriton import ir
import {helper}


def tag_pass(module, ctx):
    module.set_attr("tritonx.tag", ir.builder(module.context).get_string_attr({helper}.{call}))
"""


def _run(folder: Path, cache: Path, pass_module: str, pass_name: str) -> dict:
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1", TRITONX_PLUGINS="none",
               PYTHONPATH=os.pathsep.join([str(folder), *sys.path]))
    code = DRIVER.format(pass_module=pass_module, pass_name=pass_name)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=folder,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _write(path: Path, text: str) -> None:
    path.write_text(textwrap.dedent(text))


@pytest.fixture
def shared_cache(tmp_path: Path) -> Path:
    cache = tmp_path / "shared-triton-cache"
    cache.mkdir()
    return cache


def test_editing_a_helper_module_recompiles_in_the_next_process(tmp_path, shared_cache):
    _write(tmp_path / "reach_helper_a.py", 'def label():\n    return "built-by-v1"\n')
    _write(tmp_path / "reach_pass_a.py", TAG_PASS.format(helper="reach_helper_a", call="label()"))
    first = _run(tmp_path, shared_cache, "reach_pass_a", "tag_pass")
    assert first["tag"] == "built-by-v1"
    _write(tmp_path / "reach_helper_a.py", 'def label():\n    return "built-by-v2, longer"\n')
    second = _run(tmp_path, shared_cache, "reach_pass_a", "tag_pass")
    assert second["tag"] == "built-by-v2, longer"  # the new helper ran: no binary of the old one was served
    assert second["hash"] != first["hash"]
    assert _run(tmp_path, shared_cache, "reach_pass_a", "tag_pass") == second  # unchanged code still hits


def test_editing_a_helper_two_calls_deep_recompiles(tmp_path, shared_cache):
    _write(tmp_path / "reach_deep_inner.py", 'SUFFIX = "one"\n\ndef inner():\n    return "deep-" + SUFFIX\n')
    _write(tmp_path / "reach_deep_outer.py", "from reach_deep_inner import inner\n\n"
           "def label():\n    return inner().upper()\n")
    _write(tmp_path / "reach_pass_deep.py", TAG_PASS.format(helper="reach_deep_outer", call="label()"))
    first = _run(tmp_path, shared_cache, "reach_pass_deep", "tag_pass")
    _write(tmp_path / "reach_deep_inner.py", 'SUFFIX = "two"\n\ndef inner():\n    return "deep-" + SUFFIX\n')
    second = _run(tmp_path, shared_cache, "reach_pass_deep", "tag_pass")
    assert (first["tag"], second["tag"]) == ("DEEP-ONE", "DEEP-TWO")
    assert second["hash"] != first["hash"]


def test_editing_a_method_of_a_callable_pass_object_recompiles(tmp_path, shared_cache):
    body = """
    from triton._C.libtriton import ir


    class Tagger:
        def label(self):
            return {label!r}

        def __call__(self, module, ctx):
            module.set_attr("tritonx.tag", ir.builder(module.context).get_string_attr(self.label()))


    tagger = Tagger()
    """
    _write(tmp_path / "reach_pass_obj.py", body.format(label="method-v1"))
    first = _run(tmp_path, shared_cache, "reach_pass_obj", "tagger")
    _write(tmp_path / "reach_pass_obj.py", body.format(label="method-v2"))
    second = _run(tmp_path, shared_cache, "reach_pass_obj", "tagger")
    assert (first["tag"], second["tag"]) == ("method-v1", "method-v2")
    assert second["hash"] != first["hash"]


def test_a_module_imported_inside_the_pass_is_keyed(tmp_path, shared_cache):
    _write(tmp_path / "reach_late_helper.py", 'def label():\n    return "late-v1"\n')
    _write(tmp_path / "reach_pass_late.py", """
        from triton._C.libtriton import ir


        def tag_pass(module, ctx):
            import reach_late_helper

            module.set_attr("tritonx.tag", ir.builder(module.context).get_string_attr(reach_late_helper.label()))
        """)
    first = _run(tmp_path, shared_cache, "reach_pass_late", "tag_pass")
    _write(tmp_path / "reach_late_helper.py", 'def label():\n    return "late-v2"\n')
    second = _run(tmp_path, shared_cache, "reach_pass_late", "tag_pass")
    assert (first["tag"], second["tag"]) == ("late-v1", "late-v2")
    assert second["hash"] != first["hash"]


# -- in one process: what enters the key, what is reported -------------------------------------------------


def _scale(x):
    return x * FACTOR


FACTOR = 2
SETTINGS = {"depth": 1}


def _uses_scale(module, ctx):
    return _scale(3)


def _helper_reads_settings():
    return SETTINGS["depth"]


def _uses_settings_through_helper(module, ctx):
    return _helper_reads_settings()


def _runs_exec(module, ctx):
    exec("x = 1")


def test_a_changed_global_of_a_helper_changes_the_key(monkeypatch):
    before = callable_key(_uses_scale)
    assert callable_key(_uses_scale) == before
    monkeypatch.setattr(sys.modules[__name__], "FACTOR", 3)
    assert callable_key(_uses_scale) != before


def test_mutable_state_read_by_a_helper_is_reported_by_name():
    found = unseen_state(_uses_settings_through_helper)
    assert any("global 'SETTINGS'" in f and "_helper_reads_settings" in f for f in found), found
    p = tritonx.Pipeline("helper-state").insert_after("tritongpu-coalesce", _uses_settings_through_helper)
    with pytest.warns(tritonx.UnkeyedStateWarning, match=r"global 'SETTINGS' of .*_helper_reads_settings \(dict\)"):
        tritonx.activate(p).deactivate()


def test_code_the_walk_cannot_follow_is_reported():
    assert any("exec()" in f for f in unseen_state(_runs_exec))
    with pytest.warns(tritonx.UnkeyedStateWarning, match=r"cannot follow: .*_runs_exec calls exec\(\)"):
        tritonx.activate(tritonx.Pipeline("dyn").insert_after("tritongpu-coalesce", _runs_exec)).deactivate()


def test_library_code_is_keyed_as_a_library_not_walked():
    import numpy

    def uses_numpy(module, ctx):
        return numpy.zeros(3)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert unseen_state(uses_numpy) == []
    from tritonx.model.code_reach import library_key

    assert library_key("numpy").startswith("numpy==")
    assert library_key("json").startswith("python-")
    assert library_key("tritonx").startswith("tritonx#")
    assert library_key(__name__) is None  # this test module is user code: walked


# -- item 2: one protocol for pass-, pipeline- and plugin-level keys --------------------------------------


def test_pipeline_cache_key_none_is_never_shared_with_another_process():
    key = pipeline_key(tritonx.Pipeline("opt-out", cache_key=lambda: None))
    assert key == pipeline_key(tritonx.Pipeline("opt-out", cache_key=lambda: None))  # stable in this process
    code = ("import tritonx; from tritonx.engine.keys import pipeline_key; "
            "print(pipeline_key(tritonx.Pipeline('opt-out', cache_key=lambda: None)))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert other.stdout.strip().splitlines()[-1] != key
    assert key != pipeline_key(tritonx.Pipeline("opt-out", cache_key=lambda: "None"))  # not the string "None"


@pytest.mark.parametrize("bad", [42, b"v1", ["v1"]])
def test_non_string_keys_are_refused_alike_by_pipelines_and_plugins(bad, runtime):
    with pytest.raises(tritonx.PipelineError, match=r"pipeline 'bad-key'.*must return a str or None, got"):
        tritonx.activate(tritonx.Pipeline("bad-key", cache_key=lambda: bad))
    plugin = tritonx.Plugin("bad-key-plugin", cache_key=lambda: bad)
    tritonx.register_plugin(plugin)
    with pytest.raises(tritonx.PluginError, match=r"plugin 'bad-key-plugin'.*must return a str or None, got"):
        tritonx.enable_plugins(["bad-key-plugin"])
    assert not tritonx.is_plugin_enabled("bad-key-plugin")


def _plugin_key_in_a_new_process(key_expr: str) -> str:
    code = ("import tritonx; from tritonx.runtime import current\n"
            f"tritonx.register_plugin(tritonx.Plugin('keyed-plugin', cache_key=lambda: {key_expr}))\n"
            "tritonx.enable_plugins(['keyed-plugin']); print(current().active_key())")
    env = dict(os.environ, TRITONX_PLUGINS="none")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_plugin_cache_key_none_is_process_unique_and_a_string_is_shared():
    assert _plugin_key_in_a_new_process("None") != _plugin_key_in_a_new_process("None")
    assert _plugin_key_in_a_new_process("'v1'") == _plugin_key_in_a_new_process("'v1'")
    assert _plugin_key_in_a_new_process("'None'") != _plugin_key_in_a_new_process("None")


def test_cache_key_arguments_must_be_callables():
    with pytest.raises(TypeError, match="cache_key takes a zero-argument callable"):
        tritonx.Plugin("not-callable", cache_key="v1")
    with pytest.raises(tritonx.PipelineError, match="cache_key= takes a zero-argument callable"):
        tritonx.Pipeline("not-callable", cache_key="v1")


def test_package_key_of_a_library_is_its_distribution_and_of_a_source_folder_its_sources(tmp_path, monkeypatch):
    import triton

    assert tritonx.package_key("triton").startswith(f"triton=={triton.__version__}#")
    pkg = tmp_path / "keyed_pkg_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = tritonx.package_key("keyed_pkg_probe")
    assert before.startswith("keyed_pkg_probe#") and tritonx.package_key("keyed_pkg_probe") == before
    (pkg / "helpers.py").write_text("def f():\n    return 2\n")  # a checkout changes without a version bump
    assert tritonx.package_key("keyed_pkg_probe") != before
    with pytest.raises(ValueError, match="no importable package 'no_such_pkg_here'"):
        tritonx.package_key("no_such_pkg_here")
