"""NVIDIA targets that a TLX op has no body for: a compile error naming the op, the target and what to write.

Registered for the whole ``cuda`` backend, so an op registered for some NVIDIA architectures (``cuda:90``, ...)
still serves those, and every other NVIDIA target (``cuda:80``) gets this error at the op's source line. AMD-only
ops compiled for NVIDIA get theirs here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import register_compiler_impl

#: op -> (what it needs, hint) for NVIDIA ops served on some architectures only
NEEDS_ARCH: dict[str, tuple[str, str | None]] = {
    "async_dot": ("Hopper (sm_90: wgmma) or Blackwell (sm_100: tcgen05)", "compile for cuda:90 or cuda:100"),
    "async_dot_wait": ("Hopper (sm_90: wgmma)", "compile for cuda:90"),
    "async_descriptor_load": ("Hopper or Blackwell (sm_90+: TMA)", "compile for cuda:90 or cuda:100"),
    "async_descriptor_store": ("Hopper or Blackwell (sm_90+: TMA)", "compile for cuda:90 or cuda:100"),
    "async_descriptor_store_wait": ("Hopper or Blackwell (sm_90+: TMA)", "compile for cuda:90 or cuda:100"),
    "async_tasks": ("Hopper or Blackwell (sm_90+: warp specialization)", "compile for cuda:90 or cuda:100"),
    "async_task": ("Hopper or Blackwell (sm_90+: warp specialization)", "compile for cuda:90 or cuda:100"),
}

#: AMD-only ops -> the NVIDIA spelling (quoted in the error)
AMD_ONLY: dict[str, str | None] = {
    "buffer_load": "use tl.load(ptr + offsets, mask=..., other=...)",
    "buffer_store": "use tl.store(ptr + offsets, value, mask=...)",
    "buffer_atomic_add": "use tl.atomic_add(ptr + offsets, value, mask=...)",
    "buffer_load_to_local": "use tlx.async_load(ptr + offsets, dest, mask=...)",
    "amd_sched_barrier": None,
    "warp_pipeline_stage": "warp pipelining is an AMD schedule; drop the with-statement on NVIDIA",
}


def _needs(op: str, needs: str, hint: str | None) -> Callable[..., Any]:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        target = from_semantic(_semantic)
        raise UtlxCompileError(op, f"needs {needs}", target=target.name, hint=hint)

    body.__name__ = f"{op}_needs_newer_nvidia"
    return body


def _amd_only(op: str, hint: str | None) -> Callable[..., Any]:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        raise UtlxCompileError(op, "is an AMD-only op", target=from_semantic(_semantic).name, hint=hint)

    body.__name__ = f"{op}_is_amd_only"
    return body


for _op, (_needs_what, _hint) in NEEDS_ARCH.items():
    register_compiler_impl(_op, "cuda")(_needs(_op, _needs_what, _hint))
for _op, _hint in AMD_ONLY.items():
    register_compiler_impl(_op, "cuda")(_amd_only(_op, _hint))
del _op, _hint, _needs_what
