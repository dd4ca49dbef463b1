"""Shared-memory buffers and asynchronous copies into them: trace-time bodies and their lowerings.

Why together: each op's trace-time body (argument checks, a placeholder) and its lowering (the TTGIR it becomes
right after ``convert-triton-to-tritongpu``) are two halves of one op; ``local_alloc``/``local_view``/
``local_slice``/``local_load``/``local_store`` (``ttg.local_*``, ``ttg.memdesc_*``) and ``async_load`` with its
commit/wait groups (``ttg.async_copy_global_to_local``) mean the same on every vendor. What a vendor adds
(Hopper's NVMMA layouts, AMD's direct-to-LDS routes) is decided from the lowering state its planner fills in.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx import compat
from utlx.language._dispatch import register_compiler_impl

from . import layouts, placeholders, values
from .args import _CONSTEXPR_HINT, _c, _expect, _i32, _ints, _shape, _show, _tl_name
from .errors import UtlxCompileError
from .lowering import Lowering, register_lowering, remember_async_alloc
from .placeholders import Placeholder, dtype_of_name
from .target import Target, from_semantic

_dtype = dtype_of_name


# ---------------------------------------------------------------- frontend-only ops


def _wrap_dtype_of() -> None:
    """Let ``dtype_of`` also accept utlx buffers and views (the language's body handles tensors/pointers)."""
    from utlx.language import _dispatch

    try:
        base = _dispatch.compiler_impl("dtype_of")
    except _dispatch.UtlxDispatchError:
        return
    if getattr(base, "__utlx_buffers__", False):
        return

    def dtype_of(_semantic: Any, v: Any) -> Any:
        inner = tl.core._unwrap_if_constexpr(v)
        if isinstance(inner, values.Handle):
            return tl.constexpr(inner.dtype)
        return base(_semantic, v)

    dtype_of.__utlx_buffers__ = True
    register_compiler_impl("dtype_of")(dtype_of)

_wrap_dtype_of()


# ---------------------------------------------------------------- shared memory


@register_compiler_impl("local_alloc")
def local_alloc(_semantic: Any, shape: Any, dtype: Any, num: Any, storage: Any = None, layout: Any = None,
                reuse: Any = None) -> values.SharedBuffers:
    """``num`` shared-memory buffers of ``shape`` x ``dtype`` (one ``ttg.local_alloc`` of ``[num, *shape]``)."""
    op = "local_alloc"
    target = from_semantic(_semantic)
    shape_l = _ints(op, "shape", shape)
    dtype = _c(dtype)
    if not isinstance(dtype, tl.dtype):
        raise UtlxCompileError(op, f"'dtype' must be a tl.dtype, got {dtype!r}")
    n = _c(num)
    if not isinstance(n, int) or n < 1:
        raise UtlxCompileError(op, f"'num' must be a compile-time int >= 1, got {_show(n)}",
                               hint="allocate at least one buffer" if isinstance(n, int) else _CONSTEXPR_HINT)
    storage_name = str(_c(storage) or "smem").split(".")[-1]
    if storage_name == "tmem":
        raise UtlxCompileError(op, "needs Blackwell (sm_100): it uses tensor memory (storage=tmem), which this "
                               "target does not have", target=target.name,
                               hint="compile for cuda:100, or keep the accumulator in registers (the Hopper form)")
    if storage_name not in ("smem", "shared"):
        raise UtlxCompileError(op, f"storage {storage_name!r} is not supported on stock Triton (only smem)",
                               target=target.name)
    if _c(reuse) is not None:
        raise UtlxCompileError(op, "'reuse' (buffer aliasing) is not supported by utlx", target=target.name)
    spec = _shared_layout_spec(op, _c(layout), shape_l, target)
    # No shared-memory budget check here: Triton's allocator reuses memory between allocations whose
    # lifetimes do not overlap, so a sum over local_allocs refuses legal kernels, and an error raised while
    # tracing is a CompilationError that stops triton.autotune (which skips configs only on Triton's own
    # OutOfResources, raised when a too-large kernel is loaded).
    attrs = {"shape": shape_l, "dtype": str(dtype), "num": n, "nw": target.num_warps, "target": target.name}
    if spec is not None:
        attrs["layout"] = spec
    h = placeholders.emit(_semantic, op, attrs)
    return values.make("buffers", h, shape=shape_l, dtype=dtype, num=n)


def _shared_layout_spec(op: str, layout: Any, shape: list[int], target: Target) -> dict | None:
    """The spec of an explicit shared-memory layout (None: utlx picks the layout from the buffer's uses).

    NVIDIA's NVMMA and tensor-memory layouts are the ones utlx picks itself from the uses (wgmma, TMA), so
    they are accepted and left to that choice.
    """
    from utlx.language import layouts as tlx_layouts

    from . import layouts

    if layout is None or isinstance(layout, (tlx_layouts.nv_mma_shared_layout_encoding,
                                             tlx_layouts.tensor_memory_layout_encoding)):
        return None
    spec = _layout_spec(op, layout, shape, target)
    if spec["kind"] not in layouts.SHARED_KINDS:
        raise UtlxCompileError(op, f"'layout' must be a shared-memory layout (swizzled_layout, swizzled, padded or "
                               f"shared linear), got {type(layout).__name__}")
    if spec["kind"] == "padded" and spec["shape"] != list(shape):
        raise UtlxCompileError(op, f"the padded layout is for shape {spec['shape']} but the buffer is {list(shape)}")
    return spec


def _layout_spec(op: str, layout: Any, shape: list[int], target: Target) -> dict:
    """The spec of an explicit layout for ``shape`` on ``target``; a layout it cannot describe is an error naming
    ``op``."""
    from . import layouts

    try:
        return layouts.spec_of(layout, shape, target.warp_size)
    except (TypeError, ValueError) as exc:
        raise UtlxCompileError(op, f"'layout': {exc}") from None


def register_layout_spec(op: str, layout: Any, shape: list[int], target: Target, where: str = "") -> dict | None:
    """The spec of an explicit register layout, or None when there is none or stock Triton cannot build it
    (a ``tlx.layout`` that is not a permutation: dropped with a performance warning, values unchanged)."""
    from . import layouts
    from .downgrade import downgrade

    if layout is None:
        return None
    spec = _layout_spec(op, layout, shape, target)
    if spec["kind"] not in layouts.DISTRIBUTED_KINDS:
        raise UtlxCompileError(op, f"'layout' must be a register layout (tlx.layout, amd_mfma_layout or "
                               f"dot_operand_layout), got {type(layout).__name__}")
    if not layouts.is_permutation(spec):
        downgrade(op, f"{layouts.describe_spec(spec)} swizzles warps across dimensions (#ttg.generic_linear), which "
                  "stock Triton cannot lower; the layout is left to the compiler", target=target.name, where=where,
                  hint="use a layout whose bases each move along one dimension")
        return None
    return spec


@register_compiler_impl("local_view")
def local_view(_semantic: Any, local_allocated_buffers: Any, buffer_idx: Any) -> values.Handle:
    """Buffer ``buffer_idx`` of a ``local_alloc`` (or one barrier of ``alloc_barriers``, one CLC response)."""
    op = "local_view"
    bufs = local_allocated_buffers
    if not isinstance(bufs, (values.SharedBuffers, values.Barriers, values.ClcResponses)):
        raise UtlxCompileError(op, "first argument must be the result of tlx.local_alloc, tlx.alloc_barriers or "
                               f"tlx._alloc_clc_responses, got {type(bufs).__name__}")
    idx_c = _c(buffer_idx)
    if isinstance(idx_c, int) and not 0 <= idx_c < bufs.type.num:
        raise UtlxCompileError(op, f"buffer index {idx_c} is out of range for {bufs.type.num} buffers",
                               hint=f"valid indices are 0..{bufs.type.num - 1}; allocate more buffers or wrap the "
                               f"index (i % {bufs.type.num})")
    idx = _i32(_semantic, buffer_idx, op, "buffer_idx")
    kind = {values.Barriers: "barrier", values.ClcResponses: "clc_response"}.get(type(bufs), "view")
    h = placeholders.emit(_semantic, op, {"kind": kind}, handles=[bufs.handle, idx], pure=True)
    view = values.make(kind, h, shape=bufs.shape, dtype=bufs.dtype, num=1, group_warps=bufs.type.group_warps)
    view.view_of = (bufs, idx)  # which buffer of which allocation (remote stores address it from the allocation)
    return view


@register_compiler_impl("local_slice")
def local_slice(_semantic: Any, buffer: Any, offset: Any, shape: Any) -> values.SharedView:
    """A static sub-block ``[offset, offset+shape)`` of one buffer (``ttg.memdesc_subslice``)."""
    op = "local_slice"
    view = _expect(op, buffer, values.SharedView, "buffer")
    off = _ints(op, "offset", offset)
    shp = _ints(op, "shape", shape)
    if len(off) != len(view.shape) or len(shp) != len(view.shape):
        raise UtlxCompileError(op, f"offset {off} and shape {shp} must have rank {len(view.shape)}")
    for o, s, full in zip(off, shp, view.shape, strict=True):
        if o < 0 or o + s > full:
            raise UtlxCompileError(op, f"slice offset {off} + shape {shp} exceeds the buffer shape {list(view.shape)}",
                                   hint="keep offset + shape within the buffer in every dimension")
    h = placeholders.emit(_semantic, op, {"offset": off, "shape": shp}, handles=[view.handle], pure=True)
    return values.make("view", h, shape=shp, dtype=view.dtype, num=1)


@register_compiler_impl("local_load")
def local_load(_semantic: Any, src: Any, token: Any = None, layout: Any = None, relaxed: Any = False,
               rematerialize_coordinates: Any = False, rematerialize_coordinates_group: Any = None) -> tl.tensor:
    """Read one buffer into registers (``ttg.local_load``)."""
    op = "local_load"
    view = _expect(op, src, values.SharedView, "src")
    remat, group = _c(rematerialize_coordinates), _c(rematerialize_coordinates_group)
    if not isinstance(remat, bool):
        raise UtlxCompileError(op, f"'rematerialize_coordinates' must be a compile-time bool, got {_show(remat)}")
    if group is not None and (isinstance(group, bool) or not isinstance(group, int) or group < 0):
        raise UtlxCompileError(op, f"'rematerialize_coordinates_group' must be a non-negative int or None, got "
                               f"{_show(group)}")
    if remat and group is not None:
        raise UtlxCompileError(op, "'rematerialize_coordinates' and 'rematerialize_coordinates_group' exclude each "
                               "other")
    target = from_semantic(_semantic)
    ret_ty = tl.block_type(view.dtype, list(view.shape))
    attrs: dict[str, Any] = {}
    spec = register_layout_spec(op, _c(layout), list(view.shape), target)
    if spec is not None:
        attrs["layout"] = spec
    if target.is_hip and (bool(_c(relaxed)) or _c(token) is not None):
        attrs["synced"] = True
    h = placeholders.emit(_semantic, op, attrs, handles=[view.handle], result=ret_ty)
    return tl.tensor(h, ret_ty)


@register_compiler_impl("local_store")
def local_store(_semantic: Any, dst: Any, src: Any) -> None:
    """Write a register tensor into one buffer (``ttg.local_store``)."""
    op = "local_store"
    view = _expect(op, dst, values.SharedView, "dst")
    if not isinstance(src, tl.tensor) or not src.type.is_block():
        raise UtlxCompileError(op, f"'src' must be a tensor, got {type(src).__name__}")
    if _shape(src) != list(view.shape):
        raise UtlxCompileError(op, f"shape mismatch: tensor {_shape(src)} vs buffer {list(view.shape)}",
                               hint="store a tensor of the view's shape (or tlx.local_slice the view to the tensor's)")
    if src.dtype != view.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: tensor {src.dtype} vs buffer {view.dtype}",
                               hint=f"cast first: x.to({_tl_name(view.dtype)})")
    placeholders.emit(_semantic, op, {}, handles=[view.handle], tensors=[src])


def _stash(_semantic: Any, t: tl.tensor) -> int:
    """Pass tensor ``t`` to the next placeholder by uid (placeholder tensors must share one shape)."""
    uid = placeholders.next_uid()
    placeholders.emit(_semantic, "stash", {}, tensors=[t], uid=uid)
    return uid


# ---------------------------------------------------------------- cp.async


@register_compiler_impl("async_load")
def async_load(_semantic: Any, src: Any, result: Any, mask: Any = None, other: Any = None, cache_modifier: Any = "",
               eviction_policy: Any = "", is_volatile: Any = False, bulk: Any = False, bulk_size: Any = None,
               barrier: Any = None) -> values.AsyncToken:
    """cp.async copy of a pointer tensor into one buffer (``ttg.async_copy_global_to_local``)."""
    op = "async_load"
    target = from_semantic(_semantic)
    view = _expect(op, result, values.SharedView, "result")
    if _c(bulk) or _c(barrier) is not None:
        raise UtlxCompileError(op, "bulk=True / barrier= (a cp.async.bulk completing on an mbarrier) needs sm_90 or "
                               "newer; this target has no bulk copies", target=target.name,
                               hint="drop bulk=/barrier= and wait with async_load_commit_group/async_load_wait_group")
    if not isinstance(src, tl.tensor) or not src.type.is_block() or not src.dtype.is_ptr():
        raise UtlxCompileError(op, f"'src' must be a tensor of pointers, got {getattr(src, 'type', src)}")
    if _shape(src) != list(view.shape):
        raise UtlxCompileError(op, f"shape mismatch: pointers {_shape(src)} vs buffer {list(view.shape)}",
                               hint="the pointer block must have the view's shape")
    if src.dtype.element_ty != view.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: pointers to {src.dtype.element_ty} vs buffer {view.dtype}",
                               hint="cp.async copies bytes without converting; allocate the buffer with "
                               "tlx.dtype_of(ptr), or tl.load + cast + tlx.local_store")
    tensors = [src]
    mask = _c(mask)
    other = _c(other)
    if target.is_hip and mask is not None and other is None:
        other = 0  # TLX's zero fill; on AMD a masked-off lane of a direct-to-LDS copy writes ``other``
    if mask is not None:
        mask = _semantic.to_tensor(mask) if not isinstance(mask, tl.tensor) else mask
        mask = _semantic.broadcast_impl_shape(mask, list(src.shape)) if mask.shape != src.shape else mask
        if mask.dtype != tl.int1:
            mask = _semantic.cast(mask, tl.int1)
        tensors.append(mask)
    if other is not None:
        if mask is None:
            raise UtlxCompileError(op, "'other' needs a 'mask'")
        other = _semantic.to_tensor(other) if not isinstance(other, tl.tensor) else other
        other = _semantic.cast(other, view.dtype)
        other = _semantic.broadcast_impl_shape(other, list(src.shape)) if other.shape != src.shape else other
        tensors.append(other)
    h = placeholders.emit(_semantic, op, {"mask": mask is not None, "other": other is not None,
                                         "cache": str(_c(cache_modifier) or ""),
                                         "evict": str(_c(eviction_policy) or ""), "volatile": bool(_c(is_volatile)),
                                         "dtype": str(view.dtype), "shape": _shape(src)},
                         handles=[view.handle], tensors=tensors)
    return values.make("token", h, shape=view.shape, dtype=tl.int32, carrier=tl.block_type(tl.int32, list(src.shape)))


@register_compiler_impl("async_load_commit_group")
def async_load_commit_group(_semantic: Any, tokens: Any = None) -> values.AsyncToken:
    """Close the current cp.async group (``ttg.async_commit_group``)."""
    op = "async_load_commit_group"
    h = placeholders.emit(_semantic, op, {})
    return values.make("token", h)


@register_compiler_impl("async_load_wait_group")
def async_load_wait_group(_semantic: Any, pendings: Any, tokens: Any = None) -> values.AsyncToken:
    """Wait until at most ``pendings`` cp.async groups are in flight (``ttg.async_wait``)."""
    op = "async_load_wait_group"
    n = _c(pendings)
    if not isinstance(n, int) or isinstance(n, bool):
        raise UtlxCompileError(op, f"'pendings' must be a compile-time int, got {_show(n)}", hint=_CONSTEXPR_HINT)
    if n < 0:
        raise UtlxCompileError(op, f"'pendings' is {n}: a negative number of in-flight groups cannot be waited for "
                               "(with NUM_STAGES buffers the classic wait is NUM_STAGES-2, so NUM_STAGES >= 2)")
    h = placeholders.emit(_semantic, op, {"n": n})
    return values.make("token", h)


# ---------------------------------------------------------------- lowerings


def fold_mask_into_pointer(builder: Any, ptr: Any, mask: Any) -> Any:
    """Probe-only pointer whose axis info is the pointers' capped by the mask's alignment.

    ``addptr(p, mask)`` has contiguity ``gcd(contiguity(p), constancy(mask))`` (the limit the cp.async
    lowering applies); a divisibility hint on the mask keeps the pointers' alignment. Only ever built in
    the probe clone: its values are meaningless.
    """
    from triton._C.libtriton import ir

    rank = len(str(mask.get_type()).split("<", 1)[1].split("x")) - 1
    mask.set_attr("tt.divisibility", ir.make_attr([16] * rank, mask.get_context()))
    return builder.create_addptr(ptr, mask)


def _replace(ph: Placeholder, new: Any) -> None:
    ph.result.replace_all_uses_with(new)


def _lower_local_alloc(low: Lowering, ph: Placeholder) -> None:
    a = ph.attrs
    dtype = _dtype(a["dtype"])
    shape = list(a["shape"])
    role = low.roles.get(ph.uid, "")
    if a.get("layout"):
        layout = layouts.from_spec(a["layout"])
    else:
        layout = layouts.shared_layout(role, shape, dtype, a.get("target", ""), low.alloc_orders.get(ph.uid))
    full = [a["num"], *shape]
    ty = layouts.memdesc_type(dtype, full, layout, full).to_ir(low.builder)
    v = compat.create_local_alloc(low.builder, ty)
    low.real[ph.result.id()] = v
    low.facts[ph.result.id()] = {"dtype": dtype, "shape": shape, "layout": layout, "alloc": full, "kind": "buffers",
                                 "root": v}


def _lower_local_view(low: Lowering, ph: Placeholder) -> None:
    buf = low.handle(ph, 0, "buffer argument")
    f = low.fact(ph, 0)
    idx = ph.handles[1]
    # An indexed buffer is its own allocation shape (what memdesc_index verifies on 3.6-3.9).
    ty = layouts.memdesc_type(f["dtype"], f["shape"], f["layout"], f["shape"]).to_ir(low.builder)
    v = low.builder.create_memdesc_index(ty, buf, idx)
    low.real[ph.result.id()] = v
    low.facts[ph.result.id()] = {**f, "alloc": list(f["shape"]), "kind": "view"}


def _lower_local_slice(low: Lowering, ph: Placeholder) -> None:
    src = low.handle(ph, 0, "buffer argument")
    f = low.fact(ph, 0)
    shape = list(ph.attrs["shape"])
    ty = layouts.memdesc_type(f["dtype"], shape, f["layout"], f["alloc"]).to_ir(low.builder)
    v = low.builder.create_memdesc_subslice(ty, src, list(ph.attrs["offset"]))
    low.real[ph.result.id()] = v
    low.facts[ph.result.id()] = {**f, "shape": shape, "kind": "view"}


def _lower_local_load(low: Lowering, ph: Placeholder) -> None:
    src = low.handle(ph, 0, "source buffer")
    gb = low.builder
    spec = ph.attrs.get("layout")
    if spec:
        f = low.fact(ph, 0)
        ty = layouts.distributed_type(f["dtype"], f["shape"], layouts.from_spec(spec)).to_ir(gb)
        v = gb.create_local_load(ty, src)
    else:
        v = gb.create_local_load(ph.result.get_type(), src)
    if ph.attrs.get("synced"):
        # The AMD backend's own marker (Gluon's load_shared_relaxed sets it too): an async wait already orders
        # this read after the direct-to-LDS copies, so no extra dependency or wait count is needed.
        v.set_attr("ttg.amdg.syncedViaAsyncWait", gb.get_bool_attr(True))
    _replace(ph, gb.create_convert_layout(ph.result.get_type(), v) if spec else v)


def _lower_local_store(low: Lowering, ph: Placeholder) -> None:
    dst = low.handle(ph, 0, "destination buffer")
    low.builder.create_local_store(dst, ph.tensors[0])


def _lower_stash(low: Lowering, ph: Placeholder) -> None:
    low.stash[ph.uid] = ph.tensors[0]


def _lower_async_load(low: Lowering, ph: Placeholder) -> None:
    dst = low.handle(ph, 0, "destination buffer")
    a = ph.attrs
    gb = low.builder
    ptr = ph.tensors[0]
    mask = ph.tensors[1] if a.get("mask") else None
    other = ph.tensors[2] if a.get("other") else None
    cache, evict, volatile = a.get("cache", ""), a.get("evict", ""), bool(a.get("volatile"))
    route = low.copy_routes.get(id(ph))
    if route == "direct":
        # AMD direct-to-LDS: the copy in the layout Triton's coalescing gives its pointers (copy_probe); the
        # backend's coalesce-async-copy / convert-buffer-ops passes make it an LDS-compatible buffer copy.
        copy = low.copy_layouts.get(id(ph))
        if copy is not None:
            dtype, shape = _dtype(a["dtype"]), list(a["shape"])
            ptr = low.convert(ptr, tl.pointer_type(dtype), shape, copy.layout)
            mask = low.convert(mask, tl.int1, shape, copy.layout) if mask is not None else None
            other = low.convert(other, dtype, shape, copy.layout) if other is not None else None
        compat.create_async_copy(gb, dst, ptr, mask, other, cache, evict, volatile)
        remember_async_alloc(low, ph)
        return
    if ph.uid in low.staged or route == "staged":
        # Too narrow for cp.async (copy_width): a synchronous masked load (masked-off lanes read as 0,
        # or as ``other``, exactly what cp.async's zero fill gives) stored to the same buffer.
        gb.create_local_store(dst, compat.create_global_load(gb, ptr, mask, other, cache, evict, volatile))
        return
    if low.probe and mask is not None:
        ptr = fold_mask_into_pointer(gb, ptr, mask)
    compat.create_async_copy(gb, dst, ptr, mask, other, cache, evict, volatile)
    root = low.fact(ph, 0).get("root")
    if root is not None:
        low.async_allocs[root.id()] = root


def _lower_commit(low: Lowering, ph: Placeholder) -> None:
    low.builder.create_async_commit_group()


def _lower_wait_group(low: Lowering, ph: Placeholder) -> None:
    low.builder.create_async_wait_group(int(ph.attrs["n"]))
    low.wait_counts.append(int(ph.attrs["n"]))


register_lowering("local_alloc")(_lower_local_alloc)
register_lowering("local_view")(_lower_local_view)
register_lowering("local_slice")(_lower_local_slice)
register_lowering("local_load")(_lower_local_load)
register_lowering("local_store")(_lower_local_store)
register_lowering("stash")(_lower_stash)
register_lowering("async_load")(_lower_async_load)
register_lowering("async_load_commit_group")(_lower_commit)
register_lowering("async_load_wait_group")(_lower_wait_group)
