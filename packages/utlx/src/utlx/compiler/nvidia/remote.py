"""Remote (distributed) shared memory: ``remote_view`` of an mbarrier, ``remote_shmem_store`` and
``async_remote_shmem_store`` of a register tensor into a buffer of another CTA of the cluster (sm_90+).

What they compile to: the destination's address in the peer CTA is ``mapa.shared::cluster`` of the local
buffer's address (the same offset in every CTA of the cluster); ``remote_shmem_store`` stores each element with
``st.shared::cluster``, ``async_remote_shmem_store`` with ``st.async.shared::cluster.mbarrier::complete_tx::bytes``,
whose bytes complete on the peer's barrier (the one at ``barrier``'s offset there, which expects them with
``barrier_expect_bytes``). ``barrier_arrive(remote_view(bar, rank))`` is ``barrier_arrive(bar,
remote_cta_rank=rank)`` (``mapa`` + ``mbarrier.arrive.shared::cluster``).

How, on stock Triton: a buffer's shared address exists only in its LLVM lowering, and no stock op stores to
another CTA. So (1) the address is *probed*: a stock ``mbarrier.arrive`` on the buffer sits between two
:mod:`.cluster_marks` markers and the PTX rewrite (:mod:`.cluster_ptx`) deletes it and gives its address register
to the end marker's result, an ordinary i32 the kernel computes with (``mapa`` by inline asm); (2) the store is a
stock ``tl.store`` of the values through pointers that hold those 32-bit cluster addresses, between markers, and
the rewrite turns each ``st.global`` into its cluster form. ``tl.store``'s lowering stores each element once (it
masks the threads that hold a replica), which ``complete_tx`` byte counts need. Elements are stored one by one
(the pointers' contiguity is unknown), so the destination buffer must be laid out row-major and unswizzled,
which the lowering checks.
"""

from __future__ import annotations

import re
from typing import Any

import triton.language as tl

from utlx.compiler.common import placeholders, values
from utlx.compiler.common.args import _c, _expect
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.placeholders import Placeholder
from utlx.language._dispatch import register_compiler_impl

from . import cluster_ptx
from .cluster_marks import cluster_end_value, cluster_mark, cluster_rank
from .targets import SM90_PLUS

# ------------------------------------------------------------------------------------- PTX forms

#: The probe: the stock arrive on the buffer whose address register the end marker takes.
_PROBE = re.compile(r"^\s*(?:@!?%p\d+\s+)?mbarrier\.arrive(?:\.release)?(?:\.cta)?\.shared(?:::cta)?\.b64\s+_,"
                    r"\s*\[(%r\d+)\](?:,\s*[^;]+)?;\s*$")
#: One element of the store: ``@%p st.global.b32 [ %rd5 + 0 ], { %r7 };`` (cache hints allowed).
_STORE = re.compile(r"^(\s*)(@!?%p\d+\s+)?st\.global((?:\.[\w:]+)*?)\.(b\d+)\s+\[\s*(%rd\d+)\s*(?:\+\s*(-?\d+))?\s*\],"
                    r"\s*\{?\s*(%\w+)\s*\}?\s*;\s*$")


def _probe_form(_m: re.Match, _reg: str) -> str:
    return "\t// utlx: address probe (its arrive removed)"


def _probe_end(end: re.Match, hits: list[re.Match]) -> str:
    """The end marker's register: the probed allocation's address plus the marker's operand (the view's offset)."""
    return f"\tadd.u32 {end.group(1)}, {hits[0].group(1)}, {end.group(2)}; // utlx: shared address of a buffer"


def _store(m: re.Match, op_text: str) -> str:
    indent, pred, _hints, width, ptr, offset, value = m.groups()
    off = f"+{int(offset)}" if offset and int(offset) else ""
    return (f"{indent}{{ .reg .b32 %utlx_dst; cvt.u32.u64 %utlx_dst, {ptr};\n"
            f"{indent}{pred or ''}{op_text.format(width=width, dst=f'[%utlx_dst{off}]', value=value)}; }}")


def _store_async(m: re.Match, bar_reg: str) -> str:
    return _store(m, "st.async.shared::cluster.mbarrier::complete_tx::bytes.{width} {dst}, {value}, "
                     f"[{bar_reg}]")


def _store_cluster(m: re.Match, _reg: str) -> str:
    return _store(m, "st.shared::cluster.{width} {dst}, {value}")


cluster_ptx.register_kind("address", "remote shared memory", "mbarrier.arrive", _PROBE, _probe_form,
                          end_form=_probe_end, exactly_one=True, guard="mbarrier.")
cluster_ptx.register_kind("st_async", "async_remote_shmem_store", "st.global", _STORE, _store_async,
                          guard="st.global")
cluster_ptx.register_kind("st_cluster", "remote_shmem_store", "st.global", _STORE, _store_cluster,
                          guard="st.global")

# ------------------------------------------------------------------------------------- trace time


def smem_address(_semantic: Any, view: values.Handle, op: str) -> tl.tensor:
    """The shared-memory address (32-bit, this CTA) of buffer or barrier ``view``, as an i32 scalar.

    A view of one buffer of a ``local_alloc`` (``bufs[i]``) probes the whole allocation (its bytes seen as
    mbarrier words: a lone buffer may be smaller than one) and adds ``i`` times the buffer's size."""
    parent = getattr(view, "view_of", None)
    offset = _semantic.to_tensor(0)
    probed = view
    if parent is not None and isinstance(parent[0], values.SharedBuffers):
        bufs, idx = parent
        nbytes = (view.dtype.primitive_bitwidth // 8) * _prod(view.shape)
        probed = bufs
        offset = _semantic.mul(tl.tensor(idx, tl.int32), _semantic.to_tensor(nbytes), True)
    uid = cluster_mark(_semantic, op, "address")
    placeholders.emit(_semantic, "smem_address_probe", {"op": op}, handles=[probed.handle])
    return tl.tensor(cluster_end_value(_semantic, uid, offset.handle), tl.int32)


def _prod(shape: Any) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def _mapa(_semantic: Any, addr: tl.tensor, rank: tl.tensor) -> tl.tensor:
    """``addr`` (elementwise) in the shared memory of cluster CTA ``rank``."""
    if addr.type.is_block():
        rank = _semantic.broadcast_impl_shape(rank, addr.type.get_block_shapes())
    out_ty = addr.type.with_element_ty(tl.int32) if addr.type.is_block() else tl.int32
    call = _semantic.builder.create_inline_asm("mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r",
                                               [addr.handle, rank.handle], [out_ty.to_ir(_semantic.builder)],
                                               True, 1)
    return tl.tensor(call.get_result(0), out_ty)


def _row_major_offsets(_semantic: Any, shape: tuple[int, ...]) -> tl.tensor:
    """Row-major element offsets of a tensor of ``shape`` (an i32 tensor of that shape)."""
    total = None
    stride = 1
    for dim in reversed(range(len(shape))):
        idx = _semantic.arange(0, shape[dim])  # on axis `dim` of the result
        for axis in range(len(shape)):
            if axis != dim:
                idx = _semantic.expand_dims(idx, axis)
        if stride != 1:
            idx = _semantic.mul(idx, _semantic.to_tensor(stride), True)
        total = idx if total is None else _semantic.add(total, idx, True)
        stride *= shape[dim]
    return _semantic.broadcast_impl_shape(total, list(shape))


def _check_store(op: str, dst: Any, src: Any) -> values.SharedView:
    view = _expect(op, _c(dst), values.SharedView, "dst")
    if view.type.storage != "smem":
        raise UtlxCompileError(op, "dst must be a shared-memory buffer (tensor memory has no cluster address)")
    if not isinstance(src, tl.tensor) or not src.type.is_block():
        raise UtlxCompileError(op, f"src must be a register tensor, got {type(src).__name__}")
    if tuple(src.shape) != tuple(view.shape):
        raise UtlxCompileError(op, f"src is {list(src.shape)} but dst is {list(view.shape)}")
    if src.dtype != view.dtype:
        raise UtlxCompileError(op, f"src is {src.dtype} but dst holds {view.dtype}")
    return view


def _remote_store(_semantic: Any, op: str, kind: str, dst: Any, src: Any, remote_cta_rank: Any,
                  barrier: Any = None) -> None:
    view = _check_store(op, dst, src)
    if remote_cta_rank is None or _c(remote_cta_rank) is None:
        raise UtlxCompileError(op, "remote_cta_rank is required")
    rank = tl.tensor(cluster_rank(_semantic, remote_cta_rank, op), tl.int32)

    nbytes = src.dtype.primitive_bitwidth // 8
    bar_remote = None
    if kind == "st_async":
        if src.dtype.primitive_bitwidth not in (32, 64):
            raise UtlxCompileError(op, f"st.async stores 32- or 64-bit elements; src is {src.dtype}",
                                   hint="store float32 (or cast) values, as Meta's tutorials do")
        bar = _expect(op, _c(barrier), values.BarrierView, "barrier")
        bar_remote = _mapa(_semantic, smem_address(_semantic, bar, op), rank)
    base = smem_address(_semantic, view, op)
    shape = tuple(int(tl.core._unwrap_if_constexpr(d)) for d in src.shape)
    offsets = _semantic.mul(_row_major_offsets(_semantic, shape), _semantic.to_tensor(nbytes), True)
    addr = _mapa(_semantic, _semantic.add(offsets, base, True), rank)
    ptrs = _semantic.cast(_semantic.cast(addr, tl.int64), tl.pointer_type(src.dtype))
    uid = cluster_mark(_semantic, op, kind, bar_remote.handle if bar_remote is not None else
                       _semantic.to_tensor(0).handle)
    tl.store(ptrs, src, _semantic=_semantic)  # the language call: its semantic signature differs on 3.9
    cluster_mark(_semantic, op, "end", uid=uid)
    placeholders.emit(_semantic, "remote_store_check", {"op": op}, handles=[view.handle])


@register_compiler_impl("async_remote_shmem_store", *SM90_PLUS)
def async_remote_shmem_store(_semantic: Any, dst: Any, src: Any, remote_cta_rank: Any, barrier: Any) -> None:
    """``src`` into buffer ``dst`` of CTA ``remote_cta_rank``; its bytes complete on that CTA's ``barrier``."""
    _remote_store(_semantic, "async_remote_shmem_store", "st_async", dst, src, remote_cta_rank, barrier)


@register_compiler_impl("remote_shmem_store", *SM90_PLUS)
def remote_shmem_store(_semantic: Any, dst: Any, src: Any, remote_cta_rank: Any) -> None:
    """``src`` into buffer ``dst`` of CTA ``remote_cta_rank`` (``st.shared::cluster``; order it with a barrier)."""
    _remote_store(_semantic, "remote_shmem_store", "st_cluster", dst, src, remote_cta_rank)


class RemoteBarrierView(values.BarrierView):
    """``remote_view(bar, rank)``: the same barrier in cluster CTA ``rank``; only ``barrier_arrive`` takes it."""

    def __init__(self, handle: Any, type: values.HandleType, remote_cta_rank: Any) -> None:
        super().__init__(handle, type)
        self.remote_cta_rank = remote_cta_rank


@register_compiler_impl("remote_view", *SM90_PLUS)
def remote_view(_semantic: Any, local_allocated_buffer: Any, remote_cta_rank: Any) -> RemoteBarrierView:
    """A barrier of another CTA of the cluster, to arrive on (TLX: barriers only)."""
    op = "remote_view"
    bar = _expect(op, _c(local_allocated_buffer), values.BarrierView, "local_allocated_buffer")
    cluster_rank(_semantic, remote_cta_rank, op)  # checks a constant rank
    return RemoteBarrierView(bar.handle, bar.type, remote_cta_rank)


# ------------------------------------------------------------------------------------- lowerings


def _lower_probe(low: Lowering, ph: Placeholder) -> None:
    from utlx import compat
    from utlx.compiler.common import layouts

    view = low.handle(ph, 0, "buffer")
    fact = low.fact(ph, 0)
    shape = list(fact.get("alloc") if fact.get("kind") in ("buffers", "barriers") else fact.get("shape", []))
    if fact.get("dtype") != tl.int64 or shape != [1]:
        # the bytes seen as mbarrier words (a reinterpret keeps the size), the first of them probed
        from triton.experimental.gluon import language as ttgl

        nbytes = fact["dtype"].primitive_bitwidth // 8 * _prod(shape)
        op = ph.attrs.get("op", ph.name)
        if nbytes % 8:
            raise UtlxCompileError(op, f"utlx takes a buffer's cluster address through an 8-byte word of it, and "
                                   f"this allocation has {nbytes} bytes", hint="allocate a multiple of 8 bytes "
                                   "(e.g. one more buffer)")
        layout = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])  # a barrier's
        words = nbytes // 8
        # seen as alloc_barriers(words) and indexed like one barrier of it (a memdesc_index is its own allocation:
        # Triton 3.9's arrive_barrier refuses a subslice, "a contiguous shared-memory layout without subviews")
        whole = layouts.memdesc_type(tl.int64, [words, 1], layout, [words, 1]).to_ir(low.builder)
        one = layouts.memdesc_type(tl.int64, [1], layout, [1]).to_ir(low.builder)
        try:
            view = low.builder.create_memdesc_reinterpret(whole, view)
            view = low.builder.create_memdesc_index(one, view, low.builder.get_int32(0))
        except Exception as exc:  # the builder's own message is the reason
            raise UtlxCompileError(op, f"cannot take the shared address of this buffer: {exc}") from exc
    compat.create_mbarrier_arrive(low.builder, view, 1, low.builder.get_int1(True))  # removed again in the PTX


def _lower_store_check(low: Lowering, ph: Placeholder) -> None:
    """The destination must be row-major and unswizzled: the store computed its addresses that way."""
    from triton.experimental.gluon import language as ttgl

    fact = low.fact(ph, 0)
    layout = fact.get("layout")
    shape = list(fact.get("shape", []))
    ok = (isinstance(layout, ttgl.SwizzledSharedLayout) and layout.max_phase == 1
          and list(layout.order) == list(range(len(shape) - 1, -1, -1)))
    if not ok:
        raise UtlxCompileError(ph.attrs.get("op", ph.name), f"its dst buffer has shared layout {layout}; remote "
                               f"stores need a row-major unswizzled buffer (one not also used for TMA or MMAs)")
    if list(fact.get("alloc", shape))[-len(shape):] != shape:
        raise UtlxCompileError(ph.attrs.get("op", ph.name), "dst must be a whole buffer (tlx.local_view), not a "
                               "slice of one")


register_lowering("smem_address_probe")(_lower_probe)
register_lowering("remote_store_check")(_lower_store_check)
