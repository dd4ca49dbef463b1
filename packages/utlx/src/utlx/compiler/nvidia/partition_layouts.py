"""Re-lay out the tensors of a ``ttg.warp_specialize`` partition that runs on fewer warps than the kernel.

Why: ``convert-triton-to-tritongpu`` gave every tensor of the kernel a layout for the kernel's warp count (say 8),
but a TLX task with ``num_warps=1`` becomes a partition of one warp, and Triton lowers a partition's tensors with
the partition's warp count: a layout spread over 8 warps would be wrong there. Stock Triton's automatic warp
specialization re-runs layout assignment on a partition whose warp count it changes; utlx does the equivalent for
the layouts it can rebuild: each blocked layout used inside such a partition (directly or as the parent of a slice
layout) gets a twin whose ``warpsPerCTA`` multiplies to the partition's warps (halving the dimension with the most
warps, the slowest-varying one first, until it does); everything else about it (elements and lanes per thread,
order, CTA split) is kept, so the tensor still covers its shape, only with fewer warps (and more elements per
thread or replicated ones). Layouts that name warps in other ways (MMA, linear, dot operands) are refused with one
line naming the task.

How, with the Python IR API (which cannot change a value's type): the module is printed, the partition's text gets
the twin layouts, the text is parsed into a scratch module in the same context, and the partition's block (a
partition is isolated from above: its captures are block arguments, none of them tensors) is moved into the real
``warp_specialize`` in place of the old one, which is erased.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any

from utlx.compiler.common.errors import UtlxCompileError

_NUM_WARPS = re.compile(r"partitionNumWarps = array<i32: ([\d, ]+)>")
_ALIAS_DEF = re.compile(r"^(#[\w.$-]+) = (.*)$")
_ALIAS_USE = re.compile(r"#[A-Za-z_][\w.$-]*")
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_WARPS = re.compile(r"warpsPerCTA = \[([\d, ]*)\]")
_INLINE_BLOCKED = re.compile(r"#ttg\.blocked<\{[^}]*\}>")
#: Distributed layouts whose warps utlx cannot rebuild (their warps are part of what they compute). A slice or a
#: dot operand names its parent, which is rebuilt (or refused) in turn.
_WARP_BOUND = ("#ttg.nvidia_mma", "#ttg.linear", "#ttg.amd_")


def fewer_warps(counts: list[int], total: int) -> list[int]:
    """``counts`` (warps per dimension) reduced to multiply to ``total``: halve the largest, slowest first."""
    out = list(counts)
    prod = 1
    for c in out:
        prod *= c
    if total < 1 or prod % total:
        raise ValueError(f"cannot spread {prod} warps' layout over {total}")
    while prod > total:
        i = max(range(len(out)), key=lambda d: (out[d], -d))
        out[i] //= 2
        prod //= 2
    return out


def _rewarp(layout: str, warps: int) -> str:
    m = _WARPS.search(layout)
    counts = [int(x) for x in m.group(1).split(",") if x.strip()]
    new = fewer_warps(counts, warps)
    return layout[:m.start()] + f"warpsPerCTA = [{', '.join(map(str, new))}]" + layout[m.end():]


def _depth(line: str) -> int:
    text = _STRING.sub("", line)
    return text.count("{") - text.count("}")


def _spans(lines: list[str], kernel_warps: int) -> list[tuple[int, int, int, int, int]]:
    """(ws index, partition index, first line, last line, warps) of every partition on fewer warps than the kernel.

    The module is read in MLIR's generic form: the printer falls back to it because such a partition does not
    verify. A ``warp_specialize`` names its partitions' warps (``partitionNumWarps``); its
    ``warp_specialize.partitions`` op holds one region per partition, separated by ``}, {`` lines."""
    out = []
    ws = -1
    warps: list[int] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith('"ttg.warp_specialize"('):
            ws += 1
            m = _NUM_WARPS.search(line)
            warps = [int(x) for x in m.group(1).split(",")] if m else []
        elif line.lstrip().startswith('"ttg.warp_specialize.partitions"(') and line.rstrip().endswith("({"):
            depth, part, first = 1, 0, i
            j = i + 1
            while j < len(lines):
                stripped = lines[j].strip()
                if depth == 1 and (stripped == "}, {" or stripped.startswith("})")):
                    if part < len(warps) and warps[part] < kernel_warps:
                        out.append((ws, part, first, j, warps[part]))
                    if stripped != "}, {":
                        break
                    part, first = part + 1, j
                else:
                    depth += _depth(lines[j])
                j += 1
            i = j
        i += 1
    return out


class _Twins:
    """New alias definitions for the layouts a partition on ``warps`` warps uses."""

    def __init__(self, defs: dict[str, str], warps: int, task: str) -> None:
        self.defs, self.warps, self.task = defs, warps, task
        self.made: dict[str, str] = {}  # old alias -> new alias (or itself when warp-free)
        self.new_defs: list[str] = []

    def alias(self, name: str) -> str:
        if name in self.made:
            return self.made[name]
        body = self.defs.get(name)
        if body is None:  # not an attribute alias (a location, a symbol): untouched
            self.made[name] = name
            return name
        new_body = self.text(body)
        if new_body == body:
            self.made[name] = name
            return name
        twin = f"#utlx_w{self.warps}_{name[1:]}"
        self.made[name] = twin
        self.new_defs.append(f"{twin} = {new_body}")
        return twin

    def text(self, text: str) -> str:
        """``text`` with every warp-dependent layout replaced by its twin for ``warps`` warps."""
        if text.startswith("#ttg.blocked<"):
            return _rewarp(text, self.warps)
        if text.startswith(_WARP_BOUND):
            raise UtlxCompileError("async_task", f"a task with num_warps={self.warps} uses a tensor layout utlx "
                                   f"cannot re-lay out for its warps ({text[:60]}...); keep that work in a task on "
                                   f"the kernel's warp count ({self.task})")
        text = _INLINE_BLOCKED.sub(lambda m: _rewarp(m.group(0), self.warps), text)
        return _ALIAS_USE.sub(lambda m: self.alias(m.group(0)), text)


def relayout_partitions(module: Any, tasks: dict[tuple[int, int], str]) -> int:
    """Give every partition on fewer warps than the kernel layouts for its own warps; returns how many changed.

    ``tasks``: (ws index, partition index) -> the task's description, for messages."""
    kernel_warps = module.get_int_attr("ttg.num-warps")
    text = module.str()
    lines = text.split("\n")
    spans = _spans(lines, kernel_warps)
    if not spans:
        return 0
    defs = {}
    for line in lines:
        m = _ALIAS_DEF.match(line)
        if m:
            defs[m.group(1)] = m.group(2)
    changed: list[tuple[int, int]] = []
    new_defs: list[str] = []
    for ws, part, first, last, warps in spans:
        twins = _Twins(defs, warps, tasks.get((ws, part), f"partition {part}"))
        body = lines[first + 1:last]
        new = [twins.text(line) if "tensor<" in line or "#" in line else line for line in body]
        if new != body:
            lines[first + 1:last] = new
            changed.append((ws, part))
            new_defs.extend(twins.new_defs)
    if not changed:
        return 0
    head = next(i for i, line in enumerate(lines) if line.startswith(('"builtin.module"', "module")))
    lines[head:head] = new_defs
    try:
        scratch = _parse("\n".join(lines), module.context)
    except RuntimeError as exc:  # the parser's own diagnostics went to stderr
        where = "; ".join(tasks.get(key, "") for key in changed)
        raise UtlxCompileError("async_task", f"could not re-lay out the tensors of a task on fewer warps than the "
                               f"kernel ({exc}; the reason is printed above)", hint="run the task on the kernel's "
                               f"warp count ({where})") from None
    old_parts, new_parts = _partitions(module), _partitions(scratch)
    for ws, part in changed:
        old_block = _region_block(module, old_parts[ws].get_region(part))
        new_block = _region_block(scratch, new_parts[ws].get_region(part))
        new_block.move_before(old_block)
        old_block.erase()
    return len(changed)


def _parse(text: str, context: Any) -> Any:
    from triton._C.libtriton import ir

    fd, path = tempfile.mkstemp(suffix=".ttgir", prefix="utlx-relayout-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return ir.parse_mlir_module(path, context)
    finally:
        os.unlink(path)


def _partitions(module: Any) -> list[Any]:
    """The partitions ops of every ``warp_specialize``, in the order they are printed."""
    found: list[Any] = []
    order: list[Any] = []

    def visit(op: Any) -> None:
        order.append(op)

    module.walk(visit)
    for op in order:
        if op.get_name() == "ttg.warp_specialize.partitions":
            found.append(op)
    # ``walk`` visits children before parents, but partitions never nest: walk order is the printed order.
    return found


def _region_block(module: Any, region: Any) -> Any:
    """The one block of ``region`` (found through an op inside it: the Python API has no block getter)."""
    rid = region.id()
    hit: list[Any] = []

    def visit(op: Any) -> None:
        if not hit and op.get_name() != "builtin.module" and op.get_block() is not None and \
                op.get_block().get_parent().id() == rid:
            hit.append(op.get_block())

    module.walk(visit)
    if not hit:
        raise UtlxCompileError("async_task", "a partition region has no block to re-lay out")
    return hit[0]
