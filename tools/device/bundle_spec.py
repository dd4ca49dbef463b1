"""Which files of an unpacked Triton wheel go to the GPU machine, and which Python wheels go with them.

Why: everything that travels to the H200 machine (checkout + carried paths) must fit in 64 MiB, and a
Triton wheel unpacks to ~900 MB. What is left must still compile and run kernels for sm_90 there, so
each rule below says why the thing it drops is not needed for that. Rules are data, not code, so a
test can check them against a fake wheel tree and a new Triton version only needs a new line.

Patterns are fnmatch patterns on the POSIX path relative to the wheel root ("*" also crosses "/").
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# (pattern, why it is not needed to compile + run kernels for sm_90 on the H200)
DROP_RULES: tuple[tuple[str, str], ...] = (
    ("triton/backends/amd/include/*", "HIP/ROCm headers: only used to build the launcher on an AMD GPU"),
    ("triton/backends/nvidia/lib/cupti/*", "CUPTI: only the proton profiler loads it"),
    ("triton/backends/nvidia/lib/cupti-blackwell/*", "CUPTI for Blackwell: only the proton profiler loads it"),
    ("triton/backends/nvidia/bin/ptxas-blackwell", "ptxas for sm_100+: the H200 is sm_90"),
    ("triton/backends/nvidia/bin/nvdisasm", "SASS disassembler: the GPU image has its own (CUDA 13)"),
    ("triton/_C/libproton.so", "proton profiler library"),
    ("triton/profiler/*", "proton's Python side: useless without libproton.so"),
    ("triton/FileCheck", "LLVM FileCheck: only Triton's own lit-style tests use it"),
    ("triton/instrumentation/*", "GPU instrumentation test library"),
    ("triton/plugins/*.so.*git", "versioned duplicate of the plugin .so beside it"),
    ("*.a", "static libraries: nothing links against them at run time"),
    ("*/__pycache__/*", "bytecode caches: rebuilt on first import"),
)

# Shared objects that `strip --strip-unneeded` shrinks and that still load afterwards
# (libtriton.so: 505 -> 192 MB for 3.8.0, measured). Executables from NVIDIA (ptxas) are left alone.
STRIP_PATTERNS: tuple[str, ...] = ("triton/_C/*.so", "triton/plugins/*.so")

# Runtime dependencies of tritonx-core (and theirs) that the H200 image lacks. Checked against that
# image's package list (2026-11-17): typer, rich, click, jinja2, pyyaml, requests, python-dateutil,
# pluggy are there; these are not. All are pure-Python wheels but torchao (abi3).
GPU_IMAGE_MISSING_DEPS: tuple[str, ...] = (
    "pyelftools",
    "cookiecutter",
    "binaryornot",
    "python-slugify",
    "text-unidecode",
    "arrow",
    "tzdata",
    # Meta's tutorials' testing/test_correctness.py imports torchao at module level (its mxfp8 tutorials)
    "torchao",
    # the GPU suite no longer fits one 10-minute command serially: run it with `-n` on the machine's 16 cores
    "pytest-xdist",
    "execnet",
)

# The repo's own packages, installed from wheels on the GPU machine (entry points need dist-info).
REPO_PACKAGES: tuple[str, ...] = ("packages/core", "packages/utlx")

MIB = 1024 * 1024
# The device tool's limit is 64 MiB for the checkout plus everything carried; keep headroom.
SIZE_BUDGET = 60 * MIB


@dataclass
class Selection:
    """The decision for every file of an unpacked wheel tree."""

    keep: list[str] = field(default_factory=list)
    drop: dict[str, str] = field(default_factory=dict)  # path -> reason
    strip: list[str] = field(default_factory=list)  # kept paths to strip

    def dropped_by_reason(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for path, reason in sorted(self.drop.items()):
            grouped.setdefault(reason, []).append(path)
        return grouped


def _matches(path: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def drop_reason(
    path: str,
    rules: Sequence[tuple[str, str]] = DROP_RULES,
    keep_patterns: Sequence[str] = (),
) -> str | None:
    """Why `path` (POSIX, relative to the wheel root) is dropped, or None if it stays.

    `keep_patterns` win over every rule: the escape hatch when a test on the GPU needs something dropped.
    """
    if _matches(path, keep_patterns):
        return None
    for pattern, reason in rules:
        if fnmatch.fnmatchcase(path, pattern):
            return reason
    return None


def select(
    root: str | os.PathLike[str],
    *,
    extra_drops: Sequence[str] = (),
    keep_patterns: Sequence[str] = (),
    strip_patterns: Sequence[str] = STRIP_PATTERNS,
) -> Selection:
    """Walk an unpacked wheel and decide, for every regular file and link, keep / drop / strip."""
    rules = tuple(DROP_RULES) + tuple((p, f"dropped on request (--drop {p})") for p in extra_drops)
    root = Path(root)
    sel = Selection()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            reason = drop_reason(rel, rules, keep_patterns)
            if reason is not None:
                sel.drop[rel] = reason
                continue
            sel.keep.append(rel)
            full = root / rel
            if _matches(rel, strip_patterns) and not full.is_symlink():
                sel.strip.append(rel)
    sel.keep.sort()
    sel.strip.sort()
    return sel


def check_essentials(root: str | os.PathLike[str], sel: Selection) -> list[str]:
    """What a sm_90 compile + run needs and the selection would lose; empty when all is there.

    Guards against a rule that is too broad (or a new wheel layout) silently producing a bundle that
    only fails on the GPU machine, where each try costs device time.
    """
    needed = (
        "triton/__init__.py",
        "triton/_C/libtriton.so",
        "triton/backends/nvidia/bin/ptxas",
        "triton/backends/nvidia/lib/libdevice.10.bc",
        "triton/backends/nvidia/driver.c",
        "triton/backends/nvidia/include/cuda.h",
    )
    kept = set(sel.keep)
    missing = [p for p in needed if p not in kept]
    if not any(p.endswith(".dist-info/entry_points.txt") for p in kept):
        missing.append("triton-*.dist-info/entry_points.txt (backends are found through it)")
    return missing


def apply(root: str | os.PathLike[str], sel: Selection) -> int:
    """Delete the dropped files (and the folders left empty); return the bytes freed."""
    root = Path(root)
    freed = 0
    for rel in sel.drop:
        path = root / rel
        if path.is_symlink():
            path.unlink()
            continue
        freed += path.stat().st_size
        path.unlink()
    for dirpath, _dirs, _files in sorted(os.walk(root, topdown=False), key=lambda t: -len(t[0])):
        p = Path(dirpath)
        if p != root and not any(p.iterdir()):
            p.rmdir()
    return freed


def tree_size(root: str | os.PathLike[str]) -> int:
    """Bytes of the regular files under root (links not followed)."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total
