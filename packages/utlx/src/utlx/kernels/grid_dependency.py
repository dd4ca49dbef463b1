"""Programmatic dependent launch (PDL) for the shipped Hopper kernels: the next call's CTAs start early.

Why: in a plain loop of calls (``for ...: c = utlx.matmul(a, b)``) the GPU runs one kernel after the other,
and between two kernels of one stream it drains the first grid, then launches and ramps up the next (CTA
dispatch, shared-memory carve-out, barrier set-up). A 2048^3 GEMM or a skinny LLM GEMM needs only 28-45 us,
so that gap is a few percent of every call. With PDL the kernel is launched with CUDA's programmatic stream
serialization attribute (Triton's ``launch_pdl`` option); once every CTA of the running kernel has said
``griddepcontrol.launch_dependents``, the next kernel's CTAs are dispatched as SMs free up and wait in
``griddepcontrol.wait`` until the previous grid has completed and its memory is visible.

Correctness rests on one rule, kept by :func:`begin`: a kernel launched with PDL executes
``griddepcontrol.wait`` before it touches global memory, in every thread that may touch it (the call sits at
the top of the kernel, before any ``async_tasks`` split, so warp-specialized tasks start after it). The
previous kernel may be anything (a torch kernel writing A, an earlier call whose C buffer the caching
allocator hands out again), and nothing is read or written before it has completed. Kernels launched
without the attribute execute both instructions as no-ops. A kernel that spins on other CTAs (stream-K's
fix-up) is safe too: a dependent grid launches only after *every* CTA of the running one has triggered,
so it never takes an SM that one of those CTAs still needs.

Measured (H200, Triton 3.6, ``tools/bench/gemm.py``'s ``utlx.matmul, no PDL`` row, the same kernels side by
side): behind on 17 of 22 (shape, dtype) cells by up to 3.4%, ahead on 4 by up to 1.9%, geomean -0.7% (fp16)
and -1.2% (bf16), no gain at 2048^3 or on the skinny shapes; so it is opt-in (``UTLX_PDL=1``). The GPU
ordering tests (``tests/gpu/test_pdl_ordering.py``) run with it on.

The constexpr ``PDL`` of a kernel and Triton's ``launch_pdl`` option go together: :func:`launch_options`
gives both, and the launch helpers (:mod:`utlx.gemm_launch`, :mod:`utlx.attention`) take them from there.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def begin(PDL: tl.constexpr):
    """Let the next kernel of the stream launch, then wait for the previous one (no code when ``PDL`` is
    False, so kernels compiled without it are unchanged)."""
    if PDL:
        gdc_launch_dependents()
        gdc_wait()


def enabled() -> bool:
    """Whether the shipped kernels launch with PDL here: ``UTLX_PDL`` (default off), and never under
    ``TRITON_INTERPRET=1`` (the interpreter runs no inline PTX)."""
    from utlx import compat
    from utlx.settings import settings

    return settings.pdl and not compat.interpreting()


def launch_options(jit_fn: Any, pdl: bool | None = None) -> tuple[dict[str, bool], dict[str, bool]]:
    """``(constexprs, options)`` that switch PDL on for ``jit_fn``: ``({"PDL": True}, {"launch_pdl": True})``
    when the kernel declares a ``PDL`` parameter and PDL is ``enabled()`` (or ``pdl`` says so), else two
    empty dicts (the kernel's default, ``PDL=False``, and Triton's, no attribute)."""
    on = enabled() if pdl is None else pdl
    if not on or "PDL" not in getattr(jit_fn, "arg_names", ()):
        return {}, {}
    return {"PDL": True}, {"launch_pdl": True}
