"""Meta's ``triton-utlx`` installs a top-level ``utlx`` too: detected beside ours, in either import order.

A stand-in for Meta's wheel as installed (a dist-info whose RECORD lists ``utlx/__init__.py``, and that
package) is put on ``sys.path`` before or after this repo's sources, in a fresh interpreter each time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = [str(Path(__file__).resolve().parents[3] / p / "src") for p in ("core", "utlx")]


@pytest.fixture
def meta_site(tmp_path: Path) -> Path:
    site = tmp_path / "meta-site"
    (site / "utlx").mkdir(parents=True)
    (site / "utlx" / "__init__.py").write_text('WHOSE = "meta"\n')
    info = site / "triton_utlx-3.8.0.post16.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triton-utlx\nVersion: 3.8.0.post16\n")
    (info / "RECORD").write_text("utlx/__init__.py,,\ntriton_utlx-3.8.0.post16.dist-info/METADATA,,\n")
    return site


def _run(code: str, path: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")]),
               TRITONX_PLUGINS="utlx")
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


def test_ours_imported_first_warns_naming_meta(meta_site, tmp_path):
    done = _run("import utlx; print('ours' if hasattr(utlx, 'matmul') else 'theirs')", [*SRC, str(meta_site)],
                tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ours"
    assert "also installed by triton-utlx 3.8.0.post16" in done.stderr
    assert "gives utlx's" in done.stderr


def test_no_warning_without_meta(tmp_path):
    done = _run("import utlx", SRC, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "triton-utlx" not in done.stderr


DOCTOR = """
import json, sys
from tritonx.cli.app import app
from typer.testing import CliRunner
result = CliRunner().invoke(app, ["doctor", "--json"], env={"COLUMNS": "250"})
print(json.dumps({"exit": result.exit_code, "report": json.loads(result.stdout)}))
"""


def test_meta_imported_first_is_reported_by_doctor(meta_site, tmp_path):
    done = _run(DOCTOR, [str(meta_site), *SRC], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["exit"] == 1
    (shadowed,) = out["report"]["shadowed"]
    assert shadowed["module"] == "utlx" and shadowed["others"] == ["triton-utlx 3.8.0.post16"]
    assert shadowed["imported_by"] == "triton-utlx"
    assert shadowed["imported_from"] == str(meta_site / "utlx" / "__init__.py")
    assert shadowed["message"] in out["report"]["problems"]
    # the plugin's entry point (utlx.plugin) cannot import from Meta's package: the reason says why
    (broken,) = [p for p in out["report"]["plugins"] if p["name"] == "utlx"]
    assert broken["status"] == "broken" and "also installed by triton-utlx" in broken["reason"]


def test_ours_imported_first_is_reported_by_doctor_too(meta_site, tmp_path):
    done = _run(DOCTOR, [*SRC, str(meta_site)], tmp_path)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    (shadowed,) = out["report"]["shadowed"]
    assert shadowed["imported_by"] == "utlx" and out["exit"] == 1
