"""Whether a native library's bytes can be trusted later: its content hash, and who else could replace it.

Standard library only and importing nothing of tritonx: :mod:`tritonx._startup` loads this file by path
at interpreter start-up (before triton may be imported), and :mod:`tritonx.native.check` imports it as a
module, so the start-up shim and ``check_native`` apply one rule.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from typing import BinaryIO

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_HASH_CHUNK = 1 << 20


def open_regular(path: str) -> BinaryIO:
    """``open(path, "rb")`` that never blocks: a FIFO or device planted where a library is looked for raises
    ``OSError`` at once instead of waiting for a writer forever."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def content_hash(path: str) -> str | None:
    """SHA-256 of the file's bytes, or None when it is not a readable regular file.

    Opened non-blocking and checked to be a regular file before anything is read, so a FIFO or a device
    at the path costs nothing (the checker then refuses it as "not a regular file").
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, _HASH_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _world_writable_dir(st: os.stat_result) -> bool:
    return bool(st.st_mode & stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX


def writable_by_others(path: str) -> str | None:
    """Why another user could replace the library at ``path`` (one clause), or None when nobody can.

    Anyone can rewrite a world-writable file, and anyone can rename another file over it in a
    world-writable directory without the sticky bit (``/tmp`` has the bit: there only the owner may).
    Both the directories of the path as given (a symbolic link can be re-pointed) and of the file it
    resolves to are looked at, up to ``/``. The file's own group-write bit is left alone: ``umask 002``
    setups make every file group-writable.
    """
    given = os.path.abspath(path)
    real = os.path.realpath(given)
    try:
        st = os.stat(real)
    except OSError:
        return None  # missing or unreadable: the "exists" check says so
    if st.st_mode & stat.S_IWOTH:
        return (f"the file is writable by every user (mode {stat.S_IMODE(st.st_mode):04o}), so anyone could replace "
                f"the code Triton loads; remove that permission (chmod o-w {real})")
    seen: set[str] = set()
    for start in (given, real):
        directory = os.path.dirname(start)
        while directory not in seen:
            seen.add(directory)
            try:
                dst = os.stat(directory)
            except OSError:
                break
            if _world_writable_dir(dst):
                return (f"its directory {directory} is writable by every user without the sticky bit, so anyone "
                        f"could replace the library; move it, or chmod o-w {directory}")
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return None
