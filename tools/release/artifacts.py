"""Build one monorepo package the way a user's pip meets it: an sdist, then a wheel built FROM that sdist.

Why from the sdist: building both straight from the checkout hides every file the sdist forgets (the
plugin template of tritonx-core once was one: the checkout's wheel had it, the sdist could not build
a wheel at all). Building the wheel from the unpacked sdist, as pip does for a source install, proves
the sdist is complete. The sdist comes from ``python -m build`` when installed, else ``hatch build``;
the wheel always from ``pip wheel`` (a standard frontend, build isolation on).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from versioning import ReleaseError  # a sibling module of this script, not a package


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ReleaseError(f"{what} failed ({' '.join(map(str, cmd))}):\n{(done.stderr or done.stdout)[-3000:]}")


def build_sdist(pkg: Path, out: Path) -> Path:
    """The package's sdist in ``out`` (created if missing); returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("*.tar.gz"))
    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(pkg)]
    else:
        hatch = shutil.which("hatch")
        if hatch is None:
            raise ReleaseError("building an sdist needs `build` (pip install build) or hatch on PATH")
        cmd = [hatch, "build", "-t", "sdist", str(out)]
    _run(cmd, pkg, f"building the sdist of {pkg.name}")
    made = sorted(set(out.glob("*.tar.gz")) - before) or sorted(out.glob("*.tar.gz"))
    if not made:
        raise ReleaseError(f"building the sdist of {pkg.name} produced no .tar.gz in {out}")
    return made[-1]


def wheel_from_sdist(sdist: Path, out: Path) -> Path:
    """Build the wheel from ``sdist`` alone (pip, isolated build): fails when the sdist is incomplete."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("*.whl"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(sdist)], out,
         f"building a wheel from {sdist.name}")
    made = sorted(set(out.glob("*.whl")) - before)
    if not made:
        raise ReleaseError(f"pip wheel {sdist.name} produced no new wheel in {out}")
    return made[-1]


def build_package(pkg: Path, out: Path) -> list[Path]:
    """sdist + wheel-from-sdist of ``pkg`` into a clean ``out``; returns both, sorted."""
    if out.exists():
        shutil.rmtree(out)
    sdist = build_sdist(pkg, out)
    wheel = wheel_from_sdist(sdist, out)
    return sorted([sdist, wheel])
