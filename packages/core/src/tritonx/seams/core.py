"""tritonx-core's own seams of Triton, and the calls that switch them on.

Core needs four changes to stock Triton and one public setting (the DSL's launch counting, the fifth
change, is declared beside its wrapper in :mod:`tritonx.dsl.interpret`, a layer above this one):

* ``tritonx.stages-hook``: Triton's one ``knobs.runtime.add_stages_inspection_hook`` setting (a slot, not a
  wrapper): where tritonx's pipelines edit each compile's stages.
* ``tritonx.compile-key``: ``get_cache_key`` of ``triton.compiler.compiler``, so each on-disk key names the
  pipelines the compile uses (every version).
* ``tritonx.private-cache``: ``get_cache_manager`` of ``triton.compiler.compiler``, so a compile inside
  :func:`tritonx.compat.private_cache` (``tritonx.capture``) gets a scratch cache of its own thread instead of
  a process-wide ``always_compile`` (every version; installed on first use).
* ``tritonx.memory-key``: ``compute_cache_key`` of ``triton.runtime.jit`` (3.6 only: 3.7+ take the in-memory
  key's part from the stages hook's no-argument call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..compat import cache as _cache
from .model import Seam
from .patching import install, read_slot, write_slot


def _knobs_runtime() -> tuple[Any, str]:
    import triton

    return triton.knobs.runtime, "add_stages_inspection_hook"


def _compiler_module() -> tuple[Any, str]:
    import triton.compiler.compiler as cc

    return cc, "get_cache_key"


def _cache_manager_of_compiler() -> tuple[Any, str]:
    import triton.compiler.compiler as cc

    return cc, "get_cache_manager"


def _jit_module() -> tuple[Any, str]:
    import triton.runtime.jit as jit

    return jit, "compute_cache_key"


STAGES_HOOK = Seam(
    name="tritonx.stages-hook", slot=True, where=_knobs_runtime,
    reason="tritonx's pipelines edit each compile's stages from Triton's one stages-hook setting (a foreign "
           "hook found there is chained)")
COMPILE_KEY = Seam(
    name="tritonx.compile-key", where=_compiler_module, make=_cache.compile_key_wrapper, reversible=False,
    reason="each on-disk compile key names the pipelines that compile uses (Triton's key cannot see them)")
PRIVATE_CACHE = Seam(
    name="tritonx.private-cache", where=_cache_manager_of_compiler, make=_cache.private_manager_wrapper,
    reason="a capture's compile runs its stages in a scratch cache of its own thread, with no process-wide knob "
           "(always_compile is one flag for every thread)")
MEMORY_KEY = Seam(
    name="tritonx.memory-key", where=_jit_module, make=_cache.memory_key_wrapper, versions=((3, 6), (3, 6)),
    reversible=False,
    reason="Triton 3.6's in-memory launch key names the active pipelines (3.7+ ask the stages hook for it)")


def get_stages_hook() -> Callable | None:
    """What Triton's stages-hook setting holds now."""
    return read_slot(STAGES_HOOK)


def set_stages_hook(hook: Callable | None) -> None:
    """Put ``hook`` in Triton's stages-hook setting (None empties it)."""
    write_slot(STAGES_HOOK, hook)


def install_compile_key(provider: Callable[[Any], str]) -> None:
    """Append ``provider(src)`` to every on-disk compile key (``''`` leaves stock keys unchanged)."""
    _cache.set_provider("disk", provider)
    install(COMPILE_KEY)


def install_memory_key(provider: Callable[[], str]) -> None:
    """Triton 3.6 only: append ``provider()`` to the JIT's in-memory key (3.7+ ask the hook instead)."""
    _cache.set_provider("memory", provider)
    install(MEMORY_KEY)


def install_private_cache() -> None:
    """Let :func:`tritonx.compat.private_cache` give the compiles of a thread a scratch cache."""
    install(PRIVATE_CACHE)
