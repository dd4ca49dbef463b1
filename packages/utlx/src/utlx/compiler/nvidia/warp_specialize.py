"""Turn traced ``async_tasks`` regions into ``ttg.warp_specialize`` (runs inside the utlx lowering).

Why block surgery: the Python IR API cannot move or clone single ops, but it can move whole blocks
(``block.move_before``) and rewrite uses below a block (``replace_use_in_block_with``). While tracing,
each task body was put in the then-block of ``scf.if <opaque placeholder>`` (:mod:`utlx.compiler.nvidia.tasks`).
Here, for each region:

1. a ``ttg.warp_specialize`` is created where the ``async_tasks`` placeholder stands; the default task
   goes into its default region, every other task into one partition region;
2. each then-block is moved whole into ``scf.if %true`` inside its new region (it keeps its ``scf.yield``;
   the canonicalizer folds the ``if`` away afterwards);
3. partitions are isolated from above: every value a worker uses from outside becomes a capture (a block
   argument of every partition). Results of utlx placeholders are not captured: they die in the
   lowering's cleanup, so their uses inside a partition are pointed at a local dummy first;
4. the emptied original ``scf.if`` gets an empty then-block back and dies in the same cleanup.

Workers that run on fewer warps than the kernel and compute tensors are recorded (``low.vendor["relayout"]``):
their tensors' layouts were made for the kernel's warp count, and :mod:`.partition_layouts` rebuilds them for the
task's after the lowering's cleanup.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

from utlx import compat
from utlx.compiler.common import placeholders as placeholder
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import register_lowering
from utlx.compiler.common.placeholders import Placeholder


@dataclass
class _Task:
    ph: Placeholder
    block: Any  # the then-block holding the traced body (None: an empty body, its scf.if already folded away)
    region: Any  # the original scf.if's then-region (None with block)

    @property
    def default(self) -> bool:
        return bool(self.ph.attrs.get("default"))


def _region_chain(op: Any) -> list[int]:
    ids = []
    region = op.get_block().get_parent()
    while region is not None:
        ids.append(region.id())
        region = region.get_parent_region()
    return ids


def _ops_of(module: Any) -> list[Any]:
    ops: list[Any] = []
    module.walk(ops.append)
    return ops


def _captures(ops: list[Any], task: _Task, placeholder_results: set[int]) -> tuple[list[Any], list[Any], bool]:
    """(values to capture, dead placeholder results) used inside ``task``'s region but defined outside it, and
    whether the task computes tensors on fewer warps than the kernel (its layouts need rebuilding)."""
    if task.region is None:
        return [], [], False
    region_id = task.region.id()
    inside = [op for op in ops if op.get_name() != "builtin.module" and region_id in _region_chain(op)]
    defined: set[int] = set()
    for op in inside:
        defined.update(op.get_result(i).id() for i in range(op.get_num_results()))
        block = op.get_block()
        defined.update(block.get_argument(i).id() for i in range(block.get_num_arguments()))
    caps: dict[int, Any] = {}
    dead: dict[int, Any] = {}
    for op in inside:
        for i in range(op.get_num_operands()):
            v = op.get_operand(i)
            if v.id() in defined:
                continue
            (dead if v.id() in placeholder_results else caps).setdefault(v.id(), v)
    return list(caps.values()), list(dead.values()), _needs_relayout(inside, task.ph)


def _is_tensor(v: Any) -> bool:
    return str(v.get_type()).startswith("tensor<")


def _needs_relayout(inside: list[Any], ph: Placeholder) -> bool:
    """Whether a task on fewer warps than the kernel computes tensors (their layouts assume the kernel's warps).

    TLX ops' own stand-ins (placeholders, TMA descriptor anchors) die in the cleanup and are not counted.
    """
    if ph.attrs.get("num_warps") == ph.attrs.get("kernel_warps"):
        return False
    for op in inside:
        if op.get_name() in ("tt.elementwise_inline_asm", "tt.descriptor_load") or op.get_num_results() == 0:
            continue
        if _is_tensor(op.get_result(0)):
            return True
    return False


def _create_ws(gb: Any, captures: list[Any], worker_warps: list[int], n: int) -> tuple[Any, Any]:
    """(warp_specialize op, partitions op); where the captures go differs by version (see compat)."""
    return compat.create_warp_specialize(gb, captures, worker_warps, n)


def _move_into_new_if(gb: Any, task: _Task) -> Any | None:
    """At the builder's insertion point: ``scf.if %true`` whose then-block is the task's traced block."""
    if task.block is None:
        return None
    if_op = gb.create_if_op([], gb.get_int1(True), False)
    fresh = if_op.get_then_block()
    task.block.move_before(fresh)
    fresh.erase()
    return if_op


def _dummy(gb: Any, v: Any) -> Any:
    ty = v.get_type()
    if _is_tensor(v):
        return gb.create_splat(ty, gb.get_int32(0))
    return gb.get_int32(0)


_REMAT_ATTR = "utlx.remat"
_TAG = re.compile(r'utlx\.remat = "(\d+)"')
_SPLAT = re.compile(r'arith\.constant \{[^}]*\} dense<([^<>\[\]]*)> : tensor<[^,>]*x(\w+)')
_SCALAR = re.compile(r'arith\.constant \{[^}]*\} (?:(true|false)|(-?\d+) : (i\d+))')
_RANGE = re.compile(r'tt\.make_range \{(?=[^}]*end = (-?\d+))(?=[^}]*start = (-?\d+))')
#: Tensor ops without operands that a partition can simply re-create (and CSE may have merged with the
#: kernel's own copy outside the task).
_REMAT_OPS = ("arith.constant", "tt.make_range")


def _rematerializable(module: Any, gb: Any, ops: list[Any], values: list[Any]) -> dict[int, Any]:
    """Captured tensors that each partition re-creates instead: ``{value id: make(gb) -> value}``.

    Why: the canonicalizer hoists every constant (e.g. ``tl.zeros`` of an accumulator) to the kernel's
    entry block and CSE merges a task's ``tl.arange`` with an identical one outside, so a task body sees
    them as captures; Triton 3.6 cannot pass a tensor into a partition ("shared memory size for scalar
    type is unspecified") and a tensor laid out for another warp count would be wrong anyway. Integer
    scalar constants are re-created too (3.6 would pass each through shared memory). The Python
    API cannot read an op's integer or dense attributes, so each op is tagged and its printed form read.
    """
    kinds = {op.get_result(0).id(): op.get_name() for op in ops if op.get_name() in _REMAT_OPS}
    tagged = {}
    for v in values:
        if v.id() in kinds and (_is_tensor(v) or re.fullmatch(r"i\d+", str(v.get_type()))):
            tag = str(len(tagged))
            v.set_attr(_REMAT_ATTR, gb.get_string_attr(tag))
            tagged[tag] = v
    out: dict[int, Any] = {}
    for line in str(module).splitlines() if tagged else ():
        m = _TAG.search(line)
        v = tagged.pop(m.group(1), None) if m else None
        if v is None:
            continue
        ty = v.get_type()
        splat, rng, scalar = _SPLAT.search(line), _RANGE.search(line), _SCALAR.search(line)
        if scalar and not _is_tensor(v):
            out[v.id()] = _scalar_maker(scalar.group(3) or "i1", scalar.group(1) or scalar.group(2))
        elif splat:
            out[v.id()] = _splat_maker(ty, splat.group(2), splat.group(1))
        elif rng:
            out[v.id()] = _range_maker(ty, int(rng.group(2)), int(rng.group(1)))
    return out


def _splat_maker(ty: Any, elem: str, literal: str) -> Any:
    return lambda gb: gb.create_splat(ty, _scalar(gb, elem, literal))


def _scalar_maker(elem: str, literal: str) -> Any:
    return lambda gb: _scalar(gb, elem, literal)


def _range_maker(ty: Any, start: int, end: int) -> Any:
    return lambda gb: gb.create_make_range(ty, start, end)


def _scalar(gb: Any, elem: str, literal: str) -> Any:
    """The scalar constant ``literal`` of MLIR element type ``elem`` (``f32``, ``i32``, ``i1``, ...)."""
    if elem == "i1":
        return gb.get_int1(literal in ("true", "1"))
    if elem.startswith("i"):
        return getattr(gb, f"get_int{elem[1:]}")(int(literal))
    getter = {"f32": gb.get_fp32, "f16": gb.get_fp16, "bf16": gb.get_bf16, "f64": gb.get_fp64}.get(elem)
    if getter is None:
        raise UtlxCompileError("async_task", f"a task captures a constant tensor of {elem}; create it inside the task")
    return getter(_float_literal(elem, literal))


def _float_literal(elem: str, literal: str) -> float:
    """An MLIR float literal: decimal, or the bit pattern in hex that MLIR prints for inf/nan (``0xFF800000``)."""
    if not literal.lower().startswith("0x"):
        return float(literal)
    bits = int(literal, 16)
    if elem == "bf16":
        elem, bits = "f32", bits << 16
    fmt, size = {"f16": ("<e", 2), "f32": ("<f", 4), "f64": ("<d", 8)}[elem]
    return struct.unpack(fmt, bits.to_bytes(size, "little"))[0]


def _registers(tasks: list[_Task]) -> list[int] | None:
    regs = [t.ph.attrs.get("registers") for t in tasks]
    if all(r is None for r in regs):
        return None
    if any(r is None for r in regs):
        raise UtlxCompileError("async_task", "give 'registers' to every non-default task or to none of them "
                               f"(got {regs}); setmaxnreg needs one count per partition")
    return [int(r) for r in regs]


def lower_task_marker(low: Any, ph: Placeholder) -> None:
    """``async_task`` markers are consumed by :func:`lower_region` of their ``async_tasks`` placeholder."""


def lower_region(low: Any, ph: Placeholder) -> None:
    """Build the ``ttg.warp_specialize`` of the ``async_tasks`` placeholder ``ph``.

    The lowering visits placeholders in post-order, so every TLX op inside the tasks is already lowered.
    """
    module, gb = low.module, low.builder
    found = placeholder.collect(module)
    by_uid = {p.uid: p for p in found}
    tasks = []
    for uid in ph.attrs["tasks"]:
        block = _then_block_of(module, by_uid[uid])
        tasks.append(_Task(ph=by_uid[uid], block=block, region=None if block is None else block.get_parent()))
    ws_index = low.vendor.get("ws_count", 0)
    low.vendor["ws_count"] = ws_index + 1
    workers = [t for t in tasks if not t.default]
    for part in _build(module, gb, ph, tasks, {p.result.id() for p in found}):
        low.vendor.setdefault("relayout", {})[(ws_index, part)] = workers[part].ph.describe()


def _then_block_of(module: Any, ph: Placeholder) -> Any | None:
    """The then-block of the ``scf.if`` conditioned on task marker ``ph`` (None when the body was empty)."""
    cond = ph.result.id()
    hit: list[Any] = []

    def visit(op: Any) -> None:
        if op.get_name() == "scf.if" and op.get_operand(0).id() == cond:
            hit.append(op)

    module.walk(visit)
    if not hit:  # an empty task body: the canonicalizer removed its scf.if
        return None
    if len(hit) != 1:
        raise UtlxCompileError("async_task", f"lost its region while compiling ({ph.describe()})")
    # The if op's first region holds one block; find it through an op inside it (the yield at least).
    region_id = hit[0].get_region(0).id()
    for op in _ops_of(module):
        if op.get_name() != "builtin.module" and op.get_block().get_parent().id() == region_id:
            return op.get_block()
    raise UtlxCompileError("async_task", f"has an empty region ({ph.describe()})")


def _build(module: Any, gb: Any, end: Placeholder, tasks: list[_Task], placeholder_results: set[int]) -> list[int]:
    """Build the ``warp_specialize``; returns the partitions (worker indices) whose tensors need new layouts."""
    default = next(t for t in tasks if t.default)
    workers = [t for t in tasks if not t.default]
    ops = _ops_of(module)
    caps: dict[int, Any] = {}
    dead: list[list[Any]] = []
    relayout = []
    for k, t in enumerate(workers):
        c, d, fewer = _captures(ops, t, placeholder_results)
        if fewer:
            relayout.append(k)
        for v in c:
            caps.setdefault(v.id(), v)
        dead.append(d)
    remat = _rematerializable(module, gb, ops, list(caps.values()))
    captures = [v for v in caps.values() if v.id() not in remat]
    for v in captures:
        if _is_tensor(v):
            maker = next((op.get_name() for op in ops for i in range(op.get_num_results())
                          if op.get_result(i).id() == v.id()), "a block argument")
            raise UtlxCompileError("async_task", "a non-default task uses a tensor computed outside it "
                                   f"({str(v.get_type())[:80]}, made by {maker}); compute it inside the task (only "
                                   f"scalars, descriptors and TLX buffers/barriers can be shared) ({end.describe()})")
    regs = _registers(workers)
    v_by_id = caps

    gb.set_insertion_point_after(end.op)
    ws, parts = _create_ws(gb, captures, [int(t.ph.attrs["num_warps"]) for t in workers], len(workers))
    if regs is not None:
        ws.set_requested_registers(regs)

    gb.create_block_with_parent(ws.get_default_region(), [])
    _move_into_new_if(gb, default)
    gb.create_warp_yield([])

    types = [v.get_type() for v in captures]
    for i, (t, d) in enumerate(zip(workers, dead, strict=True)):
        block = gb.create_block_with_parent(parts.get_region(i), types)
        _move_into_new_if(gb, t)
        gb.create_warp_return()
        for k, v in enumerate(captures):
            block.replace_use_in_block_with(v, block.get_argument(k))
        gb.set_insertion_point_to_start(block)
        for v in d:
            block.replace_use_in_block_with(v, _dummy(gb, v))
        for key, make in remat.items():
            block.replace_use_in_block_with(v_by_id[key], make(gb))

    for t in tasks:  # give each emptied scf.if a valid (empty) body; the cleanup erases it
        if t.region is None:
            continue
        gb.create_block_with_parent(t.region, [])
        gb.create_yield_op([])
    return relayout


# Markers of async_tasks regions: built into ttg.warp_specialize by lower_region.
register_lowering("async_task", "cuda")(lower_task_marker)
register_lowering("async_tasks", "cuda")(lower_region)
