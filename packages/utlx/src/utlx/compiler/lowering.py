"""Replace utlx placeholders by real TTGIR ops, right after ``convert-triton-to-tritongpu``.

Why here: after the conversion every tensor has a layout, so TTGIR ops (``ttg.local_alloc``,
``ttg.async_copy_global_to_local``, ``ttng.warp_group_dot``, mbarrier and TMA ops) can be created with
``GluonOpBuilder`` and wired to the converted values. The rest of the stock TTGIR pipeline (coalescing,
layout-conversion removal, fence insertion, ...) then treats them like the ops its own pipeliner makes,
which is exactly how TLX kernels are compiled by Meta's fork.

How: placeholders are visited in definition order. Memory-descriptor values are kept in a side table
(``real``); tensor results are created with the placeholder's own converted type and substituted with
``replace_all_uses_with``. Each visited placeholder is then marked pure, and one canonicalizer run
deletes them all. A module without placeholders is left untouched (byte-identical to stock).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import triton.language as tl

from utlx import compat

from . import copy_probe, copy_width, drain, init_fence, layouts, placeholder, retire, warp_specialize
from .downgrade import downgrade
from .errors import UtlxCompileError, shared_memory_error
from .placeholder import Placeholder, dtype_of_name
from .target import smem_limit


@dataclass
class Lowering:
    """State of one lowering run over one module."""

    module: Any
    builder: Any
    real: dict[int, Any] = field(default_factory=dict)  # placeholder result id -> real memdesc value
    facts: dict[int, dict] = field(default_factory=dict)  # placeholder result id -> static facts
    mma_of: dict[int, Any] = field(default_factory=dict)  # converted-back acc id -> raw wgmma result
    stash: dict[int, Any] = field(default_factory=dict)  # stash uid -> tensor value
    roles: dict[int, str] = field(default_factory=dict)  # alloc uid -> "mma" / "dot" / "tma" / ""
    wait_counts: list[int] = field(default_factory=list)  # async_wait_group counts, in program order
    staged: set[int] = field(default_factory=set)  # async_load uids lowered as tl.load + local_store
    probe: bool = False  # lowering a clone to measure cp.async widths (utlx.compiler.copy_width)
    desc_loads: dict[int, Any] | None = None  # tt.descriptor_load result id -> op (TMA anchors)
    async_allocs: dict[int, Any] = field(default_factory=dict)  # alloc value id -> alloc written by cp.async
    target: str = ""  # "hip:gfx950", "cuda:90", ... (the module's ttg.target)
    copy_layouts: dict[int, Any] = field(default_factory=dict)  # id(placeholder) -> copy_probe.CopyLayout (AMD)
    copy_routes: dict[int, str] = field(default_factory=dict)  # id(placeholder) -> "direct" / "staged" (AMD)
    alloc_orders: dict[int, list[int]] = field(default_factory=dict)  # alloc uid -> order of its direct copies
    pinned: dict[int, tuple[dict, Any]] = field(default_factory=dict)  # require_layout result id -> (spec, layout)
    keep: set[int] = field(default_factory=set)  # id(placeholder) of markers that live to the end of ttgir
    defining_ops: dict[int, Any] | None = None  # value id -> the op defining it (built on first use)
    module_text: str | None = None  # the module as text before lowering (read on first use: axis hints)
    mma_allocs: dict[int, Any] = field(default_factory=dict)  # alloc value id -> alloc read by async wgmma
    full_mma_waits: list[Any] = field(default_factory=list)  # results of wgmma waits with pendings == 0
    unfenced: set[int] = field(default_factory=set)  # id(placeholder) of alloc_barriers a later fence covers

    def handle(self, ph: Placeholder, i: int, what: str) -> Any:
        """The real value behind handle operand ``i`` of ``ph``, or an error naming the op."""
        v = ph.handles[i]
        key = v.id()
        if key not in self.real:
            raise UtlxCompileError(ph.name, f"its {what} does not come directly from a TLX op (it was carried "
                                   "through a loop, a branch or a function call). Create views inside the loop "
                                   f"from the buffers allocated outside it ({ph.describe()})")
        return self.real[key]

    def fact(self, ph: Placeholder, i: int) -> dict:
        return self.facts.get(ph.handles[i].id(), {})

    def convert(self, value: Any, dtype: Any, shape: list[int], layout: Any) -> Any:
        """``value`` (a tensor of ``dtype`` x ``shape``) converted to register ``layout``."""
        return self.builder.create_convert_layout(layouts.distributed_type(dtype, shape, layout).to_ir(self.builder),
                                                  value)


def remember_async_alloc(low: Lowering, ph: Placeholder) -> None:
    """Note the allocation an asynchronous copy writes (copies in flight at its end are drained: drain.py)."""
    root = low.fact(ph, 0).get("root")
    if root is not None:
        low.async_allocs[root.id()] = root


_dtype = dtype_of_name


#: Module attribute marking an AMD module whose TLX ops utlx lowered (the later AMD passes act only on those).
AMD_TLX_ATTR = "utlx.amd_tlx"


def lower_module(module: Any, arch: str | None = None) -> int:
    """Lower every utlx placeholder of ``module`` in place; returns how many were found."""
    found = placeholder.collect(module)
    if not found:
        return 0
    from triton._C.libtriton import ir

    target = copy_width.target_of(str(module))
    if target.startswith("hip"):
        return _lower_found(module, found, arch, target=target,
                            copy_layouts=copy_probe.probe(module, found) if _has_amd_copies(found) else {})

    if any(ph.name in ("async_descriptor_load", "async_descriptor_store") for ph in found):
        # TMA ops verify that descriptor and buffer layouts match, and descriptors get their layout
        # from Triton's optimize-descriptor-encoding pass (normally run later): run it now, while
        # the frontend's anchor loads still show how each descriptor is used.
        pm = ir.pass_manager(module.context)
        compat.add_descriptor_encoding_pass(pm)
        compat.run_passes(pm, module, "utlx-descriptor-encoding")
        found = placeholder.collect(module)
    staged: set[int] = set()
    loads = {ph.uid: ph.describe() for ph in found if ph.name == "async_load"}
    if loads:
        # Which copies can really be cp.async is only known after Triton's alignment analysis: measure it
        # on a clone first (see copy_width), so that no copy reaches the LLVM lowering too narrow.
        # One uid per traced op; loop unrolling in make_ttir can copy a placeholder, so uids may repeat.
        uids = [ph.uid for ph in found if ph.name == "async_load"]
        widths = copy_width.probe(module, uids,
                                  lambda m: _lower_found(m, placeholder.collect(m), arch, probe=True))
        staged = copy_width.narrow_copies(widths, _kernel_name(module), loads)
    return _lower_found(module, found, arch, staged=staged, target=target)


def _has_amd_copies(found: list[Placeholder]) -> bool:
    return any(ph.name in copy_probe.PROBED_OPS for ph in found)


#: Lanes of a gfx9 wave (one direct-to-LDS copy writes WAVE x bytes-per-lane contiguous bytes of LDS).
WAVE = 64


def _lane_bytes(copy: Any, elem_bytes: int) -> int:
    """Bytes per lane of a direct-to-LDS copy as the backend will emit it (see compat)."""
    if compat.DIRECT_TO_LDS_NARROWS_TO_PADDING:
        return 4
    return copy.vector * elem_bytes if copy is not None else 16


def _plan_amd_copies(low: Lowering, found: list[Placeholder], probed: dict[int, Any]) -> None:
    """Give each AMD copy its probed layout and decide which asynchronous copies go straight to LDS.

    A copy into LDS is direct when the target has direct-to-LDS copies stock Triton lowers (gfx950), Triton's
    analysis allows at least 4 bytes per lane, and (3.6) its buffer's layout is not a padded layout with
    permuted bases; otherwise it is staged through registers (same values, synchronous) with a warning.
    """
    copies = [ph for ph in found if ph.name in copy_probe.PROBED_OPS]
    for index, ph in enumerate(copies):
        if index in probed:
            low.copy_layouts[id(ph)] = probed[index]
    alloc_of = layouts.alloc_of_views(found)
    allocs = {ph.uid: ph for ph in found if ph.name == "local_alloc"}
    # offsets pinned by require_layout to a layout stock can build: the copy is built in that layout (the
    # kernel's choice of per-lane vector, as in the fork), whatever coalescing would pick
    pins = {ph.result.id(): bool(ph.attrs.get("layout")) for ph in found if ph.name == "require_layout"}
    kernel = _kernel_name(low.module)
    for ph in found:
        if ph.name not in layouts.ASYNC_COPY_OPS:
            continue
        copy = low.copy_layouts.get(id(ph))
        pin = pins.get(ph.tensors[0].id()) if ph.name == "buffer_load_to_local" else None
        if pin:
            copy = None
        alloc = allocs.get(alloc_of.get(ph.handles[0].id(), -1))
        spec = alloc.attrs.get("layout") if alloc is not None else None
        elem_bytes = max(1, tl.dtype(alloc.attrs["dtype"] if alloc is not None else ph.attrs.get("dtype", "fp16"))
                         .primitive_bitwidth // 8)
        reason = None
        if pin is False:
            reason = ("its offsets were pinned to a layout stock Triton cannot build, and in the layout the compiler "
                      "picks instead the lanes do not write consecutive LDS addresses")
        elif low.target not in ("hip:gfx950",):
            reason = (f"{low.target} has no direct-to-LDS copy that stock Triton lowers (CDNA3 moves 4 bytes per "
                      "lane and stock enables them on gfx950 and gfx1250 only)")
        elif copy is not None and copy.vector * elem_bytes < 4:
            reason = (f"Triton's alignment analysis allows {copy.vector} element(s) ({copy.vector * elem_bytes} "
                      "bytes) per lane; a direct-to-LDS copy moves 4 or 16")
        elif spec and spec.get("kind") == "padded" and spec.get("offset_bases") is not None \
                and not compat.DIRECT_TO_LDS_INTO_PERMUTED_PADDED:
            reason = f"Triton {compat.TRITON_VERSION_STR} cannot copy straight into a padded layout with permuted bases"
        elif spec and spec.get("kind") == "padded" and min(p[0] for p in spec["pairs"]) * elem_bytes < \
                WAVE * _lane_bytes(copy, elem_bytes):
            # One wave writes WAVE x lane-bytes contiguous bytes per copy, which a padding interval may not split.
            # From 3.8 the backend narrows the copy to fit (down to 4 bytes per lane); before, it keeps its width.
            run = WAVE * _lane_bytes(copy, elem_bytes)
            reason = (f"its buffer's padded layout pads every {min(p[0] for p in spec['pairs'])} elements, inside "
                      f"the {run} contiguous bytes one wave writes per direct-to-LDS copy (pad every "
                      f"{run // elem_bytes} elements or more)")
        if reason is None:
            low.copy_routes[id(ph)] = "direct"
            if alloc is not None and copy is not None:
                low.alloc_orders.setdefault(alloc.uid, list(copy.order))
        else:
            low.copy_routes[id(ph)] = "staged"
            downgrade(ph.name, f"in kernel '{kernel}' ({ph.describe()}) staged through registers: {reason}",
                      target=low.target)


def _kernel_name(module: Any) -> str:
    try:
        return module.get_entry_func_name()
    except Exception:  # no public entry function: name nothing rather than fail
        return "?"


def _lower_found(module: Any, found: list[Placeholder], arch: str | None, *, probe: bool = False,
                 staged: set[int] | None = None, target: str = "", copy_layouts: dict | None = None) -> int:
    from triton._C.libtriton import ir, passes

    gb = compat.make_gluon_builder(module.context, arch)
    low = Lowering(module=module, builder=gb, probe=probe, staged=set(staged or ()), target=target)
    if target.startswith("hip"):
        _plan_amd_copies(low, found, copy_layouts or {})
    direct = {ph.uid for ph in found if low.copy_routes.get(id(ph)) == "direct"}
    low.roles = layouts.infer_alloc_roles(found, direct)
    low.unfenced = init_fence.covered_fences(module, found)
    if not probe:
        _check_shared_memory(found)
    for ph in found:
        fn = LOWERINGS.get(ph.name)
        if fn is None:
            raise UtlxCompileError(ph.name, f"has no lowering in this version of utlx ({ph.describe()})")
        gb.set_insertion_point_after(ph.op)
        try:
            gb.set_loc(ph.result.get_loc())
        except Exception:  # some versions cannot set a location from a value; keep the builder's
            pass
        fn(low, ph)
    _tag_async_waits(module, gb, low.wait_counts)
    if target.startswith("hip") and not probe:
        module.set_attr(AMD_TLX_ATTR, gb.get_int32_attr(1))  # read by amd_passes (after the placeholders are gone)
    if not probe:
        # Copies still in flight when a cp.async ring dies would land in reused shared memory (drain.py).
        for wait in drain.insert_drains(module, gb, list(low.async_allocs.values())):
            _tag_wait(wait.get_result(0), gb, 0)
        # Another warpgroup's wgmma may still read a ring the allocator hands to the epilogue (retire.py).
        retire.insert_retire_barriers(module, gb, list(low.mma_allocs.values()), low.full_mma_waits)
    true_attr = gb.get_bool_attr(True)
    for ph in found:
        if id(ph) not in low.keep:
            ph.result.set_attr("pure", true_attr)
    pm = ir.pass_manager(module.context)
    passes.common.add_canonicalizer(pm)
    compat.run_passes(pm, module, "utlx-lowering-cleanup")
    return len(found)


def _check_shared_memory(found: list[Placeholder]) -> None:
    """Refuse buffers that together exceed the target's shared memory (TLX buffers are all live at once)."""
    allocs = [ph for ph in found if ph.name == "local_alloc"]
    if not allocs:
        return
    sizes = []
    for ph in allocs:
        a = ph.attrs
        n = a["num"] * max(1, _dtype(a["dtype"]).primitive_bitwidth // 8)
        for dim in a["shape"]:
            n *= dim
        sizes.append((n, ph))
    total = sum(n for n, _ in sizes)
    name = allocs[0].attrs.get("target", "")
    limit = smem_limit(name)
    if total > limit:
        biggest = max(sizes, key=lambda x: x[0])
        raise shared_memory_error(total, limit, name, f"{biggest[0]} bytes at {biggest[1].describe()}")


def _replace(ph: Placeholder, new: Any) -> None:
    ph.result.replace_all_uses_with(new)


# ---------------------------------------------------------------- shared memory


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


# ---------------------------------------------------------------- cp.async


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
        ptr = copy_width.fold_mask_into_pointer(gb, ptr, mask)
    compat.create_async_copy(gb, dst, ptr, mask, other, cache, evict, volatile)
    root = low.fact(ph, 0).get("root")
    if root is not None:
        low.async_allocs[root.id()] = root


def _lower_commit(low: Lowering, ph: Placeholder) -> None:
    low.builder.create_async_commit_group()


def _lower_wait_group(low: Lowering, ph: Placeholder) -> None:
    low.builder.create_async_wait_group(int(ph.attrs["n"]))
    low.wait_counts.append(int(ph.attrs["n"]))


WAIT_ATTR = "utlx.num"


def _async_waits(module: Any) -> list[Any]:
    found: list[Any] = []
    module.walk(lambda op: found.append(op) if op.get_name() == "ttg.async_wait" else None)
    return found


def _tag_async_waits(module: Any, gb: Any, counts: list[int]) -> None:
    """Remember each user-written wait count on its op (``utlx.num``).

    Why: Triton's software pipeliner recomputes the count of every ``ttg.async_wait`` from async
    tokens (``updateWaits``); TLX waits carry none, so it would set them all to 0 (correct but
    serialising the ring). :func:`restore_async_waits` puts the user's counts back after it.
    """
    waits = _async_waits(module)
    if len(waits) != len(counts):  # another pass made waits already: tag nothing rather than mis-tag
        return
    for op, n in zip(waits, counts, strict=True):
        _tag_wait(op.get_result(0), gb, n)


def _tag_wait(result: Any, gb: Any, n: int) -> None:
    result.set_attr(WAIT_ATTR, gb.get_string_attr(str(n)))


def restore_async_waits(module: Any, ctx: Any = None) -> int:
    """Reset every tagged ``ttg.async_wait`` to the count the kernel wrote; returns how many."""
    gb = None
    restored = 0
    for op in _async_waits(module):
        text = op.get_str_attr(WAIT_ATTR)
        if not text:
            continue
        if gb is None:
            gb = compat.make_gluon_builder(module.context)
        op.get_result(0).set_attr("num", gb.get_int32_attr(int(text)))
        restored += 1
    return restored


# ---------------------------------------------------------------- wgmma


def _lower_async_dot(low: Lowering, ph: Placeholder) -> None:
    from triton._C.libtriton import ir

    a = ph.attrs
    gb = low.builder
    acc = ph.tensors[0]
    acc_dtype = _dtype(a["acc_dtype"])
    mma = compat.nvmma_distributed_layout(list(a["wpc"]), list(a["instr"]))
    acc_ty = layouts.distributed_type(acc_dtype, [a["M"], a["N"]], mma).to_ir(gb)
    raw = low.mma_of.get(acc.id())
    acc_mma = raw if raw is not None else gb.create_convert_layout(acc_ty, acc)
    i = 0
    if a["a_reg"]:
        a_val = low.stash.get(a["a_stash"])
        if a_val is None:
            raise UtlxCompileError("async_dot", f"register operand A was lost before lowering ({ph.describe()})")
        dtype = _dtype(a["dtype"])
        op_layout = layouts.dot_operand_layout(0, mma, 32 // dtype.primitive_bitwidth)
        a_ty = layouts.distributed_type(dtype, [a["M"], a["K"]], op_layout).to_ir(gb)
        a_op = gb.create_convert_layout(a_ty, a_val)
    else:
        a_op = low.handle(ph, 0, "A operand")
        i = 1
    b_op = low.handle(ph, i, "B operand")
    for k in ([] if a["a_reg"] else [0]) + [i]:  # the buffers this wgmma reads (retire.py)
        root = low.fact(ph, k).get("root")
        if root is not None:
            low.mma_allocs[root.id()] = root
    use_acc = ph.handles[i + 1] if a.get("use_acc") else gb.get_int1(True)
    precision = {"tf32": ir.INPUT_PRECISION.TF32, "tf32x3": ir.INPUT_PRECISION.TF32x3,
                 "ieee": ir.INPUT_PRECISION.IEEE}.get(a.get("precision", "tf32"), ir.INPUT_PRECISION.TF32)
    if compat.NEEDS_EXPLICIT_WGMMA_FENCE:
        gb.create_fence_async_shared(False)
    out = gb.create_warpgroup_mma(a_op, b_op, acc_mma, use_acc, precision, int(a.get("max_imprecise", 0)), True)
    back = gb.create_convert_layout(ph.result.get_type(), out)
    low.mma_of[back.id()] = out
    _replace(ph, back)


def _lower_async_dot_wait(low: Lowering, ph: Placeholder) -> None:
    gb = low.builder
    inp = ph.tensors[0]
    raw = low.mma_of.get(inp.id())
    if raw is None:
        # Not produced by async_dot in this block (e.g. carried through a loop): wait on the value itself.
        (out,) = gb.create_warpgroup_mma_wait([inp], int(ph.attrs["n"]))
        if int(ph.attrs["n"]) == 0:
            low.full_mma_waits.append(out)
        _replace(ph, out)
        return
    (out,) = gb.create_warpgroup_mma_wait([raw], int(ph.attrs["n"]))
    if int(ph.attrs["n"]) == 0:
        low.full_mma_waits.append(out)
    back = gb.create_convert_layout(ph.result.get_type(), out)
    low.mma_of[back.id()] = out
    _replace(ph, back)


def _lower_fence(low: Lowering, ph: Placeholder) -> None:
    low.builder.create_fence_async_shared(False)


# ---------------------------------------------------------------- mbarriers


def _lower_alloc_barriers(low: Lowering, ph: Placeholder) -> None:
    from triton.experimental.gluon import language as ttgl

    gb = low.builder
    n = int(ph.attrs["num"])
    layout = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    full = [n, 1]
    bars = compat.create_local_alloc(gb, layouts.memdesc_type(tl.int64, full, layout, full).to_ir(gb))
    one_ty = layouts.memdesc_type(tl.int64, [1], layout, [1]).to_ir(gb)
    for i in range(n):
        gb.create_mbarrier_init(gb.create_memdesc_index(one_ty, bars, gb.get_int32(i)), int(ph.attrs["count"]))
    # Make the initialised barriers visible to the async proxy (TMA completes transactions on them); one
    # fence after a run of barrier allocations covers them all (init_fence.py).
    if id(ph) not in low.unfenced:
        gb.create_fence_async_shared(False)
    low.real[ph.result.id()] = bars
    low.facts[ph.result.id()] = {"dtype": tl.int64, "shape": [1], "layout": layout, "alloc": full,
                                 "kind": "barriers"}


def _lower_expect(low: Lowering, ph: Placeholder) -> None:
    bar = low.handle(ph, 0, "barrier")
    compat.create_mbarrier_expect(low.builder, bar, int(ph.attrs["size"]), ph.handles[1])


def _lower_barrier_wait(low: Lowering, ph: Placeholder) -> None:
    bar = low.handle(ph, 0, "barrier")
    low.builder.create_mbarrier_wait(bar, ph.handles[1], ph.handles[2], [])


def _lower_barrier_arrive(low: Lowering, ph: Placeholder) -> None:
    bar = low.handle(ph, 0, "barrier")
    compat.create_mbarrier_arrive(low.builder, bar, int(ph.attrs["count"]), ph.handles[1])


# ---------------------------------------------------------------- TMA


def _anchor(low: Lowering, ph: Placeholder) -> tuple[Any, list[Any]]:
    """Descriptor and coordinates of the ``tt.descriptor_load`` the frontend made for this op."""
    if low.desc_loads is None:
        low.desc_loads = {}

        def visit(op: Any) -> None:
            if op.get_name() == "tt.descriptor_load":
                low.desc_loads[op.get_result(0).id()] = op

        low.module.walk(visit)
    op = low.desc_loads.get(ph.tensors[0].id())
    if op is None:
        raise UtlxCompileError(ph.name, f"lost track of its tensor descriptor ({ph.describe()})")
    return op.get_operand(0), [op.get_operand(i) for i in range(1, op.get_num_operands())]


def _lower_tma_load(low: Lowering, ph: Placeholder) -> None:
    dst = low.handle(ph, 0, "destination buffer")
    bar = low.handle(ph, 1, "barrier")
    desc, coords = _anchor(low, ph)
    compat.create_tma_load(low.builder, desc, coords, bar, dst, ph.handles[2])


def _lower_tma_store(low: Lowering, ph: Placeholder) -> None:
    src = low.handle(ph, 0, "source buffer")
    desc, coords = _anchor(low, ph)
    compat.create_tma_store(low.builder, desc, coords, src)


def _lower_tma_store_wait(low: Lowering, ph: Placeholder) -> None:
    compat.create_tma_store_wait(low.builder, int(ph.attrs["n"]))


LOWERINGS = {
    "local_alloc": _lower_local_alloc,
    "local_view": _lower_local_view,
    "local_slice": _lower_local_slice,
    "local_load": _lower_local_load,
    "local_store": _lower_local_store,
    "stash": _lower_stash,
    "async_load": _lower_async_load,
    "async_load_commit_group": _lower_commit,
    "async_load_wait_group": _lower_wait_group,
    "async_dot": _lower_async_dot,
    "async_dot_wait": _lower_async_dot_wait,
    "fence_async_shared": _lower_fence,
    "alloc_barriers": _lower_alloc_barriers,
    "barrier_expect_bytes": _lower_expect,
    "barrier_wait": _lower_barrier_wait,
    "barrier_arrive": _lower_barrier_arrive,
    "async_descriptor_load": _lower_tma_load,
    "async_descriptor_store": _lower_tma_store,
    "async_descriptor_store_wait": _lower_tma_store_wait,
    # Markers of async_tasks regions: built into ttg.warp_specialize by warp_specialize.lower_region.
    "async_task": warp_specialize.lower_task_marker,
    "async_tasks": warp_specialize.lower_region,
}
