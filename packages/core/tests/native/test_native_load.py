"""load_native and the registry the pipeline engine asks for native passes."""

from __future__ import annotations

import pytest
from native_fixtures import (
    build_info_plugin,
    installed_plugin,
    installed_supports_natives,
    installed_triton,
    last_json,
    run_child,
)
from tritonx import load_native
from tritonx.compat.native import native_loading
from tritonx.errors import PluginLoadError
from tritonx.native import NativePluginInfo

LOADING = native_loading(installed_triton().version)


def test_nothing_loaded_means_no_native_pass(runtime):
    assert runtime.natives.native_passes() == []
    assert runtime.natives.find_pass("add_plugin") is None


def test_load_after_triton_import_explains_the_startup_route(runtime):
    if LOADING.mechanism != "env":
        pytest.skip("only Triton 3.7/3.8 read TRITON_PLUGIN_PATHS once, at import")
    plugin = installed_plugin()
    with pytest.raises(PluginLoadError) as info:
        load_native(plugin)  # this test process imported triton long ago
    assert info.value.check == "load" and info.value.path == str(plugin)
    assert "TRITONX_NATIVE_PLUGINS=" in str(info.value) and "already imported" in str(info.value)
    assert runtime.natives.native_passes() == []


def test_load_on_unsupported_triton_is_refused(tmp_path):
    if installed_supports_natives():
        pytest.skip("the installed Triton loads native plugins")
    with pytest.raises(PluginLoadError) as info:
        load_native(build_info_plugin(tmp_path, "libinfo.so"))
    assert info.value.check == "triton_support"
    assert "need Triton >= 3.7" in str(info.value)


def test_load_runs_the_checks_first(tmp_path, runtime):
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"\x7fELF" + b"\0" * 12)
    with pytest.raises(PluginLoadError) as info:
        load_native(bad)
    assert info.value.check == "elf"
    assert runtime.natives.native_passes() == []


def test_declared_but_unloaded_pass_is_a_load_error(runtime):
    if not installed_supports_natives():
        pytest.skip("no native plugins on this Triton")
    fake = NativePluginInfo(
        path="/nowhere/libfake.so",
        plugin_name="fake",
        plugin_version="1",
        api_version=2,
        triton_version=installed_triton().version,
        passes=[("tritonx_never_loaded", "1")],
    )
    runtime.natives.register(fake)
    assert runtime.natives.native_passes() == ["tritonx_never_loaded"]
    with pytest.raises(PluginLoadError) as info:
        runtime.natives.find_pass("tritonx_never_loaded")
    assert info.value.check == "load" and info.value.path == "/nowhere/libfake.so"
    assert f"passes.plugin.{LOADING.pass_attribute('tritonx_never_loaded')}" in str(info.value)


def test_runtime_load_on_39_adds_a_working_pass(tmp_path):
    """3.9: load_native after triton is imported; find_pass's adder runs the plugin's pass (in a child,
    so the test process does not keep the library)."""
    if not LOADING.runtime_loading:
        pytest.skip("only Triton >= 3.9 loads native plugins at run time")
    done = run_child(
        tmp_path,
        """
        import json, os
        import triton
        from native_kernels import compile_add_one, parsed_ttir
        from tritonx.runtime import current

        natives = current().natives
        info = current().load_native(os.environ["GOOD"])
        compiled = compile_add_one(16)
        ctx, mod, pm = parsed_ttir(compiled, os.environ["TRITON_CACHE_DIR"])
        adder = natives.find_pass("plugin")
        adder(pm, [])
        pm.run(mod, "t")
        print(json.dumps({"names": natives.native_passes(), "repr": repr(adder),
                          "funcs": [ln.strip().split("(")[0] for ln in str(mod).splitlines() if "tt.func" in ln]}))
        """,
        GOOD=str(installed_plugin()),
    )
    out = last_json(done)
    assert out["names"] == ["plugin"]
    assert "via add_plugin" in out["repr"]
    assert out["funcs"] == ["tt.func public @foo"]
