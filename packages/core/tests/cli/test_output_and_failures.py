"""CLI output in a pipe (one unwrapped line per row) and CLI failures (exit 1, one or two lines, no traceback)."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
import triton
import tritonx
from cli_helpers import ADD_SIG
from rich.text import Text


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _compile(cli, add_file: Path, *args: str):
    return cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128", *args)


def _assert_short_failure(result, *needles: str) -> str:
    """Exit 1, at most two lines on stderr, no traceback, and each needle in the message."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    err = result.stderr
    assert "Traceback" not in result.output and "╭" not in result.output
    assert 1 <= len(_lines(err)) <= 2, err
    for needle in needles:
        assert needle in err, err
    return err


# ------------------------------------------------------------------------------------------------
# Output in a pipe


def test_pipeline_in_a_pipe_is_one_line_per_pass(cli):
    """Even on a 40-column 'terminal' a pipe gets whole lines: `| grep tritongpu-pipeline` finds the pass."""
    result = cli.runner.invoke(cli.app, ["pipeline", "--target", "cuda:90"], env={"COLUMNS": "40"})
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if "tritongpu-pipeline" in line]
    assert len(rows) == 1, result.stdout
    assert re.match(r"^\s*\d+\s+tritongpu-pipeline\s+passes\.ttgpuir\.add_pipeline\b", rows[0]), rows[0]
    assert not any(ch in result.stdout for ch in "┏┃│━"), "a table was drawn into a pipe"
    assert "\x1b[" not in result.stdout  # no colour codes either
    # the ttgir section lists exactly the captured passes, in order, one per line after its header
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("stage ttgir:"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("stage ")), len(lines))
    assert lines[start + 1].split()[:2] == ["#", "pass"]
    listed = [line.split()[1] for line in lines[start + 2:end]]
    captured = [p.name for p in tritonx.capture("cuda:90")["ttgir"]]
    assert [n for n in listed if not n.startswith("python:")] == captured


def test_plugin_edits_stay_on_their_line_in_a_pipe(cli, no_pipelining_plugin):
    result = cli("pipeline", "--stage", "ttgir", "--plugins", "cli-test")
    assert result.exit_code == 0, result.output
    disabled = next(line for line in result.stdout.splitlines() if "tritongpu-pipeline" in line)
    assert disabled.rstrip().endswith("disabled by cli-no-pipelining"), disabled
    inserted = next(line for line in result.stdout.splitlines() if "python:cli-mark" in line)
    assert inserted.lstrip().startswith("+") and inserted.rstrip().endswith("inserted by cli-no-pipelining")


def test_terminal_gets_the_rich_table(cli):
    """FORCE_COLOR makes rich treat the output as a terminal: the boxed table comes back."""
    result = cli.runner.invoke(cli.app, ["pipeline", "--stage", "ttir"], env={"COLUMNS": "200", "FORCE_COLOR": "1"})
    assert result.exit_code == 0, result.output
    text = Text.from_ansi(result.stdout).plain
    assert "┏" in text and "┃ pass" in text and "triton-combine" in text


def test_doctor_and_plugins_in_a_pipe(cli, no_pipelining_plugin):
    doctor = cli("doctor")
    assert doctor.exit_code == 0, doctor.output
    assert re.search(r"^triton\s+" + re.escape(triton.__version__.split("+")[0]), doctor.stdout, re.MULTILINE)
    row = next(line for line in doctor.stdout.splitlines() if line.startswith("cli-test"))
    assert row.split()[:3] == ["cli-test", "1.2.3", "no"] and row.rstrip().endswith("compatible")
    plugins = cli("plugins")
    row = next(line for line in plugins.stdout.splitlines() if line.startswith("cli-test"))
    assert row.split()[:3] == ["cli-test", "ok", "1.2.3"]
    assert "disable('tritongpu-pipeline')" in row  # the whole contribution on the plugin's line


# ------------------------------------------------------------------------------------------------
# Broken plugins: reported with the reason, exit 1


@pytest.fixture
def broken_plugin_installed(tmp_path, monkeypatch):
    """A real installed distribution (a dist-info on sys.path) whose plugin entry point cannot import."""
    site = tmp_path / "site"
    info = site / "tritonx_broken_demo-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tritonx-broken-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tritonx.plugins]\nbrokendemo = tritonx_broken_demo_gone.plugin:plugin\n")
    monkeypatch.syspath_prepend(str(site))
    tritonx.discover(force=True)
    return "brokendemo"


def test_plugins_reports_a_broken_plugin_and_exits_1(cli, broken_plugin_installed):
    result = cli("plugins")
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("brokendemo"))
    assert row.split()[1] == "broken"
    assert "tritonx-broken-demo" in row and "No module named 'tritonx_broken_demo_gone'" in row
    assert "broken plugin(s): brokendemo" in result.stderr and "Traceback" not in result.output

    result = cli("plugins", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert "No module named 'tritonx_broken_demo_gone'" in data["broken"]["brokendemo"]


def test_doctor_reports_a_broken_plugin_and_exits_1(cli, broken_plugin_installed):
    result = cli("doctor")
    assert result.exit_code == 1, result.output
    assert "plugins: none installed" not in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("brokendemo"))
    assert "broken: " in row and "No module named 'tritonx_broken_demo_gone'" in row
    assert "plugin 'brokendemo' is broken" in result.stderr

    result = cli("doctor", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    entry = next(p for p in data["plugins"] if p["name"] == "brokendemo")
    assert entry["status"] == "broken" and "tritonx_broken_demo_gone" in entry["reason"]
    assert data["problems"] == ["plugin 'brokendemo' is broken"]


def test_doctor_exits_1_for_an_incompatible_plugin(cli, no_pipelining_plugin, monkeypatch, runtime):
    """A plugin naming a pass this Triton lacks is incompatible: listed so, and doctor exits 1."""
    known = runtime.names.is_known
    monkeypatch.setattr(runtime.names, "is_known", lambda name: name != "tritongpu-pipeline" and known(name))
    result = cli("doctor")
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("cli-test"))
    assert "unknown: tritongpu-pipeline" in row and row.rstrip().endswith("incompatible")
    assert "plugin 'cli-test' is incompatible" in result.stderr


# ------------------------------------------------------------------------------------------------
# compile failures (issue 11, item 6)


@pytest.fixture
def gfx000_allowed(monkeypatch):
    """Let hip:gfx000 past the CLI's arch check, so Triton's own compiler failure below Python is what is seen."""
    from tritonx.cli import targets

    monkeypatch.setattr(targets, "HIP_ARCHS", (*targets.HIP_ARCHS, "gfx000"))


def test_compiler_failure_below_python_is_one_line(cli, add_file, gfx000_allowed):
    err = _assert_short_failure(_compile(cli, add_file, "--target", "hip:gfx000"), "gfx000", "unsupported target")
    assert "mlir_reproducer" not in err


def test_invalid_option_value_is_one_line(cli, add_file):
    _assert_short_failure(_compile(cli, add_file, "-o", "num_warps=3"), "-o num_warps=3", "power of 2")


def test_unknown_option_is_rejected_with_the_valid_names(cli, add_file):
    _assert_short_failure(_compile(cli, add_file, "-o", "num_wraps=4"), "unknown -o option(s) num_wraps",
                          "num_warps", "num_stages")
    _assert_short_failure(_compile(cli, add_file, "-o", "num_warps"), "-o 'num_warps' is not NAME=VALUE")


def test_unknown_signature_type_lists_the_valid_ones(cli, add_file):
    result = cli("compile", f"{add_file}:add_one", "--signature", "x_ptr=*fp99,y_ptr=*fp32,n=i32", "-c", "BLOCK=8")
    err = _assert_short_failure(result, "--signature x_ptr=*fp99", "unknown type '*fp99'")
    for valid in ("fp32", "bf16", "fp8e4nv", "i32", "u1", "'*' before one makes a pointer"):
        assert valid in err


def test_kernel_compilation_error_is_one_line(cli, add_file):
    err = _assert_short_failure(cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=100"),
                                "power of 2")
    assert "at line" in err


def test_json_stdout_is_only_json_when_ptxas_talks(cli, add_file, tmp_path, monkeypatch):
    """A ptxas that prints a banner on stdout (as some CUDA releases do): the banner goes to stderr."""
    real = triton.knobs.nvidia.ptxas.path
    wrapper = tmp_path / "ptxas-chatty"
    wrapper.write_text(f'#!/bin/sh\necho "ptxas-chatty: banner on stdout"\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(wrapper))
    # Triton 3.9 runs its second ptxas (``ptxas_blackwell``) for sm_90 and newer: wrap that one too
    if hasattr(triton.knobs.nvidia, "ptxas_blackwell"):
        monkeypatch.setenv("TRITON_PTXAS_BLACKWELL_PATH", str(wrapper))
    assert triton.knobs.nvidia.ptxas.path == str(wrapper)
    result = _compile(cli, add_file, "--stage", "ptx", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # nothing but JSON
    assert ".target sm_90" in data["ir"] and "cubin" in data["stages"]  # ptxas ran (the cubin exists)
    assert "ptxas-chatty: banner on stdout" in result.stderr


def test_internal_errors_are_two_lines_and_debug_shows_the_traceback(cli, monkeypatch):
    def boom(*args, **kwargs):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(tritonx, "capture", boom)
    err = _assert_short_failure(cli("pipeline"), "internal error: ZeroDivisionError: simulated bug",
                                "tritonx --debug pipeline")
    assert err.count("\n") <= 2
    debug = cli("--debug", "pipeline")
    assert isinstance(debug.exception, ZeroDivisionError)  # re-raised: typer prints its traceback
    assert cli("pipeline").exception is None or isinstance(cli("pipeline").exception, SystemExit)


def test_debug_keeps_the_compilers_own_output(cli, add_file, capfd, gfx000_allowed):
    result = cli("--debug", "compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128",
                 "--target", "hip:gfx000")
    assert isinstance(result.exception, RuntimeError)  # Triton's own exception, with its traceback
    assert "unsupported target: 'gfx000'" in capfd.readouterr().err  # MLIR's diagnostics went straight out
    assert os.environ.get("TRITONX_DEBUG") is None
