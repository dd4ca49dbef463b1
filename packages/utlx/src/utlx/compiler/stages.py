"""The utlx passes that run inside Triton's ``make_ttgir`` stage, and the key of what they emit.

The ``utlx`` language of ``tritonx.dsl`` (:mod:`utlx.language._op`) lowers its placeholders right after
``convert-triton-to-tritongpu`` with :func:`lower_language`; :func:`restore_waits_pass` runs after the software
pipelines (NVIDIA's and AMD's), and the AMD passes of :mod:`utlx.compiler.amd_passes` where this module registers
them on the language. The language's pipeline is the tritonx plugin's (:mod:`utlx.plugin`). tritonx owns
Triton's one stages hook (and chains any other), so utlx never touches it. utlx needs tritonx-core (a declared
dependency); there is no mode without it. Every pass leaves kernels without TLX ops untouched: the lowering
returns at once when no placeholder exists.
"""

from __future__ import annotations

from typing import Any

from utlx.language._op import LANGUAGE

from . import cluster_ptx
from .amd_passes import canonicalize_pointers_pass, dot_operand_conversions_pass, end_of_ttgir_pass
from .lowering import lower_module, restore_async_waits


def restore_waits_pass(module: Any, ctx: Any = None) -> None:
    """tritonx Python pass (after the software pipeliner): restore TLX cp.async wait counts."""
    restore_async_waits(module)


def lowering_pass(module: Any, ctx: Any = None) -> None:
    """tritonx Python pass: lower utlx placeholders of ``module`` (a no-op for plain Triton kernels)."""
    arch = None
    options = getattr(ctx, "options", None)
    if options is not None:
        arch = getattr(options, "arch", None)
    lower_module(module, arch)


@LANGUAGE.lowering
def lower_language(module: Any, found: list[Any], ctx: Any) -> None:
    """The ``utlx`` language's module lowering (``tritonx.dsl``): every TLX op of ``module`` at once, right
    after ``convert-triton-to-tritongpu`` (the ops share buffers and barriers, so they lower together)."""
    lowering_pass(module, ctx.pass_context)


# After the software pipelines (NVIDIA's and AMD's): put back the async-copy wait counts they reset. Gluon kernels
# skip it.
LANGUAGE.insert_after("tritongpu-pipeline", restore_waits_pass, stage="ttgir", required=False)
LANGUAGE.insert_after("tritonamdgpu-pipeline", restore_waits_pass, stage="ttgir", required=False)
# AMD: the stock pointer canonicalisation, skipped for modules holding buffer ops a TLX kernel built itself.
LANGUAGE.replace("tritonamdgpu-canonicalize-pointers", canonicalize_pointers_pass, stage="ttgir", required=False)
# AMD TLX kernels: the LDS round trips reduce-data-duplication made for MFMA operands become layout conversions.
LANGUAGE.insert_after("tritongpu-reduce-data-duplication", dot_operand_conversions_pass, stage="ttgir",
                      required=False)
# After the TTGIR stage's last symbol-dce: AMD's warp-pipeline pass and the dump_layout/assert_same_layout reports.
LANGUAGE.insert_after("symbol-dce", end_of_ttgir_pass, stage="ttgir", occurrence=-1, required=False)
# Multicast TMA loads and arrivals on a peer CTA's barrier: the stock PTX instructions the TLX ops marked
# become their cluster forms (stock Triton cannot emit them; see cluster_ptx). Unmarked PTX is untouched.
LANGUAGE.transform_stage("ptx", cluster_ptx.rewrite, required=False)  # AMD has no ptx stage
