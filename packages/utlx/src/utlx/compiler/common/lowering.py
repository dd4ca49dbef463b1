"""The lowering driver: replace utlx placeholders by real TTGIR ops, right after ``convert-triton-to-tritongpu``.

Why here: after the conversion every tensor has a layout, so TTGIR ops (``ttg.local_alloc``,
``ttg.async_copy_global_to_local``, ``ttng.warp_group_dot``, mbarrier and TMA ops, tensor memory and tcgen05) can
be created with ``GluonOpBuilder`` and wired to the converted values. The rest of the stock TTGIR pipeline
(coalescing, layout-conversion removal, fence insertion, ...) then treats them like the ops its own pipeliner makes,
which is exactly how TLX kernels are compiled by Meta's fork.

How: placeholders are visited in definition order; each op's lowering is registered by name and backend
(:func:`register_lowering`, next to the op's trace-time body). Memory-descriptor values are kept in a side table
(``real``); tensor results are created with the placeholder's own converted type and substituted with
``replace_all_uses_with``. Each visited placeholder is then marked pure, and one canonicalizer run deletes them all.
What a vendor adds around that loop (NVIDIA: measured cp.async widths, fences, retire barriers; AMD: direct-to-LDS
routes) it registers as a :class:`Vendor` for its backend. A module without placeholders is left untouched
(byte-identical to stock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tritonx import Target

from utlx import compat

from . import carried, drain, layouts, placeholders
from .errors import UtlxCompileError, shared_memory_error
from .placeholders import Placeholder, dtype_of_name
from .target import smem_limit, target_of

F = TypeVar("F", bound=Callable[..., Any])


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
    probe: bool = False  # lowering a clone to measure cp.async widths (utlx.compiler.nvidia.copy_width)
    desc_loads: dict[int, Any] | None = None  # tt.descriptor_load result id -> op (TMA anchors)
    async_allocs: dict[int, Any] = field(default_factory=dict)  # alloc value id -> alloc written by cp.async
    target: Target | None = None  # the compile's target (str() "hip:gfx950", "cuda:90"...; None: not converted)
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
    vendor: dict[str, Any] = field(default_factory=dict)  # what a vendor's lowerings keep for one run

    def lower(self, ph: Placeholder) -> None:
        """Run ``ph``'s registered lowering for this compile's target (how :mod:`.carried` rebuilds a view chain
        without importing this module)."""
        lowering_for(ph.name, self.target)(self, ph)

    def handle(self, ph: Placeholder, i: int, what: str) -> Any:
        """The real value behind handle operand ``i`` of ``ph``, or an error naming the op."""
        v = ph.handles[i]
        key = v.id()
        if key not in self.real and carried.resolve(self, v) is None:
            raise UtlxCompileError(ph.name, f"its {what} does not come directly from a TLX op (it was carried "
                                   "through a loop, a branch or a function call). Create views inside the loop "
                                   f"from the buffers allocated outside it ({ph.describe()})")
        return self.real[key]

    def defining_op(self, value: Any) -> Any | None:
        """The op defining ``value`` (a map of the module built on first use: ops made later are not in it)."""
        if self.defining_ops is None:
            self.defining_ops = {}

            def visit(op: Any) -> None:
                for i in range(op.get_num_results()):
                    self.defining_ops[op.get_result(i).id()] = op

            self.module.walk(visit)
        return self.defining_ops.get(value.id())

    def entry_block(self) -> Any:
        """The kernel function's body block (where values every placeholder can see are made).

        Found by the walk order: children are visited before their parent, so the op visited right before the
        ``tt.func`` is its body's terminator.
        """
        found = self.vendor.get("entry_block")
        if found is None:
            last: list[Any] = [None]

            def visit(op: Any) -> None:
                if op.get_name() == "tt.func" and last[0] is not None and found_block[0] is None:
                    found_block[0] = last[0].get_block()
                last[0] = op

            found_block: list[Any] = [None]
            self.module.walk(visit)
            found = self.vendor["entry_block"] = found_block[0]
        return found

    def constant_int(self, value: Any) -> int | None:
        """``value``'s integer when an ``arith.constant`` defines it (known once the TTIR passes folded it), else
        None (also where this Triton cannot read constants back: see ``compat.constant_int``)."""
        op = self.defining_op(value)
        return None if op is None else compat.constant_int(op)

    def fact(self, ph: Placeholder, i: int) -> dict:
        v = ph.handles[i]
        if v.id() not in self.facts and v.id() not in self.real:
            carried.resolve(self, v)  # a view carried through a loop or a branch (carried.py)
        return self.facts.get(v.id(), {})

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

#: ``(placeholder name, backend)`` -> its lowering ``fn(low, ph)``; backend ``"cuda"``, ``"hip"`` or ``"*"`` (every
#: target). The one registry of lowerings: each op's module registers its own, next to its trace-time body.
LOWERINGS: dict[tuple[str, str], Callable[[Lowering, Placeholder], None]] = {}

#: The backends a lowering may be registered for (``"*"``: any).
LOWERING_BACKENDS = ("*", "cuda", "hip")


def register_lowering(name: str, backend: str = "*") -> Callable[[F], F]:
    """Register ``fn(low, ph)`` as the lowering of placeholder ``name`` on ``backend`` (one per name and backend;
    a backend's own lowering is chosen over the ``"*"`` one)."""
    if backend not in LOWERING_BACKENDS:
        raise ValueError(f"utlx: lowering of {name!r}: backend must be one of {LOWERING_BACKENDS}, got {backend!r}")

    def deco(fn: F) -> F:
        known = LOWERINGS.get((name, backend))
        if known is not None and known is not fn:
            raise ValueError(f"utlx: placeholder {name!r} already has a lowering for {backend!r} "
                             f"({known.__qualname__})")
        LOWERINGS[(name, backend)] = fn
        return fn

    return deco


def lowering_for(name: str, target: Target | None) -> Callable[[Lowering, Placeholder], None] | None:
    """The lowering of placeholder ``name`` for ``target``: its backend's, else the one for every target (no target
    known: the only one registered, if there is one)."""
    if target is not None:
        return LOWERINGS.get((name, target.backend)) or LOWERINGS.get((name, "*"))
    found = [fn for (op, _), fn in LOWERINGS.items() if op == name]
    return found[0] if len(found) == 1 else LOWERINGS.get((name, "*"))


@dataclass(frozen=True)
class Vendor:
    """What one backend adds to the lowering of a module (registered by ``utlx.compiler.nvidia`` / ``.amd``).

    ``prepare(module, found, arch)`` runs first and returns the placeholders (it may rerun a stock pass and
    collect them anew) and keyword arguments for :func:`lower_found` (cp.async copies too narrow to be async:
    ``staged``; probed copy layouts: ``copy_layouts``). ``plan(low, found, copy_layouts)`` runs on the fresh
    lowering state before the first lowering; ``finish(low, probe)`` after the last one; ``settle(low, probe)``
    after that, once the dead placeholders are marked, right before the cleanup canonicalizer (which verifies the
    module: what would not verify, such as a partition's layouts, is fixed there).
    """

    prepare: Callable[[Any, list[Placeholder], str | None], tuple[list[Placeholder], dict[str, Any]]] | None = None
    plan: Callable[[Lowering, list[Placeholder], dict], None] | None = None
    finish: Callable[[Lowering, bool], None] | None = None
    settle: Callable[[Lowering, bool], None] | None = None


VENDORS: dict[str, Vendor] = {}


def register_vendor(backend: str, vendor: Vendor) -> None:
    """Say what backend ``backend`` (``"cuda"``, ``"hip"``) adds to every lowering."""
    VENDORS[backend] = vendor


def _vendor(target: Target | None) -> Vendor:
    return VENDORS.get(target.backend if target is not None else "", Vendor())


def lower_module(module: Any, arch: str | None = None, target: Target | None = None) -> int:
    """Lower every utlx placeholder of ``module`` in place; returns how many were found.

    ``target``: the compile's (a pass gets it as ``ctx.target``); by default the one the module names."""
    found = placeholders.collect(module)
    if not found:
        return 0
    if target is None:
        target = target_of(str(module))
    vendor = _vendor(target)
    options: dict[str, Any] = {}
    if vendor.prepare is not None:
        found, options = vendor.prepare(module, found, arch)
    return lower_found(module, found, arch, target=target, **options)


def kernel_name(module: Any) -> str:
    """The module's entry function, for messages ('?' when it has no public one)."""
    try:
        return module.get_entry_func_name()
    except Exception:  # no public entry function: name nothing rather than fail
        return "?"


def lower_found(module: Any, found: list[Placeholder], arch: str | None, *, probe: bool = False,
                staged: set[int] | None = None, target: Target | None = None, copy_layouts: dict | None = None) -> int:
    """Lower the placeholders ``found`` of ``module`` (``probe``: a clone lowered only to be measured)."""
    from triton._C.libtriton import ir, passes

    gb = compat.make_gluon_builder(module.context, arch)
    low = Lowering(module=module, builder=gb, probe=probe, staged=set(staged or ()), target=target)
    vendor = _vendor(target)
    if vendor.plan is not None:
        vendor.plan(low, found, copy_layouts or {})
    direct = {ph.uid for ph in found if low.copy_routes.get(id(ph)) == "direct"}
    carried.plan(low, found)
    low.roles = layouts.infer_alloc_roles(found, direct, carried.aliases(low))
    if not probe:
        _check_shared_memory(found)
    for ph in found:
        fn = lowering_for(ph.name, target)
        if fn is None:
            raise UtlxCompileError(ph.name, f"has no lowering in this version of utlx ({ph.describe()})")
        gb.set_insertion_point_after(ph.op)
        try:
            gb.set_loc(ph.result.get_loc())
        except Exception:  # some versions cannot set a location from a value; keep the builder's
            pass
        fn(low, ph)
    _tag_async_waits(module, gb, low.wait_counts)
    if not probe:
        # Copies still in flight when an async-copy ring dies would land in reused shared memory (drain.py).
        for wait in drain.insert_drains(module, gb, list(low.async_allocs.values())):
            _tag_wait(wait.get_result(0), gb, 0)
    if vendor.finish is not None:
        vendor.finish(low, probe)
    carried.finish(low)
    true_attr = gb.get_bool_attr(True)
    for ph in found:
        if id(ph) not in low.keep:
            ph.result.set_attr("pure", true_attr)
    if vendor.settle is not None:
        vendor.settle(low, probe)
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
