"""TLX ops that only Blackwell (sm_100) can run: a clear compile error instead of a missing body.

Why: tensor memory, ``tcgen05`` MMAs and commits, cluster launch control (CLC) and 2-CTA clusters have no
Hopper or AMD equivalent (remote shared memory has one on sm_90: ``..remote``; AMD and sm_80 refuse it here).
A TLX kernel that uses them and is compiled for sm_90 or an AMD GPU gets an error naming the op, the target and
what it needs, at the op's source line. Where utlx has a Blackwell body for an op (CLC: :mod:`.clc`; 2-CTA:
:mod:`.two_cta`), that body serves cuda:100 (the most specific registration wins) and these serve the other
targets; for the ops utlx does not compile on cuda:100 yet, the cuda:100 case says so.
"""

from __future__ import annotations

from typing import Any

from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.target import Target, from_semantic
from utlx.language._dispatch import register_compiler_impl

#: op -> the Blackwell feature it is built on (quoted in the error).
BLACKWELL_OPS: dict[str, str] = {
    "tcgen05_commit": "tcgen05 MMA completion tracking",
    "tmem_copy": "tensor memory (TMEM)",
    "async_dot_scaled": "tcgen05 block-scaled MMA",
    "async_remote_shmem_copy": "remote (2-CTA cluster) shared memory",
    "_alloc_clc_responses": "cluster launch control (CLC)",
    "_clc_issue": "cluster launch control (CLC)",
    "_clc_query": "cluster launch control (CLC)",
    "clc_create_context": "cluster launch control (CLC)",
    "clc_producer": "cluster launch control (CLC)",
    "clc_consumer": "cluster launch control (CLC)",
    "stoch_round": "the cvt.rs stochastic-rounding conversion",
}


def blackwell_error(op: str, feature: str, target: Target) -> UtlxCompileError:
    """The error for Blackwell-only ``op`` compiled for ``target``."""
    if target.is_cuda and target.capability >= 100:
        return UtlxCompileError(op, f"uses {feature}, which utlx does not compile on stock Triton yet",
                                target=target.name, hint="run it with Meta's triton-utlx, or use the Hopper spelling "
                                "(wgmma via tlx.async_dot, TMA, mbarriers)")
    return UtlxCompileError(op, f"needs Blackwell (sm_100): it uses {feature}, which this target does not have",
                            target=target.name, hint="compile for cuda:100, or write the Hopper form (async_dot "
                            "accumulating in registers, shared-memory buffers, one-CTA launches)")


def _make(op: str, feature: str) -> Any:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        raise blackwell_error(op, feature, from_semantic(_semantic))

    body.__name__ = op
    body.__doc__ = f"Blackwell-only ({feature}): raises a compile error naming the op and the target."
    return body


#: Cluster ops that sm_90 has too (``..remote``): elsewhere (AMD, sm_80) an error naming what they need.
CLUSTER_OPS = ("remote_view", "remote_shmem_store", "async_remote_shmem_store")


def _cluster_only(op: str) -> Any:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        target = from_semantic(_semantic)
        raise UtlxCompileError(op, "needs distributed shared memory (a thread-block cluster, sm_90 or newer), "
                               "which this target does not have", target=target.name)

    body.__name__ = op
    body.__doc__ = "Cluster-only (distributed shared memory): a compile error naming the op and the target."
    return body


for _op, _feature in BLACKWELL_OPS.items():
    register_compiler_impl(_op)(_make(_op, _feature))
for _op in CLUSTER_OPS:
    register_compiler_impl(_op)(_cluster_only(_op))
del _op, _feature
