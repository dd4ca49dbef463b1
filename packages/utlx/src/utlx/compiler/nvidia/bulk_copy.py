"""TLX's ``async_load(src, buf, bulk=True, barrier=bar)``: one non-tensor bulk copy global -> shared (sm_90+).

What it compiles to: ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size,
[bar]``, issued by one thread; the copied bytes complete on ``bar`` (which expects them through
``barrier_expect_bytes``), so a consumer waits on the barrier, not on a cp.async group.

How, on stock Triton (3.6-3.9 have no op for it; ``ttg.async_copy_global_to_local`` is per-thread cp.async): the
buffer's and the barrier's shared addresses are probed as for remote stores (:func:`.remote.smem_address`), and
the copy is a stock scalar ``tl.store`` between :mod:`.cluster_marks` markers whose begin marker holds the
barrier's address. A scalar store is lowered to one ``st.global.b64`` issued by one thread (Triton masks the
threads that hold a replica, also inside a warp-specialized task), of the value ``size << 32 | dst`` through the
source pointer; the PTX rewrite (:mod:`.cluster_ptx`) turns that store into the bulk copy, unpacking the value
into the destination address and the byte count. Bytes are copied as they are, so the buffer must be 1-D and laid
out unswizzled (checked at lowering, as for remote stores).
"""

from __future__ import annotations

import re
from typing import Any

import triton.language as tl

from utlx.compiler.common import mem_ops, placeholders, values
from utlx.compiler.common.args import _c, _expect, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.language._dispatch import register_compiler_impl

from . import cluster_ptx
from .cluster_marks import cluster_mark
from .remote import _STORE, smem_address
from .targets import SM90_PLUS

OP = "async_load"
KIND = "bulk_copy"


def _bulk_form(m: re.Match, bar_reg: str) -> str:
    """The marked ``st.global.b64 [src], {value}`` as ``cp.async.bulk`` of ``value``'s high word bytes to the
    shared address in its low word, completing on the barrier whose address the begin marker holds."""
    indent, pred, _hints, width, ptr, offset, value = m.groups()
    if width != "b64":
        raise UtlxCompileError(OP, f"the bulk copy's carrier store is st.global.{width}, not b64: {m.group(0)!r}")
    off = f"+{int(offset)}" if offset and int(offset) else ""
    return (f"{indent}{{ .reg .b32 %utlx_bdst, %utlx_bsize; mov.b64 {{%utlx_bdst, %utlx_bsize}}, {value};\n"
            f"{indent}{pred or ''}cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%utlx_bdst], "
            f"[{ptr}{off}], %utlx_bsize, [{bar_reg}]; }}")


cluster_ptx.register_kind(KIND, OP + "(bulk=True)", "st.global", _STORE, _bulk_form, exactly_one=True,
                          guard="st.global")


def _size(_semantic: Any, bulk_size: Any, dest_bytes: int) -> tl.tensor:
    """The byte count as an i32 scalar: a constant must be a positive multiple of 16 within the buffer."""
    n = _c(bulk_size)
    if n is None:
        n = dest_bytes
    if isinstance(n, bool) or not isinstance(n, (int, tl.tensor)):
        raise UtlxCompileError(OP, f"'bulk_size' must be an int or an int32 scalar, got {_show(n)}")
    if isinstance(n, int):
        if n <= 0 or n % 16 or n > dest_bytes:
            raise UtlxCompileError(OP, f"bulk_size is {n} bytes; cp.async.bulk copies a positive multiple of 16 "
                                   f"bytes, at most the buffer's {dest_bytes}",
                                   hint="size the buffer to a multiple of 16 bytes")
        return _semantic.to_tensor(n)
    if n.type.is_block() or not n.dtype.is_int():
        raise UtlxCompileError(OP, f"'bulk_size' must be an integer scalar, got {n.type}")
    return _semantic.cast(n, tl.int32)


def bulk_load(_semantic: Any, src: Any, result: Any, bulk_size: Any, barrier: Any) -> values.AsyncToken:
    """Copy ``bulk_size`` bytes (default: the whole buffer) at scalar pointer ``src`` into 1-D buffer ``result``;
    they complete on ``barrier``."""
    view = _expect(OP, _c(result), values.SharedView, "result")
    if view.type.storage != "smem" or len(view.shape) != 1:
        raise UtlxCompileError(OP, f"bulk=True copies into a 1-D shared-memory buffer, got shape {list(view.shape)}",
                               hint="allocate the buffer as tlx.local_alloc((N,), dtype, num)")
    bar = _c(barrier)
    if bar is None:
        raise UtlxCompileError(OP, "bulk=True needs barrier= (the mbarrier its bytes complete on)")
    bar = _expect(OP, bar, values.BarrierView, "barrier")
    if not isinstance(src, tl.tensor) or src.type.is_block() or not src.dtype.is_ptr():
        raise UtlxCompileError(OP, f"bulk=True copies from one pointer (a scalar), got {getattr(src, 'type', src)}",
                               hint="pass the address of the first element: ptr + offset")
    dest_bytes = int(view.shape[0]) * (view.dtype.primitive_bitwidth // 8)
    size = _size(_semantic, bulk_size, dest_bytes)
    dst = smem_address(_semantic, view, OP)
    bar_addr = smem_address(_semantic, bar, OP)
    low = _semantic.cast(_semantic.bitcast(dst, tl.uint32), tl.uint64)
    high = _semantic.shl(_semantic.cast(_semantic.bitcast(size, tl.uint32), tl.uint64), _semantic.to_tensor(32))
    packed = _semantic.bitcast(_semantic.or_(high, low), tl.int64)
    carrier = _semantic.bitcast(src, tl.pointer_type(tl.int64))
    uid = cluster_mark(_semantic, OP, KIND, bar_addr.handle)
    tl.store(carrier, packed, _semantic=_semantic)  # the language call: its semantic signature differs on 3.9
    cluster_mark(_semantic, OP, "end", uid=uid)
    h = placeholders.emit(_semantic, "remote_store_check", {"op": OP + "(bulk=True)"}, handles=[view.handle])
    return values.make("token", h)  # completion is tracked by the barrier; the token only keeps TLX's signature


@register_compiler_impl("async_load", *SM90_PLUS)
def async_load(_semantic: Any, src: Any, result: Any, mask: Any = None, other: Any = None, cache_modifier: Any = "",
               eviction_policy: Any = "", is_volatile: Any = False, bulk: Any = False, bulk_size: Any = None,
               barrier: Any = None) -> values.AsyncToken:
    """``bulk=True``: :func:`bulk_load`; otherwise the per-thread cp.async of every target (``mem_ops``)."""
    if not _c(bulk):
        if _c(barrier) is not None or _c(bulk_size) is not None:
            raise UtlxCompileError(OP, "barrier= and bulk_size= need bulk=True")
        return mem_ops.async_load(_semantic, src, result, mask, other, cache_modifier, eviction_policy, is_volatile)
    if _c(mask) is not None or _c(other) is not None:
        raise UtlxCompileError(OP, "bulk=True copies whole bytes: mask= and other= are not allowed")
    return bulk_load(_semantic, src, result, bulk_size, barrier)
