"""Decide, before lowering, which ``async_load`` copies can be cp.async and which must be staged.

Why: cp.async moves 4, 8 or 16 bytes per thread. Triton's LLVM lowering of
``ttg.async_copy_global_to_local`` picks the vector width from its axis analysis: the pointers'
contiguity and alignment, and the mask's alignment. When the JIT cannot prove a row stride is a
multiple of 16 elements (it specialises integer arguments as 16-divisible only when ``% 16 == 0``),
the width of an fp16 copy is 1 element = 2 bytes and ``convert-triton-gpu-to-llvm`` fails with an
opaque "failed to legalize operation" error. That analysis has no Python binding, so we measure it:

1. clone the module (text round trip), lower it with every ``async_load`` as cp.async, but with the
   source pointer replaced by one whose axis info folds in the mask's alignment
   (``utlx.compiler.common.mem_ops.fold_mask_into_pointer``), so one number carries both limits;
2. run Triton's ``tritongpu-coalesce`` on the clone: it sizes each copy's per-thread vector from that
   same analysis (capped at 16 bytes);
3. read each copy's ``sizePerThread`` along its fastest dimension from the pointer type.

Copies narrower than 4 bytes are then lowered as a synchronous ``tt.load`` + ``ttg.local_store``
(correct for any alignment; the commit/wait groups stay valid, they just have nothing to wait for),
with a :class:`UtlxPerformanceWarning`. ``UTLX_ASYNC_LOAD_FALLBACK=0`` makes them a compile error instead.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any

from utlx import compat
from utlx.compiler.common.clone import clone
from utlx.compiler.common.errors import UtlxCompileError, UtlxPerformanceWarning
from utlx.compiler.common.target import target_of
from utlx.settings import settings

#: Smallest transfer cp.async supports (bytes per thread per instruction).
MIN_CP_ASYNC_BYTES = 4
#: Read once at import: it enters the compile cache key (``utlx.compiler.key.LOWERING_VERSION``).
FALLBACK = settings.async_load_fallback

ADVICE = ("make the row strides multiples of 16 elements (the JIT then specialises them as 16-divisible and "
          "proves aligned rows), or stage the tile through registers: x = tl.load(ptrs, mask=...); "
          "tlx.local_store(view, x)")


@dataclass(frozen=True)
class CopyWidth:
    """What Triton's analysis allows for one ``async_load``: elements per thread-copy and their size."""

    uid: int
    elements: int
    element_bytes: int

    @property
    def bytes(self) -> int:
        return self.elements * self.element_bytes

    @property
    def ok(self) -> bool:
        return self.bytes >= MIN_CP_ASYNC_BYTES


_ELEMENT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64,
                 "f8E4M3FN": 8, "f8E5M2": 8, "f8E4M3FNUZ": 8, "f8E5M2FNUZ": 8, "tf32": 32}


def parse_pointer_tensor(type_text: str) -> tuple[int, int] | None:
    """(elements per thread along the fastest dim, element bytes) of a blocked pointer tensor type.

    ``None`` when the type is not a ``#ttg.blocked`` tensor of pointers (then nothing is claimed).
    """
    elem = re.search(r"!tt\.ptr<([A-Za-z0-9]+)", type_text)
    spt = re.search(r"sizePerThread = \[([\d, ]+)\]", type_text)
    order = re.search(r"order = \[([\d, ]+)\]", type_text)
    if not (elem and spt and order) or "#ttg.blocked" not in type_text:
        return None
    bits = _ELEMENT_BITS.get(elem.group(1))
    if bits is None:
        return None
    per_thread = [int(x) for x in spt.group(1).split(",")]
    fastest = int(order.group(1).split(",")[0])
    return per_thread[fastest], bits // 8


def measure(module: Any, uids: list[int]) -> list[CopyWidth]:
    """Widths of the copies of an already coalesced probe module, matched to ``uids`` in program order.

    Why by order: the copy builder returns no op to tag, and each copy sits right after its placeholder,
    so a walk meets them in the placeholders' order. On any mismatch nothing is claimed.
    """
    parsed: list[tuple[int, int] | None] = []

    def visit(op: Any) -> None:
        if op.get_name() == "ttg.async_copy_global_to_local":
            parsed.append(parse_pointer_tensor(str(op.get_operand(0).get_type())))

    module.walk(visit)
    if len(parsed) != len(uids):
        return []
    return [CopyWidth(uid, p[0], p[1]) for uid, p in zip(uids, parsed, strict=True) if p is not None]


def probe(module: Any, uids: list[int], lower: Any) -> list[CopyWidth]:
    """Lower a clone of ``module`` with probe copies (``lower(clone)``), coalesce it, measure the copies of
    the ``async_load`` placeholders ``uids`` (in program order)."""
    from triton._C.libtriton import ir, passes

    text = str(module)
    target = target_of(text)
    if target is None or not target.is_cuda:
        return []
    copy = clone(module, text)
    lower(copy)
    pm = ir.pass_manager(copy.context)
    passes.ttgpuir.add_coalesce(pm)
    compat.run_passes(pm, copy, "utlx-copy-width-probe")
    return measure(copy, uids)


def narrow_copies(widths: list[CopyWidth], kernel: str, describe: dict[int, str]) -> set[int]:
    """uids to stage through registers; warns for each, or raises when the fallback is switched off."""
    narrow: dict[int, CopyWidth] = {}
    for w in widths:  # an unrolled op has several copies: the narrowest decides
        if not w.ok and (w.uid not in narrow or w.bytes < narrow[w.uid].bytes):
            narrow[w.uid] = w
    for uid, w in sorted(narrow.items()):
        where = describe.get(uid, "utlx.async_load")
        what = (f"in kernel '{kernel}' ({where}) Triton's alignment analysis allows only {w.elements} contiguous "
                f"element(s) x {w.element_bytes} byte(s) = {w.bytes} byte(s) per copy, and cp.async needs at least "
                f"{MIN_CP_ASYNC_BYTES}")
        if not FALLBACK:
            raise UtlxCompileError("async_load", what + " (UTLX_ASYNC_LOAD_FALLBACK=0 forbids the synchronous "
                                   "fallback)", hint="Fix: " + ADVICE)
        warnings.warn(f"utlx.async_load: {what}; compiled as a synchronous tl.load + local_store instead (no "
                      f"copy/compute overlap for this load). To keep cp.async, {ADVICE}",
                      UtlxPerformanceWarning, stacklevel=2)
    return set(narrow)
