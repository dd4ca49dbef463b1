"""Run this plugin's tests against every Triton release it supports, one environment per release.

    python ci/matrix.py                          # every version in ci/triton-versions.txt (fresh venvs in .matrix/)
    python ci/matrix.py --versions 3.8.0,3.9.0   # some of them
    python ci/matrix.py --python 3.8.0=/path/to/python   # reuse an interpreter that has that Triton
    python ci/matrix.py --dry-run                # print the plan, run nothing
    python ci/matrix.py --find-links ./wheels    # also install from a folder of wheels (an unreleased tritonx-core)

Why a matrix: tritonx hides most differences between Triton versions, but pass names, IR and the
native plugin ABI still move; a plugin is only known to work on the versions it was tested on.
Each cell installs Triton V and tritonx-core, then this package, then runs ``pytest tests``. A Python
plugin is built the ordinary way (pip's isolated build fetches hatchling), a native one with
``--no-build-isolation`` against that very Triton (its build requirements are installed into the cell
first). The exit status is non-zero when any cell fails. ci/triton-versions.txt lists the releases
(one per line); edit it as Triton releases come out. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
VERSIONS_FILE = PROJECT / "ci" / "triton-versions.txt"
WORKDIR = PROJECT / ".matrix"
VARIANT = "{{ cookiecutter.variant }}"
TRITONX_CORE = "tritonx-core{{ cookiecutter.tritonx_core_range }}"
TEST_REQUIREMENTS = ["pytest>=8"]
#: Native only: Triton versions the PyPI LLVM/MLIR headers (requirements-build.txt) build for.
PYPI_HEADERS_WORK_WITH = ("3.7.1",)


@dataclass
class Cell:
    """One Triton version of the matrix: how to get an interpreter for it and what happened."""

    version: str
    python: str | None = None  # an existing interpreter (with this Triton), or None for a fresh venv
    commands: list[tuple[list[str], dict[str, str]]] = field(default_factory=list)
    status: str = "pending"
    reason: str = ""


def read_versions(path: Path = VERSIONS_FILE) -> list[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def _venv_python(root: Path) -> str:
    return str(root / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))


def _can_import(python: str, module: str) -> bool:
    done = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False)
    return done.returncode == 0


def skip_reason(version: str, env: dict[str, str]) -> str | None:
    """Why a cell cannot run here (native builds need headers matching that Triton), or None."""
    if VARIANT == "native" and version not in PYPI_HEADERS_WORK_WITH and not env.get("TRITONX_LLVM_DIR"):
        return f"native build for Triton {version} needs TRITONX_LLVM_DIR (headers of its LLVM commit)"
    return None


def plan(cell: Cell, env: dict[str, str], pytest_args: list[str], find_links: list[str] | None = None) -> None:
    """Fill ``cell.commands``: create/prepare the environment, install the package, run the tests."""
    base_env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "TRITONX_NATIVE_PLUGINS")}
    cell_dir = WORKDIR / cell.version
    links = [arg for folder in find_links or [] for arg in ("--find-links", folder)]
    if cell.python is None:
        python = _venv_python(cell_dir / "venv")
        requirements = [f"triton=={cell.version}", TRITONX_CORE, *TEST_REQUIREMENTS]
        # Native: build against this very Triton, with the build requirements installed here first.
        # Python: an ordinary isolated build (the fresh venv has no hatchling, and needs none).
        isolation = []
        if VARIANT == "native":
            requirements += ["-r", str(PROJECT / "requirements-build.txt")]
            isolation = ["--no-build-isolation"]
        cell.commands += [
            ([sys.executable, "-m", "venv", "--clear", str(cell_dir / "venv")], base_env),
            ([python, "-m", "pip", "install", "-q", *links, *requirements], base_env),
            ([python, "-m", "pip", "install", "-q", *links, "--no-deps", *isolation, str(PROJECT)], base_env),
        ]
        test_env = base_env
    else:
        # Reuse an interpreter: install this package into a private directory, leave its site-packages alone.
        python, target = cell.python, cell_dir / "site"
        install = [python, "-m", "pip", "install", "-q", *links, "--no-deps", "--upgrade", "--target", str(target)]
        # Build against what that interpreter has (native: must; python: when hatchling is there, no download).
        if VARIANT == "native" or _can_import(python, "hatchling"):
            install.append("--no-build-isolation")
        cell.commands += [
            ([python, "-c", _CHECK_TRITON.format(version=cell.version)], base_env),
            ([*install, str(PROJECT)], base_env),
        ]
        # That interpreter's own PYTHONPATH (if any) stays behind the package's directory.
        test_env = dict(base_env, PYTHONPATH=os.pathsep.join(p for p in (str(target), env.get("PYTHONPATH")) if p))
    cell.commands.append(([python, "-m", "pytest", str(PROJECT / "tests"), "-q", *pytest_args], test_env))


_CHECK_TRITON = (
    "import importlib.metadata as m, sys; v = m.version('triton'); "
    "sys.exit(0 if v.split('+')[0] == '{version}' else 'this interpreter has Triton ' + v + ', not {version}')"
)


def run_cell(cell: Cell, *, dry_run: bool) -> None:
    if not dry_run:
        shutil.rmtree(WORKDIR / cell.version / "site", ignore_errors=True)
    for command, env in cell.commands:
        print(f"[triton {cell.version}] $ {' '.join(command)}", flush=True)
        if dry_run:
            continue
        done = subprocess.run(command, cwd=PROJECT, env=env, check=False)
        if done.returncode != 0:
            cell.status, cell.reason = "failed", f"exit {done.returncode}: {' '.join(command[:4])} ..."
            return
    cell.status = "planned" if dry_run else "passed"


def parse_pythons(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        version, sep, python = item.partition("=")
        if not sep or not version or not python:
            raise SystemExit(f"--python wants VERSION=PATH, got {item!r}")
        out[version.strip()] = python.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", help="comma-separated subset of ci/triton-versions.txt")
    parser.add_argument("--python", action="append", default=[], metavar="VERSION=PATH",
                        help="use this interpreter (which has that Triton) instead of a fresh venv")
    parser.add_argument("--find-links", action="append", default=[], metavar="DIR",
                        help="also install from this folder of wheels (repeat; e.g. an unreleased tritonx-core)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)

    known = read_versions()
    versions = known if not args.versions else [v.strip() for v in args.versions.split(",") if v.strip()]
    unknown = [v for v in versions if v not in known]
    if unknown:
        print(f"error: {', '.join(unknown)} not in {VERSIONS_FILE.name} ({', '.join(known)})", file=sys.stderr)
        return 2
    pythons = parse_pythons(args.python)
    env = dict(os.environ)
    cells = [Cell(v, python=pythons.get(v)) for v in versions]
    for cell in cells:
        reason = skip_reason(cell.version, env)
        if reason:
            cell.status, cell.reason = "skipped", reason
            continue
        plan(cell, env, args.pytest_args, [str(Path(d).resolve()) for d in args.find_links])
        run_cell(cell, dry_run=args.dry_run)

    print("\nTriton  result")
    for cell in cells:
        print(f"{cell.version:<7} {cell.status}{': ' + cell.reason if cell.reason else ''}")
    return 1 if any(c.status == "failed" for c in cells) else 0


if __name__ == "__main__":
    sys.exit(main())
