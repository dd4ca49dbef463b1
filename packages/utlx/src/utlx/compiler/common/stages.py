"""The utlx passes every vendor runs inside Triton's ``make_ttgir`` stage: the lowering and the wait-count restore.

The ``utlx`` language of ``tritonx.dsl`` (:mod:`utlx.language._op`) lowers its placeholders right after
``convert-triton-to-tritongpu`` with :func:`lower_language`; :func:`restore_waits_pass` runs after each vendor's
software pipeliner (registered where the vendor's passes are: ``utlx.compiler.nvidia.stages``,
``utlx.compiler.amd.stages``). The language's pipeline is the tritonx plugin's (:mod:`utlx.plugin`). tritonx owns
Triton's one stages hook (and chains any other), so utlx never touches it. Every pass leaves kernels without TLX
ops untouched: the lowering returns at once when no placeholder exists.
"""

from __future__ import annotations

from typing import Any

from utlx.language._op import LANGUAGE

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
    lower_module(module, arch, getattr(ctx, "target", None))


@LANGUAGE.lowering
def lower_language(module: Any, found: list[Any], ctx: Any) -> None:
    """The ``utlx`` language's module lowering (``tritonx.dsl``): every TLX op of ``module`` at once, right
    after ``convert-triton-to-tritongpu`` (the ops share buffers and barriers, so they lower together)."""
    lowering_pass(module, ctx.pass_context)
