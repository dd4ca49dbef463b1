"""TLX ops about register layouts: pin, release, create in, slice, check and print them.

Why these are thin on stock Triton: Meta's fork has layout-propagation passes that treat a pinned layout as
a hard anchor. Stock Triton has none; a layout a kernel asks for becomes a pair of ``ttg.convert_layout``
ops (to the layout, and back to what the conversion gave the value), which the stock passes may move or
fold. Values never change, so every kernel stays correct; only the place where data is reshuffled may
differ from the fork. Where the requested layout feeds a copy that needs it (``buffer_load_to_local`` with
pinned offsets), the copy is built in it (``amd_ops``).

``assert_same_layout`` and ``dump_layout`` look at the layout a value has at the *end* of the TTGIR stage:
their placeholders are kept as markers through the stock passes, then read and removed by
:func:`report_markers` (a pass after the stage's last ``symbol-dce``, see ``utlx.plugin``).
"""

from __future__ import annotations

import sys
from typing import Any

import triton.language as tl

from utlx import compat
from utlx.language._dispatch import register_compiler_impl

from . import layouts, values
from . import placeholders as placeholder
from .args import _c, _ints, _shape, _show
from .downgrade import downgrade
from .errors import UtlxCompileError
from .lowering import Lowering, register_lowering
from .mem_ops import _stash, register_layout_spec
from .placeholders import Placeholder, dtype_of_name
from .target import from_semantic

MARKERS = ("dump_layout", "assert_same_layout")


def _tensor(op: str, x: Any, name: str = "x") -> tl.tensor:
    x = _c(x)
    if not isinstance(x, tl.tensor) or not x.type.is_block():
        raise UtlxCompileError(op, f"'{name}' must be a distributed tensor, got {_show(x)}")
    return x


# ---------------------------------------------------------------- trace time


@register_compiler_impl("require_layout")
def require_layout(_semantic: Any, x: Any, layout: Any, pin: Any = True,
                   late_address_compute: Any = False) -> tl.tensor:
    """``x`` converted to register layout ``layout`` (values unchanged)."""
    op = "require_layout"
    x = _tensor(op, x)
    for name, flag in (("pin", pin), ("late_address_compute", late_address_compute)):
        if not isinstance(_c(flag), bool):
            raise UtlxCompileError(op, f"'{name}' must be a compile-time bool, got {_show(flag)}")
    target = from_semantic(_semantic)
    spec = register_layout_spec(op, _c(layout), _shape(x), target)
    # A layout stock Triton cannot build is dropped (register_layout_spec warned); the placeholder still
    # marks the value, so that a direct-to-LDS copy addressed by it is staged (amd_ops: its lanes would not
    # write consecutive LDS addresses in any layout the compiler picks instead).
    attrs = {"layout": spec, "dtype": str(x.dtype), "shape": _shape(x)}
    h = placeholder.emit(_semantic, op, attrs, tensors=[x], result=x.type)
    return tl.tensor(h, x.type)


@register_compiler_impl("release_layout")
def release_layout(_semantic: Any, x: Any) -> tl.tensor:
    """``x`` (stock Triton chooses every layout itself: nothing to release)."""
    return _tensor("release_layout", x)


@register_compiler_impl("zeros")
def zeros(_semantic: Any, shape: Any, dtype: Any, layout: Any = None) -> tl.tensor:
    """A zero tensor, in register layout ``layout`` when given."""
    op = "zeros"
    dims = _ints(op, "shape", shape)
    dtype = _c(dtype)
    if not isinstance(dtype, tl.dtype):
        raise UtlxCompileError(op, f"'dtype' must be a tl.dtype, got {dtype!r}")
    z = _semantic.full(dims, 0, dtype)
    return z if _c(layout) is None else require_layout(_semantic, z, layout)


@register_compiler_impl("rematerialized_range")
def rematerialized_range(_semantic: Any, start: Any, end: Any, identity: Any, placement: Any = None) -> tl.tensor:
    """``tl.arange(start, end)`` (the fork keeps copies apart per ``identity``; stock CSE may merge them)."""
    op = "rematerialized_range"
    lo, hi, ident = _c(start), _c(end), _c(identity)
    for name, v in (("start", lo), ("end", hi), ("identity", ident)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise UtlxCompileError(op, f"'{name}' must be a compile-time int, got {_show(v)}")
    if hi <= lo:
        raise UtlxCompileError(op, f"'end' ({hi}) must be greater than 'start' ({lo})")
    where = _c(placement)
    if isinstance(where, tl.tensor) and where.type.is_block():
        raise UtlxCompileError(op, f"'placement' must be a scalar, got {_show(where)}")
    return tl.arange(lo, hi, _semantic=_semantic)


@register_compiler_impl("extract_slice")
def extract_slice(_semantic: Any, source: Any, shape: Any, offsets: Any) -> tl.tensor:
    """The static register sub-tile ``source[offsets : offsets + shape]``."""
    op = "extract_slice"
    src = _tensor(op, source, "source")
    dims = _ints(op, "shape", shape)
    offs = [int(_c(o)) for o in _c(offsets)]
    full = _shape(src)
    if len(dims) != len(full) or len(offs) != len(full):
        raise UtlxCompileError(op, f"shape {dims} and offsets {offs} must have rank {len(full)}")
    for axis, (n, o, m) in enumerate(zip(dims, offs, full, strict=True)):
        if o < 0 or o + n > m:
            raise UtlxCompileError(op, f"slice exceeds the source at axis {axis}: {o} + {n} > {m}")
    ret = tl.block_type(src.dtype, dims)
    attrs = {"src": _stash(_semantic, src), "src_shape": full, "shape": dims, "offsets": offs, "dtype": str(src.dtype)}
    h = placeholder.emit(_semantic, op, attrs, result=ret)
    return tl.tensor(h, ret)


def _marker(_semantic: Any, op: str, x: Any, attrs: dict) -> None:
    """A marker on register tensor ``x`` (kept to the end of TTGIR), or a check now for a buffer."""
    if isinstance(x, values.Handle):
        placeholder.emit(_semantic, op, {**attrs, "buffer": True}, handles=[x.handle])
        return
    placeholder.emit(_semantic, op, attrs, tensors=[_tensor(op, x, "value")])


@register_compiler_impl("dump_layout")
def dump_layout(_semantic: Any, x: Any) -> None:
    """Print (to stderr, while compiling) the layout ``x`` ends up with."""
    _marker(_semantic, "dump_layout", _c(x), {})


@register_compiler_impl("assert_same_layout")
def assert_same_layout(_semantic: Any, lhs: Any, rhs: Any) -> None:
    """Check after the TTGIR passes that ``lhs`` has ``rhs``'s layout (``rhs``: a tensor or a TLX layout)."""
    op = "assert_same_layout"
    lhs, rhs = _c(lhs), _c(rhs)
    target = from_semantic(_semantic)
    if isinstance(rhs, tl.tensor):
        _tensor(op, rhs, "rhs")
        if isinstance(lhs, values.Handle) or _shape(lhs) != _shape(rhs):
            raise UtlxCompileError(op, "lhs and rhs must be tensors of one shape to share a layout")
        placeholder.emit(_semantic, op, {"pair": True}, tensors=[lhs, rhs])
        return
    if isinstance(rhs, values.Handle):
        if not isinstance(lhs, values.Handle):
            raise UtlxCompileError(op, "a register tensor cannot have a buffer's (shared-memory) layout")
        placeholder.emit(_semantic, op, {"buffer": True, "pair": True}, handles=[lhs.handle, rhs.handle])
        return
    shape = list(lhs.shape) if isinstance(lhs, values.Handle) else _shape(_tensor(op, lhs, "lhs"))
    try:
        spec = layouts.spec_of(rhs, shape, target.warp_size)
    except (TypeError, ValueError) as exc:
        raise UtlxCompileError(op, f"'rhs' must be a tensor, a buffer or a TLX layout: {exc}") from None
    if spec["kind"] == "linear" and not layouts.is_permutation(spec):
        downgrade(op, f"{layouts.describe_spec(spec)} cannot exist on stock Triton; the check is skipped",
                  target=target.name)
        return
    _marker(_semantic, op, lhs, {"expected": spec})


@register_compiler_impl("require_amd_wmma_layout")
def require_amd_wmma_layout(_semantic: Any, src: Any, version: Any = 3, transposed: Any = True,
                            warp_bases: Any = ((0, 2), (2, 0)), reg_bases: Any = ((0, 1), (1, 0)),
                            instr_shape: Any = (16, 16, 128)) -> tl.tensor:
    """WMMA is the matrix core of RDNA and gfx1250, not of the gfx9 (CDNA) targets utlx compiles for."""
    raise UtlxCompileError("require_amd_wmma_layout", "AMD WMMA layouts (RDNA / gfx1250) are not implemented by "
                           "utlx", target=from_semantic(_semantic).name,
                           hint="on gfx942/gfx950 use tlx.require_layout(x, tlx.amd_mfma_layout(...))")


@register_compiler_impl("dot_scaled")
def dot_scaled(_semantic: Any, lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any = None, fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True,
               out_dtype: Any = tl.float32, tiles_per_warp: Any = None) -> tl.tensor:
    """``tl.dot_scaled``; Meta's fork's ``tiles_per_warp`` (an MFMA tiling choice) must be None here."""
    if _c(tiles_per_warp) is not None:
        raise UtlxCompileError("dot_scaled", "'tiles_per_warp' needs Meta's fork (stock tl.dot_scaled picks the MFMA "
                               "tiling itself)", target=from_semantic(_semantic).name, hint="leave it None")
    return tl.dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math, lhs_k_pack,
                         rhs_k_pack, out_dtype, _semantic=_semantic)


# ---------------------------------------------------------------- lowering


def _lower_require_layout(low: Lowering, ph: Placeholder) -> None:
    gb = low.builder
    spec = ph.attrs["layout"]
    if spec is None:  # dropped (see require_layout): a fresh value, so that only this use counts as pinned
        same = gb.create_convert_layout(ph.result.get_type(), ph.tensors[0])
        low.pinned[same.id()] = (None, None)
        ph.result.replace_all_uses_with(same)
        return
    layout = layouts.from_spec(spec)
    pinned = low.convert(ph.tensors[0], dtype_of_name(ph.attrs["dtype"]), list(ph.attrs["shape"]), layout)
    back = gb.create_convert_layout(ph.result.get_type(), pinned)
    low.pinned[back.id()] = (spec, layout)
    ph.result.replace_all_uses_with(back)


def _lower_extract_slice(low: Lowering, ph: Placeholder) -> None:
    """Through shared memory: the source stored once, the slice's window read back (every version; stock's
    register-only ``amdg.extract_slice`` exists from 3.8 but needs CTA-tile-aligned layouts)."""
    from triton.experimental.gluon import language as ttgl

    gb = low.builder
    a = ph.attrs
    src = low.stash.get(a["src"])
    if src is None:
        raise UtlxCompileError(ph.name, f"its source tensor was lost before lowering ({ph.describe()})")
    dtype, full = dtype_of_name(a["dtype"]), list(a["src_shape"])
    flat = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=list(range(len(full) - 1, -1, -1)))
    buf = gb.create_local_alloc(layouts.memdesc_type(dtype, full, flat, full).to_ir(gb), src)
    window = gb.create_memdesc_subslice(layouts.memdesc_type(dtype, list(a["shape"]), flat, full).to_ir(gb), buf,
                                        list(a["offsets"]))
    ph.result.replace_all_uses_with(gb.create_local_load(ph.result.get_type(), window))


def _lower_marker(low: Lowering, ph: Placeholder) -> None:
    if not ph.attrs.get("buffer"):
        low.keep.add(id(ph))  # read at the end of TTGIR (report_markers), then removed
        return
    facts = [low.fact(ph, i) for i in range(len(ph.handles))]
    layout_text = [repr(f.get("layout")) for f in facts]
    if ph.name == "dump_layout":
        print(f"utlx.dump_layout ({ph.describe()}): buffer {facts[0].get('shape')} x {facts[0].get('dtype')} in "
              f"{layout_text[0]}", file=sys.stderr)
        return
    expected = repr(layouts.from_spec(ph.attrs["expected"])) if "expected" in ph.attrs else layout_text[1]
    if layout_text[0] != expected:
        _mismatch(ph.describe(), layout_text[0], expected, str(low.target or ""))


def _mismatch(where: str, got: str, want: str, target: str) -> None:
    downgrade("assert_same_layout", f"the layouts differ: {got} vs {want} (stock Triton has no layout pins, so a "
              "layout the kernel asked for may have been moved)", target=target, where=where)


def report_markers(module: Any) -> int:
    """Print each ``dump_layout`` and check each ``assert_same_layout`` marker, then delete them; returns how
    many were found. Run after the TTGIR stage's passes (the layouts are final there)."""
    from triton._C.libtriton import ir, passes

    markers = [ph for ph in placeholder.collect(module) if ph.name in MARKERS]
    if not markers:
        return 0
    gb = compat.make_gluon_builder(module.context)
    target = _module_target(module)
    for ph in markers:
        types = [str(v.get_type()) for v in ph.tensors]
        if ph.name == "dump_layout":
            print(f"utlx.dump_layout ({ph.describe()}): {types[0]}", file=sys.stderr)
        elif "expected" in ph.attrs:
            got = gb.get_gluon_layout_from_tensor(ph.tensors[0])
            want = layouts.from_spec(ph.attrs["expected"])
            if not compat.same_layout(gb, got, want, _tensor_shape(types[0])):
                _mismatch(ph.describe(), repr(got), repr(want), target)
        else:
            got, want = (gb.get_gluon_layout_from_tensor(v) for v in ph.tensors)
            if not compat.same_layout(gb, got, want, _tensor_shape(types[0])):
                _mismatch(ph.describe(), repr(got), repr(want), target)
        ph.result.set_attr("pure", gb.get_bool_attr(True))
    pm = ir.pass_manager(module.context)
    passes.common.add_canonicalizer(pm)
    compat.run_passes(pm, module, "utlx-layout-markers")
    return len(markers)


def _tensor_shape(type_text: str) -> list[int]:
    dims = type_text.split("<", 1)[1].split(",", 1)[0].split("x")[:-1]
    return [int(d) for d in dims]


def _module_target(module: Any) -> str:
    from .target import target_of

    target = target_of(str(module).split("\n", 1)[0])
    return str(target) if target is not None else ""


register_lowering("require_layout")(_lower_require_layout)
register_lowering("extract_slice")(_lower_extract_slice)
register_lowering("dump_layout")(_lower_marker)
register_lowering("assert_same_layout")(_lower_marker)
