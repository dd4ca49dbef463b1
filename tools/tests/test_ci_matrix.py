"""ci/matrix.py: loading and validating matrix.toml, cells, target selection, commands and the summary."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_real_matrix_has_the_supported_versions_and_targets(matrix_mod):
    m = matrix_mod.load_matrix()
    assert m.versions == ("3.6.0", "3.7.1", "3.8.0", "3.9.0")
    assert m.default == "3.8.0"
    assert m.non_default_versions == ("3.6.0", "3.7.1", "3.9.0")
    assert [t.name for t in m.targets] == ["cuda:80", "cuda:90", "cuda:100", "hip:gfx942", "hip:gfx950", "interpreter"]
    assert m.target("cuda:90").gpu_target_args() == ("cuda", 90, 32)
    assert m.target("hip:gfx950").gpu_target_args() == ("hip", "gfx950", 64)
    assert m.target("cuda:90").executes_on == "h200"
    with pytest.raises(matrix_mod.MatrixError, match="'interpreter' is not a GPU target"):
        m.target("interpreter").gpu_target_args()


def test_matrix_agrees_with_the_hatch_envs_of_pyproject(matrix_mod):
    """The versions live in two files (hatch needs its own list); this keeps them from drifting apart."""
    m = matrix_mod.load_matrix()
    hatch = matrix_mod.tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["envs"]
    assert hatch[m.smoke_env]["matrix"][0]["triton"] == list(m.versions)
    assert f"triton=={m.default}" in hatch["default"]["dependencies"]
    assert m.smoke_script in hatch[m.smoke_env]["scripts"]


def test_cells_cross_every_version_with_every_target(matrix_mod):
    m = matrix_mod.load_matrix()
    cells = matrix_mod.cells(m)
    assert len(cells) == 4 * 6
    assert {c.triton for c in cells if c.default} == {"3.8.0"}
    table = matrix_mod.list_table(m)
    assert "3.9.0   hip:gfx950" in table
    assert table.count("full suite") == 6


def write_matrix(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "matrix.toml"
    p.write_text(body)
    return p


BASE = """
[triton]
default = "3.8.0"
versions = ["3.6.0", "3.8.0"]
[[target]]
name = "cuda:90"
backend = "cuda"
arch = 90
warp_size = 32
[[target]]
name = "hip:gfx942"
backend = "hip"
arch = "gfx942"
warp_size = 64
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[triton]\ndefault = "3.9.0"\nversions = ["3.8.0"]\n', r"default '3.9.0' is not one of"),
        ('[triton]\nversions = ["3.8.0"]\n', r"missing key \[triton\]\.default"),
        (BASE + '[[target]]\nname = "x"\nbackend = "cuda"\n', "GPU target 'x' needs 'arch' and 'warp_size'"),
        (BASE + '[[target]]\nname = "y"\nbackend = "metal"\n', "target 'y' has backend 'metal'"),
        (BASE + '[[target]]\nname = "cuda:90"\nbackend = "interpreter"\n', "duplicate target names"),
        (BASE + '[[exclude]]\ntriton = "3.7.1"\ntarget = "cuda:90"\n', "names a version or target not in"),
    ],
)
def test_invalid_matrix_files_are_refused_naming_the_entry(matrix_mod, tmp_path, body, message):
    with pytest.raises(matrix_mod.MatrixError, match=message):
        matrix_mod.load_matrix(write_matrix(tmp_path, body))


def test_selected_targets_by_name_backend_and_exclusion(matrix_mod, tmp_path):
    m = matrix_mod.load_matrix()
    assert [t.name for t in matrix_mod.selected_targets(m, {})] == [t.name for t in m.targets]
    hip = matrix_mod.selected_targets(m, {"TRITONX_TARGETS": "hip"})
    assert [t.name for t in hip] == ["hip:gfx942", "hip:gfx950"]
    mixed = matrix_mod.selected_targets(m, {"TRITONX_TARGETS": "interpreter, cuda:90,cuda"})
    assert [t.name for t in mixed] == ["interpreter", "cuda:90", "cuda:80", "cuda:100"]
    with pytest.raises(matrix_mod.MatrixError, match="'rocm' is neither a target nor a backend"):
        matrix_mod.selected_targets(m, {"TRITONX_TARGETS": "rocm"})

    excl = matrix_mod.load_matrix(write_matrix(
        tmp_path, BASE + '[[exclude]]\ntriton = "3.6.0"\ntarget = "hip:gfx942"\nreason = "r"\n'))
    assert [t.name for t in matrix_mod.selected_targets(excl, {"TRITONX_MATRIX_TRITON": "3.6.0"})] == ["cuda:90"]
    assert len(matrix_mod.selected_targets(excl, {"TRITONX_MATRIX_TRITON": "3.8.0"})) == 2
    assert "excluded: r" in matrix_mod.list_table(excl)


def test_hatch_invocation_names_the_matrix_env_and_narrows_targets(matrix_mod):
    m = matrix_mod.load_matrix()
    inv = matrix_mod.build_invocation(m, "3.7.1", via="hatch", targets=m.backend_targets("hip"),
                                      extra=["-x"], hatch="/bin/hatch")
    assert inv.argv == ("/bin/hatch", "run", "smoke.3.7.1:test", "-x")
    assert inv.env == {"TRITONX_MATRIX_TRITON": "3.7.1", "TRITONX_TARGETS": "hip:gfx942,hip:gfx950"}
    with pytest.raises(matrix_mod.MatrixError, match=r"Triton '3\.5\.0' is not in the matrix"):
        matrix_mod.build_invocation(m, "3.5.0", hatch="/bin/hatch")


def test_venv_invocation_uses_the_pattern_and_repo_sources(matrix_mod, tmp_path):
    m = matrix_mod.load_matrix()
    (tmp_path / "venv39" / "bin").mkdir(parents=True)
    (tmp_path / "venv39" / "bin" / "python").touch()
    inv = matrix_mod.build_invocation(m, "3.9.0", via="venv", venv_pattern=str(tmp_path / "venv{major}{minor}"))
    assert inv.argv[:3] == (str(tmp_path / "venv39" / "bin" / "python"), "-m", "pytest")
    assert "smoke" in inv.argv
    assert str(ROOT / "packages/core/src") in inv.env["PYTHONPATH"].split(":")
    with pytest.raises(matrix_mod.MatrixError, match=r"no venv for Triton 3\.6\.0"):
        matrix_mod.build_invocation(m, "3.6.0", via="venv", venv_pattern=str(tmp_path / "venv{major}{minor}"))


def test_run_all_reports_each_version_and_fails_on_any_failure(matrix_mod, capsys, tmp_path):
    def inv(version: str, code: int):
        return matrix_mod.Invocation(version, (sys.executable, "-c", f"raise SystemExit({code})"), {}, f"env{version}")

    assert matrix_mod.run_all([inv("3.6.0", 0), inv("3.9.0", 0)], root=tmp_path) == 0
    assert "all 2 passed" in capsys.readouterr().out

    assert matrix_mod.run_all([inv("3.6.0", 0), inv("3.7.1", 1), inv("3.9.0", 5)], root=tmp_path) == 1
    out = capsys.readouterr().out
    assert "FAILED (rc 1)" in out and "FAILED: no tests collected" in out
    assert "2 of 3 failed: 3.7.1, 3.9.0" in out

    assert matrix_mod.run_all([inv("3.9.0", 5)], allow_empty=True, root=tmp_path) == 0
    assert "no tests (ok)" in capsys.readouterr().out


def test_cli_list_targets_dry_run_and_errors(matrix_mod, capsys, monkeypatch):
    monkeypatch.setenv("HATCH", "/opt/hatch")  # the dry run prints commands; hatch need not be installed
    assert matrix_mod.main(["targets", "--backend", "hip"]) == 0
    assert '"name": "hip:gfx942"' in capsys.readouterr().out
    assert matrix_mod.main(["smoke", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split("smoke.")[1].split(":")[0] for ln in lines] == ["3.6.0", "3.7.1", "3.9.0"]
    assert all("/opt/hatch run smoke." in ln for ln in lines)
    assert matrix_mod.main(["run", "--triton", "3.7.1", "--backend", "interpreter", "--dry-run"]) == 0
    assert "TRITONX_TARGETS=interpreter" in capsys.readouterr().out
    assert matrix_mod.main(["run", "--triton", "3.7.1", "--target", "cuda:75", "--dry-run"]) == 2
    assert "unknown target 'cuda:75'" in capsys.readouterr().err


def test_loads_by_path_without_registering_the_module():
    """How the lead's conftest loads it: exec_module alone, no sys.modules entry (dataclasses need none)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("matrix_by_path", ROOT / "ci" / "matrix.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert [t.name for t in module.selected_targets(environ={"TRITONX_TARGETS": "cuda:90"})] == ["cuda:90"]


def _fake_python(folder: Path, has_hatch: bool) -> Path:
    """A `python3` stand-in: `-m hatch --version` succeeds only where hatch is installed."""
    folder.mkdir(parents=True, exist_ok=True)
    python = folder / "python3"
    python.write_text("#!/bin/sh\n" + ('[ "$1 $2" = "-m hatch" ] && exit 0\n' if has_hatch else "") + "exit 1\n")
    python.chmod(0o755)
    return python


@pytest.mark.skipif(sys.platform == "win32", reason="shell-script stand-ins for python")
@pytest.mark.parametrize("where", ["base", "path"])
def test_hatch_is_found_through_the_python_that_runs_it(matrix_mod, monkeypatch, tmp_path, where):
    """README's `python3 -m pip install hatch && python3 -m hatch run all` with pip's script folder off PATH:
    inside `hatch run`, PATH's first python3 is the env's (no hatch); the smoke step still finds hatch through
    the env's base interpreter or the user's python3 later on PATH (it stopped with "hatch not found")."""
    env_python = _fake_python(tmp_path / "env" / "bin", has_hatch=False)
    user_python = _fake_python(tmp_path / "user" / "bin", has_hatch=True)
    monkeypatch.delenv("HATCH", raising=False)
    monkeypatch.setattr(matrix_mod.sys, "executable", str(env_python))
    if where == "base":
        monkeypatch.setattr(matrix_mod.sys, "_base_executable", str(user_python), raising=False)
        monkeypatch.setenv("PATH", str(env_python.parent))
    else:
        monkeypatch.setattr(matrix_mod.sys, "_base_executable", str(env_python), raising=False)
        monkeypatch.setenv("PATH", f"{env_python.parent}{matrix_mod.os.pathsep}{user_python.parent}")
    assert matrix_mod.find_hatch() == [str(user_python), "-m", "hatch"]


def test_no_hatch_anywhere_is_one_clear_error(matrix_mod, monkeypatch, tmp_path):
    env_python = _fake_python(tmp_path / "env" / "bin", has_hatch=False)
    monkeypatch.delenv("HATCH", raising=False)
    monkeypatch.setattr(matrix_mod.sys, "executable", str(env_python))
    monkeypatch.setattr(matrix_mod.sys, "_base_executable", str(env_python), raising=False)
    monkeypatch.setenv("PATH", str(env_python.parent))
    with pytest.raises(matrix_mod.MatrixError, match="hatch not found: put it on PATH"):
        matrix_mod.find_hatch()
