"""Make the repo packages importable from their sources on a machine that cannot build wheels.

Why: the H200 machine has no network and no hatchling, so `pip install -e packages/core` cannot run there,
yet tritonx finds installed plugins through entry points, which need a `*.dist-info` folder. This writes
just that folder (METADATA, entry_points.txt) for each package into a target dir, reading pyproject.toml,
and prints the source roots to put on PYTHONPATH. The code imported is then the checkout's own, never a
stale wheel.

    python tools/device/devinstall.py --target /tmp/site packages/core packages/utlx
    # prints one source root per line, e.g. /repo/packages/core/src
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

VERSION_RE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.M)


class DevInstallError(RuntimeError):
    """A package's pyproject.toml lacks what the dist-info needs; the message names the package and key."""


def read_version(pkg: Path, project: dict, tool: dict) -> str:
    if "version" in project:
        return str(project["version"])
    path = tool.get("hatch", {}).get("version", {}).get("path")
    if not path:
        raise DevInstallError(f"{pkg}: version is dynamic but [tool.hatch.version].path is missing")
    m = VERSION_RE.search((pkg / path).read_text())
    if not m:
        raise DevInstallError(f"{pkg}: no __version__ = '...' line in {path}")
    return m.group(1)


def source_roots(pkg: Path, tool: dict) -> list[Path]:
    """Folders that hold the import packages (parents of hatch's wheel `packages`, else src/ or the root)."""
    packages = tool.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {}).get("packages")
    if packages:
        return sorted({(pkg / p).parent.resolve() for p in packages})
    return [(pkg / "src").resolve()] if (pkg / "src").is_dir() else [pkg.resolve()]


def entry_points_text(project: dict) -> str:
    groups: dict[str, dict[str, str]] = {}
    if project.get("scripts"):
        groups["console_scripts"] = dict(project["scripts"])
    for group, eps in project.get("entry-points", {}).items():
        groups[group] = dict(eps)
    out = []
    for group, eps in groups.items():
        out.append(f"[{group}]")
        out += [f"{name} = {value}" for name, value in eps.items()]
        out.append("")
    return "\n".join(out)


def dist_info(pkg: Path, target: Path) -> tuple[Path, list[Path]]:
    """Write <name>-<version>.dist-info for one package into target; return it and the source roots."""
    pyproject = pkg / "pyproject.toml"
    if not pyproject.is_file():
        raise DevInstallError(f"{pkg}: no pyproject.toml")
    data = tomllib.loads(pyproject.read_text())
    project, tool = data.get("project", {}), data.get("tool", {})
    if "name" not in project:
        raise DevInstallError(f"{pkg}: [project].name is missing")
    name = project["name"]
    version = read_version(pkg, project, tool)
    folder = target / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    (folder / "METADATA").write_text("\n".join(meta) + "\n")
    (folder / "entry_points.txt").write_text(entry_points_text(project))
    (folder / "INSTALLER").write_text("tritonx-devinstall\n")
    (folder / "RECORD").write_text("")
    for src, name in root_pth_files(pkg, tool):
        (target / name).write_text(src.read_text())
    return folder, source_roots(pkg, tool)


def root_pth_files(pkg: Path, tool: dict) -> list[tuple[Path, str]]:
    """(source, name) of each .pth the wheel puts at the site root through hatch's force-include.

    A .pth in the target folder only runs where something processes that folder as a site dir:
    run_gpu_tests.sh does so through tools/device/boot/sitecustomize.py.
    """
    wheel = tool.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {})
    found = []
    for src, dest in wheel.get("force-include", {}).items():
        name = dest.strip("/")
        if name.endswith(".pth") and "/" not in name:
            path = pkg / src
            if not path.is_file():
                raise DevInstallError(f"{pkg}: force-include source {src!r} (-> {dest!r}) does not exist")
            found.append((path, name))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", required=True, type=Path, help="folder that will be on PYTHONPATH")
    p.add_argument("packages", nargs="+", type=Path, help="package folders holding a pyproject.toml")
    args = p.parse_args(argv)
    roots: list[Path] = []
    try:
        for pkg in args.packages:
            folder, src = dist_info(pkg, args.target)
            print(f"devinstall: {folder.name} -> {', '.join(map(str, src))}", file=sys.stderr)
            roots += [r for r in src if r not in roots]
    except DevInstallError as e:
        print(f"devinstall: error: {e}", file=sys.stderr)
        return 1
    print("\n".join(map(str, roots)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
