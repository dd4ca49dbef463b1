"""TLX's cluster form of ``try_cancel``: issued by cluster CTA 0 only, its response multicast to every CTA.

Why: in TLX every CTA of a cluster waits for the CLC response on its own ``full`` barrier, and only CTA 0 asks
(``clusterlaunchcontrol.try_cancel...multicast::cluster::all``: the hardware writes the response, and completes its
16 bytes, at the same offsets in every CTA of the cluster). Gluon's ``clc.try_cancel`` (what stock Triton 3.8-3.9
lowers ``ttng.clc_try_cancel`` to) issues the single-CTA form from every CTA: right for one-CTA clusters, but in a
larger cluster each CTA would cancel a cluster of its own and the CTAs would walk different tiles. So
``_clc_issue`` brackets its op with markers (opaque ``mov``s whose PTX comment carries this module's tag and a
pair id; inline asm with side effects keeps its place through LLVM), and :func:`rewrite` (a tritonx
``transform_stage("ptx")``) turns the one ``try_cancel`` between them into the cluster form, additionally
predicated on ``%cluster_ctarank == 0``. In a one-CTA cluster (every stock launch) that is the same request.

A marker pair that does not enclose exactly one ``try_cancel`` is a compile error naming the op.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from utlx.compiler.common.errors import UtlxCompileError

TAG = "utlx-clc"
OP = "_clc_issue"
_MARKER = re.compile(rf"^\s*mov\.(?:u32|b32)\s+%r\d+,\s*[^;]+;\s*// {TAG}:(begin|end)@(\d+)\s*$")
_TRY_CANCEL = re.compile(r"^(\s*)(?:@(!?%p\d+)\s+)?clusterlaunchcontrol\.try_cancel\.async\.shared::cta"
                         r"\.mbarrier::complete_tx::bytes\.b128\s+(\[[^\]]+\]),\s*(\[[^\]]+\]);\s*$")
_IDS = itertools.count()


def next_id() -> int:
    """A fresh marker-pair id (distinct texts: LLVM cannot merge two pairs on both arms of a branch)."""
    return next(_IDS)


def marker(kind: str, uid: int) -> str:
    """The inline asm text of the ``begin`` or ``end`` marker of pair ``uid``."""
    assert kind in ("begin", "end"), kind
    return f"mov.u32 $0, 0; // {TAG}:{kind}@{uid}"


def _cluster_form(m: re.Match) -> str:
    indent, pred, response, barrier = m.groups()
    issue = f"setp.eq.and.u32 %utlx_clc0, %utlx_rank, 0, {pred};" if pred else "setp.eq.u32 %utlx_clc0, %utlx_rank, 0;"
    return (f"{indent}{{ .reg .pred %utlx_clc0; .reg .b32 %utlx_rank; mov.u32 %utlx_rank, %cluster_ctarank;\n"
            f"{indent}{issue}\n"
            f"{indent}@%utlx_clc0 clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
            f".multicast::cluster::all.b128 {response}, {barrier}; }}")


def rewrite(ptx: str, ctx: Any = None) -> str:
    """Give every marked ``try_cancel`` of ``ptx`` its cluster form (``ptx`` unchanged when nothing is marked)."""
    if TAG not in ptx:
        return ptx
    out: list[str] = []
    open_uid: str | None = None
    done = 0
    for line in ptx.split("\n"):
        m = _MARKER.match(line)
        if m:
            kind, uid = m.groups()
            if kind == "begin":
                if open_uid is not None:
                    raise UtlxCompileError(OP, f"a try_cancel marker (@{uid}) inside the open one (@{open_uid})")
                open_uid, done = uid, 0
            else:
                if uid != open_uid:
                    raise UtlxCompileError(OP, f"the try_cancel marker @{open_uid} is closed by another one (@{uid}): "
                                           f"LLVM moved a marker")
                if done != 1:
                    raise UtlxCompileError(OP, f"found {done} clusterlaunchcontrol.try_cancel between its markers in "
                                           f"the PTX, expected one", hint="Triton lowered ttng.clc_try_cancel to "
                                           "something utlx does not know; please report it with your Triton version")
                open_uid = None
            out.append(line)
            continue
        if open_uid is not None and "clusterlaunchcontrol.try_cancel" in line:
            hit = _TRY_CANCEL.match(line)
            if not hit:
                raise UtlxCompileError(OP, f"cannot give this PTX its cluster form: {line.strip()!r}")
            out.append(_cluster_form(hit))
            done += 1
            continue
        out.append(line)
    if open_uid is not None:
        raise UtlxCompileError(OP, f"the try_cancel marker @{open_uid} is never closed in the PTX")
    return "\n".join(out)
