"""Prepare the release of one monorepo package: build sdist + wheel, prove them, print the tag to create.

Why: each package (tritonx-core, utlx) is versioned and released on its own, so a release is "build
this folder, make sure this version was never tagged, check the artifacts, tag <name>-v<version>".
"Check" means use: the wheel is built from the sdist (so the sdist is complete), then the wheels of
every workspace package are installed into a fresh venv with their declared dependencies next to
Triton (and a local CPU torch) and smoke-tested from outside the repository (``smoke.py``: the CLI,
the TLX alias, compiles for cuda:90). Nothing is reported done before that passes. It never uploads
anything: publishing stays a deliberate, manual step.

    python tools/release/release.py core              # dry run: build into dist/<name>/, check, smoke, print tag
    python tools/release/release.py packages/utlx --template   # the smoke also scaffolds and tests a plugin
    python tools/release/release.py core --create-tag # also create the annotated tag locally (no push)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import artifacts  # sibling modules of this script, not a package
import smoke
from versioning import (
    ROOT,
    PackageMeta,
    ReleaseError,
    changelog_state,
    check_new_version,
    git_tags,
    read_meta,
    resolve_package,
)


def say(msg: str) -> None:
    print(f"[release] {msg}", flush=True)


#: Every released package of the workspace: the smoke installs all of them together, as users do.
WORKSPACE = ("packages/core", "packages/utlx")


def build(pkg: Path, out: Path) -> list[Path]:
    """sdist, then a wheel built from that sdist, into a clean ``out``."""
    return artifacts.build_package(pkg, out)


def smoke_test(pkg: Path, wheel: Path, *, torch: str | None, template: bool, workdir: Path | None) -> None:
    """Build the other workspace packages' wheels (from their sdists) and run the smoke on all of them.

    Without ``workdir`` the smoke's venv (GBs with torch) goes into a temporary directory that is removed
    afterwards, pass or fail (``--smoke-dir`` keeps it for a look).
    """
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="tritonx-release-smoke-") as tmp:
            try:
                _smoke_in(pkg, wheel, torch=torch, template=template, workdir=Path(tmp))
            finally:
                say(f"smoke: removed {tmp} (pass --smoke-dir DIR to keep the venv and scratch)")
        return
    _smoke_in(pkg, wheel, torch=torch, template=template, workdir=workdir)


def _smoke_in(pkg: Path, wheel: Path, *, torch: str | None, template: bool, workdir: Path) -> None:
    wheels = [wheel]
    for rel in WORKSPACE:
        other = (ROOT / rel).resolve()
        if other == pkg.resolve():
            continue
        say(f"building {rel} (sdist -> wheel) for the smoke")
        wheels += [a for a in build(other, workdir / "siblings" / other.name) if a.suffix == ".whl"]
    say(f"smoke: fresh venv in {workdir}, wheels {', '.join(w.name for w in wheels)}")
    try:
        result = smoke.run_smoke(wheels, workdir, torch=torch, template=template, log=lambda m: say(f"smoke: {m}"))
    except smoke.SmokeError as exc:
        raise ReleaseError(f"smoke set-up failed: {exc}") from exc
    if result.failed:
        raise ReleaseError(f"smoke failed: {', '.join(c.name for c in result.failed)} (details above; {workdir})")
    say(f"smoke: {len(result.checks)} checks passed")


def check_artifacts(meta: PackageMeta, artifacts: Sequence[Path]) -> list[str]:
    """Problems with the built files: exactly one sdist and one wheel, both of this name and version."""
    problems = []
    norm = meta.name.replace("-", "_")
    wheels = [a for a in artifacts if a.suffix == ".whl"]
    sdists = [a for a in artifacts if a.name.endswith(".tar.gz")]
    if len(wheels) != 1 or len(sdists) != 1:
        problems.append(f"expected one wheel and one sdist, got {[a.name for a in artifacts]}")
    for w in wheels:
        if not w.name.startswith(f"{norm}-{meta.version}-"):
            problems.append(f"wheel {w.name} does not carry {norm}-{meta.version}")
            continue
        with zipfile.ZipFile(w) as zf:
            meta_name = f"{norm}-{meta.version}.dist-info/METADATA"
            if meta_name not in zf.namelist():
                problems.append(f"wheel {w.name} has no {meta_name}")
            else:
                text = zf.read(meta_name).decode()
                if f"\nVersion: {meta.version}\n" not in text:
                    problems.append(f"wheel {w.name}: METADATA does not say Version: {meta.version}")
    for s in sdists:
        if not s.name.startswith(f"{norm}-{meta.version}"):
            problems.append(f"sdist {s.name} does not carry {norm}-{meta.version}")
            continue
        with tarfile.open(s) as tf:
            if not any(n.endswith("/pyproject.toml") for n in tf.getnames()):
                problems.append(f"sdist {s.name} has no pyproject.toml")
    return problems


def twine_check(artifacts: Sequence[Path]) -> str:
    """Run `twine check` when twine is installed; say so when it is not (never install it here)."""
    twine = shutil.which("twine")
    cmd = [twine] if twine else None
    if cmd is None:
        probe = subprocess.run([sys.executable, "-c", "import twine"], capture_output=True)
        if probe.returncode == 0:
            cmd = [sys.executable, "-m", "twine"]
    if cmd is None:
        return "skipped (twine not installed)"
    res = subprocess.run([*cmd, "check", *map(str, artifacts)], capture_output=True, text=True)
    if res.returncode != 0:
        raise ReleaseError(f"twine check failed:\n{res.stdout}{res.stderr}")
    return "passed"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("package", help="packages/core | packages/utlx | core | tritonx-core | utlx")
    p.add_argument("--dry-run", action="store_true", default=True,
                   help="the default and only mode for publishing: nothing is ever uploaded")
    p.add_argument("--create-tag", action="store_true", help="create the annotated git tag locally (never pushed)")
    p.add_argument("--out", help="where to build (default dist/<name>/, git-ignored)")
    p.add_argument("--skip-build", action="store_true", help="only the version, tag and changelog checks")
    p.add_argument("--skip-smoke", action="store_true", help="build and check the artifacts, do not install them")
    p.add_argument("--torch", default=smoke.DEFAULT_TORCH,
                   help="CPU torch for the smoke, from a local wheel only ('none' to leave torch out)")
    p.add_argument("--template", action="store_true", help="the smoke also scaffolds, installs and tests a plugin")
    p.add_argument("--smoke-dir", help="where the smoke's venv and scratch go (default: a temporary directory)")
    args = p.parse_args(argv)
    try:
        pkg = resolve_package(args.package)
        meta = read_meta(pkg)
        say(f"{meta.name} {meta.version} from {pkg.relative_to(ROOT)}")
        check_new_version(meta, git_tags())
        say(f"tag {meta.tag} is free and {meta.version} is newer than every earlier {meta.name} tag")
        state = changelog_state(pkg, meta.version)
        if state == "missing":
            raise ReleaseError(f"{pkg.relative_to(ROOT)}/CHANGELOG.md has no heading for {meta.version}")
        if state == "unreleased":
            if args.create_tag:
                raise ReleaseError(f"CHANGELOG.md still marks {meta.version} unreleased: date it before tagging")
            say(f"warning: CHANGELOG.md still marks {meta.version} unreleased (date it before tagging)")
        if not args.skip_build:
            out = Path(args.out) if args.out else ROOT / "dist" / meta.name
            built = build(pkg, out)
            for a in built:
                say(f"built {a.relative_to(ROOT) if a.is_relative_to(ROOT) else a} ({a.stat().st_size} bytes)")
            problems = check_artifacts(meta, built)
            if problems:
                raise ReleaseError("; ".join(problems))
            say(f"twine check: {twine_check(built)}")
            if not args.skip_smoke:
                wheel = next(a for a in built if a.suffix == ".whl")
                smoke_test(pkg, wheel, torch=None if args.torch == "none" else args.torch, template=args.template,
                           workdir=Path(args.smoke_dir) if args.smoke_dir else None)
        if args.create_tag:
            res = subprocess.run(["git", "tag", "-a", meta.tag, "-m", f"{meta.name} {meta.version}"],
                                 cwd=ROOT, capture_output=True, text=True)
            if res.returncode != 0:
                raise ReleaseError(f"git tag {meta.tag} failed: {res.stderr.strip()}")
            say(f"created local tag {meta.tag} (not pushed)")
        else:
            say(f"tag to create: {meta.tag}")
            print(f"    git tag -a {meta.tag} -m '{meta.name} {meta.version}'")
        say("nothing uploaded (this script never uploads)")
    except ReleaseError as e:
        print(f"release: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
