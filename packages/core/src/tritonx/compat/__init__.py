"""Every difference between the supported Triton versions (3.6 to 3.9), in one place.

The rest of tritonx asks this package questions ("does the hook get a no-argument cache call?",
"which compile is running?") instead of testing version numbers itself. Native-plugin loading
differences live in :mod:`tritonx.compat.native`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import triton

SUPPORTED = ((3, 6), (3, 9))  # inclusive range of (major, minor)


def _parse_version(text: str) -> tuple[int, int, int]:
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


TRITON_VERSION_STR: str = triton.__version__
TRITON_VERSION: tuple[int, int, int] = _parse_version(TRITON_VERSION_STR)

#: Triton >= 3.7 calls the stages hook with no arguments to get ``(key, hash)``: once per compile for
#: the on-disk key and once per launch for the in-memory key. 3.6 never does.
HOOK_HAS_KEY_CALL: bool = TRITON_VERSION[:2] >= (3, 7)


def check_supported() -> None:
    """Raise a clear error when the installed Triton is outside the supported range."""
    lo, hi = SUPPORTED
    if not (lo <= TRITON_VERSION[:2] <= hi):
        raise ImportError(
            f"tritonx supports Triton {lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}; installed is {TRITON_VERSION_STR}"
        )


def libtriton() -> Any:
    """The ``triton._C.libtriton`` extension module (imported lazily)."""
    from triton._C import libtriton as lib

    return lib


# --------------------------------------------------------------------------------------------------
# The stages hook slot
# --------------------------------------------------------------------------------------------------


def get_stages_hook() -> Callable | None:
    return triton.knobs.runtime.add_stages_inspection_hook


def set_stages_hook(hook: Callable | None) -> None:
    triton.knobs.runtime.add_stages_inspection_hook = hook


# --------------------------------------------------------------------------------------------------
# Which kernel is being compiled (for per-kernel pipelines)
# --------------------------------------------------------------------------------------------------


def current_compile_source(max_depth: int = 12) -> Any | None:
    """The ``ASTSource``/``IRSource`` that ``triton.compile`` is compiling, seen from inside the hook.

    The stages hook receives no kernel; every supported version calls it from
    ``backend.add_stages`` inside ``triton.compiler.compiler.compile``, whose local ``src`` is the
    source. Walking a dozen frames at compile time costs microseconds; it never runs per launch.
    """
    frame = sys._getframe(1)
    compile_code = _compile_code()
    for _ in range(max_depth):
        if frame is None:
            return None
        if frame.f_code is compile_code:
            return frame.f_locals.get("src")
        frame = frame.f_back
    return None


@functools.cache
def _compile_code() -> Any:
    import triton.compiler.compiler as cc

    return cc.compile.__code__


def source_class(kernel: Any) -> Any:
    """The compile-source class for a kernel: Gluon kernels need theirs (it sets warps on the module)."""
    is_gluon = getattr(kernel, "is_gluon", None)
    if callable(is_gluon) and is_gluon():
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource
    from triton.compiler import ASTSource

    return ASTSource


def source_kernel(src: Any) -> Any | None:
    """The JIT function behind a compile source, or None for IR sources."""
    return getattr(src, "fn", None)


# --------------------------------------------------------------------------------------------------
# Cache keys
# --------------------------------------------------------------------------------------------------


def install_cache_keying(active_key: Callable[[], str]) -> None:
    """Make Triton 3.6's caches see tritonx's active-pipeline key (3.7+ ask the hook instead).

    3.6 has no no-argument hook call, so a changed pipeline would hit a stale cache entry. We wrap
    the two functions that build its keys: ``get_cache_key`` (on-disk, looked up as a global of
    ``triton.compiler.compiler``) and ``compute_cache_key`` (in-memory, a global of
    ``triton.runtime.jit``). Both wrappers append a string that is empty while nothing is active,
    so keys of stock compiles are unchanged.
    """
    if HOOK_HAS_KEY_CALL:
        return
    import triton.compiler.compiler as cc
    import triton.runtime.jit as jit

    if getattr(cc.get_cache_key, "__tritonx__", False):
        return
    orig_disk = cc.get_cache_key
    orig_mem = jit.compute_cache_key

    def get_cache_key(*args: Any, **kwargs: Any) -> str:
        return orig_disk(*args, **kwargs) + active_key()

    def compute_cache_key(*args: Any, **kwargs: Any) -> str:
        return orig_mem(*args, **kwargs) + active_key()

    get_cache_key.__tritonx__ = True  # type: ignore[attr-defined]
    compute_cache_key.__tritonx__ = True  # type: ignore[attr-defined]
    cc.get_cache_key = get_cache_key
    jit.compute_cache_key = compute_cache_key


def rekey_kernel(fn: Any, extra: str) -> None:
    """Give one JIT function its own cache identity (for pipelines bound to that kernel only).

    ``JITFunction.cache_key`` is what the on-disk key uses for the kernel's source; we fold the bound
    pipelines' key into it and drop the function's in-memory compiled kernels, which were built
    without them.
    """
    import hashlib

    base = getattr(fn, "__tritonx_base_key__", None)
    if base is None:
        base = fn.cache_key
        fn.__tritonx_base_key__ = base
    fn.hash = base if not extra else hashlib.sha256(f"{base}|tritonx:{extra}".encode()).hexdigest()
    caches = getattr(fn, "device_caches", None)
    if caches is not None:
        caches.clear()


# --------------------------------------------------------------------------------------------------
# Pass managers
# --------------------------------------------------------------------------------------------------


def parse_pipeline_names(pipeline: str) -> list[str]:
    """Top-level pass names of ``pm.get_pipeline_str()`` (``any(canonicalize{...},inline{...})``).

    Op-anchored nests (``func.func(cse)``) contribute the passes inside them.
    """
    text = pipeline.strip()
    for prefix in ("any(", "builtin.module("):
        if text.startswith(prefix) and text.endswith(")"):
            text = text[len(prefix) : -1]
            break
    names: list[str] = []
    depth = 0
    token = ""
    for ch in text + ",":
        if ch in "{(":
            if depth == 0 and ch == "(" and "." in token:
                # anchored nest: recurse into it
                pass
            depth += 1
            token += ch
        elif ch in "})":
            depth -= 1
            token += ch
        elif ch == "," and depth == 0:
            token = token.strip()
            if token:
                head = token.split("{", 1)[0].split("(", 1)[0].strip()
                if "(" in token and "." in head:
                    inner = token[token.index("(") + 1 : token.rindex(")")]
                    names.extend(parse_pipeline_names(inner))
                else:
                    names.append(head)
            token = ""
        else:
            token += ch
    return names


def interpreter_active() -> bool:
    """True when kernels run under ``TRITON_INTERPRET=1``."""
    try:
        return bool(triton.knobs.runtime.interpret)
    except AttributeError:  # pragma: no cover - older layouts
        import os

        return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
