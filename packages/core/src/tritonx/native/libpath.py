"""Find the libraries a shared object NEEDS the way the dynamic loader (glibc ld.so) would.

Search order for a DT_NEEDED name without a slash: a library already in the process under that name
(libtriton.so in a Triton process), DT_RPATH (only when there is no DT_RUNPATH), LD_LIBRARY_PATH,
DT_RUNPATH, the ld.so cache (``ldconfig -p``), then the default directories. ``$ORIGIN`` expands to
the directory of the object that asks. Candidates built for another machine are skipped, as ld.so does.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections import deque
from dataclasses import dataclass, field

from ..settings import settings
from .elf import ElfFormatError, ElfHeader, ElfImage, read_header_quick

_DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")


@functools.lru_cache(maxsize=1)
def ld_cache() -> dict[str, tuple[str, ...]]:
    """soname -> paths listed by ``ldconfig -p`` (empty when ldconfig is unavailable)."""
    result: dict[str, list[str]] = {}
    for ldconfig in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.splitlines():
            if "=>" not in line:
                continue
            left, path = line.rsplit("=>", 1)
            name = left.strip().split(" ", 1)[0]
            result.setdefault(name, []).append(path.strip())
        if result:
            break
    return {k: tuple(v) for k, v in result.items()}


def _expand(entry: str, origin: str, header: ElfHeader) -> str:
    lib = "lib64" if header.elf_class == "ELFCLASS64" else "lib"
    for token, value in (("${ORIGIN}", origin), ("$ORIGIN", origin), ("${LIB}", lib), ("$LIB", lib)):
        entry = entry.replace(token, value)
    return entry


def _compatible(path: str, header: ElfHeader) -> bool:
    candidate = read_header_quick(path)
    return candidate is not None and candidate.same_machine(header)


@dataclass
class NeededLibrary:
    """One DT_NEEDED entry: who asked, and where it was found (None: not found)."""

    name: str
    requested_by: str
    path: str | None


@dataclass
class DependencyClosure:
    """Every library loaded along with a root object, breadth first, as ld.so loads them."""

    root: str
    libraries: list[str] = field(default_factory=list)  # resolved paths, root excluded
    needed: list[NeededLibrary] = field(default_factory=list)

    @property
    def missing(self) -> list[NeededLibrary]:
        return [n for n in self.needed if n.path is None]


def find_library(
    name: str,
    *,
    requester: str,
    rpath: list[str],
    runpath: list[str],
    header: ElfHeader,
    preloaded: dict[str, str] | None = None,
) -> str | None:
    """Path of the library ``name`` as ld.so would find it for ``requester`` (None if not found)."""
    if preloaded and name in preloaded:
        return preloaded[name]
    origin = os.path.dirname(os.path.realpath(requester))
    if "/" in name:
        path = _expand(name, origin, header)
        return path if os.path.isfile(path) and _compatible(path, header) else None
    directories: list[str] = []
    if not runpath:
        directories += rpath
    directories += settings.ld_library_path
    directories += runpath
    for directory in directories:
        path = os.path.join(_expand(directory, origin, header), name)
        if os.path.isfile(path) and _compatible(path, header):
            return path
    for path in ld_cache().get(name, ()):
        if os.path.isfile(path) and _compatible(path, header):
            return path
    for directory in _DEFAULT_DIRS:
        path = os.path.join(directory, name)
        if os.path.isfile(path) and _compatible(path, header):
            return path
    return None


def dependency_closure(root: str, *, preloaded: dict[str, str] | None = None) -> DependencyClosure:
    """The libraries ld.so would load with ``root`` (breadth first, each once, by real path)."""
    closure = DependencyClosure(root=root)
    seen = {os.path.realpath(root)}
    queue: deque[str] = deque([root])
    while queue:
        current = queue.popleft()
        try:
            with ElfImage(current) as image:
                dynamic = image.dynamic()
                header = image.header
        except (ElfFormatError, OSError):
            continue
        for name in dynamic.needed:
            path = find_library(
                name,
                requester=current,
                rpath=dynamic.rpath,
                runpath=dynamic.runpath,
                header=header,
                preloaded=preloaded,
            )
            closure.needed.append(NeededLibrary(name, current, path))
            if path is None:
                continue
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                closure.libraries.append(path)
                queue.append(path)
    return closure
