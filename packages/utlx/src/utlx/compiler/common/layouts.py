"""Layout choices for the TTGIR ops utlx creates, and the kernel's own explicit layouts.

Why a module: TLX leaves shared-memory layouts implicit, so the lowering must pick them from how a
buffer is used. Buffers read by wgmma need an NVMMA (swizzled, descriptor-addressable) layout; buffers
feeding ``tl.dot`` through ``local_load`` get a swizzled layout that avoids bank conflicts; buffers that AMD
direct-to-LDS copies write get an unswizzled layout in the copies' own order (those copies write each
lane's vector to consecutive addresses, which a swizzle would break); anything else gets the plain
unswizzled layout that every op accepts.

A kernel may also name a layout (``local_alloc(layout=...)``, ``local_load(layout=...)``,
``require_layout``): the TLX layout object becomes a JSON *spec* at trace time (:func:`spec_of`, which
needs the tensor's shape and the warp size), travels in the placeholder, and becomes Gluon's layout object
at lowering time (:func:`from_spec`).
"""

from __future__ import annotations

from typing import Any

from .placeholders import Placeholder

#: Placeholders whose result is a view of their first handle's buffer (same bytes, same allocation).
VIEW_OPS = ("local_view", "local_slice", "local_trans", "local_reinterpret", "local_reshape")
#: Placeholders that copy global memory into a buffer (first handle) asynchronously.
ASYNC_COPY_OPS = ("async_load", "buffer_load_to_local")


def infer_alloc_roles(found: list[Placeholder], direct_copies: set[int] = frozenset(),
                      aliases: dict[int, list[int]] | None = None) -> dict[int, str]:
    """``{alloc uid: role}``: ``mma`` when a view of the buffer is a wgmma operand, ``dot`` when it is
    read with ``local_load`` (register-staged dot operand), ``tma`` when TMA writes it, ``remote`` when another CTA
    stores into it (``remote.py``: row-major, unswizzled), ``async`` when one of
    the AMD direct-to-LDS copies ``direct_copies`` (placeholder uids) writes it, else ``""``. ``aliases``: handle
    id -> ids of the views reaching it (views carried through loops and branches: ``carried.py``)."""
    aliases = aliases or {}
    root: dict[int, int] = {}  # placeholder result id -> alloc uid
    roles: dict[int, str] = {}
    for ph in found:
        rid = ph.result.id()
        if ph.name in ("local_alloc", "alloc_barriers"):
            root[rid] = ph.uid
            roles.setdefault(ph.uid, "")
            continue
        if ph.name in VIEW_OPS and ph.handles:
            src = root.get(ph.handles[0].id())
            if src is not None:
                root[rid] = src
            continue
        uses: list[tuple[int, str]] = []
        if ph.attrs.get("scale_handles"):  # block-scale factors tcgen05.cp reads: unswizzled, whoever else uses them
            for i in ph.attrs["scale_handles"]:
                src = root.get(ph.handles[i].id())
                if src is not None:
                    roles[src] = "scales"
        if ph.name == "async_dot":
            n_ops = 1 if ph.attrs.get("a_reg") else 2
            uses = [(h.id(), "mma") for h in ph.handles[:n_ops]]
        elif ph.attrs.get("mma_operands"):  # an MMA that names its shared-memory operands (tcgen05)
            first = int(ph.attrs.get("mma_operand_first", 0))
            uses = [(h.id(), "mma") for h in ph.handles[first:first + int(ph.attrs["mma_operands"])]]
        elif ph.name == "local_load" and ph.handles:
            uses = [(ph.handles[0].id(), "dot")]
        elif ph.name == "remote_store_check" and ph.handles:  # remote stores address it row-major, unswizzled
            uses = [(ph.handles[0].id(), "remote")]
        elif ph.name in ("async_descriptor_load", "async_descriptor_store") and ph.handles:
            uses = [(ph.handles[0].id(), "tma")]
        elif ph.name in ASYNC_COPY_OPS and ph.uid in direct_copies and ph.handles:
            uses = [(ph.handles[0].id(), "async")]
        uses = [(view, role) for hid, role in uses for view in aliases.get(hid, [hid])]
        for hid, role in uses:
            src = root.get(hid)
            if src is None:
                continue
            # wgmma/TMA need NVMMA layouts and direct-to-LDS copies an unswizzled one; they win over the
            # register-path preference.
            if roles.get(src) in ("mma", "tma", "async", "scales", "remote"):
                continue
            roles[src] = role
    return roles


def alloc_of_views(found: list[Placeholder]) -> dict[int, int]:
    """``{placeholder result id: alloc uid}`` for every buffer and view of a ``local_alloc``."""
    root: dict[int, int] = {}
    for ph in found:
        if ph.name == "local_alloc":
            root[ph.result.id()] = ph.uid
        elif ph.name in VIEW_OPS and ph.handles:
            src = root.get(ph.handles[0].id())
            if src is not None:
                root[ph.result.id()] = src
    return root


def _nvmma_swizzle(shape: list[int], bits: int) -> int:
    row_bytes = shape[-1] * bits // 8
    for sw in (128, 64, 32):
        if row_bytes % sw == 0:
            return sw
    return 0


def shared_layout(role: str, shape: list[int], dtype: Any, target: str, order: list[int] | None = None) -> Any:
    """The shared-memory layout for a buffer of ``shape`` x ``dtype`` used as ``role`` (``order``: the
    fastest-first order its direct-to-LDS copies read global memory in, for role ``async``)."""
    from triton.experimental.gluon import language as ttgl

    bits = dtype.primitive_bitwidth
    rank = len(shape)
    if role == "async":
        if order is None or sorted(order) != list(range(rank)):
            order = list(range(rank - 1, -1, -1))
        return ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=list(order))
    if role == "scales":  # Triton's default for a TMA block (what the descriptor gets): unswizzled for scale blocks
        return ttgl.NVMMASharedLayout.get_default_for(list(shape), dtype)
    if role in ("mma", "tma") and rank >= 2:
        return ttgl.NVMMASharedLayout(swizzle_byte_width=_nvmma_swizzle(shape, bits), element_bitwidth=bits,
                                      rank=rank)
    order = list(range(rank - 1, -1, -1))
    if role == "dot" and rank == 2 and target.startswith("hip"):
        # Bank-conflict-free reads of MFMA operands: 8 x 16-bit per vector, phase over one 128-byte row.
        vec = max(1, 128 // bits)
        inner = shape[-1]
        per_phase = max(1, (128 * 8 // bits) // max(1, inner))
        max_phase = max(1, min(16, inner // vec))
        return ttgl.SwizzledSharedLayout(vec=vec, per_phase=per_phase, max_phase=max_phase, order=order)
    if role == "dot" and rank == 2 and target.startswith("cuda") and shape[0] >= 8:
        # (NVMMA tiles are 8 rows: a buffer of fewer rows, e.g. a layer-norm row, keeps the plain layout below)
        return ttgl.NVMMASharedLayout(swizzle_byte_width=_nvmma_swizzle(shape, bits), element_bitwidth=bits,
                                      rank=rank)
    return ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=order)


def memdesc_type(dtype: Any, shape: list[int], layout: Any, alloc_shape: list[int]) -> Any:
    """Gluon's shared-memory descriptor type (``!ttg.memdesc``), mutable, in shared memory."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.shared_memory_descriptor_type(dtype, list(shape), layout, list(alloc_shape))


def distributed_type(dtype: Any, shape: list[int], layout: Any) -> Any:
    """A register tensor type with an explicit layout."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.distributed_type(dtype, list(shape), layout)


def dot_operand_layout(index: int, parent: Any, k_width: int) -> Any:
    """``#ttg.dot_op`` layout of operand ``index`` of an MMA with layout ``parent``."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.DotOperandLayout(operand_index=index, parent=parent, k_width=k_width)


# ---------------------------------------------------------------- the kernel's explicit layouts


def spec_of(layout: Any, shape: list[int], warp_size: int) -> dict | None:
    """The JSON spec of a TLX layout object used for a tensor or buffer of ``shape`` (None for None).

    Raises ``TypeError`` for objects that are not TLX layouts utlx can lower (the caller names the op).
    """
    from utlx.language import layouts as L

    if layout is None:
        return None
    shape = [int(s) for s in shape]
    if isinstance(layout, L.swizzled_layout):
        layout = layout._to_encoding(shape)
    if isinstance(layout, L.swizzled_shared_layout_encoding):
        return {"kind": "swizzled", "vec": int(layout.vectorSize), "per_phase": int(layout.perPhase),
                "max_phase": int(layout.maxPhase), "order": [int(d) for d in layout.order]}
    if isinstance(layout, L.padded_shared_layout_encoding):
        return {"kind": "padded", "pairs": [[i, p] for i, p in zip(layout.intervals, layout.paddings, strict=True)],
                "order": list(layout.order), "shape": list(layout.shape), "offset_bases": layout.offset_bases,
                "block_bases": layout.block_bases or []}
    if isinstance(layout, L.shared_linear_layout_encoding):
        return {"kind": "shared_linear", "offset_bases": layout.offset_bases, "block_bases": layout.block_bases,
                "alignment": layout.alignment}
    if isinstance(layout, L.amd_mfma_layout):
        return {"kind": "mfma", "version": layout.version, "instr_shape": layout.instr_shape,
                "transposed": layout.transposed, "warps_per_cta": layout.warps_per_cta,
                "element_bitwidth": layout.element_bitwidth, "tiles_per_warp": layout.tiles_per_warp,
                "cga_layout": layout.cga_layout}
    if isinstance(layout, L.dot_operand_layout):
        parent = spec_of(layout.parent, shape, warp_size)
        return {"kind": "dot", "index": layout.operand_index, "parent": parent, "k_width": layout.k_width}
    if isinstance(layout, L.layout):
        reg, lane, warp = layout.linear_bases(shape, warp_size)
        return {"kind": "linear", "reg": reg, "lane": lane, "warp": warp, "shape": shape}
    raise TypeError(f"{type(layout).__name__} is not a layout utlx can lower here")


SHARED_KINDS = ("swizzled", "padded", "shared_linear")
DISTRIBUTED_KINDS = ("mfma", "dot", "linear")


def is_permutation(spec: dict) -> bool:
    """Can stock Triton lower this register layout? A ``#ttg.linear`` layout must be a permutation matrix
    once broadcast (all-zero) bases are dropped: every basis moves along one dimension by a power of two,
    and no two bases are equal. TLX's other register layouts (``#ttg.generic_linear``) cannot be built."""
    if spec.get("kind") != "linear":
        return True
    bases = [tuple(b) for b in spec["reg"] + spec["lane"] + spec["warp"] if any(b)]
    one_dim = all(sum(1 for x in b if x) == 1 and all(x & (x - 1) == 0 for x in b if x) for b in bases)
    return one_dim and len(set(bases)) == len(bases)


def describe_spec(spec: dict) -> str:
    """A short text of a spec for messages."""
    if spec.get("kind") == "linear":
        return f"tlx.layout(register={spec['reg']}, lane={spec['lane']}, warp={spec['warp']})"
    return ", ".join(f"{k}={v}" for k, v in spec.items())


def from_spec(spec: dict) -> Any:
    """Gluon's layout object for a spec made by :func:`spec_of`."""
    from triton.experimental.gluon import language as ttgl
    from triton.experimental.gluon.language import amd

    kind = spec["kind"]
    if kind == "swizzled":
        return ttgl.SwizzledSharedLayout(vec=spec["vec"], per_phase=spec["per_phase"], max_phase=spec["max_phase"],
                                         order=list(spec["order"]))
    if kind == "padded":
        # positional: the third field is ``block_bases`` on 3.6 and ``cga_layout`` on 3.7+ (one CTA: [] either way)
        if spec["offset_bases"] is None:
            return ttgl.PaddedSharedLayout.with_identity_for(spec["pairs"], spec["shape"], spec["order"])
        return ttgl.PaddedSharedLayout(spec["pairs"], spec["offset_bases"], spec["block_bases"], spec["shape"])
    if kind == "shared_linear":
        return ttgl.SharedLinearLayout(spec["offset_bases"], spec["block_bases"], spec["alignment"])
    if kind == "mfma":
        return amd.AMDMFMALayout(version=spec["version"], instr_shape=spec["instr_shape"],
                                 transposed=spec["transposed"], warps_per_cta=spec["warps_per_cta"],
                                 element_bitwidth=spec["element_bitwidth"], tiles_per_warp=spec["tiles_per_warp"],
                                 cga_layout=spec["cga_layout"])
    if kind == "dot":
        return ttgl.DotOperandLayout(operand_index=spec["index"], parent=from_spec(spec["parent"]),
                                     k_width=spec["k_width"])
    if kind == "linear":
        return ttgl.DistributedLinearLayout(reg_bases=spec["reg"], lane_bases=spec["lane"], warp_bases=spec["warp"],
                                            block_bases=[], shape=spec["shape"])
    raise ValueError(f"unknown layout spec {spec!r}")
