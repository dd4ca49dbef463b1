"""The tritonx test matrix: load ci/matrix.toml, list its cells, run the compile smoke per Triton version.

Why a script and not only hatch: hatch knows how to build one env per Triton version, but not which
targets exist, which cell is the default, or how to run every non-default version one after the other
and say at the end which ones failed. This file is stdlib only (tomllib, or tomli before 3.11) so CI can
run it before any env exists.

Usage:
    python ci/matrix.py list                      # every (triton, target) cell
    python ci/matrix.py targets [--backend hip]   # targets as JSON
    python ci/matrix.py smoke [--via hatch|venv]  # smoke on every version but the default, sequentially
    python ci/matrix.py run --triton 3.7.1 --backend hip [-- pytest args]   # one cell (or one version)

Tests choose targets through `selected_targets()`: `TRITONX_TARGETS` (comma-separated target or backend
names, set by `run --backend`) narrows the list; unset means every target.

Import it from a test without making ci/ a package (no `from __future__ import annotations` here, so the
dataclasses load without the module being in sys.modules first):
    spec = importlib.util.spec_from_file_location("tritonx_ci_matrix", ROOT / "ci" / "matrix.py")
    matrix = importlib.util.module_from_spec(spec); spec.loader.exec_module(matrix)
    TARGETS = matrix.selected_targets()   # list[Target]; GPUTarget(*t.gpu_target_args()) for GPU targets
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
MATRIX_FILE = Path(__file__).resolve().parent / "matrix.toml"
TARGETS_ENV = "TRITONX_TARGETS"
VERSION_ENV = "TRITONX_MATRIX_TRITON"
BACKENDS = ("cuda", "hip", "interpreter")
NO_TESTS_RC = 5  # pytest's exit code when it collected nothing


class MatrixError(ValueError):
    """ci/matrix.toml (or a name given on the command line) does not fit the matrix."""


@dataclass(frozen=True)
class Target:
    """One compile target: what `triton.backends.compiler.GPUTarget` needs, plus where it really runs."""

    name: str
    backend: str
    arch: int | str | None = None
    warp_size: int | None = None
    final_stage: str = "none"
    executes_on: str = "none"
    description: str = ""

    def gpu_target_args(self) -> tuple[str, int | str, int]:
        """Arguments for GPUTarget(*args); the interpreter has none, so asking is a bug in the caller."""
        if self.backend == "interpreter" or self.arch is None or self.warp_size is None:
            raise MatrixError(f"target {self.name!r} is not a GPU target: it has no GPUTarget arguments")
        return (self.backend, self.arch, self.warp_size)


@dataclass(frozen=True)
class Cell:
    """One (Triton version, target) pair of the matrix."""

    triton: str
    target: Target
    default: bool
    excluded: str | None = None  # the reason, when matrix.toml excludes the cell


@dataclass(frozen=True)
class Matrix:
    """The parsed matrix.toml."""

    versions: tuple[str, ...]
    default: str
    targets: tuple[Target, ...]
    smoke_env: str = "smoke"
    smoke_script: str = "test"
    smoke_pytest_args: tuple[str, ...] = ("-m", "smoke")
    venv_pattern: str = ""
    pythonpath: tuple[str, ...] = ()
    excludes: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @property
    def non_default_versions(self) -> tuple[str, ...]:
        return tuple(v for v in self.versions if v != self.default)

    def target(self, name: str) -> Target:
        for t in self.targets:
            if t.name == name:
                return t
        raise MatrixError(f"unknown target {name!r}; the matrix has {[t.name for t in self.targets]}")

    def backend_targets(self, backend: str) -> list[Target]:
        found = [t for t in self.targets if t.backend == backend]
        if not found:
            known = sorted({t.backend for t in self.targets})
            raise MatrixError(f"unknown backend {backend!r}; the matrix has {known}")
        return found

    def check_version(self, version: str) -> str:
        if version not in self.versions:
            raise MatrixError(f"Triton {version!r} is not in the matrix; supported: {list(self.versions)}")
        return version


def load_matrix(path: str | os.PathLike[str] | None = None) -> Matrix:
    """Parse and validate matrix.toml; every error names the key or entry at fault."""
    path = Path(path) if path is not None else MATRIX_FILE
    with open(path, "rb") as f:
        data = tomllib.load(f)
    try:
        triton = data["triton"]
        versions = tuple(str(v) for v in triton["versions"])
        default = str(triton["default"])
    except KeyError as e:
        raise MatrixError(f"{path}: missing key [triton].{e.args[0]}") from None
    if default not in versions:
        raise MatrixError(f"{path}: [triton].default {default!r} is not one of [triton].versions {list(versions)}")
    if len(set(versions)) != len(versions):
        raise MatrixError(f"{path}: [triton].versions has duplicates: {list(versions)}")

    targets = []
    for i, raw in enumerate(data.get("target", [])):
        if "name" not in raw or "backend" not in raw:
            raise MatrixError(f"{path}: [[target]] #{i} needs 'name' and 'backend'")
        if raw["backend"] not in BACKENDS:
            raise MatrixError(f"{path}: target {raw['name']!r} has backend {raw['backend']!r}; known: {BACKENDS}")
        if raw["backend"] != "interpreter" and ("arch" not in raw or "warp_size" not in raw):
            raise MatrixError(f"{path}: GPU target {raw['name']!r} needs 'arch' and 'warp_size'")
        known = {"name", "backend", "arch", "warp_size", "final_stage", "executes_on", "description"}
        unknown = set(raw) - known
        if unknown:
            raise MatrixError(f"{path}: target {raw['name']!r} has unknown keys {sorted(unknown)}")
        targets.append(Target(**raw))
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        raise MatrixError(f"{path}: duplicate target names in {names}")
    if not targets:
        raise MatrixError(f"{path}: no [[target]] tables")

    excludes: dict[tuple[str, str], str] = {}
    for raw in data.get("exclude", []):
        key = (str(raw.get("triton")), str(raw.get("target")))
        if key[0] not in versions or key[1] not in names:
            raise MatrixError(f"{path}: [[exclude]] {raw} names a version or target not in the matrix")
        excludes[key] = str(raw.get("reason", "excluded"))

    hatch = data.get("hatch", {})
    local = data.get("local", {})
    return Matrix(
        versions=versions,
        default=default,
        targets=tuple(targets),
        smoke_env=str(hatch.get("smoke_env", "smoke")),
        smoke_script=str(hatch.get("smoke_script", "test")),
        smoke_pytest_args=tuple(data.get("smoke", {}).get("pytest_args", ["-m", "smoke"])),
        venv_pattern=str(local.get("venv_pattern", "")),
        pythonpath=tuple(local.get("pythonpath", ())),
        excludes=excludes,
    )


def cells(matrix: Matrix) -> list[Cell]:
    """Every (version, target) pair, in matrix order, excluded ones marked with their reason."""
    return [
        Cell(v, t, v == matrix.default, matrix.excludes.get((v, t.name)))
        for v in matrix.versions
        for t in matrix.targets
    ]


def selected_targets(matrix: Matrix | None = None, environ: Mapping[str, str] | None = None) -> list[Target]:
    """The targets a test run should cover: all of them, or those named in TRITONX_TARGETS.

    Entries are target names ("hip:gfx942") or backend names ("hip"). Excluded cells of the Triton version in
    TRITONX_MATRIX_TRITON (set by `run`) are dropped too, so a test parametrized over this list needs no
    version checks of its own.
    """
    matrix = matrix or load_matrix()
    environ = os.environ if environ is None else environ
    chosen = list(matrix.targets)
    spec = environ.get(TARGETS_ENV, "").strip()
    if spec:
        wanted = [s.strip() for s in spec.split(",") if s.strip()]
        picked: list[Target] = []
        for w in wanted:
            hits = [t for t in matrix.targets if w in (t.name, t.backend)]
            if not hits:
                raise MatrixError(f"{TARGETS_ENV}={spec!r}: {w!r} is neither a target nor a backend of the matrix")
            picked += [t for t in hits if t not in picked]
        chosen = picked
    version = environ.get(VERSION_ENV)
    if version:
        chosen = [t for t in chosen if (version, t.name) not in matrix.excludes]
    return chosen


def targets_json(matrix: Matrix, backend: str | None = None) -> str:
    """The `targets` command's output: a JSON list of target objects."""
    chosen = matrix.backend_targets(backend) if backend else list(matrix.targets)
    return json.dumps([t.__dict__ for t in chosen], indent=2)


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain fixed-width table (no rich: this runs before any env exists)."""
    text = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in text) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in text]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def list_table(matrix: Matrix) -> str:
    rows = []
    for c in cells(matrix):
        how = "full suite" if c.default else "smoke"
        status = f"excluded: {c.excluded}" if c.excluded else how
        rows.append((c.triton, c.target.name, c.target.final_stage, c.target.executes_on, status))
    return format_table(("triton", "target", "compiles to", "executes on", "runs"), rows)


# ---------------------------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Invocation:
    """One command to run for one Triton version: argv plus the environment it adds."""

    triton: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    label: str


def hatch_env_name(matrix: Matrix, version: str) -> str:
    """Hatch's name for the smoke env of one version: "<env>.<value>" for a one-variable matrix."""
    return f"{matrix.smoke_env}.{matrix.check_version(version)}"


def find_hatch() -> list[str]:
    """The command that runs hatch: $HATCH, hatch on PATH, beside this interpreter, or `PYTHON -m hatch`.

    Why the search goes past PATH's first python3: README's `python3 -m pip install hatch && python3 -m
    hatch run all` may install the `hatch` script where PATH does not look (pip warns and carries on), and
    inside `hatch run` PATH's first python3 is the env's, which has no hatch. The python that runs hatch is
    still reachable: hatch builds its envs from it (this env's base interpreter), and the user's python3
    is still on PATH, after the env's bin.
    """
    found = os.environ.get("HATCH") or shutil.which("hatch")
    if found:
        return [found]
    beside = Path(sys.executable).parent / "hatch"
    if beside.exists():
        return [str(beside)]
    for python in _pythons_that_may_have_hatch():
        if subprocess.run([python, "-m", "hatch", "--version"], capture_output=True).returncode == 0:
            return [python, "-m", "hatch"]
    raise MatrixError("hatch not found: put it on PATH, set HATCH=/path/to/hatch, or use --via venv")


def _pythons_that_may_have_hatch() -> list[str]:
    """This interpreter, its venv's base interpreter, then every python3/python on PATH; each path once.

    Paths, not their targets: a venv's python is a link to its base interpreter, and which site-packages
    it sees (with or without hatch) depends on the path it is started by."""
    names = ("python3", "python") if os.name != "nt" else ("python.exe", "python3.exe")
    candidates = [sys.executable, getattr(sys, "_base_executable", None)]
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidates += [os.path.join(folder, name) for name in names]
    seen: set[str] = set()
    pythons = []
    for python in candidates:
        if not python or not os.path.isfile(python) or not os.access(python, os.X_OK):
            continue
        key = os.path.abspath(python)
        if key not in seen:
            seen.add(key)
            pythons.append(python)
    return pythons


def venv_python(matrix: Matrix, version: str, pattern: str | None = None) -> Path:
    """The interpreter of the ready-made venv for one version (--via venv)."""
    pattern = pattern or matrix.venv_pattern
    if not pattern:
        raise MatrixError("--via venv needs [local].venv_pattern in ci/matrix.toml or --venv-pattern")
    major, minor, patch = [*version.split("."), "0", "0"][:3]
    venv = Path(pattern.format(major=major, minor=minor, patch=patch, version=version))
    python = venv / "bin" / "python"
    if not python.exists():
        raise MatrixError(f"no venv for Triton {version}: {python} does not exist (pattern {pattern!r})")
    return python


def build_invocation(
    matrix: Matrix,
    version: str,
    *,
    via: str = "hatch",
    targets: Sequence[Target] | None = None,
    extra: Sequence[str] = (),
    hatch: str | None = None,
    venv_pattern: str | None = None,
    root: Path = ROOT,
) -> Invocation:
    """The command that runs the smoke for one version, narrowed to `targets` through TRITONX_TARGETS."""
    matrix.check_version(version)
    env = {VERSION_ENV: version}
    if targets is not None:
        env[TARGETS_ENV] = ",".join(t.name for t in targets)
    if via == "hatch":
        name = hatch_env_name(matrix, version)
        argv = (*([hatch] if hatch else find_hatch()), "run", f"{name}:{matrix.smoke_script}", *extra)
        return Invocation(version, argv, env, name)
    if via == "venv":
        python = venv_python(matrix, version, venv_pattern)
        paths = [str(root / p) for p in matrix.pythonpath]
        if os.environ.get("PYTHONPATH"):
            paths.append(os.environ["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        argv = (str(python), "-m", "pytest", *matrix.smoke_pytest_args, *extra)
        return Invocation(version, argv, env, str(python.parent.parent))
    raise MatrixError(f"unknown --via {via!r}; use 'hatch' or 'venv'")


@dataclass(frozen=True)
class Outcome:
    invocation: Invocation
    returncode: int
    seconds: float

    def status(self, allow_empty: bool = False) -> str:
        if self.returncode == 0:
            return "passed"
        if self.returncode == NO_TESTS_RC:
            return "no tests (ok)" if allow_empty else "FAILED: no tests collected"
        if self.returncode == 127:
            return "FAILED: command not found"
        return f"FAILED (rc {self.returncode})"

    def ok(self, allow_empty: bool = False) -> bool:
        return self.returncode == 0 or (allow_empty and self.returncode == NO_TESTS_RC)


def execute(inv: Invocation, root: Path = ROOT) -> Outcome:
    """Run one invocation in the repo root, its output going straight to ours."""
    print(f"\n=== Triton {inv.triton}: {' '.join(inv.argv)}", flush=True)
    extra_env = " ".join(f"{k}={v}" for k, v in inv.env.items() if k != "PYTHONPATH")
    print(f"    env: {extra_env}", flush=True)
    start = time.monotonic()
    try:
        rc = subprocess.call(list(inv.argv), cwd=root, env={**os.environ, **inv.env})
    except FileNotFoundError:
        rc = 127
    return Outcome(inv, rc, time.monotonic() - start)


def summary(outcomes: Sequence[Outcome], allow_empty: bool = False) -> str:
    rows = [(o.invocation.triton, o.invocation.label, o.status(allow_empty), f"{o.seconds:.1f}") for o in outcomes]
    return format_table(("triton", "env", "result", "seconds"), rows)


def run_all(invocations: Sequence[Invocation], allow_empty: bool = False, root: Path = ROOT) -> int:
    """Run each invocation in turn (never in parallel: 2 cores, each Triton compile is CPU heavy)."""
    outcomes = [execute(inv, root) for inv in invocations]
    print("\n" + summary(outcomes, allow_empty))
    failed = [o for o in outcomes if not o.ok(allow_empty)]
    if failed:
        print(f"\n{len(failed)} of {len(outcomes)} failed: {', '.join(o.invocation.triton for o in failed)}")
        return 1
    print(f"\nall {len(outcomes)} passed")
    return 0


# ------------------------------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ci/matrix.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--matrix", default=str(MATRIX_FILE), help="matrix file (default: ci/matrix.toml)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print every (triton, target) cell")
    t = sub.add_parser("targets", help="print the targets as JSON")
    t.add_argument("--backend", choices=BACKENDS)
    for name, helptext in (("smoke", "smoke on every non-default version"), ("run", "one version / backend")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("--via", choices=("hatch", "venv"), default="hatch",
                       help="hatch matrix envs (default) or the ready-made venvs of [local].venv_pattern")
        s.add_argument("--venv-pattern", help="override [local].venv_pattern, e.g. /opt/venv{major}{minor}")
        s.add_argument("--allow-empty", action="store_true", help="pytest collecting no test is not a failure")
        s.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
        s.add_argument("extra", nargs="*", help="after --: extra arguments for pytest")
        if name == "smoke":
            s.add_argument("--versions", nargs="+", help="only these versions (default: all but the default)")
        else:
            s.add_argument("--triton", required=True, help="Triton version, e.g. 3.7.1")
            s.add_argument("--backend", choices=BACKENDS, help="only this backend's targets")
            s.add_argument("--target", help="only this target, e.g. hip:gfx942")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        matrix = load_matrix(args.matrix)
        if args.command == "list":
            print(list_table(matrix))
            return 0
        if args.command == "targets":
            print(targets_json(matrix, args.backend))
            return 0
        common = {"via": args.via, "extra": args.extra, "venv_pattern": args.venv_pattern}
        if args.command == "smoke":
            versions = matrix.non_default_versions
            if args.versions:
                versions = tuple(matrix.check_version(v) for v in args.versions)
            invocations = [build_invocation(matrix, v, **common) for v in versions]
        else:
            targets = None
            if args.target:
                targets = [matrix.target(args.target)]
            elif args.backend:
                targets = matrix.backend_targets(args.backend)
            invocations = [build_invocation(matrix, args.triton, targets=targets, **common)]
    except MatrixError as e:
        print(f"ci/matrix.py: error: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        for inv in invocations:
            env = " ".join(f"{k}={v}" for k, v in inv.env.items())
            print(f"{env} {' '.join(inv.argv)}")
        return 0
    return run_all(invocations, allow_empty=args.allow_empty)


if __name__ == "__main__":
    sys.exit(main())
