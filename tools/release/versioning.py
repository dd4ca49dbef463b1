"""Name, version, tag and changelog facts of one package of the monorepo (no building, no git writes).

Why separate from release.py: these are the decisions a release rests on (which tag, is it free, is the
version newer, is the changelog ready), and they are pure enough to test without building anything.
Each package is released on its own, so tags carry the distribution name: tritonx-core-v0.1.0, utlx-v0.1.0.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
# Short names accepted on the command line besides the folder and the distribution name.
ALIASES = {"core": "packages/core", "tritonx-core": "packages/core", "tritonx": "packages/core",
           "utlx": "packages/utlx"}
# Final releases and pre-releases only (X.Y.Z, X.Y.ZaN/bN/rcN, .postN): what we would publish.
VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?$")
ABOUT_RE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.M)


class ReleaseError(RuntimeError):
    """The release cannot go on; the message names the package, file or tag at fault."""


@dataclass(frozen=True)
class PackageMeta:
    path: Path
    name: str
    version: str

    @property
    def tag(self) -> str:
        return tag_name(self.name, self.version)


def resolve_package(arg: str, root: Path = ROOT) -> Path:
    """'packages/core', 'core', 'tritonx-core' or 'utlx' -> the package folder."""
    rel = ALIASES.get(arg, arg)
    path = (root / rel).resolve()
    if not (path / "pyproject.toml").is_file():
        known = sorted(ALIASES)
        raise ReleaseError(f"package {arg!r}: no pyproject.toml in {path}; use a folder or one of {known}")
    return path


def read_meta(pkg: Path) -> PackageMeta:
    """Name from [project].name; version from [project].version or hatch's version file."""
    data = tomllib.loads((pkg / "pyproject.toml").read_text())
    project = data.get("project", {})
    if "name" not in project:
        raise ReleaseError(f"{pkg}/pyproject.toml: [project].name is missing")
    if "version" in project:
        version = str(project["version"])
    else:
        vpath = data.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
        if not vpath:
            raise ReleaseError(f"{pkg}/pyproject.toml: dynamic version without [tool.hatch.version].path")
        m = ABOUT_RE.search((pkg / vpath).read_text())
        if not m:
            raise ReleaseError(f"{pkg}/{vpath}: no __version__ = '...' line")
        version = m.group(1)
    return PackageMeta(pkg, project["name"], version)


def parse_version(version: str) -> tuple[int, ...]:
    """A sortable key; pre-releases sort before the final release, post-releases after it."""
    m = VERSION_RE.match(version)
    if not m:
        raise ReleaseError(f"version {version!r} is not X.Y.Z[aN|bN|rcN][.postN]")
    major, minor, patch, pre, pre_n, post = m.groups()
    pre_rank = {"a": 0, "b": 1, "rc": 2, None: 3}[pre]
    return (int(major), int(minor), int(patch), pre_rank, int(pre_n or 0), int(post or -1) + 1)


def tag_name(name: str, version: str) -> str:
    return f"{name}-v{version}"


def existing_versions(name: str, tags: list[str]) -> list[str]:
    """Versions already tagged for this distribution (other packages' tags are ignored)."""
    prefix = f"{name}-v"
    found = []
    for t in tags:
        if t.startswith(prefix):
            rest = t[len(prefix):]
            if VERSION_RE.match(rest):
                found.append(rest)
    return sorted(found, key=parse_version)


def check_new_version(meta: PackageMeta, tags: list[str]) -> None:
    """Refuse a version that is already tagged or not newer than the newest tag of the same package."""
    parse_version(meta.version)
    if meta.tag in tags:
        raise ReleaseError(f"{meta.name} {meta.version} is already tagged ({meta.tag}): bump the version first")
    older = existing_versions(meta.name, tags)
    if older and parse_version(meta.version) <= parse_version(older[-1]):
        raise ReleaseError(f"{meta.name} {meta.version} is not newer than the last release {older[-1]}")


def changelog_state(pkg: Path, version: str) -> str:
    """'missing' (no CHANGELOG.md or no heading for the version), 'unreleased', or 'ready'."""
    log = pkg / "CHANGELOG.md"
    if not log.is_file():
        return "missing"
    heading = re.compile(rf"^#+\s*\[?{re.escape(version)}\]?(.*)$", re.M)
    m = heading.search(log.read_text())
    if not m:
        return "missing"
    return "unreleased" if "unreleased" in m.group(1).lower() else "ready"


def git_tags(root: Path = ROOT) -> list[str]:
    res = subprocess.run(["git", "tag", "-l"], cwd=root, capture_output=True, text=True)
    if res.returncode != 0:
        raise ReleaseError(f"git tag -l failed in {root}: {res.stderr.strip()}")
    return [t for t in res.stdout.splitlines() if t]
