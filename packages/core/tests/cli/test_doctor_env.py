"""``tritonx doctor`` and the variables that choose plugins (issue 29): what the API would refuse, doctor reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import triton
import tritonx
from tritonx import compat
from tritonx.runtime import current


def test_unknown_tritonx_plugins_name_fails_doctor_as_the_api_does(cli, no_pipelining_plugin, monkeypatch):
    monkeypatch.setenv("TRITONX_PLUGINS", "cli-test,bogus")
    with pytest.raises(tritonx.PluginError, match="bogus"):  # what doctor must not contradict
        tritonx.apply_environment()
    result = cli("doctor")
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("TRITONX_PLUGINS"))
    assert "cli-test,bogus (unknown: bogus)" in row
    assert "TRITONX_PLUGINS names unknown plugin(s) 'bogus'" in result.stderr and "cli-test" in result.stderr
    data = json.loads(cli("doctor", "--json").stdout)
    assert data["unknown_env_plugins"] == ["bogus"]
    assert data["problems"][0].startswith("TRITONX_PLUGINS names unknown plugin(s) 'bogus' (known: ")


@pytest.mark.parametrize("value", ["cli-test", "all", "none"])
def test_known_tritonx_plugins_values_pass_doctor(cli, no_pipelining_plugin, monkeypatch, value):
    monkeypatch.setenv("TRITONX_PLUGINS", value)
    data = cli.json("doctor")
    assert data["unknown_env_plugins"] == [] and data["problems"] == []


def _triton_test_plugin() -> Path:
    lib = Path(triton.__file__).parent / "plugins" / "libMLIRDialectPlugin.so"
    if compat.TRITON_VERSION[:2] not in ((3, 7), (3, 8)) or not lib.is_file():
        pytest.skip("native libraries load only at start-up on Triton 3.7/3.8, and this wheel must ship one")
    return lib


def test_native_plugin_not_named_in_tritonx_native_plugins_gets_the_fix(cli, monkeypatch):
    lib = _triton_test_plugin()
    monkeypatch.delenv("TRITONX_NATIVE_PLUGINS", raising=False)
    tritonx.register_plugin(tritonx.Plugin("cli-native-ok", "0.2", native_libraries=[str(lib)]))
    result = cli("doctor")
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("cli-native-ok"))
    assert "not loaded" in row and f"set TRITONX_NATIVE_PLUGINS={lib} before Python starts" in row
    assert f"plugin 'cli-native-ok' is not loaded (set TRITONX_NATIVE_PLUGINS={lib}" in result.stderr
    entry = next(p for p in json.loads(cli("doctor", "--json").stdout)["plugins"] if p["name"] == "cli-native-ok")
    assert entry["status"] == "not loaded" and entry["native_ok"] is True and str(lib) in entry["hint"]


@pytest.fixture
def native_plugin_installed(tmp_path, monkeypatch):
    """An installed distribution like `tritonx new --native` makes: its pipeline names its library's pass, and
    the library (a .so in the distribution's RECORD) is not loaded, so building the pipeline fails."""
    site = tmp_path / "site"
    pkg = site / "nativedemo"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import tritonx\n\n\ndef make_plugin():\n"
        "    pipe = tritonx.Pipeline('nativedemo').insert_after('tritongpu-coalesce', 'nativedemo_tag')\n"
        "    return tritonx.Plugin('nativedemo', pipelines=[pipe], native_libraries=[])\n")
    (pkg / "lib" / "libnativedemo.so").write_bytes(b"\x7fELF")
    info = site / "nativedemo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nativedemo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tritonx.plugins]\nnativedemo = nativedemo:make_plugin\n")
    (info / "RECORD").write_text("nativedemo/__init__.py,,\nnativedemo/lib/libnativedemo.so,,\n"
                                 "nativedemo-0.1.dist-info/RECORD,,\n")
    monkeypatch.syspath_prepend(str(site))
    current().plugins.discover(force=True)
    return pkg / "lib" / "libnativedemo.so"


def test_broken_native_plugin_names_the_library_to_declare(cli, native_plugin_installed):
    if not compat.TRITON_VERSION[:2] >= (3, 7):
        pytest.skip("native plugins need Triton >= 3.7")
    result = cli("doctor")
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("nativedemo"))
    # pass names are checked when a plugin is enabled, so the plugin is listed, its missing pass named
    assert "unknown: nativedemo_tag" in row and "incompatible" in row
    assert f"set TRITONX_NATIVE_PLUGINS={native_plugin_installed} before Python starts" in row
    assert "plugin 'nativedemo' is incompatible (its pipeline names a pass its native library provides" \
        in result.stderr
