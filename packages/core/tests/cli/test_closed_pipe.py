"""``tritonx ... | head -1`` under ``set -o pipefail``: a reader that leaves early is no failure (issue 29).

These run the real console script in a child process (the closed pipe is handled at the entry point,
which ``CliRunner`` bypasses) with stdout a pipe whose read end is already closed: every write fails
with ``EPIPE`` at once, deterministically, as the late writes of ``| head -1`` or ``| grep -q`` do.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


def _env(tmp_path: Path, *extra_paths: Path) -> dict[str, str]:
    src = [str(ROOT / "packages" / p / "src") for p in ("core", "utlx")]
    path = os.pathsep.join([*map(str, extra_paths), *src, os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, PYTHONPATH=path, TRITON_CACHE_DIR=str(tmp_path / "triton-cache"), COLUMNS="80")


def run_into_closed_pipe(tmp_path: Path, *args: str, extra_paths: tuple[Path, ...] = ()) -> subprocess.CompletedProcess:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte is written
    try:
        return subprocess.run([sys.executable, "-m", "tritonx.cli.app", *args], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=_env(tmp_path, *extra_paths), timeout=600)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [
    ("pipeline", "--target", "cuda:90", "--stage", "ttir"),  # rich table rows (rich exits 1 on EPIPE)
    ("pipeline", "--target", "cuda:90", "--stage", "ttir", "--json"),  # one JSON write (click exits 1 on EPIPE)
    ("plugins",),
    ("doctor",),
    ("--version",),  # written by an eager option, before any command runs
    ("--help",),
], ids=lambda a: " ".join(a))
def test_closed_stdout_exits_0_silently(tmp_path, args):
    done = run_into_closed_pipe(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "Exception ignored", no internal error, no traceback


def test_doctor_keeps_its_failure_when_the_reader_leaves(tmp_path):
    """`tritonx doctor | grep -q x` must still fail when doctor found a problem (a broken plugin here)."""
    site = tmp_path / "site"
    info = site / "tritonx_broken_pipe_demo-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tritonx-broken-pipe-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tritonx.plugins]\nbrokenpipe = tritonx_broken_pipe_gone:plugin\n")
    done = run_into_closed_pipe(tmp_path, "doctor", extra_paths=(site,))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
