"""Helpers for warp-specialized pipelines, at the module path TLX kernels import them from
(``from triton.language.extra.tlx.warp_spec import get_bufidx_phase``)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def get_bufidx_phase(accum_cnt, NUM_BUFFERS: tl.constexpr):
    """(slot, mbarrier phase) of the ``accum_cnt``-th pass through a ring of ``NUM_BUFFERS`` buffers: the
    slot cycles every pass and the phase flips each time the ring wraps around."""
    return accum_cnt % NUM_BUFFERS, (accum_cnt // NUM_BUFFERS) & 1


__all__ = ["get_bufidx_phase"]
