"""Cluster forms of two stock PTX instructions: multicast TMA loads and arrivals on a peer CTA's mbarrier.

Why a PTX rewrite: stock Triton 3.6-3.9 lowers ``ttng.async_tma_copy_global_to_local`` and
``ttng.arrive_barrier`` to single-CTA PTX only (its libtriton says ``NYI: Support multicast``), and the shared
addresses those instructions need exist only after Triton's own shared-memory allocation, in the LLVM
lowering. So the TLX ops mark the stock instruction they want changed: :func:`marker` emits an opaque
``mov`` whose PTX comment names the change and whose destination register holds its operand (the CTA mask
or the peer's rank), then the stock op, then an ``end`` marker. Inline asm with side effects keeps its order
through LLVM, so in the PTX the stock instruction sits between the two markers, with its shared addresses
already computed; :func:`rewrite` (a tritonx ``transform_stage("ptx")``) turns it into its cluster form:

* ``multicast``: ``cp.async.bulk.tensor...mbarrier::complete_tx::bytes [dst], [map, {..}], [bar]`` becomes
  ``...shared::cluster...multicast::cluster [dst], [map, {..}], [bar], mask``: the box lands at the same
  offset in every CTA of ``mask`` and completes bytes on each one's barrier at ``bar``'s offset.
* ``remote_arrive``: ``mbarrier.arrive...b64 _, [bar]`` becomes ``mapa`` (the barrier's address in the CTA of
  that rank) + ``mbarrier.arrive.shared::cluster.b64``, with the default CTA-scope release that CUTLASS's
  Hopper pipelines use (``.release.cluster`` costs a GPU-wide fence before every arrival).

A marker pair that does not enclose exactly the instructions it names is a compile error naming the op:
a silent single-CTA load would leave the peer's barrier waiting forever.

Other modules add kinds with :func:`register_kind` (the Blackwell 2-CTA MMA and commit:
``blackwell/two_cta.py``; remote shared-memory stores and the shared address of a buffer: ``remote.py``). A kind
may give its ``end`` marker a result (``end_form``: the marker's register then holds what the enclosed
instruction revealed, e.g. an address), and a ``finish`` step may rewrite the whole PTX once any marker of the
kind was seen (the 2-CTA mode is one per kernel).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from utlx.compiler.common.errors import UtlxCompileError

TAG = "utlx-cluster"
_MARKER = re.compile(rf"^\s*mov\.(?:u32|b32)\s+(%r\d+),\s*([^;]+?)\s*;\s*// {TAG}:(\w+)(?:@(\d+))?\s*$")
_TMA = re.compile(r"^(\s*)(@!?%p\d+\s+)?cp\.async\.bulk\.tensor\.(\d)d\.shared::(?:cta|cluster)\.global"
                  r"(\.[\w:]+)*?\.mbarrier::complete_tx::bytes((?:\.[\w:]+)*)\s+(\[[^\]]+\]),\s*(\[[^\]]+\]),"
                  r"\s*(\[[^\]]+\])(.*);\s*$")
_ARRIVE = re.compile(r"^(\s*)(@!?%p\d+\s+)?mbarrier\.arrive(?:\.release)?(?:\.cta)?\.shared(?:::cta)?\.b64\s+_,"
                     r"\s*\[(%r\d+)\](,\s*[^;]+)?;\s*$")

#: The stock TMA load (what other modules' kinds rewrite too: blackwell/two_cta.py).
TMA_PATTERN = _TMA

#: What each marker kind rewrites, for error messages.
KINDS = {"multicast": ("async_descriptor_load", "cp.async.bulk.tensor"),
         "remote_arrive": ("barrier_arrive", "mbarrier.arrive")}


def marker(kind: str, uid: int | None = None, operand: bool = True) -> str:
    """The inline asm text of a begin marker (``$1``: the operand) or of the ``end`` marker; ``uid`` pairs a
    begin with its end and keeps LLVM from merging two markers of the same kind (see ``ops._cluster_mark``)."""
    tail = "" if uid is None else f"@{uid}"
    if kind == "end":
        return f"mov.u32 $0, {'$1' if operand else '0'}; // {TAG}:end{tail}"
    assert kind in KINDS, kind
    return f"mov.u32 $0, {'$1' if operand else '0'}; // {TAG}:{kind}{tail}"


def _multicast(m: re.Match, reg: str) -> str:
    indent, pred, dim, load_mode, tail_mods, dst, src, bar, rest = m.groups()
    mods = (load_mode or "") + ".mbarrier::complete_tx::bytes.multicast::cluster" + tail_mods
    pred = pred or ""
    return (f"{indent}{{ .reg .b16 %utlx_mask; cvt.u16.u32 %utlx_mask, {reg};\n"
            f"{indent}{pred}cp.async.bulk.tensor.{dim}d.shared::cluster.global{mods} {dst}, {src}, {bar}, "
            f"%utlx_mask{rest}; }}")


def _remote_arrive(m: re.Match, reg: str) -> str:
    indent, pred, addr, count = m.groups()
    return (f"{indent}{{ .reg .b32 %utlx_bar; mapa.shared::cluster.u32 %utlx_bar, {addr}, {reg};\n"
            f"{indent}{pred or ''}mbarrier.arrive.shared::cluster.b64 _, [%utlx_bar]{count or ''}; }}")


_REWRITES: dict[str, tuple[re.Pattern, Callable[[re.Match, str], str]]] = {
    "multicast": (_TMA, _multicast), "remote_arrive": (_ARRIVE, _remote_arrive)}
#: kind -> ``form(end_marker_match, rewritten_matches) -> line`` for the kind's end marker (default: kept as is);
#: the match's group 1 is the marker's register, group 2 its source operand.
_END_FORMS: dict[str, Callable[[re.Match, list[re.Match]], str]] = {}
#: kind -> ``finish(ptx, ctx) -> ptx``, run once after the rewrite when the PTX had a marker of that kind.
_FINISH: dict[str, Callable[[str, Any], str]] = {}
#: kinds whose region must hold exactly one instruction to rewrite (an address probe), else at least one.
_EXACTLY_ONE: set[str] = set()
#: kinds whose markers enclose nothing: they only tell ``finish`` that the kernel uses them.
_FLAG_ONLY: set[str] = set()
#: kind -> the substring that, in an unmatched line of an open region, means "a form this rewrite cannot read".
_GUARDS: dict[str, str] = {}


def register_kind(kind: str, op: str, instr: str, pattern: re.Pattern, form: Callable[[re.Match, str], str], *,
                  end_form: Callable[[re.Match, list[re.Match]], str] | None = None,
                  finish: Callable[[str, Any], str] | None = None, exactly_one: bool = False,
                  guard: str | None = None, flag_only: bool = False) -> None:
    """Add a marker kind: lines of its region matching ``pattern`` become ``form(match, begin_register)``.
    ``flag_only``: its markers enclose nothing to rewrite; the kind's ``finish`` rewrites the whole PTX."""
    KINDS[kind] = (op, instr)
    _REWRITES[kind] = (pattern, form)
    if end_form is not None:
        _END_FORMS[kind] = end_form
    if finish is not None:
        _FINISH[kind] = finish
    if exactly_one:
        _EXACTLY_ONE.add(kind)
    if guard is not None:
        _GUARDS[kind] = guard
    if flag_only:
        _FLAG_ONLY.add(kind)


def rewrite(ptx: str, ctx: Any = None) -> str:
    """Rewrite every marked instruction of ``ptx`` into its cluster form (``ptx`` unchanged when unmarked)."""
    if TAG not in ptx:
        return ptx
    out: list[str] = []
    open_kind: str | None = None
    open_uid: str | None = None
    reg = ""
    hits: list[re.Match] = []
    seen: set[str] = set()
    for line in ptx.split("\n"):
        m = _MARKER.match(line)
        if m:
            kind, uid = m.group(3), m.group(4)
            if kind == "end":
                if open_kind is None:
                    raise UtlxCompileError("cluster_ptx", "an end marker without its begin marker in the PTX")
                if uid != open_uid:
                    raise UtlxCompileError(KINDS[open_kind][0], f"the {open_kind} marker @{open_uid} is closed by "
                                           f"the end marker of another op (@{uid}): LLVM moved a marker")
                op, instr = KINDS[open_kind]
                if open_kind in _FLAG_ONLY:
                    pass
                elif not hits or (open_kind in _EXACTLY_ONE and len(hits) != 1):
                    raise UtlxCompileError(op, f"the {open_kind} form found {len(hits)} {instr} to rewrite in the "
                                           f"PTX", hint="Triton lowered the op to something utlx does not know; "
                                           "please report it with your Triton version")
                end_form = _END_FORMS.get(open_kind)
                out.append(end_form(m, hits) if end_form is not None else line)
                open_kind = None
                continue
            if open_kind is not None:
                raise UtlxCompileError(KINDS[kind][0], f"a {kind} marker inside an open {open_kind} marker")
            open_kind, open_uid, reg, hits = kind, uid, m.group(1), []
            seen.add(kind)
            out.append(line)
            continue
        if open_kind is not None and open_kind not in _FLAG_ONLY:
            pattern, form = _REWRITES[open_kind]
            hit = pattern.match(line)
            if hit:
                out.append(form(hit, reg))
                hits.append(hit)
                continue
            stripped = line.strip()
            guard = _GUARDS.get(open_kind, KINDS[open_kind][1])
            if guard in stripped or (open_kind == "remote_arrive" and "mbarrier." in stripped):
                raise UtlxCompileError(KINDS[open_kind][0], f"cannot rewrite this PTX into its {open_kind} form: "
                                       f"{stripped!r}")
        out.append(line)
    if open_kind is not None:
        raise UtlxCompileError(KINDS[open_kind][0], f"a {open_kind} marker is never closed in the PTX")
    text = "\n".join(out)
    for kind in sorted(seen):
        finish = _FINISH.get(kind)
        if finish is not None:
            text = finish(text, ctx)
    return text
