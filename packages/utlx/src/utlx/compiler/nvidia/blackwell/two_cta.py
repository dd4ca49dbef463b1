"""2-CTA tcgen05 MMAs (``async_dot(..., two_ctas=True)``) and commits (``tcgen05_commit(..., two_ctas=True)``).

TLX's 2-CTA mode pairs CTAs ``2k`` and ``2k + 1`` of a cluster (``ctas_per_cga`` with an even number of CTAs):
each CTA holds its own 128 rows of A, its half (N/2 columns) of B and its 128 x N accumulator in tensor memory,
and the pair's even CTA (the leader) issues one ``tcgen05.mma.cta_group::2`` that computes the 256 x N product
of both, reading A, B and the accumulator at the same addresses in each CTA.

Why a PTX rewrite: stock Triton 3.7-3.9 emits ``cta_group::2`` only for Gluon's multi-CTA kernels
(``num_ctas`` > 1 with CGA-split layouts), which is another programming model than TLX's one program per CTA;
a two_ctas tensor-memory layout in a one-CTA module aborts its layout code. So utlx builds the leader's MMA as
the one-CTA MMA of its own operands (A: M x K, B: K x N/2, the accumulator's first N/2 columns), predicated on
the leader, after a :mod:`..cluster_marks` marker pair that puts the kernel in 2-CTA mode (Triton lowers an MMA
into blocks of its own, which LLVM may lay out anywhere, so the marker encloses nothing); the rewrite then turns
the instructions into their pair forms:

* ``tcgen05.mma.cta_group::1`` -> ``cta_group::2``, its instruction descriptor's M and N fields doubled (the
  pair's 256 x N; the fields cannot overflow: N/2 <= 128, M = 128);
* the commits of the MMA's barriers, and a two_ctas ``tcgen05_commit`` -> ``tcgen05.commit.cta_group::2
  ...multicast::cluster`` with the mask ``0b11 << (rank & ~1)``: the barrier at that offset in both CTAs of
  the pair is arrived on (what Meta's build emits);
* ``async_descriptor_load(..., two_ctas=True)``: the TMA load gets ``.cta_group::2`` and completes on the
  barrier of the pair's leader (``mapa`` to rank ``& ~1``), as in Meta's build;
* the whole kernel is in 2-CTA mode (every ``tcgen05`` op of a kernel must use the same ``cta_group``):
  ``tcgen05.alloc``/``dealloc``/``relinquish_alloc_permit``/``cp`` and plain commits become ``cta_group::2``,
  and a one-CTA MMA in the same kernel is a trace-time error naming the op.

The kernel's cluster shape (``ctas_per_cga``, :mod:`..cluster_launch`) must hold an even number of CTAs.
"""

from __future__ import annotations

import re
from typing import Any

from utlx.compiler.common.errors import UtlxCompileError

from .. import cluster_ptx
from ..cluster_launch import cluster_dims

#: Bits of a kind::f16/tf32/f8f6f4/i8 instruction descriptor holding N >> 3 (17-22) and M >> 4 (24-28).
IDESC_NM_MASK = (0x3F << 17) | (0x1F << 24)

_MMA = re.compile(r"^(\s*)(@!?%p\d+\s+)?tcgen05\.mma\.cta_group::1(\.kind::\w+(?:\.[\w:]+)*)\s+(\[[^\]]+\]),\s*"
                  r"([^,]+),\s*([^,]+),\s*(%r\d+|\d+)(.*);\s*$")
_COMMIT = re.compile(r"^(\s*)(@!?%p\d+\s+)?tcgen05\.commit\.cta_group::1\.mbarrier::arrive::one\.shared::cluster"
                     r"\.b64\s+(\[[^\]]+\])\s*;\s*$")


def leader(_semantic: Any) -> Any:
    """An i1 scalar: this CTA is the even (issuing) CTA of its pair (``%cluster_ctarank`` is even)."""
    import triton.language as tl

    rank = _semantic.builder.create_inline_asm("mov.u32 $0, %cluster_ctarank;", "=r", [],
                                               [_semantic.builder.get_int32_ty()], True, 1).get_result(0)
    odd = _semantic.and_(tl.tensor(rank, tl.int32), _semantic.to_tensor(1))
    return _semantic.equal(odd, _semantic.to_tensor(0))


def leader_rank(_semantic: Any) -> Any:
    """The cluster rank of this CTA's pair leader (``%cluster_ctarank & ~1``), an i32 scalar."""
    import triton.language as tl

    rank = _semantic.builder.create_inline_asm("mov.u32 $0, %cluster_ctarank;", "=r", [],
                                               [_semantic.builder.get_int32_ty()], True, 1).get_result(0)
    return _semantic.and_(tl.tensor(rank, tl.int32), _semantic.to_tensor(-2))


def check_mma(op: str, target: Any, m: int, n: int, asynchronous: bool, a_in_tmem: bool) -> None:
    """The 2-CTA MMAs utlx compiles: 128 rows per CTA (a 256 x N pair), N/2 a one-CTA N, completion on barriers."""
    if m != 128:
        raise UtlxCompileError(op, f"two_ctas with M={m} rows per CTA (TLX's split-accumulator 2-CTA modes) is not "
                               f"compiled by utlx; it compiles two_ctas with M=128 per CTA (a 256 x N pair)",
                               target=target.name)
    if n % 32:
        raise UtlxCompileError(op, f"two_ctas needs N a multiple of 32 (each CTA holds N/2 columns of B, a multiple "
                               f"of 16), got N={n}", target=target.name)
    if a_in_tmem:
        raise UtlxCompileError(op, "two_ctas with A in tensor memory is not compiled by utlx (A from shared memory "
                               "only)", target=target.name)
    if not asynchronous:
        raise UtlxCompileError(op, "two_ctas needs mBarriers=[...] (or force_async=True and a tcgen05_commit): the "
                               "pair's MMA completes on barriers in both CTAs, and the odd CTA has no MMA to wait "
                               "for", target=target.name)


def record_mode(_semantic: Any, op: str, pair: bool, target: Any) -> None:
    """A kernel's MMAs are all two_ctas or all one-CTA (every tcgen05 op of a kernel has one CTA group)."""
    builder = _semantic.builder
    seen = getattr(builder, "_utlx_two_ctas", None)
    if seen is None:
        try:
            builder._utlx_two_ctas = pair
        except AttributeError:  # a builder without instance attributes: no check across calls
            return
    elif seen != pair:
        raise UtlxCompileError(op, f"this kernel has {'one-CTA' if pair else 'two_ctas'} MMAs too; every tcgen05 op "
                               f"of a kernel uses the same CTA group", target=target.name,
                               hint="pass the same two_ctas to every async_dot of the kernel")


def _pair_mask(indent: str) -> str:
    """PTX setting ``%utlx_pair`` (.b16) to the CTA mask of this CTA's pair: ``0b11 << (cluster rank & ~1)``."""
    return (f"{indent}.reg .b32 %utlx_rank, %utlx_three; .reg .b16 %utlx_pair;\n"
            f"{indent}mov.u32 %utlx_rank, %cluster_ctarank; and.b32 %utlx_rank, %utlx_rank, -2;\n"
            f"{indent}mov.b32 %utlx_three, 3; shl.b32 %utlx_rank, %utlx_three, %utlx_rank;\n"
            f"{indent}cvt.u16.u32 %utlx_pair, %utlx_rank;\n")


def _commit_form(m: re.Match, _reg: str = "") -> str:
    indent, pred, bar = m.groups()
    return (f"{indent}{{\n{_pair_mask(indent)}{indent}{pred or ''}tcgen05.commit.cta_group::2.mbarrier::arrive::one"
            f".shared::cluster.multicast::cluster.b64 {bar}, %utlx_pair;\n{indent}}}")


def _mma_form(m: re.Match) -> str:
    """The pair's MMA: its descriptor's M and N fields doubled (256 rows; N = both CTAs' halves of B)."""
    indent, pred, kind, acc, a, b, idesc, rest = m.groups()
    return (f"{indent}{{ .reg .b32 %utlx_idesc;\n"
            f"{indent}and.b32 %utlx_idesc, {idesc}, {IDESC_NM_MASK};\n"
            f"{indent}add.u32 %utlx_idesc, %utlx_idesc, {idesc};\n"
            f"{indent}{pred or ''}tcgen05.mma.cta_group::2{kind} {acc}, {a}, {b}, %utlx_idesc{rest}; }}")


_GROUP1 = re.compile(r"\b(tcgen05\.(?:alloc|dealloc|relinquish_alloc_permit|cp|commit))\.cta_group::1\b")
#: Where the block of a lowered MMA (its instructions, then the commits of its barriers) ends.
_BLOCK_END = re.compile(r"^\s*(?:\$L\w+:|(?:@!?%p\d+\s+)?bra(?:\.uni)?\s|ret;)")


def finish(ptx: str, ctx: Any = None) -> str:
    """The whole kernel in 2-CTA mode: its MMAs are the pair's, the commits of their barriers (the lines after
    them in their block) multicast to the pair, and every other tcgen05 op names ``cta_group::2``."""
    metadata = getattr(ctx, "metadata", None)
    if metadata is not None:
        dims = cluster_dims(metadata)
        size = dims[0] * dims[1] * dims[2] if dims else 1
        if size % 2:
            raise UtlxCompileError("async_dot", f"two_ctas pairs the CTAs of a cluster, but this kernel is launched "
                                   f"in clusters of {size} CTA{'s' if size > 1 else ''} (ctas_per_cga="
                                   f"{dims or (1, 1, 1)})", hint="launch it with ctas_per_cga=(2, 1, 1) (or any "
                                   "cluster of an even number of CTAs)")
    out: list[str] = []
    after_mma = False
    for line in ptx.split("\n"):
        mma = _MMA.match(line)
        if mma:
            out.append(_mma_form(mma))
            after_mma = True
            continue
        if _BLOCK_END.match(line):
            after_mma = False
        commit = _COMMIT.match(line) if after_mma else None
        out.append(_commit_form(commit) if commit else line)
    return _GROUP1.sub(r"\1.cta_group::2", "\n".join(out))


def _no_form(m: re.Match, _reg: str) -> str:
    return m.group(0)


def _tma_form(m: re.Match, leader_reg: str) -> str:
    """A TLX ``async_descriptor_load(..., two_ctas=True)``: ``.cta_group::2``, completing on the leader's barrier."""
    indent, pred, dim, load_mode, tail_mods, dst, src, bar, rest = m.groups()
    return (f"{indent}{{ .reg .b32 %utlx_lead; mapa.shared::cluster.u32 %utlx_lead, {bar.strip('[] ')}, "
            f"{leader_reg};\n{indent}{pred or ''}cp.async.bulk.tensor.{dim}d.shared::cluster.global{load_mode or ''}"
            f".mbarrier::complete_tx::bytes.cta_group::2{tail_mods} {dst}, {src}, [%utlx_lead]{rest}; }}")


cluster_ptx.register_kind("tma2", "async_descriptor_load", "cp.async.bulk.tensor", cluster_ptx.TMA_PATTERN, _tma_form)
cluster_ptx.register_kind("pair_mode", "async_dot", "tcgen05.mma", re.compile(r"(?!)"), _no_form, finish=finish,
                          flag_only=True)
cluster_ptx.register_kind("commit2", "tcgen05_commit", "tcgen05.commit", _COMMIT, _commit_form, finish=finish,
                          exactly_one=True, guard="tcgen05.")
