"""check_native accepts real plugins and reports what they declare."""

from __future__ import annotations

import pytest
from native_fixtures import DIALECT_PLUGIN, build_info_plugin, installed_plugin, installed_triton
from tritonx.compat.native import native_loading
from tritonx.native import CHECKS, NativePluginInfo, check_native


def test_installed_test_plugin_passes_every_check():
    plugin = installed_plugin()
    info = check_native(plugin)
    triton = installed_triton()
    assert info.path == str(plugin)
    assert info.plugin_name == "TritonPlugin"
    assert info.api_version == 2
    assert info.triton_version == triton.version
    # The pass is "add_plugin" in the 3.7/3.8 wheels and "plugin" in 3.9's; either way Triton's binding for
    # it is passes.plugin.add_plugin.
    assert len(info.passes) == 1
    (name, version) = info.passes[0]
    assert native_loading(triton.version).pass_attribute(name) == "add_plugin"
    assert version == "0.1.0"
    assert info.dialects == [] and info.ops == []
    assert [c.name for c in info.checks] == list(CHECKS)
    assert all(c.ok for c in info.checks)


def test_installed_dialect_plugin_declares_its_dialect():
    info = check_native(installed_plugin(DIALECT_PLUGIN))
    assert info.plugin_name == "DialectPlugin"
    assert info.pass_names == ["plugingpu_conversion"]
    assert info.dialects == [("DialectPlugin", "0.1.0")]
    assert len(info.ops) == 1 and "custom_op" in info.ops[0]


def test_info_struct_of_a_c_plugin_is_decoded(tmp_path):
    if native_loading(installed_triton().version).mechanism == "unsupported":
        pytest.skip("no native plugins on this Triton")
    info = check_native(build_info_plugin(tmp_path, "libinfo.so"))
    assert (info.plugin_name, info.plugin_version) == ("tritonx-probe", "4.5.6")
    assert info.passes == [("tritonx_probe_pass", "1.2.3"), ("second_pass", "0.1")]
    assert info.ops == ["tritonx_probe_op"]
    assert info.dialects == []
    undefined = next(c for c in info.checks if c.name == "undefined_symbols")
    assert undefined.ok and "resolved" in undefined.detail


def test_info_round_trips_through_a_dict():
    info = check_native(installed_plugin())
    again = NativePluginInfo.from_dict(info.to_dict())
    assert again == info
