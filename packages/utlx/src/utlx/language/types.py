"""Enumerations and constants that kernels pass to utlx ops (same names as TLX)."""

from __future__ import annotations

import enum


class storage_kind(enum.Enum):
    """Where ``local_alloc`` places buffers: shared memory, Blackwell tensor memory, or cluster smem."""

    smem = "smem"
    tmem = "tmem"
    smemCluster = "smemCluster"
