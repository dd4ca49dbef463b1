"""AMD-only TLX ops: buffer loads/stores/atomics, direct-to-LDS copies, and AMD scheduling hints.

Buffer ops address memory through a buffer resource built on a wave-uniform scalar base (``ptr``) plus
i32 element offsets; Triton has them as ``amdg.buffer_load`` / ``buffer_store`` / ``buffer_atomic_rmw`` /
``buffer_load_to_local``, built here with Gluon's builder after the TTIR -> TTGIR conversion. Each is
built in the register layout Triton's own coalescing would give its addresses (``copy_probe``), so a
``buffer_load`` of contiguous fp16 rows is one ``buffer_load_dwordx4`` per lane, not eight ``ushort`` loads.

``buffer_load_to_local`` (and ``async_load`` on AMD, in ``ops.py``) copy global memory straight into LDS
on gfx950 (``buffer_load_dwordx4 ... lds``). Two routes, both stock Triton:

* by default, a ``ttg.async_copy_global_to_local`` of ``splat(base) + offsets`` in the probed layout: the AMD
  backend's own passes make it an LDS-compatible buffer copy (``tritonamdgpu-coalesce-async-copy``,
  ``tritonamdgpu-convert-buffer-ops``), as for Gluon kernels;
* when the offsets were pinned with ``require_layout`` to a layout stock can build, the
  ``amdg.buffer_load_to_local`` op itself, in that layout (what the a4w4 scale copies need).

Where a direct copy cannot be built (gfx942: CDNA3's LDS DMA is 4 bytes per lane and stock enables async
copies on gfx950 and gfx1250 only; a layout stock cannot build; fewer than 4 bytes per lane), the copy is
staged through registers (a ``buffer_load`` or ``tt.load`` then ``ttg.local_store``): the same values land in
the buffer, synchronously, with a ``UtlxPerformanceWarning`` (``downgrade``).

Hints (``warp_pipeline_stage``, ``amd_sched_barrier``, ``assume_uniform``, the MFMA scheduling and register
ops) compile to the stock construct that has the same effect when there is one, and otherwise to nothing
with a warning: they never change a result.
"""

from __future__ import annotations

import re
from typing import Any

import triton.language as tl

from utlx import compat
from utlx.compiler.common import layouts, values
from utlx.compiler.common import placeholders as placeholder
from utlx.compiler.common.args import _c, _expect, _show
from utlx.compiler.common.downgrade import downgrade
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.global_ops import check_prefetch
from utlx.compiler.common.lowering import Lowering, register_lowering, remember_async_alloc
from utlx.compiler.common.placeholders import Placeholder, dtype_of_name
from utlx.compiler.common.target import Target, from_semantic
from utlx.language._dispatch import register_compiler_impl

LOAD_CACHE = ("", ".ca", ".cg", ".cv")
STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
SEMANTICS = ("acq_rel", "acquire", "release", "relaxed")
SCOPES = ("gpu", "cta", "sys")
#: Targets whose LDS can be written by direct-to-LDS copies of 4 and 16 bytes per lane that stock lowers.
DIRECT_TO_LDS = ("hip:gfx950",)


def _scalar_pointer(op: str, ptr: Any) -> Any:
    ptr = _c(ptr)
    if not isinstance(ptr, tl.tensor) or ptr.type.is_block() or not ptr.dtype.is_ptr():
        raise UtlxCompileError(op, f"'ptr' must be a scalar pointer (the buffer's base), got {_show(ptr)}",
                               hint="pass the base pointer and put the per-element part in 'offsets'")
    return ptr


def _offsets(op: str, offsets: Any) -> tl.tensor:
    offsets = _c(offsets)
    if not isinstance(offsets, tl.tensor) or not offsets.type.is_block() or offsets.dtype not in (tl.int32, tl.uint32):
        raise UtlxCompileError(op, f"'offsets' must be a tensor of int32 element offsets, got {_show(offsets)}",
                               hint="cast with offsets.to(tl.int32)")
    return offsets


def _cache(op: str, name: str, value: Any, allowed: tuple[str, ...]) -> str:
    text = _c(value) or ""
    if text not in allowed:
        raise UtlxCompileError(op, f"'{name}' must be one of {list(allowed)}, got {text!r}")
    return text


def _contiguity(op: str, value: Any) -> int:
    n = _c(value)
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0 or n & (n - 1):
        raise UtlxCompileError(op, f"'contiguity' must be a positive power of two, got {_show(value)}")
    return n


def _operands(_semantic: Any, op: str, offsets: tl.tensor, elem: Any, mask: Any = None, other: Any = None,
              value: Any = None) -> tuple[list[tl.tensor], dict]:
    """``[value?, offsets, mask?, other?]`` broadcast to one shape (placeholder operands share a shape)."""
    mask, other, value = _c(mask), _c(other), _c(value)
    if other is not None and mask is None:
        raise UtlxCompileError(op, "'other' needs a 'mask' (it is what masked-off lanes read)")
    parts: dict[str, tl.tensor] = {"offsets": offsets}
    if value is not None:
        parts["value"] = _semantic.cast(_semantic.to_tensor(value) if not isinstance(value, tl.tensor) else value, elem)
    if mask is not None:
        m = _semantic.to_tensor(mask) if not isinstance(mask, tl.tensor) else mask
        parts["mask"] = _semantic.cast(m, tl.int1) if m.dtype != tl.int1 else m
    if other is not None:
        parts["other"] = _semantic.cast(_semantic.to_tensor(other) if not isinstance(other, tl.tensor) else other, elem)
    for key in [k for k in parts if k != "offsets"]:
        parts["offsets"], parts[key] = _semantic.broadcast_impl_value(parts["offsets"], parts[key])
    shape = [int(_c(s)) for s in parts["offsets"].shape]
    out = {k: t if [int(_c(s)) for s in t.shape] == shape else _semantic.broadcast_impl_shape(t, shape)
           for k, t in parts.items()}
    ordered = [out[k] for k in ("value", "offsets", "mask", "other") if k in out]
    attrs = {"mask": "mask" in out, "other": "other" in out, "shape": shape, "dtype": str(elem)}
    return ordered, attrs


# ---------------------------------------------------------------- trace time: buffer ops


@register_compiler_impl("buffer_load", "hip")
def buffer_load(_semantic: Any, ptr: Any, offsets: Any, mask: Any = None, other: Any = None, cache: Any = None,
                contiguity: Any = 1) -> tl.tensor:
    """``ptr[offsets]`` into registers through an AMD buffer resource (``amdg.buffer_load``)."""
    op = "buffer_load"
    base = _scalar_pointer(op, ptr)
    elem = base.dtype.element_ty
    tensors, attrs = _operands(_semantic, op, _offsets(op, offsets), elem, mask, other)
    attrs.update(cache=_cache(op, "cache", cache, LOAD_CACHE), contiguity=_contiguity(op, contiguity))
    ret = tl.block_type(elem, attrs["shape"])
    h = placeholder.emit(_semantic, op, attrs, handles=[base.handle], tensors=tensors, result=ret)
    return tl.tensor(h, ret)


@register_compiler_impl("buffer_store", "hip")
def buffer_store(_semantic: Any, stored_value: Any, ptr: Any, offsets: Any, mask: Any = None,
                 cache: Any = None) -> None:
    """``ptr[offsets] = stored_value`` through an AMD buffer resource (``amdg.buffer_store``)."""
    op = "buffer_store"
    base = _scalar_pointer(op, ptr)
    tensors, attrs = _operands(_semantic, op, _offsets(op, offsets), base.dtype.element_ty, mask, value=stored_value)
    attrs["cache"] = _cache(op, "cache", cache, STORE_CACHE)
    placeholder.emit(_semantic, op, attrs, handles=[base.handle], tensors=tensors)


@register_compiler_impl("buffer_atomic_add", "hip")
def buffer_atomic_add(_semantic: Any, ptr: Any, offsets: Any, value: Any, mask: Any = None, sem: Any = None,
                      scope: Any = None, contiguity: Any = 1) -> tl.tensor:
    """``ptr[offsets] += value`` through an AMD buffer resource (``amdg.buffer_atomic_rmw``); the old values."""
    op = "buffer_atomic_add"
    base = _scalar_pointer(op, ptr)
    elem = base.dtype.element_ty
    if not (elem.is_floating() and elem.primitive_bitwidth >= 16 and not elem.is_fp8()) and elem not in (
            tl.int32, tl.int64):
        raise UtlxCompileError(op, f"supports f16, bf16, f32, f64, i32 and i64 elements, got {elem}")
    tensors, attrs = _operands(_semantic, op, _offsets(op, offsets), elem, mask, value=value)
    sem_c, scope_c = _c(sem) or "acq_rel", _c(scope) or "gpu"
    if sem_c not in SEMANTICS or scope_c not in SCOPES:
        raise UtlxCompileError(op, f"sem must be one of {list(SEMANTICS)} and scope one of {list(SCOPES)}, got "
                               f"{sem_c!r}, {scope_c!r}")
    attrs.update(sem=sem_c, scope=scope_c, contiguity=_contiguity(op, contiguity))
    ret = tl.block_type(elem, attrs["shape"])
    h = placeholder.emit(_semantic, op, attrs, handles=[base.handle], tensors=tensors, result=ret)
    return tl.tensor(h, ret)


@register_compiler_impl("buffer_load_to_local", "hip")
def buffer_load_to_local(_semantic: Any, dest: Any, ptr: Any, offsets: Any, mask: Any = None, other: Any = None,
                         cache_modifier: Any = "") -> values.AsyncToken:
    """Copy ``ptr[offsets]`` straight into buffer ``dest`` (asynchronous; commit and wait it like async_load)."""
    op = "buffer_load_to_local"
    target = from_semantic(_semantic)
    view = _expect(op, dest, values.SharedView, "dest")
    base = _scalar_pointer(op, ptr)
    if base.dtype.element_ty != view.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: pointer to {base.dtype.element_ty} vs buffer {view.dtype}",
                               hint="direct-to-LDS copies move bytes without converting")
    tensors, attrs = _operands(_semantic, op, _offsets(op, offsets), view.dtype, mask, other)
    if attrs["shape"] != list(view.shape):
        raise UtlxCompileError(op, f"shape mismatch: offsets {attrs['shape']} vs buffer {list(view.shape)}")
    attrs.update(cache=_cache(op, "cache_modifier", cache_modifier, LOAD_CACHE), target=target.name)
    h = placeholder.emit(_semantic, op, attrs, handles=[view.handle, base.handle], tensors=tensors)
    return values.make("token", h, shape=view.shape, dtype=tl.int32,
                       carrier=tl.block_type(tl.int32, attrs["shape"]))


# ---------------------------------------------------------------- trace time: hints


@register_compiler_impl("assume_uniform")
def assume_uniform(_semantic: Any, value: Any) -> tl.tensor:
    """``value``, read from the first lane (``v_readfirstlane``) on AMD when it comes from memory.

    Why only then: a scalar computed from kernel arguments and program ids is already wave-uniform for LLVM,
    and Triton's alignment analysis still sees through it (so buffer ops on it stay vectorised); an inline-asm
    ``v_readfirstlane`` would hide that. A value loaded from memory (the per-group base pointers of a grouped
    GEMM) is where LLVM cannot prove uniformity and falls back to a waterfall loop per access; there the
    read-first-lane keeps it in scalar registers, as Meta's fork's ``amdg.assume_uniform`` does.
    """
    op = "assume_uniform"
    value = _c(value)
    if not isinstance(value, tl.tensor) or value.type.is_block():
        raise UtlxCompileError(op, f"'value' must be a scalar, got {_show(value)}")
    ty = value.dtype
    if not ty.is_ptr() and ty.primitive_bitwidth < 16:
        raise UtlxCompileError(op, f"expects a scalar pointer or a 16/32/64-bit value, got {ty}")
    if not from_semantic(_semantic).is_hip:
        return value
    h = placeholder.emit(_semantic, op, {"bits": 64 if ty.is_ptr() else ty.primitive_bitwidth}, handles=[value.handle],
                         result=ty)
    return tl.tensor(h, ty)


@register_compiler_impl("amd_sched_barrier", "hip")
def amd_sched_barrier(_semantic: Any, mask: Any = 0) -> None:
    """A scheduling fence (``llvm.amdgcn.sched.barrier``) where this Triton can build one (3.9)."""
    op = "amd_sched_barrier"
    target = from_semantic(_semantic)
    m = _c(mask)
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= 0xFFF:
        raise UtlxCompileError(op, f"'mask' must be a compile-time int in 0..0xFFF, got {_show(mask)}")
    if not compat.gluon_builder_has("create_amd_sched_barrier"):
        downgrade(op, "stock Triton before 3.9 cannot build a scheduling fence; it is left out (the schedule "
                  "may differ, results do not)", target=target.name)
        return
    placeholder.emit(_semantic, op, {"mask": m})


@register_compiler_impl("warp_pipeline_stage", "hip")
def warp_pipeline_stage(_semantic: Any, stage: Any, event: str) -> None:
    """``with tlx.warp_pipeline_stage(...)``: a stage border after the body (``utlx.language.warp_pipeline``)."""
    op = "warp_pipeline_stage"
    target = from_semantic(_semantic)
    if event != "exit":
        return
    if not compat.gluon_builder_has("create_warp_pipeline_border"):
        downgrade(op, "stock Triton 3.6 has no warp pipeline; the stages run as one (the schedule differs, "
                  "results do not)", target=target.name)
        return
    placeholder.emit(_semantic, "warp_pipeline_border", {
        "label": stage.label if stage.label is not None else "cluster",
        "priority": -1 if stage.priority is None else int(stage.priority)})


def _register_hint(op: str, what: str, target: Target) -> None:
    downgrade(op, f"{what} has no stock Triton equivalent; compiled without it (results are the same)",
              target=target.name)


def _distributed(op: str, value: Any, name: str = "value") -> tl.tensor:
    value = _c(value)
    if not isinstance(value, tl.tensor) or not value.type.is_block():
        raise UtlxCompileError(op, f"'{name}' must be a distributed tensor, got {_show(value)}")
    return value


def _check_register_value(op: str, value: tl.tensor, register_class: Any) -> None:
    if not (value.dtype.is_int() or value.dtype.is_floating()) or value.dtype.primitive_bitwidth not in (16, 32):
        raise UtlxCompileError(op, f"value elements must be 16 or 32-bit integers or floats, got {value.dtype}")
    if _c(register_class) not in ("agpr", "vgpr"):
        raise UtlxCompileError(op, f"register_class must be 'agpr' or 'vgpr', got {_show(register_class)}")


@register_compiler_impl("amd_register_resident")
def amd_register_resident(_semantic: Any, value: Any, register_class: Any = "agpr",
                          registers_per_group: Any = 1) -> tl.tensor:
    """``value`` (a register-residency contract of Meta's fork; a hint here)."""
    op = "amd_register_resident"
    v = _distributed(op, value)
    _check_register_value(op, v, register_class)
    n = _c(registers_per_group)
    if isinstance(n, bool) or n not in (1, 2, 4, 8, 16, 32):
        raise UtlxCompileError(op, f"registers_per_group must be a power of two in 1..32, got {_show(n)}")
    _register_hint(op, "a register-residency contract", from_semantic(_semantic))
    return v


@register_compiler_impl("amd_register_handoff")
def amd_register_handoff(_semantic: Any, value: Any, register_class: Any = "vgpr") -> tl.tensor:
    """``value`` (a register-allocation boundary of Meta's fork; a hint here)."""
    op = "amd_register_handoff"
    v = _distributed(op, value)
    _check_register_value(op, v, register_class)
    _register_hint(op, "a register-allocation boundary", from_semantic(_semantic))
    return v


@register_compiler_impl("amd_scheduled_mfma")
def amd_scheduled_mfma(_semantic: Any, a: Any, b: Any, acc: Any, accumulator_role: Any, resident_operand: Any = None,
                       accumulator_register_class: Any = None, initialize: Any = False) -> tl.tensor:
    """``acc + a @ b`` (``a @ b`` with ``initialize``) as ``tl.dot``; issue order and registers are hints."""
    op = "amd_scheduled_mfma"
    a, b, acc = (_distributed(op, x, n) for x, n in ((a, "a"), (b, "b"), (acc, "acc")))
    role, resident, reg_class, init = (_c(x) for x in (accumulator_role, resident_operand,
                                                       accumulator_register_class, initialize))
    if role not in ("transient", "persistent"):
        raise UtlxCompileError(op, f"accumulator_role must be 'transient' or 'persistent', got {role!r}")
    if resident is not None and (isinstance(resident, bool) or resident not in (0, 1)):
        raise UtlxCompileError(op, f"resident_operand must be None, 0 or 1, got {resident!r}")
    if reg_class not in (None, "agpr", "vgpr"):
        raise UtlxCompileError(op, f"accumulator_register_class must be None, 'agpr' or 'vgpr', got {reg_class!r}")
    if not isinstance(init, bool):
        raise UtlxCompileError(op, f"initialize must be a compile-time bool, got {init!r}")
    target = from_semantic(_semantic)
    _register_hint(op, "MFMA issue order and accumulator register class", target)
    start = _semantic.full([int(_c(s)) for s in acc.shape], 0, acc.dtype) if init else acc
    return tl.dot(a, b, start, out_dtype=acc.dtype, _semantic=_semantic)


@register_compiler_impl("amd_mfma_commit")
def amd_mfma_commit(_semantic: Any, value: Any, preserve: Any = None) -> Any:
    """``value`` (and ``preserve``) unchanged: an MFMA-result boundary of Meta's fork."""
    op = "amd_mfma_commit"
    value, preserve = _c(value), _c(preserve)
    single = isinstance(value, tl.tensor)
    items = (value,) if single else tuple(value.values) if isinstance(value, tl.tuple) else value
    if not isinstance(items, tuple) or not items or not all(isinstance(v, tl.tensor) for v in items):
        raise UtlxCompileError(op, f"'value' must be a tensor or a non-empty tuple of tensors, got {_show(value)}")
    if preserve is not None and not isinstance(preserve, tl.tensor):
        raise UtlxCompileError(op, f"'preserve' must be None or a tensor, got {_show(preserve)}")
    if preserve is None:
        return value if single else tl.tuple(list(items))
    if single:
        return tl.tuple([value, preserve])
    return tl.tuple([*items, preserve])


def _tdm(op: str) -> Any:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        raise UtlxCompileError(op, "AMD TDM tensor-descriptor copies (gfx1250) are not implemented by utlx",
                               target=from_semantic(_semantic).name,
                               hint="on gfx942/gfx950 use tlx.buffer_load_to_local or tlx.async_load")

    body.__name__ = op
    return body


for _op in ("update_tensor_descriptor", "async_amd_descriptor_load", "async_amd_descriptor_load_fused",
            "async_amd_descriptor_store", "amd_descriptor_prefetch_tensor", "async_amd_descriptor_wait"):
    register_compiler_impl(_op)(_tdm(_op))
del _op


# ---------------------------------------------------------------- lowering


def _null(value: Any | None) -> Any:
    from triton._C.libtriton import ir

    return ir.value() if value is None else value


def _parts(ph: Placeholder) -> dict[str, Any]:
    """The operands of a buffer-op placeholder by name (see :func:`_operands`)."""
    names = [n for n, present in (("value", ph.name in ("buffer_store", "buffer_atomic_add")), ("offsets", True),
                                  ("mask", ph.attrs.get("mask")), ("other", ph.attrs.get("other"))) if present]
    return dict(zip(names, ph.tensors, strict=True))


def _in_layout(low: Lowering, parts: dict[str, Any], layout: Any, elem: Any, shape: list[int]) -> dict[str, Any]:
    dtypes = {"value": elem, "offsets": tl.int32, "mask": tl.int1, "other": elem}
    return {k: low.convert(v, dtypes[k], shape, layout) for k, v in parts.items()}


def _buffer_operands(low: Lowering, ph: Placeholder) -> tuple[Any, list[int], Any, dict[str, Any]]:
    """``(element type, shape, layout, operands by name)`` of a buffer op, the operands converted to the layout
    its copy was probed with (else the layout of its offsets)."""
    elem, shape = dtype_of_name(ph.attrs["dtype"]), list(ph.attrs["shape"])
    copy = low.copy_layouts.get(id(ph))
    parts = _parts(ph)
    layout = copy.layout if copy is not None else low.builder.get_gluon_layout_from_tensor(parts["offsets"])
    return elem, shape, layout, _in_layout(low, parts, layout, elem, shape)


def _lower_buffer_load(low: Lowering, ph: Placeholder) -> None:
    a, gb = ph.attrs, low.builder
    elem, shape, layout, parts = _buffer_operands(low, ph)
    ty = layouts.distributed_type(elem, shape, layout).to_ir(gb)
    v = gb.create_buffer_load(ty, ph.handles[0], parts["offsets"], _null(parts.get("mask")), _null(parts.get("other")),
                              compat.cache_modifier(a["cache"]))
    ph.result.replace_all_uses_with(gb.create_convert_layout(ph.result.get_type(), v))


def _lower_buffer_store(low: Lowering, ph: Placeholder) -> None:
    a, gb = ph.attrs, low.builder
    parts = _buffer_operands(low, ph)[3]
    gb.create_buffer_store(parts["value"], ph.handles[0], parts["offsets"], _null(parts.get("mask")),
                           compat.cache_modifier(a["cache"]))


def _lower_buffer_atomic_add(low: Lowering, ph: Placeholder) -> None:
    from triton._C.libtriton import ir

    a, gb = ph.attrs, low.builder
    elem, _, _, parts = _buffer_operands(low, ph)
    kind = ir.ATOMIC_OP.FADD if elem.is_floating() else ir.ATOMIC_OP.ADD
    sem = {"acq_rel": ir.MEM_SEMANTIC.ACQUIRE_RELEASE, "acquire": ir.MEM_SEMANTIC.ACQUIRE,
           "release": ir.MEM_SEMANTIC.RELEASE, "relaxed": ir.MEM_SEMANTIC.RELAXED}[a["sem"]]
    scope = {"gpu": ir.MEM_SYNC_SCOPE.GPU, "cta": ir.MEM_SYNC_SCOPE.CTA, "sys": ir.MEM_SYNC_SCOPE.SYSTEM}[a["scope"]]
    v = gb.create_buffer_atomic_rmw(kind, ph.handles[0], parts["offsets"], parts["value"], sem, scope,
                                    _null(parts.get("mask")))
    ph.result.replace_all_uses_with(gb.create_convert_layout(ph.result.get_type(), v))


def _lower_buffer_load_to_local(low: Lowering, ph: Placeholder) -> None:
    a = ph.attrs
    gb = low.builder
    dst = low.handle(ph, 0, "destination buffer")
    base = ph.handles[1]
    elem, shape = dtype_of_name(a["dtype"]), list(a["shape"])
    parts = _parts(ph)
    pinned = low.pinned.get(parts["offsets"].id())
    route = low.copy_routes.get(id(ph), "staged")
    if route == "direct" and pinned is not None and pinned[1] is not None:
        route = "pinned"  # (a dropped pin was staged when the copies were planned)
    if route == "pinned":
        layout = pinned[1]
        parts = _in_layout(low, parts, layout, elem, shape)
        compat.create_buffer_load_to_local(gb, dst, base, parts["offsets"], parts.get("mask"), parts.get("other"),
                                           a["cache"])
    elif route == "direct":
        copy = low.copy_layouts.get(id(ph))
        layout = copy.layout if copy is not None else gb.get_gluon_layout_from_tensor(parts["offsets"])
        parts = _in_layout(low, parts, layout, elem, shape)
        from .copy_probe import pointer_tensor

        ptr = pointer_tensor(gb, base, parts["offsets"], elem, shape)
        compat.create_async_copy(gb, dst, ptr, parts.get("mask"), parts.get("other"), a["cache"])
    else:
        layout = gb.get_gluon_layout_from_tensor(parts["offsets"])
        ty = layouts.distributed_type(elem, shape, layout).to_ir(gb)
        v = gb.create_buffer_load(ty, base, parts["offsets"], _null(parts.get("mask")), _null(parts.get("other")),
                                  compat.cache_modifier(a["cache"]))
        gb.create_local_store(dst, v)
        return
    remember_async_alloc(low, ph)


def _defined_by_load(low: Lowering, value: Any, depth: int = 12) -> bool:
    """Does ``value`` depend on a ``tt.load`` (within ``depth`` defining ops)?"""
    op = low.defining_op(value)
    if op is None or depth == 0:
        return False
    if op.get_name() in ("tt.load", "amdg.buffer_load"):
        return True
    return any(_defined_by_load(low, op.get_operand(i), depth - 1) for i in range(op.get_num_operands()))


def _first_lane(gb: Any, x: Any) -> Any:
    """``v_readfirstlane_b32`` of an i32 scalar (the result lives in a scalar register)."""
    return gb.create_inline_asm("v_readfirstlane_b32 $0, $1", "=s,v", [x], [gb.get_int32_ty()], True, 1).get_result(0)


#: The axis facts ``tl.multiple_of`` / ``tl.max_contiguous`` / ``tl.max_constancy`` put on a value's defining op.
_AXIS_HINTS = ("tt.divisibility", "tt.contiguity", "tt.constancy")


def _axis_hints(low: Lowering, ph: Placeholder) -> dict[str, list[int]]:
    """The axis hints set on ``ph``'s op (``tl.multiple_of(tlx.assume_uniform(p), 16)`` puts them on the
    placeholder), read from the module's text: the bindings have no getter for array attributes."""
    if low.module_text is None:
        low.module_text = str(low.module)
    tag = f"{placeholder.LANGUAGE}|{ph.name}|{ph.uid}|"
    line = next((line for line in low.module_text.splitlines() if tag in line), "")
    out = {}
    for name in _AXIS_HINTS:
        m = re.search(re.escape(name) + r" = dense<\[?([0-9, ]+)\]?>", line)
        if m:
            out[name] = [int(x) for x in m.group(1).split(",")]
    return out


def _lower_assume_uniform(low: Lowering, ph: Placeholder) -> None:
    value = ph.handles[0]
    if not _defined_by_load(low, value):
        ph.result.replace_all_uses_with(value)
        return
    gb = low.builder
    ty = value.get_type()
    bits = int(ph.attrs["bits"])
    i32, i64 = gb.get_int32_ty(), gb.get_int64_ty()
    if bits == 64:
        is_ptr = str(ty).startswith("!tt.ptr")
        wide = gb.create_ptr_to_int(value, i64) if is_ptr else gb.create_bitcast(value, i64)
        lo = _first_lane(gb, gb.create_int_cast(wide, i32, False))
        hi = _first_lane(gb, gb.create_int_cast(gb.create_lshr(wide, gb.get_int64(32)), i32, False))
        joined = gb.create_or(gb.create_shl(gb.create_int_cast(hi, i64, False), gb.get_int64(32)),
                              gb.create_int_cast(lo, i64, False))
        out = gb.create_int_to_ptr(joined, ty) if is_ptr else gb.create_bitcast(joined, ty)
    else:
        narrow = i32 if bits == 32 else gb.get_int16_ty()
        as_int = gb.create_bitcast(value, narrow) if not str(ty).startswith("i") else value
        wide = gb.create_int_cast(as_int, i32, False) if bits != 32 else as_int
        got = _first_lane(gb, wide)
        got = gb.create_int_cast(got, narrow, False) if bits != 32 else got
        out = gb.create_bitcast(got, ty) if not str(ty).startswith("i") else got
    # The kernel's hints on the placeholder describe the value; the ops built here carry none, and without them
    # Triton's alignment analysis sees an opaque read-first-lane (copies through the pointer lose their width).
    from triton._C.libtriton import ir

    for name, hint in _axis_hints(low, ph).items():
        out.set_attr(name, ir.make_attr(hint, out.get_context()))
    ph.result.replace_all_uses_with(out)


def _lower_sched_barrier(low: Lowering, ph: Placeholder) -> None:
    low.builder.create_amd_sched_barrier(int(ph.attrs["mask"]))


def _lower_warp_pipeline_border(low: Lowering, ph: Placeholder) -> None:
    low.builder.create_warp_pipeline_border(str(ph.attrs["label"]), int(ph.attrs["priority"]))


register_lowering("assume_uniform", "hip")(_lower_assume_uniform)
register_lowering("buffer_load", "hip")(_lower_buffer_load)
register_lowering("buffer_store", "hip")(_lower_buffer_store)
register_lowering("buffer_atomic_add", "hip")(_lower_buffer_atomic_add)
register_lowering("buffer_load_to_local", "hip")(_lower_buffer_load_to_local)
register_lowering("amd_sched_barrier", "hip")(_lower_sched_barrier)
register_lowering("warp_pipeline_border", "hip")(_lower_warp_pipeline_border)


@register_compiler_impl("prefetch", "hip")
def prefetch(_semantic: Any, pointer: Any, level: Any = "L2", mask: Any = None, tensormap: Any = False) -> None:
    """gfx942/gfx950 have no prefetch instruction: the arguments are checked, nothing is emitted (a hint)."""
    check_prefetch(_semantic, pointer, level, tensormap)
    downgrade("prefetch", "gfx9 GPUs have no prefetch instruction; nothing is emitted (results are the same)",
              target=from_semantic(_semantic).name)
