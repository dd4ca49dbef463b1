"""Build the bundle that carries a newer Triton and this repo's packages to the H200 machine.

Why: the H200 image has Python 3.12, torch 2.11 and triton 3.6.0, no network, and everything sent to it
(checkout + carried paths) must fit in 64 MiB. A Triton wheel is ~250 MB; stripped and trimmed to what
compiles and runs sm_90 kernels (rules in bundle_spec.py) and packed with xz it fits.

    python tools/device/build_bundle.py                    # .bundle/triton-3.8.0.tar.xz
    python tools/device/build_bundle.py --triton 3.9.0
    python tools/device/build_bundle.py --triton stock     # .bundle/stock.tar.xz: repo packages + deps only
    python tools/device/build_bundle.py --extra-wheel triton-utlx==3.8.0.post16   # also carry this wheel

Layout inside the archive (one top folder, named like the archive):
    <name>/MANIFEST.json   what was kept, dropped, stripped; wheel list; sizes; git commit
    <name>/site/           the unpacked, trimmed Triton (absent in the stock bundle): goes first on PYTHONPATH
    <name>/wheels/*.whl    repo packages + dependencies the image lacks: pip install --no-index --no-deps
    <name>/extra/*.whl     --extra-wheel builds carried for comparison, NOT installed (run_gpu_tests.sh names the
                           folder in $TRITONX_EXTRA_WHEELS, and in $UTLX_META_WHEEL_DIR for triton-utlx): Meta's
                           triton-utlx ships a top-level `utlx` and .pth hooks that would replace the code under test
tools/device/run_gpu_tests.sh unpacks and uses it. The `.bundle/` folder is git-ignored: pass the archive
with the device tool's `carry`. Downloads are cached outside the checkout (--cache-dir) so they never travel.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bundle_spec as spec  # a sibling module of this script, not a package

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TRITON = "3.8.0"
PY_VERSION = "3.12"  # the H200 image's Python
PLATFORMS = ("manylinux_2_27_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


class BundleError(RuntimeError):
    """A step of the bundle build failed; the message names the step and the file or package."""


def log(msg: str) -> None:
    print(f"[bundle] {msg}", flush=True)


def pip_download(specs: Sequence[str], dest: Path, python_version: str = PY_VERSION) -> list[Path]:
    """Download wheels for the GPU machine (cp312, manylinux x86-64 or pure), without their dependencies.

    Returns the wheels in `dest` afterwards: give a fresh folder to get exactly what `specs` named.
    """
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--python-version", python_version, "--implementation", "cp", "-d", str(dest)]
    for plat in PLATFORMS:
        cmd += ["--platform", plat]
    res = subprocess.run([*cmd, *specs], capture_output=True, text=True)
    if res.returncode != 0:
        raise BundleError(f"pip download {' '.join(specs)} failed:\n{res.stderr[-2000:]}")
    return sorted(dest.glob("*.whl"))


def find_cached_wheel(cache: Path, name: str, version: str, python_version: str = PY_VERSION) -> Path | None:
    tag = "cp" + python_version.replace(".", "")
    hits = sorted(cache.glob(f"{name}-{version}-{tag}-{tag}-*x86_64*.whl"))
    return hits[0] if hits else None


def unpack_wheel(wheel: Path, dest: Path) -> None:
    """Unzip keeping the Unix modes (zipfile drops them; ptxas must stay executable)."""
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            target = dest / info.filename
            zf.extract(info, dest)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                os.chmod(target, mode)


def strip_files(root: Path, rels: Sequence[str]) -> dict[str, tuple[int, int]]:
    """`strip --strip-unneeded` each file; returns path -> (bytes before, bytes after)."""
    strip = shutil.which("strip")
    if not strip:
        raise BundleError("`strip` not found (binutils): libtriton.so would stay ~500 MB and blow the size budget")
    sizes = {}
    for rel in rels:
        path = root / rel
        before = path.stat().st_size
        res = subprocess.run([strip, "--strip-unneeded", str(path)], capture_output=True, text=True)
        if res.returncode != 0:
            raise BundleError(f"strip --strip-unneeded {rel} failed: {res.stderr.strip()}")
        sizes[rel] = (before, path.stat().st_size)
    return sizes


def build_repo_wheels(dest: Path, packages: Sequence[str] = spec.REPO_PACKAGES, root: Path = ROOT) -> list[Path]:
    """Build a wheel of each repo package: hatch if present, else pip wheel (hatchling must be importable)."""
    dest.mkdir(parents=True, exist_ok=True)
    hatch = shutil.which("hatch") or (Path(sys.executable).parent / "hatch")
    built = []
    for pkg in packages:
        src = root / pkg
        before = set(dest.glob("*.whl"))
        if Path(hatch).exists():
            cmd = [str(hatch), "build", "-t", "wheel", str(dest)]
        else:
            cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dest), "."]
        res = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
        new = sorted(set(dest.glob("*.whl")) - before)
        if res.returncode != 0 or not new:
            out = (res.stderr or res.stdout)[-2000:]
            raise BundleError(f"building the wheel of {pkg} failed ({' '.join(cmd)}):\n{out}")
        built += new
    return built


def pack(staging: Path, top: str, out: Path, level: int = 9) -> None:
    """tar + xz (multithreaded CLI when present, else Python's lzma), files sorted, owners zeroed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".part")
    if shutil.which("xz") and shutil.which("tar"):
        tar = subprocess.Popen(["tar", "--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-cf", "-",
                                "-C", str(staging), top], stdout=subprocess.PIPE)
        with open(tmp, "wb") as f:
            xz = subprocess.run(["xz", f"-{level}", "-T0", "-c"], stdin=tar.stdout, stdout=f)
        tar.stdout.close()  # type: ignore[union-attr]
        if tar.wait() != 0 or xz.returncode != 0:
            raise BundleError(f"packing {out.name} failed (tar rc {tar.returncode}, xz rc {xz.returncode})")
    else:
        import tarfile

        with tarfile.open(tmp, "w:xz", preset=level) as tf:
            tf.add(staging / top, arcname=top)
    tmp.replace(out)


def travelling_size(root: Path = ROOT) -> int:
    """Bytes of the checkout that the device tool sends: tracked + untracked files git does not ignore."""
    res = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, capture_output=True)
    if res.returncode != 0:
        return 0
    total = 0
    for name in res.stdout.decode().split("\0"):
        p = root / name
        if name and p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    return total


def git_commit(root: Path = ROOT) -> str:
    res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 else "unknown"


def bundle_name(triton: str) -> str:
    return "stock" if triton == "stock" else f"triton-{triton}"


def build(args: argparse.Namespace) -> Path:
    t0 = time.monotonic()
    name = bundle_name(args.triton)
    cache = Path(args.cache_dir).expanduser()
    out = Path(args.out) / f"{name}.tar.xz"
    manifest: dict[str, object] = {
        "name": name,
        "triton": args.triton,
        "python": args.python_version,
        "git_commit": git_commit(),
        "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    with tempfile.TemporaryDirectory(prefix="tritonx-bundle-", dir=args.work_dir) as tmp:
        staging = Path(tmp)
        top = staging / name
        wheels = top / "wheels"
        wheels.mkdir(parents=True)

        if args.triton != "stock":
            pyver = args.python_version
            whl = find_cached_wheel(cache, "triton", args.triton, pyver)
            if whl is None:
                log(f"downloading triton=={args.triton} (Python {pyver}, manylinux x86_64) into {cache}")
                pip_download([f"triton=={args.triton}"], cache, pyver)
                whl = find_cached_wheel(cache, "triton", args.triton, pyver)
            if whl is None:
                raise BundleError(f"no Python {pyver} x86_64 wheel of triton {args.triton} in {cache} after download")
            log(f"unpacking {whl.name}")
            site = top / "site"
            unpack_wheel(whl, site)
            unpacked = spec.tree_size(site)
            sel = spec.select(site, extra_drops=args.drop, keep_patterns=args.keep)
            missing = spec.check_essentials(site, sel)
            if missing:
                raise BundleError(f"the selection would drop what sm_90 needs: {missing}; adjust --keep/--drop")
            freed = spec.apply(site, sel)
            stripped = strip_files(site, sel.strip)
            for rel, (a, b) in stripped.items():
                log(f"stripped {rel}: {a / spec.MIB:.0f} -> {b / spec.MIB:.0f} MiB")
            manifest["triton_wheel"] = whl.name
            manifest["dropped"] = {reason: paths for reason, paths in sel.dropped_by_reason().items()}
            manifest["stripped"] = {k: list(v) for k, v in stripped.items()}
            manifest["site_bytes"] = {"unpacked": unpacked, "dropped": freed, "final": spec.tree_size(site)}
            log(f"triton tree: {unpacked / spec.MIB:.0f} MiB unpacked -> {spec.tree_size(site) / spec.MIB:.0f} MiB")

        log("building repo package wheels")
        repo = build_repo_wheels(wheels)
        deps: list[Path] = []
        if not args.no_deps_wheels:
            log(f"downloading dependency wheels the GPU image lacks: {', '.join(spec.GPU_IMAGE_MISSING_DEPS)}")
            deps = pip_download(list(spec.GPU_IMAGE_MISSING_DEPS), staging / "dl-deps", args.python_version)
        for w in deps:
            shutil.copy2(w, wheels / w.name)
        if args.extra_wheel:
            log(f"downloading extra wheels (carried, not installed): {', '.join(args.extra_wheel)}")
            (top / "extra").mkdir()
            for w in pip_download(args.extra_wheel, staging / "dl-extra", args.python_version):
                shutil.copy2(w, top / "extra" / w.name)
        _check_one_version_each(wheels)
        manifest["wheels"] = sorted(p.name for p in wheels.glob("*.whl"))
        manifest["repo_wheels"] = sorted(p.name for p in repo)
        manifest["extra_wheels"] = sorted(p.name for p in (top / "extra").glob("*.whl"))
        (top / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")

        log(f"packing {out} (xz -{args.xz_level})")
        packed = staging / out.name  # packed in scratch, moved in whole: .bundle/ never holds a partial file
        pack(staging, name, packed, args.xz_level)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(packed, out)

    size = out.stat().st_size
    tree = travelling_size()
    total = size + tree
    log(f"bundle {out}: {size / spec.MIB:.1f} MiB; checkout that travels with it: {tree / spec.MIB:.1f} MiB; "
        f"total {total / spec.MIB:.1f} MiB of a {args.budget_mib} MiB budget ({time.monotonic() - t0:.0f} s)")
    if total > args.budget_mib * spec.MIB:
        raise BundleError(f"total {total / spec.MIB:.1f} MiB is over the {args.budget_mib} MiB budget "
                          "(device tool limit 64 MiB): drop more (--drop) or carry less")
    inside = out.resolve().is_relative_to(ROOT)
    if inside and subprocess.run(["git", "check-ignore", "-q", str(out)], cwd=ROOT).returncode != 0:
        log(f"WARNING: {out} is not git-ignored: it would travel twice (as untracked file and as carry)")
    return out


def _dist_name(wheel: Path) -> str:
    return wheel.name.split("-")[0].lower().replace("_", "-").replace(".", "-")


def _check_one_version_each(wheels: Path) -> None:
    """pip install of several versions of one project stops the whole install: refuse it here."""
    seen: dict[str, str] = {}
    for w in sorted(wheels.glob("*.whl")):
        name = _dist_name(w)
        if name in seen:
            raise BundleError(f"two wheels of {name}: {seen[name]} and {w.name}; clear the cache dir or pin one")
        seen[name] = w.name


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--triton", default=DEFAULT_TRITON, help="Triton version, or 'stock' for repo packages only")
    p.add_argument("--out", default=str(ROOT / ".bundle"), help="output folder (git-ignored; default .bundle/)")
    p.add_argument("--cache-dir", default="~/.cache/tritonx-bundle", help="download cache, outside the checkout")
    p.add_argument("--work-dir", default=None, help="scratch folder for unpacking (~1 GB); default: system temp")
    p.add_argument("--keep", action="append", default=[], metavar="PATTERN", help="keep files a rule would drop")
    p.add_argument("--drop", action="append", default=[], metavar="PATTERN", help="drop more files (fnmatch)")
    p.add_argument("--extra-wheel", action="append", default=[], metavar="SPEC",
                   help="another wheel to carry for comparison, in extra/ (not installed)")
    p.add_argument("--no-deps-wheels", action="store_true", help="leave out the dependency wheels")
    p.add_argument("--python-version", default=PY_VERSION,
                   help="Python of the target machine (3.12 on the H200; 3.11 to try a bundle on this machine)")
    p.add_argument("--xz-level", type=int, default=9, choices=range(0, 10))
    p.add_argument("--budget-mib", type=int, default=spec.SIZE_BUDGET // spec.MIB, help="fail above this total")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        build(args)
    except BundleError as e:
        print(f"build_bundle: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
