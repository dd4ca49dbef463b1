"""``tritonx plugins``, ``doctor``, ``check-native``, ``new`` and the guarded import of ``new``."""

from __future__ import annotations

import importlib
import os
import sys
import types
from pathlib import Path

import pytest
import triton
import tritonx
import tritonx.cli
from tritonx import compat
from typer.testing import CliRunner


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0
    assert f"tritonx {tritonx.__version__} (Triton {compat.TRITON_VERSION_STR})" in result.stdout


def test_plugins_lists_registered_plugin_and_its_edits(cli, no_pipelining_plugin):
    result = cli("plugins")
    assert result.exit_code == 0, result.output
    assert "cli-test" in result.stdout and "1.2.3" in result.stdout
    assert "pipeline cli-no-pipelining" in result.stdout
    assert "disable('tritongpu-pipeline')" in result.stdout

    data = cli.json("plugins")
    entry = next(p for p in data["plugins"] if p["name"] == "cli-test")
    assert entry["enabled"] is False and entry["distribution"] == "(registered in code)"
    assert entry["pipelines"] == [{
        "name": "cli-no-pipelining",
        "edits": ["disable('tritongpu-pipeline')", "insert_after('tritongpu-coalesce', python:cli-mark)"],
    }]


def test_plugins_shows_enabled_state(cli, no_pipelining_plugin):
    tritonx.enable_plugins(["cli-test"])
    try:
        entry = next(p for p in cli.json("plugins")["plugins"] if p["name"] == "cli-test")
    finally:  # the shared conftest clears activations before plugins; disabling here keeps teardown clean
        tritonx.disable_plugins(["cli-test"])
    assert entry["enabled"] is True


def test_plugins_reports_refused_native_library(cli, tmp_path):
    bogus = tmp_path / "libbogus.so"
    bogus.write_text("not an ELF file")
    tritonx.register_plugin(tritonx.Plugin("cli-native", native_libraries=[str(bogus)]))
    entry = next(p for p in cli.json("plugins")["plugins"] if p["name"] == "cli-native")
    (lib,) = entry["native_libraries"]
    assert lib["ok"] is False and lib["failed_check"] == "elf" and "ELF" in lib["detail"]
    text = cli("plugins").stdout
    assert "refused" in text  # the table may wrap "(elf)" when other plugins widen it


def test_doctor(cli, no_pipelining_plugin, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    result = cli("doctor")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert compat.TRITON_VERSION_STR in out and tritonx.__version__ in out
    assert "nvidia" in out and "stages hook" in out and "cli-test" in out and "compatible" in out

    data = cli.json("doctor")
    assert data["triton"] == compat.TRITON_VERSION_STR
    assert set(data["backends"]) >= {"nvidia", "amd"}
    assert data["TRITON_INTERPRET"] == "1"
    assert data["cache_dir"] == triton.knobs.cache.dir
    assert set(data["hook"]) == {"installed", "slot", "chained"}
    entry = next(p for p in data["plugins"] if p["name"] == "cli-test")
    assert entry["compatible"] is True and entry["unknown_passes"] == []
    assert "torch" in data  # None when torch is not installed: optional


def test_check_native_refuses_a_non_elf_file(cli, tmp_path):
    bogus = tmp_path / "libnot.so"
    bogus.write_text("hello")
    result = cli("check-native", str(bogus))
    assert result.exit_code == 1
    assert "FAILED" in result.stdout and "not run" in result.stdout
    assert "refused by check 'elf'" in result.output

    result = cli("check-native", str(bogus), "--json")
    assert result.exit_code == 1
    import json

    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert [(c["name"], c["ok"]) for c in data["checks"]] == [("exists", True), ("permissions", True), ("elf", False)]
    assert "symbol" in data["not_run"]


def test_check_native_missing_file(cli, tmp_path):
    result = cli("check-native", str(tmp_path / "nope.so"))
    assert result.exit_code == 1 and "refused by check 'exists'" in result.output


@pytest.mark.skipif(compat.TRITON_VERSION[:2] < (3, 7), reason="native plugins need Triton >= 3.7")
def test_check_native_accepts_tritons_own_plugin(cli):
    lib = Path(triton.__file__).parent / "plugins" / "libMLIRDialectPlugin.so"
    if not lib.is_file():
        pytest.skip("this Triton wheel ships no test plugin")
    data = cli.json("check-native", str(lib))
    assert data["ok"] is True and all(c["ok"] for c in data["checks"])
    assert data["plugin"]["triton_version"] == compat.TRITON_VERSION_STR


def test_new_command_is_registered(cli):
    result = cli("new", "--help")
    assert result.exit_code == 0 and "--native" in result.stdout


def test_cli_works_when_new_is_broken(monkeypatch):
    """A broken ``cli/new.py`` costs the ``new`` command only."""
    broken = types.ModuleType("tritonx.cli.new")

    def register(app):
        raise RuntimeError("template missing")

    broken.register = register
    monkeypatch.setitem(sys.modules, "tritonx.cli.new", broken)
    monkeypatch.setattr(tritonx.cli, "new", broken, raising=False)
    app_module = importlib.import_module("tritonx.cli.app")
    try:
        reloaded = importlib.reload(app_module)
        runner = CliRunner()
        env = {"COLUMNS": "250"}
        assert runner.invoke(reloaded.app, ["doctor", "--json"], env=env).exit_code == 0
        result = runner.invoke(reloaded.app, ["new", "x"], env=env)
        assert result.exit_code == 1 and "unavailable: RuntimeError: template missing" in result.output
    finally:
        monkeypatch.undo()
        importlib.reload(app_module)


def test_console_script_entry_point():
    from importlib import metadata

    (ep,) = [e for e in metadata.entry_points(group="console_scripts") if e.name == "tritonx"]
    assert ep.value == "tritonx.cli.app:main"
    assert os.environ.get("COLUMNS") != "250"  # the runner's env did not leak
