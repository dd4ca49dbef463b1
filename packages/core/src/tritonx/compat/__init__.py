"""Every difference between the supported Triton versions (3.6 to 3.9), in one place.

The rest of tritonx asks this package questions ("does the hook get a no-argument cache call?",
"which compile is running?") instead of testing version numbers itself. Native-plugin loading
differences live in :mod:`tritonx.compat.native`.
"""

from __future__ import annotations

from typing import Any

# Changes to Triton itself (the stages-hook setting, the key wrappers) are seams, made in tritonx.seams.
from ..seams.core import get_stages_hook as get_stages_hook
from ..seams.core import install_compile_key as install_compile_key
from ..seams.core import install_memory_key as install_memory_key
from ..seams.core import set_stages_hook as set_stages_hook
from .cache import compile_frame as compile_frame
from .cache import frame_source as frame_source
from .cache import launch_key as launch_key
from .cache import private_cache as private_cache
from .cache import remote_cache_environment as remote_cache_environment
from .installed import HOOK_HAS_KEY_CALL as HOOK_HAS_KEY_CALL
from .installed import SUPPORTED as SUPPORTED
from .installed import TRITON_RELEASE as TRITON_RELEASE
from .installed import TRITON_VERSION as TRITON_VERSION
from .installed import TRITON_VERSION_STR as TRITON_VERSION_STR
from .redis_backend import remote_cache_stats as remote_cache_stats
from .redis_backend import reset_remote_cache as reset_remote_cache


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
# Compile sources
# --------------------------------------------------------------------------------------------------


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
# Cache keys (how Triton builds them, and where tritonx joins in: :mod:`.cache`)
# --------------------------------------------------------------------------------------------------


def rekey_kernel(fn: Any, extra: str) -> None:
    """Give one JIT function its own cache identity (for pipelines bound to that kernel only).

    ``JITFunction.cache_key`` is what the on-disk key uses for the kernel's source; we fold the bound
    pipelines' key into it (callers and tools that key by ``fn.cache_key`` see the binding) and drop the
    function's in-memory compiled kernels, which were built without them. The on-disk key does not
    depend on it: tritonx's compile key names the bound pipelines itself.
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


def _closing(text: str, opening: int) -> int:
    """Index of the bracket closing the one at ``opening`` (-1 if it never closes)."""
    depth = 0
    for i in range(opening, len(text)):
        depth += text[i] in "({"
        depth -= text[i] in ")}"
        if depth == 0:
            return i
    return -1


def parse_pipeline_names(pipeline: str) -> list[str]:
    """Top-level pass names of ``pm.get_pipeline_str()`` (``any(canonicalize{...},inline{...})``).

    Op-anchored nests (``func.func(cse)``) contribute the passes inside them.
    """
    text = pipeline.strip()
    for prefix in ("any(", "builtin.module("):
        if text.startswith(prefix) and _closing(text, len(prefix) - 1) == len(text) - 1:
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

