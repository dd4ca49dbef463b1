"""Interpreter start-up half of ``TRITONX_NATIVE_PLUGINS``: check native plugins before Triton loads.

Why at start-up: Triton 3.7/3.8 read ``TRITON_PLUGIN_PATHS`` once, when libtriton is first imported,
and abort the process on a bad library. So the libraries named in ``TRITONX_NATIVE_PLUGINS``
(colon-separated) are checked when the interpreter starts, from the ``tritonx-native.pth`` line, and
only those that pass reach Triton: appended to ``TRITON_PLUGIN_PATHS`` (3.7/3.8), or loaded through
``passes.plugin.extend_with`` right after libtriton is imported (3.9). A refused library costs one
warning line on stderr; the process goes on without it.

Constraints, all deliberate:

* Standard library only, and it never imports ``triton`` or the ``tritonx`` package (whose
  ``__init__`` imports triton): the ``.pth`` line loads this file by path, as ``tritonx._startup``.
* The checks themselves (ELF reading, the probe) run in ONE child process, so a start-up with the
  variable unset costs nothing and with it set costs at most one child (~1 s), never a crash. The
  child runs isolated (``python -I``) with this very tritonx first on its path: a ``tritonx/`` folder in
  the current directory is never executed.
* Each library's verdict is remembered on disk per (path, SHA-256 of its content, Triton install), in
  ``$TRITONX_CACHE_DIR/native-verdicts`` (default ``~/.cache/tritonx``), so a slow check (a constructor
  that sleeps or hangs until the probe's timeout) is paid once, not at every interpreter start. The
  content hash, not size and mtime: a library swapped for another of the same size and mtime (``cp -p``,
  reproducible builds) must be checked again. Only verdict files owned by this user, regular and
  writable by nobody else are trusted, and they are opened non-blocking (a FIFO planted there is ignored).
* A library anyone else can replace (world-writable, or in a world-writable directory without the
  sticky bit) is refused before any verdict is looked up (:func:`writable_by_others`; ``check_native``
  applies the same rule as its ``permissions`` check).
* The verdicts are passed down in ``_TRITONX_NATIVE_STATE`` so subprocesses (compile workers...) of the
  same environment reuse them instead of checking again, as long as every library still has the content
  hash it was checked with; a state made for another Triton install is discarded, with the paths it had
  added to ``TRITON_PLUGIN_PATHS``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import subprocess
import sys
import tempfile
from typing import Any

ENV = "TRITONX_NATIVE_PLUGINS"
STATE_ENV = "_TRITONX_NATIVE_STATE"
TRITON_PLUGIN_PATHS = "TRITON_PLUGIN_PATHS"
CHILD_MARKER = "@@tritonx-startup@@"
CHILD_TIMEOUT_S = 600.0
CACHE_ENV = "TRITONX_CACHE_DIR"
VERDICT_FORMAT = 2  # 2: keyed by content hash (1 was size and mtime)

#: What the isolated checker child runs: this tritonx first on its path, then the checks.
CHILD_CODE = (
    "import json, sys\n"
    "sys.path[:0] = json.loads(sys.argv[1])\n"
    "from tritonx.native._startup_child import main\n"
    "raise SystemExit(main(sys.argv[2:]))\n"
)

#: What the ``tritonx-native.pth`` line runs when the variable is set: load this file by path as
#: ``tritonx._startup``, without importing the ``tritonx`` package (whose ``__init__`` imports triton).
#: The current directory is left out of the search (an empty ``PYTHONPATH`` entry puts it on
#: ``sys.path`` before site runs): a ``./tritonx/_startup.py`` must never run in every interpreter.
PTH_CODE = """\
import importlib.util as u, os, sys
try:
    c = os.path.realpath(os.getcwd())
except OSError:
    c = None
q, k = sys.path[:], []
for e in q:
    if e and os.path.realpath(e) != c:
        k.append(e)
sys.path[:] = k
try:
    s = u.find_spec('tritonx') if 'tritonx._startup' not in sys.modules else None
finally:
    sys.path[:] = q
if s is not None and s.submodule_search_locations:
    f = os.path.join(next(iter(s.submodule_search_locations)), '_startup.py')
    p = u.spec_from_file_location('tritonx._startup', f)
    m = sys.modules['tritonx._startup'] = u.module_from_spec(p)
    p.loader.exec_module(m)
"""

#: The one line of ``tritonx-native.pth``: a dict lookup when the variable is unset (the usual case).
PTH_LINE = "import os; os.environ.get('TRITONX_NATIVE_PLUGINS') and exec(" + repr(PTH_CODE) + ")"

#: What start-up decided, for :mod:`tritonx.native.registry` (read through ``sys.modules``).
results: list[dict[str, Any]] = []
mechanism: str | None = None
reused: bool = False
#: libraries whose verdict came from the on-disk verdict cache this start-up
cached: list[str] = []
_pending: list[tuple[str, list[str]]] = []
applied: dict[str, str | None] = {}  # path -> None (loaded) or the error text (3.9 loading failed)
_done = False


def warn(message: str) -> None:
    """One line on stderr; start-up must never raise."""
    try:
        sys.stderr.write(f"tritonx: {message}\n")
        sys.stderr.flush()
    except Exception:  # pragma: no cover - no usable stderr
        pass


def _split(value: str) -> list[str]:
    return [p for p in value.split(":") if p.strip()]


def _triton_key() -> str | None:
    """Identity of the installed libtriton without importing triton: path, size, mtime, and the inode and
    ctime too, which a copy cannot preserve (``cp -p`` keeps the mtime); its content is not hashed, it is
    hundreds of MB and this runs at every interpreter start."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return file_identity(os.path.join(next(iter(spec.submodule_search_locations)), "_C", "libtriton.so"))


def file_identity(path: str) -> str | None:
    """``realpath:size:mtime:inode:ctime`` of a file, or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}"


def _child_path() -> list[str]:
    """The child's import path: the directory holding this tritonx, then this process's path (absolute)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rest = [os.path.abspath(p) for p in sys.path if p and os.path.abspath(p) != here]
    return [here, *rest]


def _run_child(paths: list[str]) -> dict[str, Any] | None:
    env = dict(os.environ)
    for name in (ENV, STATE_ENV, TRITON_PLUGIN_PATHS):
        env.pop(name, None)
    command = [sys.executable, "-I", "-c", CHILD_CODE, json.dumps(_child_path()), *paths]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        warn(f"could not check {ENV} ({exc}); no native plugin loaded")
        return None
    for line in done.stdout.splitlines():
        if line.startswith(CHILD_MARKER):
            return json.loads(line[len(CHILD_MARKER) :])
    tail = " | ".join(done.stderr.strip().splitlines()[-3:])
    warn(f"could not check {ENV} (checker exited with {done.returncode}: {tail}); no native plugin loaded")
    return None


# -- the verdict cache -------------------------------------------------------------------------------


def _cache_dir() -> str:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tritonx")
    return os.path.join(base, "native-verdicts")


#: how the cache and the libraries are opened: never through a link planted at a cache path, and
#: never blocking (a FIFO planted at a path would hang ``open`` until someone writes to it)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _load_trust() -> Any:
    """``native/_trust.py`` of this very tritonx, loaded by path under a private name (this file must not
    import the ``tritonx`` package, whose ``__init__`` imports triton; ``check_native`` imports the same
    file normally)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", "_trust.py")
    spec = importlib.util.spec_from_file_location("tritonx._startup_trust", here)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_trust = _load_trust()
content_hash = _trust.content_hash
writable_by_others = _trust.writable_by_others


def _library_key(path: str, triton: str) -> dict[str, Any] | None:
    digest = content_hash(path)
    if digest is None:
        return None  # a missing file is refused quickly by the child; nothing worth remembering
    return {"format": VERDICT_FORMAT, "path": os.path.realpath(path), "sha256": digest, "triton": triton}


def _verdict_file(path: str) -> str:
    return os.path.join(_cache_dir(), hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:40] + ".json")


def _trusted(fd: int) -> bool:
    """Ours, a regular file, and writable by nobody else (a shared cache dir may hold planted files)."""
    st = os.fstat(fd)
    owner_ok = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return owner_ok and stat.S_ISREG(st.st_mode) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_verdict(path: str, key: dict[str, Any] | None) -> dict[str, Any] | None:
    """The remembered ``{"mechanism", "result"}`` for this exact content (``key``) and Triton, or None."""
    if key is None:
        return None
    try:
        fd = os.open(_verdict_file(path), os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError:
        return None
    try:
        if not _trusted(fd):
            return None
        with os.fdopen(fd, encoding="utf-8") as f:
            fd = -1
            data = json.loads(f.read(1 << 20))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("result"), dict):
        return None
    return data


def write_verdict(path: str, key: dict[str, Any], mechanism: str | None, result: dict[str, Any]) -> None:
    """Remember one library's verdict (atomically: a private temp file renamed over the old one)."""
    directory = _cache_dir()
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".verdict-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"key": key, "mechanism": mechanism, "result": result}, f)
            os.replace(tmp, _verdict_file(path))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:  # an unwritable cache only costs the next start-up a check
        warn(f"could not remember the verdict on {path} ({exc})")


def _refusal(path: str, check: str, message: str) -> dict[str, Any]:
    """A refused library in the checker child's result format."""
    return {"path": path, "ok": False, "check": check, "message": message}


def check_libraries(paths: list[str], triton: str) -> dict[str, Any] | None:
    """The child's report for ``paths``, taking remembered verdicts and checking only the others.

    A library others could replace is refused here, before any verdict is looked up (its content may
    change after the check). Each key (content hash) is taken once, before the child checks the
    library, and the verdict is stored only if the content is still the same afterwards: a verdict is
    never filed under content the child did not see.
    """
    exposed = {p: why for p in paths if (why := writable_by_others(p)) is not None}
    keys = {p: _library_key(p, triton) for p in paths if p not in exposed}
    remembered = {p: read_verdict(p, keys[p]) for p in keys}
    missing = [p for p in keys if remembered[p] is None]
    fresh: dict[str, dict[str, Any]] = {p: _refusal(p, "permissions", why) for p, why in exposed.items()}
    mechanism = next((v["mechanism"] for v in remembered.values() if v is not None), None)
    if missing:
        report = _run_child(missing)
        if report is None:
            return None
        mechanism = report.get("mechanism")
        for path, result in zip(missing, report.get("results", []), strict=False):
            fresh[path] = result
            key = keys[path]
            if key is not None and _library_key(path, triton) == key:
                write_verdict(path, key, mechanism, result)
    cached.extend(p for p in paths if remembered.get(p) is not None)
    results = []
    for p in paths:
        if remembered.get(p) is not None:
            results.append(remembered[p]["result"])
        elif p in fresh:
            results.append(fresh[p])
    return {"mechanism": mechanism, "results": results, "sha256": {p: k["sha256"] for p, k in keys.items() if k}}


def _state_still_holds(state: dict[str, Any]) -> bool:
    """Every library an inherited state accepted still has the content it was checked with, and nobody
    else can replace it (a subprocess must not load a library swapped since its parent's check)."""
    digests = state.get("sha256")
    if not isinstance(digests, dict):
        return False
    for result in state.get("results", []):
        if not isinstance(result, dict) or not result.get("ok"):
            continue
        path = result.get("path")
        if not isinstance(path, str) or writable_by_others(path) is not None:
            return False
        if digests.get(path) is None or content_hash(path) != digests[path]:
            return False
    return True


def _remove_from_plugin_paths(paths: list[str]) -> None:
    current = _split(os.environ.get(TRITON_PLUGIN_PATHS, ""))
    kept = [p for p in current if p not in set(paths)]
    if kept != current:
        if kept:
            os.environ[TRITON_PLUGIN_PATHS] = ":".join(kept)
        else:
            os.environ.pop(TRITON_PLUGIN_PATHS, None)


def _add_to_plugin_paths(path: str) -> bool:
    current = _split(os.environ.get(TRITON_PLUGIN_PATHS, ""))
    if path in current:
        return False
    os.environ[TRITON_PLUGIN_PATHS] = ":".join([*current, path])
    return True


def run() -> None:
    """Check ``TRITONX_NATIVE_PLUGINS`` and hand the accepted libraries to Triton (once per process)."""
    global _done, mechanism, reused
    if _done:
        return
    _done = True
    spec = os.environ.get(ENV, "").strip()
    if not spec:
        return
    paths = [os.path.abspath(os.path.expanduser(p)) for p in _split(spec)]
    key = _triton_key()
    if key is None:
        warn(f"{ENV} is set but Triton is not installed here; no native plugin loaded")
        return
    state: dict[str, Any] | None = None
    try:
        state = json.loads(os.environ.get(STATE_ENV, "") or "null")
    except ValueError:
        state = None
    if (isinstance(state, dict) and state.get("spec") == spec and state.get("triton") == key
            and _state_still_holds(state)):
        report, reused = state, True
    else:
        if isinstance(state, dict):
            _remove_from_plugin_paths(list(state.get("added", [])))
        report = check_libraries(paths, key)
        if report is None:
            return
    mechanism = report.get("mechanism")
    added: list[str] = list(report.get("added", [])) if reused else []
    libtriton_imported = "triton._C.libtriton" in sys.modules
    for result in report.get("results", []):
        results.append(result)
        path = result["path"]
        if not result.get("ok"):
            if not reused:
                warn(f"native plugin {path} refused ({result.get('check')}): {result.get('message')}; left out")
            continue
        if mechanism == "env":
            if libtriton_imported:
                warn(
                    f"native plugin {path} passed its checks but Triton was imported before tritonx start-up, so "
                    f"it cannot be loaded now; is the tritonx-native.pth file installed?"
                )
            elif _add_to_plugin_paths(path):
                added.append(path)
        elif mechanism == "extend_with":
            _pending.append((path, list(result.get("calls", []))))
    report = dict(report, spec=spec, triton=key, added=added)
    os.environ[STATE_ENV] = json.dumps(report, separators=(",", ":"))
    if _pending:
        module = sys.modules.get("triton._C.libtriton")
        if module is not None:
            apply_pending(module)
        else:
            sys.meta_path.insert(0, _AfterLibtritonImport())


def has_pending() -> bool:
    """Are accepted libraries still waiting for libtriton's run-time loading calls (3.9)?"""
    return bool(_pending)


def apply_pending(libtriton: Any) -> None:
    """Load the accepted libraries through libtriton's run-time calls (3.9); each path once."""
    while _pending:
        path, calls = _pending.pop(0)
        if path in applied:
            continue
        error = None
        for dotted in calls:
            try:
                target = libtriton
                for part in dotted.split("."):
                    target = getattr(target, part)
                target(path)
            except Exception as exc:
                error = f"{dotted}({path!r}) failed: {exc}"
                warn(f"native plugin {path}: {error}; left out")
                break
        applied[path] = error


class _LoaderAfter:
    """Wraps libtriton's loader to load the pending plugins right after the module is executed."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)
        try:
            apply_pending(module)
        except Exception as exc:  # pragma: no cover - apply_pending already catches per call
            warn(f"loading native plugins failed: {exc}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AfterLibtritonImport:
    """One-shot meta-path finder: on 3.9, ``import triton`` alone makes the native passes available."""

    target = "triton._C.libtriton"

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.target:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _LoaderAfter(spec.loader)
                return spec
        return None


try:
    run()
except Exception as _exc:  # never break interpreter start-up
    warn(f"{ENV} handling failed: {type(_exc).__name__}: {_exc}")
