"""Blackwell cluster launch control (CLC, TLX's ``dynamic_launch``): trace-time bodies and lowerings, for sm_100.

Why: a persistent kernel launched with one program per tile can *steal* the tiles of programs that have not
started yet. ``clusterlaunchcontrol.try_cancel`` asks the hardware to cancel a not-yet-launched cluster; the
16-byte response, written asynchronously to shared memory and completed on an mbarrier (16 transaction bytes),
says whether it succeeded and, if so, the first CTA id of the cancelled cluster (``query_cancel``). The work
that program would have done is then done by the caller. TLX wraps this in a pipeline: ``clc_create_context``
(``num_stages`` responses, an ``empty`` barrier per stage that the ``num_consumers`` readers arrive on and a
``full`` one the response completes), ``clc_producer`` (wait for the stage to be free, expect 16 bytes, issue)
and ``clc_consumer`` (wait for the response, decode the tile id, release the stage).

How: the primitives are Gluon's ``clc.try_cancel`` / ``clc.load_result`` (``ttng.clc_try_cancel``,
``ttng.clc_load_result``, ``clc_is_canceled``, ``clc_get_program_id``; Triton 3.8 and newer, ``compat.HAS_CLC``),
and the pipeline ops are composed, as in TLX, from the ordinary TLX ops (``alloc_barriers``, ``local_view``,
``barrier_wait``/``expect_bytes``/``arrive``, ``cluster_cta_rank``, ``fence``), so they go through whatever those
bodies do for the target (e.g. cluster forms). The consumer follows Meta's newest ``dynamic_launch``: it fences
the generic-proxy read of the response before the stage is handed back to the next (async-proxy) ``try_cancel``,
and it does not arrive on the stage once no tile is left (the producer has stopped by then).
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx import compat
from utlx.compiler.common import layouts, placeholders, values
from utlx.compiler.common.args import _c, _expect, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.placeholders import Placeholder
from utlx.compiler.common.target import from_semantic
from utlx.language import types as tlx_types
from utlx.language._dispatch import dispatch, register_compiler_impl
from utlx.language._op import LANGUAGE

from ..targets import BLACKWELL
from . import clc_ptx, gluon

#: Bytes of one CLC response (``.b128``): what its mbarrier is told to expect.
RESPONSE_BYTES = 16

# Requests issued by cluster CTA 0 and multicast to the cluster, as in TLX (stock Triton emits the one-CTA form).
LANGUAGE.transform_stage("ptx", clc_ptx.rewrite, required=False)  # AMD has no ptx stage

# The compile path's CLC values count as TLX's ``clc_response`` (``isinstance(r, tlx.clc_response)``).
tlx_types.register_value_class(tlx_types.clc_response, values.ClcResponses)
tlx_types.register_value_class(tlx_types.clc_response, values.ClcResponseView)


def require_clc(op: str, _semantic: Any) -> None:
    """A compile error naming ``op`` when this Triton has no CLC ops to build on (before 3.8)."""
    if not compat.HAS_CLC:
        raise UtlxCompileError(op, f"utlx compiles cluster launch control with Triton 3.8 or newer (installed: "
                               f"{compat.TRITON_VERSION_STR}; Gluon's clc.try_cancel/load_result, which utlx builds "
                               f"on, first appear in 3.8)", target=from_semantic(_semantic).name,
                               hint="install triton>=3.8 for CLC kernels, or schedule tiles statically "
                               "(a persistent loop over tl.program_id / tl.num_programs)")


def _response(op: str, value: Any, _semantic: Any) -> values.ClcResponseView:
    """One CLC response buffer: a ``local_view`` of ``_alloc_clc_responses`` (or the only one of a single)."""
    value = _c(value)
    if isinstance(value, values.ClcResponses) and value.type.num == 1:
        value = dispatch("local_view", _semantic, value, 0)
    return _expect(op, value, values.ClcResponseView, "clc_response_addr")


def _context(op: str, context: Any) -> tlx_types.CLCPipelineContext:
    ctx = _c(context)
    if not isinstance(ctx, tlx_types.CLCPipelineContext):
        raise UtlxCompileError(op, f"'context' must be the result of tlx.clc_create_context, got {_show(ctx)}")
    return ctx


def _flag(op: str, name: str, value: Any) -> bool:
    flag = _c(value)
    if not isinstance(flag, bool):
        raise UtlxCompileError(op, f"'{name}' must be a compile-time bool, got {_show(flag)}")
    return flag


@register_compiler_impl("_alloc_clc_responses", *BLACKWELL)
def _alloc_clc_responses(_semantic: Any, num_responses: Any) -> values.ClcResponses:
    """``num_responses`` 16-byte response buffers in shared memory (two int64 words each)."""
    op = "_alloc_clc_responses"
    require_clc(op, _semantic)
    n = _c(num_responses)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise UtlxCompileError(op, f"'num_responses' must be a compile-time int >= 1, got {_show(n)}")
    h = placeholders.emit(_semantic, "alloc_clc_responses", {"num": n})
    return values.make("clc_responses", h, shape=(2,), dtype=tl.int64, num=n)


@register_compiler_impl("_clc_issue", *BLACKWELL)
def _clc_issue(_semantic: Any, clc_response_addr: Any, barrier: Any) -> None:
    """``clusterlaunchcontrol.try_cancel`` into ``clc_response_addr``, completing 16 bytes on ``barrier``."""
    op = "_clc_issue"
    require_clc(op, _semantic)
    response = _response(op, clc_response_addr, _semantic)
    bar = _expect(op, _c(barrier), values.BarrierView, "barrier")
    # the markers make the request TLX's cluster form in the PTX (from cluster CTA 0, multicast: clc_ptx)
    uid = clc_ptx.next_id()
    _mark(_semantic, "begin", uid)
    placeholders.emit(_semantic, "clc_issue", {}, handles=[response.handle, bar.handle])
    _mark(_semantic, "end", uid)


def _mark(_semantic: Any, kind: str, uid: int) -> None:
    b = _semantic.builder
    b.create_inline_asm(clc_ptx.marker(kind, uid), "=r", [], [b.get_int32_ty()], False, 1)


@register_compiler_impl("_clc_query", *BLACKWELL)
def _clc_query(_semantic: Any, clc_response_addr: Any) -> tl.tensor:
    """The x program id of the cluster a completed response cancelled, offset by this CTA's rank in its cluster
    (CTA r of the thief takes tile id + r, as in TLX), or -1 when the request failed (no program left)."""
    op = "_clc_query"
    require_clc(op, _semantic)
    response = _response(op, clc_response_addr, _semantic)
    tile = tl.tensor(placeholders.emit(_semantic, "clc_query", {"dim": 0}, handles=[response.handle],
                                       result=tl.int32), tl.int32)
    rank = dispatch("cluster_cta_rank", _semantic)
    none = _semantic.to_tensor(-1)
    return _semantic.where(_semantic.equal(tile, none), tile, _semantic.add(tile, rank, True))


@register_compiler_impl("clc_create_context", *BLACKWELL)
def clc_create_context(_semantic: Any, num_consumers: Any, num_stages: Any = 1) -> tlx_types.CLCPipelineContext:
    """The ``empty``/``full`` barriers and responses of a ``num_stages``-deep CLC pipeline."""
    op = "clc_create_context"
    require_clc(op, _semantic)
    stages, consumers = _c(num_stages), _c(num_consumers)
    for name, v in (("num_stages", stages), ("num_consumers", consumers)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise UtlxCompileError(op, f"'{name}' must be a compile-time int >= 1, got {_show(v)}")
    return tlx_types.CLCPipelineContext(
        clc_mbars_empty=dispatch("alloc_barriers", _semantic, num_barriers=stages, arrive_count=consumers),
        clc_mbars_full=dispatch("alloc_barriers", _semantic, num_barriers=stages),
        clc_responses=dispatch("_alloc_clc_responses", _semantic, num_responses=stages),
    )


def _stage(_semantic: Any, ctx: tlx_types.CLCPipelineContext, k: Any) -> tuple[Any, Any, Any]:
    """(empty barrier, full barrier, response) of stage ``k``."""
    return (dispatch("local_view", _semantic, ctx._clc_mbars_empty, k),
            dispatch("local_view", _semantic, ctx._clc_mbars_full, k),
            dispatch("local_view", _semantic, ctx._clc_responses, k))


@register_compiler_impl("clc_producer", *BLACKWELL)
def clc_producer(_semantic: Any, context: Any, p_producer: Any = None, multi_ctas: Any = False, k: Any = 0) -> None:
    """Wait for stage ``k`` to be free (phase ``p_producer``), expect its 16 bytes and issue the request.

    With ``multi_ctas`` only cluster CTA 0 waits (the other CTAs arrive on CTA 0's barrier: arrive remote,
    wait local); every CTA expects the bytes on its own ``full`` barrier.
    """
    op = "clc_producer"
    require_clc(op, _semantic)
    ctx = _context(op, context)
    if p_producer is None:
        raise UtlxCompileError(op, "'p_producer' (the phase of the stage's empty barrier to wait for) is required")
    empty, full, response = _stage(_semantic, ctx, k)
    pred = None
    if _flag(op, "multi_ctas", multi_ctas):
        pred = _semantic.equal(dispatch("cluster_cta_rank", _semantic), _semantic.to_tensor(0))
    dispatch("barrier_wait", _semantic, empty, p_producer, pred)
    dispatch("barrier_expect_bytes", _semantic, full, tl.constexpr(RESPONSE_BYTES))
    dispatch("_clc_issue", _semantic, response, full)


@register_compiler_impl("clc_consumer", *BLACKWELL)
def clc_consumer(_semantic: Any, context: Any, p_consumer: Any = None, multi_ctas: Any = False, k: Any = 0) -> Any:
    """Wait for the response of stage ``k`` (phase ``p_consumer``), return its tile id (-1: none left) and hand
    the stage back (to cluster CTA 0's barrier with ``multi_ctas``)."""
    op = "clc_consumer"
    require_clc(op, _semantic)
    ctx = _context(op, context)
    if p_consumer is None:
        raise UtlxCompileError(op, "'p_consumer' (the phase of the stage's full barrier to wait for) is required")
    multi = _flag(op, "multi_ctas", multi_ctas)
    empty, full, response = _stage(_semantic, ctx, k)
    dispatch("barrier_wait", _semantic, full, p_consumer)
    tile = dispatch("_clc_query", _semantic, response)
    # the response was read through the generic proxy; the next try_cancel writes it through the async proxy
    dispatch("fence", _semantic, tl.constexpr("async_shared"))
    has_tile = _semantic.greater_equal(tile, _semantic.to_tensor(0))
    dispatch("barrier_arrive", _semantic, empty, tl.constexpr(1), 0 if multi else None, pred=has_tile)
    return tile


# ---------------------------------------------------------------- lowerings


def _lower_alloc(low: Lowering, ph: Placeholder) -> None:
    """``[num, 2] x i64`` in shared memory: each response is 16 bytes, 16-byte aligned (Gluon's own shape)."""
    from triton.experimental.gluon import language as ttgl

    gb = low.builder
    layout = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    full = [int(ph.attrs["num"]), 2]
    v = compat.create_local_alloc(gb, layouts.memdesc_type(tl.int64, full, layout, full).to_ir(gb))
    low.real[ph.result.id()] = v
    low.facts[ph.result.id()] = {"dtype": tl.int64, "shape": [2], "layout": layout, "alloc": full,
                                 "kind": "clc_responses"}


def _clc() -> Any:
    return compat.blackwell().clc


def _lower_issue(low: Lowering, ph: Placeholder) -> None:
    response = gluon.Handle(low.handle(ph, 0, "response buffer"))
    bar = gluon.Handle(low.handle(ph, 1, "barrier"))
    _clc().try_cancel(response, bar, _semantic=gluon.semantic(low))


def _lower_query(low: Lowering, ph: Placeholder) -> None:
    sem = gluon.semantic(low)
    result = _clc().load_result(gluon.Handle(low.handle(ph, 0, "response buffer")), _semantic=sem)
    canceled = result.is_canceled(_semantic=sem)
    pid = result.program_id(int(ph.attrs["dim"]), _semantic=sem)
    gb = low.builder
    tile = gb.create_select(canceled.handle, pid.handle, gb.get_int32(-1))
    ph.result.replace_all_uses_with(tile)


register_lowering("alloc_clc_responses")(_lower_alloc)
register_lowering("clc_issue")(_lower_issue)
register_lowering("clc_query")(_lower_query)
