"""Compile-path bodies of the TLX ops: check the arguments, then emit a placeholder.

Why check here: this runs while Triton traces the kernel, so a ``UtlxCompileError`` raised here comes
out as a ``CompilationError`` pointing at the user's source line. Everything that needs the converted
IR (layouts, real TTGIR ops) happens later in :mod:`utlx.compiler.lowering`.

Each body has TLX's parameter names and defaults so that positional and keyword calls bind as in TLX.
"""

from __future__ import annotations

import itertools
from typing import Any

import triton.language as tl
from triton.language import core as tlc

from utlx import compat
from utlx.language._dispatch import register_compiler_impl

from . import cluster_ptx, placeholder, values
from .errors import UtlxCompileError
from .target import Target, from_semantic

# The AMD spelling of each NVIDIA-only op, quoted in the error raised on a HIP target.
AMD_ALTERNATIVES = {
    "async_dot": "on AMD use tl.dot(tlx.local_load(a_view), tlx.local_load(b_view), acc)",
    "async_dot_wait": "on AMD tl.dot is synchronous; drop the wait",
    "alloc_barriers": "AMD has no mbarriers; use the register-staged pipeline (tl.load + tlx.local_store)",
    "barrier_expect_bytes": "AMD has no mbarriers/TMA; use tl.load + tlx.local_store",
    "barrier_wait": "AMD has no mbarriers; use the register-staged pipeline",
    "barrier_arrive": "AMD has no mbarriers; use the register-staged pipeline",
    "async_descriptor_load": "AMD has no TMA; use tl.load + tlx.local_store",
    "async_descriptor_store": "AMD has no TMA; use tlx.local_load + tl.store",
    "fence_async_shared": "AMD needs no async-proxy fence",
    "async_tasks": "warp specialization is Hopper-only; write a single-partition kernel",
    "async_task": "warp specialization is Hopper-only; write a single-partition kernel",
}


def _c(x: Any) -> Any:
    """Unwrap ``constexpr`` (recursively for tuples/lists)."""
    x = tl.core._unwrap_if_constexpr(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_c(v) for v in x)
    if isinstance(x, tl.tuple):
        return tuple(_c(v) for v in x.values)
    return x


def _show(x: Any) -> str:
    """A readable description of an argument for an error message (runtime tensors have no useful repr)."""
    x = _c(x)
    if isinstance(x, tl.tensor):
        kind = f"a tensor of shape {_shape(x)}" if x.type.is_block() else f"a runtime {x.dtype} scalar"
        return f"{kind} (not a compile-time value)"
    if isinstance(x, (tuple, list)):
        return "(" + ", ".join(_show(v) for v in x) + ")"
    return repr(x)


def _shape(t: Any) -> list[int]:
    """``t.shape`` as plain ints (tensor shapes hold ``constexpr``s, which print badly)."""
    return [int(_c(s)) for s in t.shape]


_CONSTEXPR_HINT = "declare the kernel parameter as tl.constexpr (or use a literal)"


def _ints(op: str, name: str, x: Any) -> list[int]:
    x = _c(x)
    if isinstance(x, int):
        x = (x,)
    try:
        out = [int(_c(v)) for v in x]
    except (TypeError, ValueError):
        raise UtlxCompileError(op, f"'{name}' must be a tuple of compile-time ints, got {_show(x)}",
                               hint=_CONSTEXPR_HINT) from None
    if any(v <= 0 for v in out) and name == "shape":
        raise UtlxCompileError(op, f"'{name}' must be positive, got {out}")
    return out


def _nvidia_only(op: str, target: Target, hopper: bool = False) -> None:
    if target.is_hip:
        raise UtlxCompileError(op, "is an NVIDIA-only op and cannot be compiled for AMD", target=target.name,
                               hint=AMD_ALTERNATIVES.get(op))
    if hopper and not target.is_hopper:
        raise UtlxCompileError(op, "needs Hopper (sm_90: wgmma/TMA); compile for cuda:90", target=target.name)


def _i32(_semantic: Any, x: Any, op: str, name: str) -> Any:
    """An i32 scalar ``ir.value`` for an int, constexpr or scalar tensor."""
    x = tl.core._unwrap_if_constexpr(x)
    if isinstance(x, bool):
        x = int(x)
    if isinstance(x, int):
        return _semantic.builder.get_int32(x)
    if isinstance(x, tl.tensor):
        if x.type.is_block():
            raise UtlxCompileError(op, f"'{name}' must be a scalar, got a tensor of shape {list(x.shape)}")
        if not x.dtype.is_int():
            raise UtlxCompileError(op, f"'{name}' must be an integer, got {x.dtype}")
        if x.dtype != tl.int32:
            x = _semantic.cast(x, tl.int32)
        return x.handle
    raise UtlxCompileError(op, f"'{name}' must be an int or an integer scalar, got {type(x).__name__}")


def _i1(_semantic: Any, x: Any, op: str, name: str) -> Any:
    x = tl.core._unwrap_if_constexpr(x)
    if x is None:
        return _semantic.builder.get_int1(True)
    if isinstance(x, (bool, int)):
        return _semantic.builder.get_int1(bool(x))
    if isinstance(x, tl.tensor) and not x.type.is_block():
        if x.dtype != tl.int1:
            x = _semantic.not_equal(x, _semantic.to_tensor(0)) if x.dtype.is_int() else x
        return x.handle
    raise UtlxCompileError(op, f"'{name}' must be a boolean scalar, got {type(x).__name__}")


def _expect(op: str, value: Any, cls: type, name: str) -> Any:
    if not isinstance(value, cls):
        want = {values.SharedBuffers: "the result of tlx.local_alloc", values.SharedView: "a tlx.local_view",
                values.Barriers: "the result of tlx.alloc_barriers",
                values.BarrierView: "one barrier (tlx.local_view of tlx.alloc_barriers)"}.get(cls, cls.__name__)
        raise UtlxCompileError(op, f"'{name}' must be {want}, got {type(value).__name__}")
    return value


def _tl_name(dtype: Any) -> str:
    """``tl.float16`` for fp16: the spelling a user types."""
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                 "float8e4nv", "float8e5"):
        if getattr(tl, name, None) == dtype:
            return f"tl.{name}"
    return str(dtype)


def _dtype_size(dtype: Any) -> int:
    return max(1, dtype.primitive_bitwidth // 8)


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
        from .blackwell import blackwell_error

        raise blackwell_error(op, "tensor memory (storage=tmem)", target)
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
    h = placeholder.emit(_semantic, op, attrs)
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
    try:
        spec = layouts.spec_of(layout, shape, target.warp_size)
    except (TypeError, ValueError) as exc:
        raise UtlxCompileError(op, f"'layout': {exc}") from None
    if spec["kind"] not in layouts.SHARED_KINDS:
        raise UtlxCompileError(op, f"'layout' must be a shared-memory layout (swizzled_layout, swizzled, padded or "
                               f"shared linear), got {type(layout).__name__}")
    if spec["kind"] == "padded" and spec["shape"] != list(shape):
        raise UtlxCompileError(op, f"the padded layout is for shape {spec['shape']} but the buffer is {list(shape)}")
    return spec


def register_layout_spec(op: str, layout: Any, shape: list[int], target: Target, where: str = "") -> dict | None:
    """The spec of an explicit register layout, or None when there is none or stock Triton cannot build it
    (a ``tlx.layout`` that is not a permutation: dropped with a performance warning, values unchanged)."""
    from . import layouts
    from .downgrade import downgrade

    if layout is None:
        return None
    try:
        spec = layouts.spec_of(layout, shape, target.warp_size)
    except (TypeError, ValueError) as exc:
        raise UtlxCompileError(op, f"'layout': {exc}") from None
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
    """Buffer ``buffer_idx`` of a ``local_alloc`` (or one barrier of ``alloc_barriers``)."""
    op = "local_view"
    bufs = local_allocated_buffers
    if not isinstance(bufs, (values.SharedBuffers, values.Barriers)):
        raise UtlxCompileError(op, "first argument must be the result of tlx.local_alloc or tlx.alloc_barriers, "
                               f"got {type(bufs).__name__}")
    idx_c = _c(buffer_idx)
    if isinstance(idx_c, int) and not 0 <= idx_c < bufs.type.num:
        raise UtlxCompileError(op, f"buffer index {idx_c} is out of range for {bufs.type.num} buffers",
                               hint=f"valid indices are 0..{bufs.type.num - 1}; allocate more buffers or wrap the "
                               f"index (i % {bufs.type.num})")
    idx = _i32(_semantic, buffer_idx, op, "buffer_idx")
    kind = "barrier" if isinstance(bufs, values.Barriers) else "view"
    h = placeholder.emit(_semantic, op, {"kind": kind}, handles=[bufs.handle, idx], pure=True)
    return values.make(kind, h, shape=bufs.shape, dtype=bufs.dtype, num=1, group_warps=bufs.type.group_warps)


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
    h = placeholder.emit(_semantic, op, {"offset": off, "shape": shp}, handles=[view.handle], pure=True)
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
    h = placeholder.emit(_semantic, op, attrs, handles=[view.handle], result=ret_ty)
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
    placeholder.emit(_semantic, op, {}, handles=[view.handle], tensors=[src])


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
        raise UtlxCompileError(op, "bulk copies and barrier-tracked async_load are not supported by utlx "
                               "(use tlx.async_descriptor_load for TMA)", target=target.name)
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
    h = placeholder.emit(_semantic, op, {"mask": mask is not None, "other": other is not None,
                                         "cache": str(_c(cache_modifier) or ""),
                                         "evict": str(_c(eviction_policy) or ""), "volatile": bool(_c(is_volatile)),
                                         "dtype": str(view.dtype), "shape": _shape(src)},
                         handles=[view.handle], tensors=tensors)
    return values.make("token", h, shape=view.shape, dtype=tl.int32, carrier=tl.block_type(tl.int32, list(src.shape)))


@register_compiler_impl("async_load_commit_group")
def async_load_commit_group(_semantic: Any, tokens: Any = None) -> values.AsyncToken:
    """Close the current cp.async group (``ttg.async_commit_group``)."""
    op = "async_load_commit_group"
    h = placeholder.emit(_semantic, op, {})
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
    h = placeholder.emit(_semantic, op, {"n": n})
    return values.make("token", h)


# ---------------------------------------------------------------- wgmma


def _mma_instr_n(n: int, wpc_n: int) -> int:
    per = n // wpc_n
    for cand in range(min(256, per), 7, -8):
        if per % cand == 0:
            return cand
    return 8


@register_compiler_impl("async_dot")
def async_dot(_semantic: Any, A: Any, B: Any, acc: Any = None, use_acc: Any = None, pred: Any = None,
              mBarriers: Any = None, two_ctas: Any = False, force_async: Any = False, input_precision: Any = None,
              out_dtype: Any = tl.float32) -> tl.tensor:
    """Asynchronous warpgroup MMA ``acc + A @ B`` (Hopper ``wgmma.mma_async``); A may live in registers."""
    op = "async_dot"
    target = from_semantic(_semantic)
    _nvidia_only(op, target, hopper=True)
    if _c(mBarriers) or _c(two_ctas):
        from .blackwell import blackwell_error

        feature = "tcgen05 completion barriers (mBarriers)" if _c(mBarriers) else "2-CTA MMA (two_ctas)"
        raise blackwell_error(op, feature, target)
    if _c(pred) is not None:
        raise UtlxCompileError(op, "'pred' is not supported on Hopper", target=target.name)
    b = _expect(op, B, values.SharedView, "B")
    a_reg = isinstance(A, tl.tensor)
    if not a_reg:
        _expect(op, A, values.SharedView, "A")
    a_shape, a_dtype = (_shape(A), A.dtype)
    if len(a_shape) != 2 or len(b.shape) != 2:
        raise UtlxCompileError(op, f"A and B must be 2-D, got {a_shape} and {list(b.shape)}")
    M, K = a_shape
    K2, N = b.shape
    if K != K2:
        raise UtlxCompileError(op, f"shape mismatch: A is {M}x{K} but B is {K2}x{N} (inner dimensions differ)")
    if a_dtype != b.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: A is {a_dtype}, B is {b.dtype}")
    nw = target.num_warps
    if nw % 4:
        raise UtlxCompileError(op, f"wgmma needs num_warps to be a multiple of 4, got {nw}", target=target.name)
    if M % 64:
        raise UtlxCompileError(op, f"wgmma needs M to be a multiple of 64, got M={M}")
    out_dtype = _c(out_dtype) or tl.float32
    acc = _c(acc)
    no_acc = acc is None
    if no_acc:
        # TLX: without an accumulator the dot starts from zero. wgmma ignores the accumulator registers
        # when use_acc is false (scale-d = 0), so the zeros are never read.
        acc = _semantic.full([M, N], 0, out_dtype)
    if not isinstance(acc, tl.tensor) or not acc.type.is_block() or _shape(acc) != [M, N]:
        got = "x".join(map(str, _shape(acc))) if isinstance(acc, tl.tensor) and acc.type.is_block() else _show(acc)
        raise UtlxCompileError(op, f"acc must be a {M}x{N} tensor (A is {M}x{K}, B is {K2}x{N}), got {got}",
                               hint=f"start from tl.zeros(({M}, {N}), tl.float32)")
    if acc.dtype not in (tl.float32, tl.float16, tl.int32):
        raise UtlxCompileError(op, f"acc dtype {acc.dtype} is not a wgmma accumulator type (fp32, fp16, int32)")
    bits = a_dtype.primitive_bitwidth
    # Warps along M first (16 rows per warp), then N: Triton's warpsPerTileV3 rule.
    wpc = [4, 1]
    while wpc[0] * wpc[1] < nw:
        if M > 16 * wpc[0]:
            wpc[0] *= 2
        else:
            wpc[1] *= 2
    instr = [16, _mma_instr_n(N, wpc[1]), 256 // bits]
    precision = str(_c(input_precision) or getattr(_semantic.builder.options, "default_dot_input_precision", "tf32"))
    max_imprecise = 0
    if a_dtype.is_fp8():
        max_imprecise = int(getattr(_semantic.builder.options, "max_num_imprecise_acc_default", 0) or 0)
    attrs = {"a_reg": a_reg, "M": M, "N": N, "K": K, "dtype": str(a_dtype), "acc_dtype": str(acc.dtype),
             "wpc": wpc, "instr": instr, "precision": precision, "max_imprecise": max_imprecise}
    handles = [b.handle]
    if a_reg:
        attrs["a_stash"] = _stash(_semantic, A)
    else:
        handles.insert(0, A.handle)
    use_acc_c = _c(use_acc)
    if no_acc and use_acc_c is None:
        handles.append(_semantic.builder.get_int1(False))
        attrs["use_acc"] = True
    elif use_acc_c is not None:
        handles.append(_i1(_semantic, use_acc, op, "use_acc"))
        attrs["use_acc"] = True
    h = placeholder.emit(_semantic, op, attrs, handles=handles, tensors=[acc], result=acc.type)
    return tl.tensor(h, acc.type)


def _stash(_semantic: Any, t: tl.tensor) -> int:
    """Pass tensor ``t`` to the next placeholder by uid (placeholder tensors must share one shape)."""
    placeholder.emit(_semantic, "stash", {}, tensors=[t])
    return placeholder.last_uid


@register_compiler_impl("async_dot_wait")
def async_dot_wait(_semantic: Any, pendings: Any, inp: Any) -> tl.tensor:
    """Wait until at most ``pendings`` wgmma groups are in flight; returns ``inp`` made safe to read."""
    op = "async_dot_wait"
    target = from_semantic(_semantic)
    _nvidia_only(op, target, hopper=True)
    n = _c(pendings)
    if not isinstance(n, int) or n < 0:
        raise UtlxCompileError(op, f"'pendings' must be a compile-time int >= 0, got {_show(n)}",
                               hint="0 waits for every wgmma group; 1 keeps the last one in flight"
                               if isinstance(n, int) else _CONSTEXPR_HINT)
    if not isinstance(inp, tl.tensor) or not inp.type.is_block():
        raise UtlxCompileError(op, f"'inp' must be the accumulator tensor returned by tlx.async_dot, got {inp!r}")
    h = placeholder.emit(_semantic, op, {"n": n}, tensors=[inp], result=inp.type)
    return tl.tensor(h, inp.type)


@register_compiler_impl("fence_async_shared")
def fence_async_shared(_semantic: Any) -> None:
    """Order generic-proxy shared-memory writes before async-proxy reads (``fence.proxy.async``)."""
    op = "fence_async_shared"
    _nvidia_only(op, from_semantic(_semantic))
    placeholder.emit(_semantic, op, {})


# ---------------------------------------------------------------- mbarriers


@register_compiler_impl("alloc_barriers")
def alloc_barriers(_semantic: Any, num_barriers: Any, arrive_count: Any = 1) -> values.Barriers:
    """``num_barriers`` initialised mbarriers in shared memory, each expecting ``arrive_count`` arrivals."""
    op = "alloc_barriers"
    _nvidia_only(op, from_semantic(_semantic))
    n = _c(num_barriers)
    count = _c(arrive_count)
    if not isinstance(n, int) or n < 1:
        raise UtlxCompileError(op, f"'num_barriers' must be a compile-time int >= 1, got {n!r}")
    if not isinstance(count, int) or count < 1:
        raise UtlxCompileError(op, f"'arrive_count' must be a compile-time int >= 1, got {count!r}")
    h = placeholder.emit(_semantic, op, {"num": n, "count": count})
    return values.make("barriers", h, shape=(1,), dtype=tl.int64, num=n)


def _barrier(op: str, bar: Any) -> values.BarrierView:
    return _expect(op, bar, values.BarrierView, "bar")


@register_compiler_impl("barrier_expect_bytes")
def barrier_expect_bytes(_semantic: Any, bar: Any, size: Any, pred: Any = None) -> None:
    """Tell ``bar`` to expect ``size`` bytes of TMA traffic before its phase completes."""
    op = "barrier_expect_bytes"
    _nvidia_only(op, from_semantic(_semantic))
    b = _barrier(op, bar)
    nbytes = _c(size)
    if not isinstance(nbytes, int) or nbytes <= 0:
        raise UtlxCompileError(op, f"'size' must be a positive compile-time int, got {nbytes!r}")
    placeholder.emit(_semantic, op, {"size": nbytes}, handles=[b.handle, _i1(_semantic, pred, op, "pred")])


@register_compiler_impl("barrier_wait")
def barrier_wait(_semantic: Any, bar: Any, phase: Any, pred: Any = None) -> None:
    """Wait until ``bar`` completes phase ``phase`` (0 or 1)."""
    op = "barrier_wait"
    _nvidia_only(op, from_semantic(_semantic))
    b = _barrier(op, bar)
    ph = _c(phase)
    if isinstance(ph, int) and ph not in (0, 1):
        raise UtlxCompileError(op, f"'phase' must be 0 or 1, got {ph}")
    placeholder.emit(_semantic, op, {}, handles=[b.handle, _i32(_semantic, phase, op, "phase"),
                                                 _i1(_semantic, pred, op, "pred")])


@register_compiler_impl("barrier_arrive")
def barrier_arrive(_semantic: Any, bar: Any, arrive_count: Any = 1, remote_cta_rank: Any = None,
                   pred: Any = None) -> None:
    """Arrive ``arrive_count`` times on ``bar`` (only when ``pred`` is true, when given)."""
    op = "barrier_arrive"
    _nvidia_only(op, from_semantic(_semantic))
    b = _barrier(op, bar)
    _check_warp_barrier_arrive(_semantic, b)
    count = _c(arrive_count)
    if not isinstance(count, int) or count < 1:
        raise UtlxCompileError(op, f"'arrive_count' must be a compile-time int >= 1, got {count!r}")
    remote = _c(remote_cta_rank) is not None
    if remote:  # the same barrier in cluster CTA `remote_cta_rank` (mapa + a shared::cluster arrive)
        uid = _cluster_mark(_semantic, op, "remote_arrive", _cluster_rank(_semantic, remote_cta_rank, op))
    placeholder.emit(_semantic, op, {"count": count}, handles=[b.handle, _i1(_semantic, pred, op, "pred")])
    if remote:
        _cluster_mark(_semantic, op, "end", uid=uid)


#: Ids of cluster markers, unique within a process (see :func:`_cluster_mark`).
_MARKER_IDS = itertools.count()


def _cluster_rank(_semantic: Any, rank: Any, op: str) -> Any:
    """An i32 CTA rank within the cluster (0..15: a 16-bit CTA mask is the widest PTX has)."""
    r = _c(rank)
    if isinstance(r, int) and not isinstance(r, bool) and not 0 <= r < 16:
        raise UtlxCompileError(op, f"a cluster CTA rank must be in 0..15, got {r}")
    return _i32(_semantic, rank, op, "remote_cta_rank")


def _cluster_mark(_semantic: Any, op: str, kind: str, operand: Any = None, uid: int | None = None) -> int:
    """A :mod:`utlx.compiler.cluster_ptx` marker: the next stock instruction becomes its cluster form.

    A begin marker takes a fresh id and returns it; its ``end`` marker carries the same ``uid``. Why ids: two
    markers with the same text on both arms of a branch (one multicast load per CTA rank, say) are identical
    side-effecting instructions, and LLVM hoists them above the branch (or sinks the ends below it), which
    leaves begin and end markers in different blocks. Distinct texts cannot be merged.
    """
    target = from_semantic(_semantic)
    _nvidia_only(op, target)
    if target.capability < 90:
        raise UtlxCompileError(op, "cluster forms (multicast, remote arrivals) need sm_90 or newer",
                               target=target.name)
    b = _semantic.builder
    operands, constraints = ([operand], "=r,r") if operand is not None else ([], "=r")
    uid = next(_MARKER_IDS) if uid is None else uid
    b.create_inline_asm(cluster_ptx.marker(kind, uid), constraints, operands, [b.get_int32_ty()], False, 1)
    return uid


def _check_warp_barrier_arrive(_semantic: Any, bar: values.BarrierView) -> None:
    """A barrier of ``alloc_warp_barrier(num_warps=n)`` counts one arrival per call of an n-warp group.

    Why: utlx initialises it with ``num_arrivals`` and each call arrives once (Triton's ``arrive_barrier``:
    one elected thread of the calling warps), which completes the phase when TLX's per-thread arrivals
    would, provided the caller runs on exactly ``num_warps`` warps.
    """
    from .tasks import current_num_warps

    want = bar.type.group_warps
    if not want:
        return
    have = current_num_warps(_semantic)
    if have != want:
        raise UtlxCompileError("barrier_arrive", f"this warp barrier was allocated for {want} arriving warps "
                               f"(alloc_warp_barrier(num_warps={want})) but the calling task runs on {have} warps",
                               hint=f"allocate it with num_warps={have}, or arrive from a task on {want} warps")


@register_compiler_impl("alloc_warp_barrier")
def alloc_warp_barrier(_semantic: Any, num_barriers: Any, num_warps: Any = 1, num_arrivals: Any = 1) -> values.Barriers:
    """mbarriers on which every thread of ``num_warps`` warps arrives, ``num_arrivals`` times per phase.

    Lowered as ordinary mbarriers expecting ``num_arrivals`` arrivals: a ``barrier_arrive`` from a
    ``num_warps``-warp task arrives once (see ``_check_warp_barrier_arrive``).
    """
    op = "alloc_warp_barrier"
    _nvidia_only(op, from_semantic(_semantic))
    nw, arrivals = _c(num_warps), _c(num_arrivals)
    for name, v in (("num_warps", nw), ("num_arrivals", arrivals)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise UtlxCompileError(op, f"'{name}' must be a compile-time int >= 1, got {_show(v)}")
    bars = alloc_barriers(_semantic, num_barriers, arrivals)
    return values.make("barriers", bars.handle, shape=(1,), dtype=tl.int64, num=bars.type.num, group_warps=nw)


# ---------------------------------------------------------------- TMA


def _desc_anchor(_semantic: Any, op: str, desc: Any, offsets: Any, shape: tuple[int, ...]) -> tl.tensor:
    """A ``tt.descriptor_load`` of ``desc`` at ``offsets``: carries descriptor and coordinates to the lowering.

    Why: a tensor descriptor cannot be an operand of the placeholder op; the lowering reads descriptor and
    coordinates back from this load, and the load dies with the placeholder (it is never executed).
    """
    if not isinstance(desc, tlc.tensor_descriptor_base):
        raise UtlxCompileError(op, f"'desc' must be a tensor descriptor, got {type(desc).__name__}")
    block = list(desc.block_shape)
    if [int(_c(x)) for x in block] != list(shape):
        raise UtlxCompileError(op, f"shape mismatch: descriptor block {block} vs buffer {list(shape)}")
    offs = _c(offsets)
    offs = list(offs) if isinstance(offs, (list, tuple)) else [offs]
    if len(offs) != len(block):
        raise UtlxCompileError(op, f"'offsets' needs {len(block)} coordinates, got {len(offs)}")
    return compat.descriptor_load(_semantic, desc, offs)


@register_compiler_impl("async_descriptor_load")
def async_descriptor_load(_semantic: Any, desc: Any, result: Any, offsets: Any, barrier: Any, pred: Any = None,
                          cache_modifier: Any = "", eviction_policy: Any = "", multicast_targets: Any = None,
                          two_ctas: Any = False) -> None:
    """TMA copy of the block at ``offsets`` into buffer ``result``; completion is counted on ``barrier``."""
    op = "async_descriptor_load"
    target = from_semantic(_semantic)
    _nvidia_only(op, target, hopper=True)
    view = _expect(op, result, values.SharedView, "result")
    bar = _barrier(op, barrier)
    if _c(two_ctas):
        raise UtlxCompileError(op, "two_ctas (cta_group::2) TMA needs sm_100", target=target.name,
                               hint="on Hopper, share a box between the CTAs of a cluster with multicast_targets")
    if desc.dtype != view.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: descriptor {desc.dtype} vs buffer {view.dtype}")
    targets = _c(multicast_targets)
    mask = _multicast_mask(_semantic, targets, op) if targets else None
    anchor = _desc_anchor(_semantic, op, desc, offsets, view.shape)
    if mask is not None:  # the box lands at the same offset in every target CTA (cluster_ptx)
        uid = _cluster_mark(_semantic, op, "multicast", mask)
    placeholder.emit(_semantic, op, {}, handles=[view.handle, bar.handle, _i1(_semantic, pred, op, "pred")],
                     tensors=[anchor])
    if mask is not None:
        _cluster_mark(_semantic, op, "end", uid=uid)


def _multicast_mask(_semantic: Any, targets: Any, op: str) -> Any:
    """The 16-bit CTA mask of ``multicast_targets`` (cluster ranks: ints, or int scalars known at run time)."""
    if not isinstance(targets, (list, tuple)):
        targets = [targets]
    const = [t for t in targets if isinstance(t, int)]
    if len(set(const)) != len(const):
        raise UtlxCompileError(op, f"multicast_targets names a CTA twice: {list(targets)}")
    mask = 0
    for t in const:
        _cluster_rank(_semantic, t, op)
        mask |= 1 << t
    value = _semantic.to_tensor(mask)
    for t in targets:
        if not isinstance(t, int):
            r = tl.tensor(_cluster_rank(_semantic, t, op), tl.int32)
            value = _semantic.or_(value, _semantic.shl(_semantic.to_tensor(1), r))
    return value.handle


@register_compiler_impl("async_descriptor_store")
def async_descriptor_store(_semantic: Any, desc: Any, source: Any, offsets: Any, eviction_policy: Any = "",
                           store_reduce: Any = "") -> None:
    """TMA copy of buffer ``source`` to the block at ``offsets`` (wait with async_descriptor_store_wait)."""
    op = "async_descriptor_store"
    target = from_semantic(_semantic)
    _nvidia_only(op, target, hopper=True)
    view = _expect(op, source, values.SharedView, "source")
    if _c(store_reduce):
        raise UtlxCompileError(op, "store_reduce is not supported by utlx", target=target.name)
    anchor = _desc_anchor(_semantic, op, desc, offsets, view.shape)
    placeholder.emit(_semantic, op, {}, handles=[view.handle], tensors=[anchor])


@register_compiler_impl("async_descriptor_store_wait")
def async_descriptor_store_wait(_semantic: Any, pendings: Any) -> None:
    """Wait until at most ``pendings`` TMA stores still read shared memory."""
    op = "async_descriptor_store_wait"
    _nvidia_only(op, from_semantic(_semantic), hopper=True)
    n = _c(pendings)
    if not isinstance(n, int) or n < 0:
        raise UtlxCompileError(op, f"'pendings' must be a compile-time int >= 0, got {n!r}")
    placeholder.emit(_semantic, op, {"n": n})
