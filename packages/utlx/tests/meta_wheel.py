"""Meta's ``triton-utlx`` wheel, unpacked outside the repo, for tests that use its TLX tutorials as they are.

Why a download at test time: the tutorials are Meta's code; this repo must not copy them. The wheel is
fetched from PyPI once (``pip download --no-deps``), unpacked into a cache outside the checkout
(``$UTLX_TEST_CACHE``, default ``~/.cache/utlx-tests``) and reused. Without network (the H200 machine)
``UTLX_META_WHEEL_DIR`` names either the unpacked wheel, a folder holding the ``.whl`` (the device bundle's
``extra/`` folder), or the ``.whl`` itself. Nothing here puts the wheel on ``sys.path``: it ships a
top-level ``utlx`` package of its own that would shadow this repo's.

    meta_wheel_dir()    -> Path of the unpacked wheel (holds tlx/tutorials), or None
    tutorials_dir()     -> Path of tlx/tutorials, or None
    unavailable_reason()-> why the last lookup returned None (for pytest.skip)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

DIST = "triton-utlx"
VERSION = "3.8.0.post16"
SPEC = f"{DIST}=={VERSION}"
ENV_DIR = "UTLX_META_WHEEL_DIR"
ENV_CACHE = "UTLX_TEST_CACHE"
WHEEL_GLOB = f"triton_utlx-{VERSION}-*.whl"
UNPACKED = f"triton_utlx-{VERSION}"
_MARKER = Path("tlx") / "tutorials"

_reason: list[str] = []


def cache_root() -> Path:
    return Path(os.environ.get(ENV_CACHE) or Path.home() / ".cache" / "utlx-tests").expanduser()


def _unpacked(root: Path) -> bool:
    return (root / _MARKER).is_dir()


def _unpack(wheel: Path, dest: Path) -> Path:
    """Unzip into ``dest`` atomically (a half-unpacked folder is never seen by a concurrent test)."""
    if _unpacked(dest):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest.parent))
    try:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(tmp)
        try:
            tmp.rename(dest)
        except OSError:  # another process won the race
            if not _unpacked(dest):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _from_env(value: str) -> Path | None:
    path = Path(value).expanduser()
    if path.is_dir() and _unpacked(path):
        return path
    wheels = [path] if path.is_file() else sorted(path.glob(WHEEL_GLOB)) if path.is_dir() else []
    if not wheels:
        _reason.append(f"{ENV_DIR}={value} is neither an unpacked {DIST} wheel nor a folder/file with {WHEEL_GLOB}")
        return None
    try:
        return _unpack(wheels[0], cache_root() / UNPACKED)
    except OSError:  # the cache is not writable (a read-only home): the temp dir instead
        return _unpack(wheels[0], Path(tempfile.gettempdir()) / "utlx-tests" / UNPACKED)


def _download(dest: Path) -> Path | None:
    """``pip download`` into a private folder, then move the wheel into ``dest`` (parallel test workers)."""
    dest.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=dest))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--platform", "manylinux_2_28_x86_64", "--python-version", "3.12", "--implementation", "py",
           "-d", str(tmp), SPEC]
    try:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _reason.append(f"pip download {SPEC} failed: {exc}")
            return None
        wheels = sorted(tmp.glob(WHEEL_GLOB))
        if done.returncode != 0 or not wheels:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            _reason.append(f"pip download {SPEC} failed (offline?): {tail[0][:300]}")
            return None
        return wheels[0].replace(dest / wheels[0].name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def meta_wheel_dir() -> Path | None:
    """The unpacked ``triton-utlx==3.8.0.post16`` wheel, downloading it on first use; None when unavailable."""
    _reason.clear()
    env = os.environ.get(ENV_DIR)
    if env:
        return _from_env(env)
    root = cache_root()
    unpacked = root / UNPACKED
    if _unpacked(unpacked):
        return unpacked
    wheels = sorted((root / "wheels").glob(WHEEL_GLOB)) if (root / "wheels").is_dir() else []
    wheel = wheels[0] if wheels else _download(root / "wheels")
    if wheel is None:
        return None
    return _unpack(wheel, unpacked)


def tutorials_dir() -> Path | None:
    root = meta_wheel_dir()
    return None if root is None else root / _MARKER


def unavailable_reason() -> str:
    """Why :func:`meta_wheel_dir` returned None, worded for a skip message."""
    detail = "; ".join(_reason) or "unknown reason"
    return (f"Meta's {SPEC} wheel is not available ({detail}); set {ENV_DIR} to the wheel or its unpacked folder, "
            "or run with network access")
