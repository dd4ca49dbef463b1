"""``tritonx new``'s weight and leftovers: cookiecutter is the ``new`` extra, and a render leaves no temp files."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tritonx.cli import new

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

CORE = Path(__file__).resolve().parents[2]


def test_scaffold_leaves_no_temp_files(tmp_path, monkeypatch):
    """cookiecutter writes each hook it runs to a tmp*.py and never deletes it (two per call)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    out = tmp_path / "out"
    out.mkdir()
    project = new.scaffold("tritonx-leftover", output_dir=out)
    assert (project / "pyproject.toml").is_file()
    assert sorted(p.name for p in tmp.iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == ["tritonx-leftover"]
    assert tempfile.tempdir == str(tmp)  # put back as it was


def test_new_without_cookiecutter_says_which_extra_to_install(cli, monkeypatch, tmp_path):
    for name in ("cookiecutter", "cookiecutter.generate", "cookiecutter.prompt"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    out = tmp_path / "out"
    out.mkdir()
    result = cli("new", "tritonx-x", "--output-dir", str(out))
    assert result.exit_code == 2
    assert result.output.strip() == ("tritonx new: error: scaffolding needs cookiecutter, which is not installed: "
                                     "pip install 'tritonx-core[new]'")
    assert list(out.iterdir()) == []


def test_core_depends_only_on_what_import_and_cli_need():
    project = tomllib.loads((CORE / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("=")[0].split("<")[0].strip() for d in project["dependencies"]}
    assert names == {"triton", "typer", "rich", "pyelftools", "pluggy"}  # pluggy: tritonx.seams
    assert project["optional-dependencies"]["new"] == ["cookiecutter>=2.6"]


def test_import_tritonx_loads_no_cli_or_scaffolding_library():
    code = ("import sys, tritonx\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'cookiecutter', 'requests', 'pydantic', 'typer', 'rich', 'click', 'jinja2'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TRITONX_PLUGINS="none"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
