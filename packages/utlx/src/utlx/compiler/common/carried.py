"""Buffer views that flow through ``scf.for`` iter_args and results, and ``scf.if`` results, resolved at lowering.

Why: a TLX view (``local_view`` / ``tmem_view`` and the views derived from it: slices, transposes, reinterprets)
is traced as an i32 placeholder; a kernel that reassigns one inside a loop ("``v`` of the previous iteration") or
picks one in a runtime branch makes Triton carry that i32 through ``scf.for`` / ``scf.if``. The real memory
descriptor cannot be carried so (the canonical TLX pattern keeps indices, not descriptors, in registers), so utlx
carries the *buffer index* instead: when every value that can reach a carried handle is the same chain of view ops
over the same allocation, differing only in the index, the lowering

* rebuilds that chain where the carried value is defined (start of the loop body, or right after the loop or the
  branch), with the carried i32 as the index, through the chain's own registered lowerings; and
* once every placeholder is lowered, replaces each source view's i32 by its index (:func:`finish`), so the loop
  or the branch really carries the index at run time.

Two different views picked by one ``scf.if`` (other slices of a buffer, other allocations of one type) cannot share
an index: a second ``scf.if`` on the same condition builds each branch's view and yields the descriptor (Meta's
``hopper_gemm_ws`` picks B's half so for its 2-CTA multicast). Views of different allocations reaching one loop
value, or views of different types, stay an error naming the op.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .placeholders import Placeholder

#: view ops that pick one buffer of an allocation: handles ``[buffers, index]``
ROOTS: dict[str, tuple[str, ...]] = {}
#: view ops over one view (handle ``[view]``), moving no data
STEPS: set[str] = set()


def register_view_root(name: str, dynamic_attrs: tuple[str, ...] = ()) -> None:
    """Placeholder ``name`` picks buffer ``handles[1]`` of allocation ``handles[0]``; ``dynamic_attrs`` are
    attributes that only record a static index (dropped when the view is rebuilt with a carried index)."""
    ROOTS[name] = tuple(dynamic_attrs)


def register_view_step(name: str) -> None:
    """Placeholder ``name`` is a view of its single handle (a slice, transpose, reinterpret, ...)."""
    STEPS.add(name)


for _name in ("local_view",):
    register_view_root(_name)
for _name in ("local_trans", "local_slice", "local_reinterpret", "local_reshape"):
    register_view_step(_name)


@dataclass(frozen=True)
class Chain:
    """A view op chain over one allocation: ``root`` (picking a buffer by ``index``) then ``steps``."""

    root: Placeholder
    steps: tuple[Placeholder, ...]
    index: Any  # ir.value (i32): the buffer index at run time
    key: tuple  # what two chains must share to be the same view of different buffers


_SELF = object()  # a value reaching itself around a loop: agrees with any chain


class Rebuilt(Placeholder):
    """A view placeholder lowered again with other handles, its result standing for a carried value."""

    def __init__(self, ph: Placeholder, handles: list[Any], result: Any, attrs: dict[str, Any]) -> None:
        super().__init__(op=ph.op, language=ph.language, name=ph.name, uid=ph.uid, attrs=attrs)
        self._handles = handles
        self._result = result

    @property
    def handles(self) -> list[Any]:
        return self._handles

    @property
    def tensors(self) -> list[Any]:
        return []

    @property
    def operands(self) -> list[Any]:
        return self._handles

    @property
    def result(self) -> Any:
        return self._result


@dataclass
class _Carrier:
    """Where a carried value is defined and which values reach it."""

    value: Any  # the carried ir.value (an iter_arg, or a loop's or branch's result)
    sources: list[Any]
    place: tuple[str, Any]  # ("start", block) or ("after", op)


def _attrs_key(ph: Placeholder, drop: tuple[str, ...] = ()) -> str:
    return json.dumps({k: v for k, v in ph.attrs.items() if k not in drop}, sort_keys=True, default=str)


def _structure(module: Any) -> dict[int, _Carrier]:
    """Value id -> carrier, for every ``scf.for`` iter_arg and result and every ``scf.if`` result of ``module``.

    Each region's ``scf.yield`` is found by the region it sits in (``block.get_parent()``), so an op of another kind
    with yields of its own cannot be mistaken for a loop's or a branch's.
    """
    ops: list[Any] = []
    module.walk(lambda op: ops.append(op) if op.get_name() in ("scf.yield", "scf.for", "scf.if") else None)
    yields = {op.get_block().get_parent().id(): op for op in ops if op.get_name() == "scf.yield"}
    out: dict[int, _Carrier] = {}
    for op in ops:
        n = op.get_num_results()
        if op.get_name() == "scf.for" and n:
            body = yields.get(op.get_region(0).id())
            if body is None or body.get_num_operands() != n:
                continue
            block = body.get_block()
            for k in range(n):
                sources = [op.get_operand(3 + k), body.get_operand(k)]
                arg, res = block.get_argument(k + 1), op.get_result(k)
                out[arg.id()] = _Carrier(arg, sources, ("start", block))
                out[res.id()] = _Carrier(res, sources, ("after", op))
        elif op.get_name() == "scf.if" and n:
            then, els = yields.get(op.get_region(0).id()), yields.get(op.get_region(1).id())
            if then is None or els is None or then.get_num_operands() != n or els.get_num_operands() != n:
                continue
            for k in range(n):
                res = op.get_result(k)
                out[res.id()] = _Carrier(res, [then.get_operand(k), els.get_operand(k)], ("after", op))
    return out


def _state(low: Any, found: list[Placeholder] | None = None) -> dict[str, Any]:
    st = low.vendor.get("carried")
    if st is None:
        st = low.vendor["carried"] = {"defs": {}, "structure": None, "sources": []}
    if found is not None:
        st["defs"] = {ph.result.id(): ph for ph in found}
    return st


def plan(low: Any, found: list[Placeholder]) -> None:
    """Remember which placeholder defines each handle (called before the first lowering)."""
    _state(low, found)


def aliases(low: Any) -> dict[int, list[int]]:
    """Carried handle id -> result ids of the root views reaching it, for every carried value that is a view (so the
    layout choice sees its uses: :func:`utlx.compiler.common.layouts.infer_alloc_roles`)."""
    st = _state(low)
    if not st["defs"]:
        return {}
    if st["structure"] is None:
        st["structure"] = _structure(low.module)
    out: dict[int, list[int]] = {}
    for key, carrier in st["structure"].items():
        chain = _chain(low, carrier.value, set())
        chains = [chain] if isinstance(chain, Chain) else (_branch_chains(low, carrier.value) or [])
        if chains:
            out[key] = [c.root.result.id() for c in chains]
    return out


def _chain(low: Any, value: Any, visiting: set[int]) -> Chain | object | None:
    st = _state(low)
    ph = st["defs"].get(value.id())
    if ph is not None:
        if ph.name in ROOTS:
            handles = ph.handles
            key = (ph.name, handles[0].id(), _attrs_key(ph, ROOTS[ph.name]))
            return Chain(ph, (), handles[1], (key,))
        if ph.name in STEPS:
            inner = _chain(low, ph.handles[0], visiting)
            if not isinstance(inner, Chain):
                return None
            return Chain(inner.root, (*inner.steps, ph), inner.index, (*inner.key, (ph.name, _attrs_key(ph))))
        return None
    if st["structure"] is None:
        st["structure"] = _structure(low.module)
    carrier = st["structure"].get(value.id())
    if carrier is None:
        return None
    if value.id() in visiting:
        return _SELF
    visiting.add(value.id())
    chains = [_chain(low, src, visiting) for src in carrier.sources]
    visiting.discard(value.id())
    if any(c is None for c in chains):
        return None
    chains = [c for c in chains if isinstance(c, Chain)]
    if not chains:
        return _SELF
    if any(c.key != chains[0].key for c in chains):
        return None
    return Chain(chains[0].root, chains[0].steps, value, chains[0].key)


def resolve(low: Any, value: Any) -> Any | None:
    """The real view behind carried handle ``value`` (built once, where ``value`` is defined), or None when it is
    not a view of one allocation on every path reaching it."""
    chain = _chain(low, value, set())
    branches = None if isinstance(chain, Chain) else _branch_chains(low, value)
    if not isinstance(chain, Chain) and branches is None:
        return None
    st = _state(low)
    carrier = st["structure"][value.id()]
    for src in carrier.sources:
        _record_sources(low, src, set())
    gb = low.builder
    saved = gb.get_insertion_point()
    where, anchor = carrier.place
    if where == "start":
        gb.set_insertion_point_to_start(anchor)
    else:
        gb.set_insertion_point_after(anchor)
    try:
        gb.set_loc(value.get_loc())
    except Exception:  # some versions cannot set a location from a value; keep the builder's
        pass
    try:
        if isinstance(chain, Chain):
            return _rebuild(low, chain, value)
        return _rebuild_per_branch(low, branches, anchor, value)
    finally:
        gb.restore_insertion_point(saved)


def _rebuild(low: Any, chain: Chain, value: Any) -> Any:
    """Lower ``chain`` again at the builder's insertion point with ``value`` as its buffer index; its real view is
    then ``low.real[value.id()]``."""
    root = chain.root
    attrs = {k: (None if k in ROOTS[root.name] else v) for k, v in root.attrs.items()}
    steps = [Rebuilt(root, [root.handles[0], value], value, attrs)]
    steps += [Rebuilt(s, [value], value, dict(s.attrs)) for s in chain.steps]
    for ph in steps:
        low.lower(ph)
    return low.real[value.id()]


def _branch_chains(low: Any, value: Any) -> list[Chain] | None:
    """The views an ``scf.if`` result takes in its two branches when each is a view, even of different shapes of
    chain (say, two column halves of one buffer), else None."""
    st = _state(low)
    if st["structure"] is None:
        st["structure"] = _structure(low.module)
    carrier = st["structure"].get(value.id())
    if carrier is None or carrier.place[0] != "after" or carrier.place[1].get_name() != "scf.if":
        return None
    chains = [_chain(low, src, set()) for src in carrier.sources]
    return chains if all(isinstance(c, Chain) for c in chains) else None


def _rebuild_per_branch(low: Any, branches: list[Chain], if_op: Any, value: Any) -> Any | None:
    """Two different views picked by one ``scf.if``: a second ``scf.if`` on the same condition, right after it,
    builds each branch's view (its index is the first one's carried result) and yields the memory descriptor.
    None when the two views have different types (one descriptor cannot stand for both)."""
    gb = low.builder
    probe = _rebuild(low, branches[0], value)  # at the insertion point, to learn the type (dead: removed later)
    ty = probe.get_type()
    new_if = gb.create_if_op([ty], if_op.get_operand(0), True)
    made = []
    for block, chain in ((new_if.get_then_block(), branches[0]), (new_if.get_else_block(), branches[1])):
        gb.set_insertion_point_to_start(block)
        made.append(_rebuild(low, chain, value))
        gb.create_yield_op([made[-1]])
    if str(made[1].get_type()) != str(ty):
        low.real.pop(value.id(), None)
        return None
    low.real[value.id()] = new_if.get_result(0)
    return low.real[value.id()]


def _record_sources(low: Any, value: Any, visiting: set[int]) -> None:
    """Note each view placeholder reaching a carried value, with its index (replaced by it in :func:`finish`)."""
    st = _state(low)
    ph = st["defs"].get(value.id())
    if ph is not None:
        chain = _chain(low, value, set())
        if isinstance(chain, Chain):
            st["sources"].append((ph, chain.index))
        return
    carrier = st["structure"].get(value.id())
    if carrier is None or value.id() in visiting:
        return
    visiting.add(value.id())
    for src in carrier.sources:
        _record_sources(low, src, visiting)


def finish(low: Any) -> None:
    """Make every view that reaches a carried handle hand on its buffer index (after the last lowering)."""
    st = low.vendor.get("carried")
    if not st:
        return
    done: set[int] = set()
    for ph, index in st["sources"]:
        if id(ph) not in done:
            done.add(id(ph))
            ph.result.replace_all_uses_with(index)
