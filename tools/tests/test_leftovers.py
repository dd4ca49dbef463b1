"""Tests and tools clean up after themselves: no Triton caches or smoke venvs left in the temp folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("folder", ["packages/utlx/tests/compile", "packages/utlx/tests/tutorials"])
def test_a_test_run_leaves_no_triton_cache_in_the_temp_folder(folder, tmp_path):
    """The compile and tutorial conftests make a private cache at import; it goes when the run ends."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    env["TMPDIR"] = str(tmp)
    done = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--basetemp", str(tmp_path / "basetemp"), folder],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(p.name for p in tmp.iterdir()) == []


def test_tests_that_write_kernel_files_leave_nothing_in_the_temp_folder(tmp_path):
    """Tests that write kernels to files (``@triton.jit`` needs a source file) put them under pytest's
    ``tmp_path``: the twin-kernel cache tests once left a ``tmp*/twin_kernel.py`` per test in the temp folder."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    env.update(TMPDIR=str(tmp), TRITON_CACHE_DIR=str(tmp_path / "triton-cache"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--basetemp", str(tmp_path / "basetemp"), "packages/core/tests/test_cache.py",
                           "-k", "per_kernel_pipeline or concurrent_compiles"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
    assert sorted(p.name for p in tmp.iterdir()) == []


@pytest.mark.parametrize("fails", [False, True])
def test_release_smoke_without_smoke_dir_removes_its_venv(release_mod, monkeypatch, tmp_path, fails):
    seen: list[Path] = []

    def fake_run_smoke(wheels, workdir, **kw):
        seen.append(workdir)
        (workdir / "venv" / "lib").mkdir(parents=True)  # stands for the GBs of a real venv
        if fails:
            raise release_mod.smoke.SmokeError("install failed")
        return type("Result", (), {"failed": [], "checks": []})()

    monkeypatch.setattr(release_mod.smoke, "run_smoke", fake_run_smoke)
    monkeypatch.setattr(release_mod, "build", lambda pkg, out: [])
    monkeypatch.setattr(release_mod.tempfile, "tempdir", str(tmp_path))
    wheel = tmp_path / "tritonx_core-0.1.0-py3-none-any.whl"
    if fails:
        with pytest.raises(release_mod.ReleaseError, match="smoke set-up failed: install failed"):
            release_mod.smoke_test(ROOT / "packages/core", wheel, torch=None, template=False, workdir=None)
    else:
        release_mod.smoke_test(ROOT / "packages/core", wheel, torch=None, template=False, workdir=None)
    (workdir,) = seen
    assert workdir.parent == tmp_path and not workdir.exists()


def test_release_smoke_keeps_an_explicit_smoke_dir(release_mod, monkeypatch, tmp_path):
    monkeypatch.setattr(release_mod.smoke, "run_smoke",
                        lambda wheels, workdir, **kw: type("Result", (), {"failed": [], "checks": []})())
    monkeypatch.setattr(release_mod, "build", lambda pkg, out: [])
    keep = tmp_path / "keep"
    keep.mkdir()
    release_mod.smoke_test(ROOT / "packages/core", tmp_path / "w.whl", torch=None, template=False, workdir=keep)
    assert keep.is_dir()
