"""The disk cache of tuning winners (``utlx.matmul`` and ``utlx.attention``): one JSON file per kind.

What it guarantees, and why:

* **It never fails a matmul.** Unreadable, corrupt or untrusted files read as empty; write errors, a lock
  that cannot be taken, a file over the size limit only cost a re-tune (with a warning where something
  needs the user's attention).
* **It never lets someone else choose the kernels.** In a shared directory a file owned by another user
  or writable by others is ignored, a symbolic link is never followed, and the file is opened
  non-blocking and read only when it is a regular file (a FIFO planted at the path would otherwise hang
  ``open``).
* **Concurrent writers lose nothing.** A write takes an exclusive file lock (``filelock``, on
  ``.NAME.lock`` next to the cache), re-reads the file, merges its entry and replaces the file
  atomically through a private temp file with an unpredictable name. Without the lock, two processes
  tuning at once each wrote what they had read plus their own entry, and the last rename won.
* **A full cache is not silently reset.** A file over :attr:`TuningCache.MAX_BYTES` is neither read
  (it could be anything) nor overwritten (it used to be read as empty and replaced by one entry); a
  warning says so once, naming the file.
* **A tuning cut short by its budget is not final.** Its entry is marked ``partial``: :meth:`get` does not
  return it, so the next process tunes again, and it never replaces a complete entry.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from utlx import compat
from utlx.__about__ import __version__

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class TuningCacheWarning(UserWarning):
    """The tuning cache cannot be used as it is (too large, or locked too long): tuning results are kept
    for this process only."""


def shape_class(M: int, N: int, K: int) -> str:
    """Each dimension rounded up to a power of two: nearby shapes share a tuning."""
    return "x".join(str(1 << max(0, int(x) - 1).bit_length()) for x in (M, N, K))


class _TooBig:
    """What :meth:`TuningCache._read` returns for a file over the size limit (not the same as empty)."""


_TOO_BIG = _TooBig()
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(path: Path, what: str, message: str) -> None:
    with _warned_lock:
        if (str(path), what) in _warned:
            return
        _warned.add((str(path), what))
    warnings.warn(message, TuningCacheWarning, stacklevel=4)


class TuningCache:
    """Winners per (device name, Triton version, utlx version, dtype, alignment, shape class), as JSON."""

    #: Larger files are left alone (a warning says so): ~20k entries, far more than real use makes.
    MAX_BYTES = 1 << 22
    #: How long a writer waits for another one before giving up on remembering its winner.
    LOCK_TIMEOUT_S = 30.0

    def __init__(self, path: Path | None) -> None:
        self.path = Path(path) if path is not None else None

    @staticmethod
    def key(device_name: str, dtype: str, aligned: bool, M: int, N: int, K: int) -> str:
        return (f"{device_name}|triton {compat.TRITON_VERSION_STR}|utlx {__version__}|{dtype}|"
                f"{'aligned' if aligned else 'unaligned'}|{shape_class(M, N, K)}")

    # -- reading ------------------------------------------------------------------------------------

    def _read(self) -> dict[str, Any] | _TooBig:
        """The entries on disk; ``{}`` for a missing, corrupt or untrusted file, :data:`_TOO_BIG` for one
        over the size limit."""
        if self.path is None:
            return {}
        try:
            fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
        except OSError:
            return {}
        try:
            st = os.fstat(fd)
            ours = not hasattr(os, "getuid") or st.st_uid == os.getuid()
            if not ours or not stat.S_ISREG(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return {}
            if st.st_size > self.MAX_BYTES:
                _warn_once(self.path, "too-big",
                           f"utlx tuning cache {self.path} is {st.st_size} bytes, over its {self.MAX_BYTES}-byte "
                           f"limit: it is neither read nor overwritten, so tuning results are not remembered; "
                           f"delete it (or point UTLX_MATMUL_CACHE / UTLX_ATTENTION_CACHE at another file)")
                return _TOO_BIG
            with os.fdopen(fd, encoding="utf-8") as f:
                fd = -1
                data = json.loads(f.read(self.MAX_BYTES + 1))
        except (OSError, ValueError, RecursionError):
            return {}
        finally:
            if fd >= 0:
                os.close(fd)
        return data if isinstance(data, dict) else {}

    def entry(self, key: str) -> dict[str, Any] | None:
        """The stored entry (``candidate``, ``partial``, timings...) for ``key``, or None."""
        data = self._read()
        entry = data.get(key) if isinstance(data, dict) else None
        return entry if isinstance(entry, dict) and isinstance(entry.get("candidate"), str) else None

    def get(self, key: str) -> str | None:
        """The remembered winner for ``key``; None when there is none or its tuning was cut short."""
        entry = self.entry(key)
        if entry is None or entry.get("partial"):
            return None
        return entry["candidate"]

    # -- writing ------------------------------------------------------------------------------------

    def _lock_path(self) -> Path:
        assert self.path is not None
        return self.path.parent / f".{self.path.name}.lock"

    def put(self, key: str, candidate_id: str, *, partial: bool = False, **info: Any) -> None:
        """Remember ``candidate_id`` for ``key`` (merged with what other processes wrote meanwhile).

        ``partial``: the tuning was cut short by its budget; such an entry never replaces a complete one.
        """
        if self.path is None:
            return
        entry = {"candidate": candidate_id, **info}
        if partial:
            entry["partial"] = True
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self._lock_path()), timeout=self.LOCK_TIMEOUT_S, mode=0o600):
                self._merge(key, entry)
        except Timeout:
            _warn_once(self.path, "locked",
                       f"utlx tuning cache {self.path}: another process held {self._lock_path()} for over "
                       f"{self.LOCK_TIMEOUT_S:g} s; this tuning result is not remembered")
        except OSError:
            pass  # an unwritable cache only costs a re-tune

    def _merge(self, key: str, entry: dict[str, Any]) -> None:
        """Under the lock: re-read, add ``entry``, replace the file atomically."""
        assert self.path is not None
        data = self._read()
        if isinstance(data, _TooBig):
            return  # warned by _read: never overwrite what cannot be read back
        old = data.get(key)
        if entry.get("partial") and isinstance(old, dict) and old.get("candidate") and not old.get("partial"):
            return  # a complete tuning stays
        data[key] = entry
        text = json.dumps(data, indent=1, sort_keys=True)
        if len(text.encode("utf-8")) > self.MAX_BYTES:
            _warn_once(self.path, "full",
                       f"utlx tuning cache {self.path} would grow past its {self.MAX_BYTES}-byte limit with "
                       f"{len(data)} entries; this tuning result is not remembered (delete the file to start over)")
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise
