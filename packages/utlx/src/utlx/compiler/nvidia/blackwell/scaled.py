"""Block-scaled tcgen05 MMAs (mxfp8 / mxfp4): ``async_dot_scaled`` and the scale copies ``tmem_copy``, for sm_100.

Why scales need their own path: ``tcgen05.mma ... block_scale`` reads the operands' e8m0 scale factors from tensor
memory, in TMEM's *scales* layout (``TensorMemoryScalesLayout``). TLX kernels bring the scales into shared memory
with TMA in the 5-D "packed block" layout ``[1, rows / 128, cols / 4, 2, 256]`` (uint8), then either copy them to
TMEM themselves (``tlx.tmem_copy(smem, tmem)``, ``tcgen05.cp``) or hand the shared-memory buffer to
``async_dot_scaled``, which copies it first. The copy reads shared memory unswizzled through a view that undoes the
packed block (``[rows / 128, cols / 4, 32, 4, 4]``, permuted ``(0, 3, 2, 1, 4)``, seen as ``[rows, cols]``), the
layout ``tcgen05.cp`` accepts; buffers copied this way get an unswizzled NVMMA layout (role ``scales``). A uint8 or
int8 tensor-memory allocation is a scales buffer.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx.compiler.common import placeholders, values
from utlx.compiler.common.args import _c, _expect, _i1, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.placeholders import Placeholder
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import register_compiler_impl

from ..targets import BLACKWELL
from . import gluon
from .tcgen05 import _barrier_list
from .tmem import is_tmem

#: Operand formats of the block-scaled MMA (Gluon exposes no fp6).
FORMATS = {"e4m3": tl.float8e4nv, "e5m2": tl.float8e5, "e2m1": tl.uint8}
SCALE_DTYPES = (tl.uint8, tl.int8)


def is_scales(dtype: Any) -> bool:
    """Is a tensor-memory buffer of ``dtype`` a scales buffer (TLX: 8-bit integers)?"""
    return dtype in SCALE_DTYPES


def packed_block_shape(rows: int, cols: int) -> list[int]:
    """The shared-memory packed-block shape of ``rows x cols`` scales (``[1, rows/128, cols/4, 2, 256]``)."""
    return [1, rows // 128, cols // 4, 2, 256]


def _check_scales_copy(op: str, src: values.SharedView, dst: values.SharedView) -> None:
    rows, cols = dst.shape
    if src.dtype not in SCALE_DTYPES or dst.dtype not in SCALE_DTYPES:
        raise UtlxCompileError(op, f"scale copies move uint8/int8 scales, got {src.dtype} -> {dst.dtype}")
    if rows % 128 or cols % 4:
        raise UtlxCompileError(op, f"a tensor-memory scales buffer is rows x cols with rows a multiple of 128 and cols "
                               f"a multiple of 4, got {list(dst.shape)}")
    want = packed_block_shape(rows, cols)
    if list(src.shape) != want:
        raise UtlxCompileError(op, f"the shared-memory scales must be in the packed block layout {want} for a "
                               f"{list(dst.shape)} tensor-memory buffer, got {list(src.shape)}",
                               hint="load them with TMA in the [1, rows/128, cols/4, 2, 256] layout")


@register_compiler_impl("tmem_copy", *BLACKWELL)
def tmem_copy(_semantic: Any, src: Any, dst: Any) -> None:
    """Copy shared-memory scales into a tensor-memory scales buffer (``tcgen05.cp``), asynchronously: later
    tcgen05 ops of the thread see it, ``tcgen05_commit`` tracks it."""
    op = "tmem_copy"
    gluon.require_support(op, from_semantic(_semantic))
    s = _expect(op, src, values.SharedView, "src")
    d = _expect(op, dst, values.SharedView, "dst")
    if is_tmem(s) or not is_tmem(d):
        raise UtlxCompileError(op, "copies a shared-memory buffer (src) into a tensor-memory buffer (dst)")
    if not is_scales(d.dtype):
        raise UtlxCompileError(op, f"utlx copies scales (uint8/int8) into tensor memory, not {d.dtype}",
                               hint="store data tiles with tlx.local_store")
    _check_scales_copy(op, s, d)
    placeholders.emit(_semantic, "tmem_copy", {"scale_handles": [0]}, handles=[s.handle, d.handle])
    return None


@register_compiler_impl("async_dot_scaled", *BLACKWELL)
def async_dot_scaled(_semantic: Any, A: Any, B: Any, acc: Any, A_scale: Any, A_format: Any, B_scale: Any,
                     B_format: Any, use_acc: Any = None, pred: Any = None, mBarriers: Any = (), two_ctas: Any = False,
                     force_async: Any = False, out_dtype: Any = tl.float32) -> None:
    """``acc (+)= (A * A_scale) @ (B * B_scale)`` on the tensor cores (block-scaled ``tcgen05.mma``)."""
    op = "async_dot_scaled"
    target = from_semantic(_semantic)
    gluon.require_support(op, target)
    a = _expect(op, A, values.SharedView, "A")
    b = _expect(op, B, values.SharedView, "B")
    if is_tmem(b):  # tcgen05.mma reads A from shared or tensor memory, B from shared memory only
        raise UtlxCompileError(op, "B of a block-scaled MMA must be in shared memory (only A may be in tensor memory)",
                               target=target.name)
    acc = _c(acc)
    if not is_tmem(acc) or not isinstance(acc, values.SharedView):
        raise UtlxCompileError(op, f"the accumulator is one tensor-memory buffer, got {_show(acc)}", target=target.name)
    formats = []
    for name, fmt in (("A_format", A_format), ("B_format", B_format)):
        fmt = _c(fmt)
        if fmt not in FORMATS:
            raise UtlxCompileError(op, f"'{name}' must be one of {', '.join(FORMATS)}, got {_show(fmt)}")
        formats.append(fmt)
    M, K = a.shape
    N = b.shape[1]
    if M != 128:
        raise UtlxCompileError(op, f"the block-scaled tcgen05.mma takes M = 128 rows per CTA, got {M}",
                               target=target.name)
    if not 8 <= N <= 256 or N % 8:
        raise UtlxCompileError(op, f"N must be a multiple of 8 in [8, 256], got {N}", target=target.name)
    if list(acc.shape) != [M, N]:
        raise UtlxCompileError(op, f"acc must be {M}x{N}, got {list(acc.shape)}")
    if _c(two_ctas):
        raise UtlxCompileError(op, "two_ctas (cta_group::2) is not compiled by utlx yet", target=target.name)
    scales = []
    for name, scale in (("A_scale", A_scale), ("B_scale", B_scale)):
        sv = _expect(op, _c(scale), values.SharedView, name)
        if not is_scales(sv.dtype):
            raise UtlxCompileError(op, f"'{name}' must hold uint8/int8 (e8m0) scales, got {sv.dtype}")
        scales.append(sv)
    bars = _barrier_list(op, mBarriers)
    handles = [a.handle, b.handle, acc.handle, scales[0].handle, scales[1].handle]
    handles.append(_semantic.builder.get_int1(True) if _c(use_acc) is None else _i1(_semantic, use_acc, op, "use_acc"))
    handles.append(_i1(_semantic, pred, op, "pred"))
    handles += [bar.handle for bar in bars]
    smem_scales = [not is_tmem(s) for s in scales]
    attrs = {"formats": formats, "nbars": len(bars), "sync": not bars and not bool(_c(force_async)),
             "smem_scales": smem_scales, "scale_k": K // 32, "mma_operands": 2}
    if any(smem_scales):
        for s, rows in zip(scales, (M, N), strict=True):
            if not is_tmem(s):
                _check_scales_copy(op, s, _TmemShape([rows, K // 32], s.dtype))
        attrs["scale_handles"] = [3 + i for i, smem in enumerate(smem_scales) if smem]
    placeholders.emit(_semantic, "tcgen05_mma_scaled", attrs, handles=handles)
    return None


class _TmemShape:
    """The tensor-memory scales buffer a shared-memory scale operand is copied into (for the shape check)."""

    def __init__(self, shape: list[int], dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype


# ---------------------------------------------------------------- lowerings


def _unpacked_view(low: Lowering, ph: Placeholder, i: int, rows: int, cols: int) -> Any:
    """Shared-memory scales (handle ``i``, packed block layout) seen as the ``rows x cols`` layout tcgen05.cp reads."""
    from triton.experimental.gluon import language as ttgl

    fact = low.fact(ph, i)
    smem = ttgl.shared_memory_descriptor(low.handle(ph, i, "scales"), fact["dtype"], list(fact["shape"]),
                                         fact["layout"], list(fact["alloc"]))
    sem = gluon.semantic(low)
    view = smem.reshape([rows // 128, cols // 4, 32, 4, 4], _semantic=sem)
    view = view.permute([0, 3, 2, 1, 4], _semantic=sem)
    return view.reshape([rows, cols], _semantic=sem)


def _lower_copy(low: Lowering, ph: Placeholder) -> None:
    dst = gluon.tmem(low, ph, 1, "destination")
    rows, cols = dst.shape
    _blackwell().tcgen05_copy(_unpacked_view(low, ph, 0, rows, cols), dst, _semantic=gluon.semantic(low))


def _scales_in_tmem(low: Lowering, ph: Placeholder, i: int, rows: int, cols: int) -> Any:
    """A shared-memory scale operand copied into a tensor-memory scales buffer of its own (made at kernel start)."""
    from utlx import compat

    key = ("scaled_mma_scales", id(ph), i)
    buf = low.vendor.get(key)
    if buf is None:
        gb = low.builder
        here = gb.get_insertion_point()
        gb.set_insertion_point_to_start(low.entry_block())
        buf = compat.blackwell().allocate_tensor_memory(tl.uint8, [rows, cols], compat.tmem_scales_layout(),
                                                        _semantic=gluon.semantic(low))
        gb.restore_insertion_point(here)
        low.vendor[key] = buf
    _blackwell().tcgen05_copy(_unpacked_view(low, ph, i, rows, cols), buf, _semantic=gluon.semantic(low))
    return buf


def _lower_mma(low: Lowering, ph: Placeholder) -> None:
    from triton.language import core as tlc

    bw = _blackwell()
    a = gluon.Handle(low.handle(ph, 0, "A operand"))
    b = gluon.Handle(low.handle(ph, 1, "B operand"))
    acc = gluon.tmem(low, ph, 2, "accumulator")
    rows = (acc.shape[0], acc.shape[1])
    scale_k = int(ph.attrs["scale_k"])
    scales = []
    for j, smem in enumerate(ph.attrs["smem_scales"]):
        scales.append(_scales_in_tmem(low, ph, 3 + j, rows[j], scale_k) if smem
                      else gluon.tmem(low, ph, 3 + j, "scales"))
    use_acc, pred = gluon.i1(ph.handles[5]), gluon.i1(ph.handles[6])
    bars = [gluon.Handle(low.handle(ph, 7 + i, "barrier")) for i in range(int(ph.attrs.get("nbars", 0)))]
    preds = None
    if not bars and not ph.attrs.get("sync", True):
        from .tcgen05 import _null_barrier

        bars, preds = [gluon.Handle(_null_barrier(low))], [gluon.i1(low.builder.get_int1(False))]
    fa, fb = (tlc.constexpr(f) for f in ph.attrs["formats"])
    bw.tcgen05_mma_scaled(a, b, acc, scales[0], scales[1], fa, fb, use_acc=use_acc, pred=pred,
                          mbarriers=bars or None, mbarrier_preds=preds, _semantic=gluon.semantic(low))


def _blackwell() -> Any:
    from utlx import compat

    return compat.blackwell()


register_lowering("tmem_copy")(_lower_copy)
register_lowering("tcgen05_mma_scaled")(_lower_mma)
