"""mbarrier ops (TLX names): allocation, expected-bytes arrive, arrive, phase wait.

An mbarrier completes a phase when its pending arrivals reach zero and every expected byte has landed;
``barrier_wait(bar, phase)`` returns once the phase with parity ``phase`` has completed.
"""

from __future__ import annotations

from utlx.language._op import op


@op
def alloc_barriers(num_barriers, arrive_count=1, _semantic=None):
    """Allocate ``num_barriers`` mbarriers, each needing ``arrive_count`` arrivals per phase."""


@op
def alloc_warp_barrier(num_barriers, num_warps=1, num_arrivals=1, _semantic=None):
    """Allocate mbarriers on which every thread of ``num_warps`` warps arrives (``num_arrivals`` times)."""


@op
def barrier_expect_bytes(bar, size, pred=None, _semantic=None):
    """Arrive on ``bar`` and announce ``size`` bytes that async copies (TMA) will deliver to this phase."""


@op
def barrier_wait(bar, phase, pred=None, _semantic=None):
    """Block until the phase of ``bar`` with parity ``phase`` (0 or 1) has completed."""


@op
def barrier_arrive(bar, arrive_count=1, remote_cta_rank=None, pred=None, _semantic=None):
    """Arrive ``arrive_count`` times on ``bar`` (optionally on the same barrier of another cluster CTA); with
    ``pred``, only when it is true."""


@op
def named_barrier_wait(bar, arrive_count, _semantic=None):
    """Hardware named barrier (``bar.sync``): wait until ``arrive_count`` threads reached barrier ``bar``."""


@op
def named_barrier_arrive(bar, arrive_count, _semantic=None):
    """Hardware named barrier (``bar.arrive``): signal barrier ``bar`` without waiting."""


@op
def cluster_barrier(_semantic=None):
    """Synchronize every CTA of the cluster."""


@op
def fence_mbarrier_init_cluster(_semantic=None):
    """Make mbarrier initialisations visible to the other CTAs of the cluster."""


@op
def amd_sched_barrier(mask=0, _semantic=None):
    """AMD scheduling fence: machine instructions of the classes not in ``mask`` do not cross this point
    (``mask=0``: none do). A compiler hint, not a synchronisation."""


__all__ = [
    "alloc_barriers",
    "alloc_warp_barrier",
    "amd_sched_barrier",
    "barrier_arrive",
    "barrier_expect_bytes",
    "barrier_wait",
    "cluster_barrier",
    "fence_mbarrier_init_cluster",
    "named_barrier_arrive",
    "named_barrier_wait",
]
