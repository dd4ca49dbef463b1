"""NVIDIA-only TLX ops compiled for AMD: a compile error naming the op and its AMD spelling.

Registered for the ``hip`` backend (``tritonx.dsl`` target pattern), so the NVIDIA bodies (registered for ``cuda``
targets) never see an AMD kernel; the hint is AMD's way of writing the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import register_compiler_impl

#: NVIDIA-only op -> how to write it on AMD
AMD_SPELLING: dict[str, str | None] = {
    "async_dot": "on AMD use tl.dot(tlx.local_load(a_view), tlx.local_load(b_view), acc)",
    "async_dot_wait": "on AMD tl.dot is synchronous; drop the wait",
    "alloc_barriers": "AMD has no mbarriers; use the register-staged pipeline (tl.load + tlx.local_store)",
    "alloc_warp_barrier": None,
    "barrier_expect_bytes": "AMD has no mbarriers/TMA; use tl.load + tlx.local_store",
    "barrier_wait": "AMD has no mbarriers; use the register-staged pipeline",
    "barrier_arrive": "AMD has no mbarriers; use the register-staged pipeline",
    "async_descriptor_load": "AMD has no TMA; use tl.load + tlx.local_store",
    "async_descriptor_store": "AMD has no TMA; use tlx.local_load + tl.store",
    "async_descriptor_store_wait": None,
    "fence_async_shared": "AMD needs no async-proxy fence",
    "async_tasks": "warp specialization is Hopper-only; write a single-partition kernel",
    "async_task": "warp specialization is Hopper-only; write a single-partition kernel",
    "async_store": None,
    "make_tensor_descriptor": None,
    "async_descriptor_prefetch_tensor": None,
    "named_barrier_wait": None,
    "named_barrier_arrive": None,
    "fence": None,
    "cluster_barrier": None,
    "fence_mbarrier_init_cluster": None,
    "cluster_cta_rank": None,
    "cluster_size_1d": None,
    "thread_id": None,
    "clock64": None,
    "vote_ballot_sync": None,
}


def _nvidia_only(op: str, hint: str | None) -> Callable[..., Any]:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        raise UtlxCompileError(op, "is an NVIDIA-only op and cannot be compiled for AMD",
                               target=from_semantic(_semantic).name, hint=hint)

    body.__name__ = f"{op}_is_nvidia_only"
    return body


for _op, _hint in AMD_SPELLING.items():
    register_compiler_impl(_op, "hip")(_nvidia_only(_op, _hint))
del _op, _hint
