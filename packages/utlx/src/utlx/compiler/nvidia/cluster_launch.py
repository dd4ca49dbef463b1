"""A TLX kernel's thread-block cluster shape (``ctas_per_cga``) written into its PTX entry.

Why in the PTX: stock Triton's launcher forms clusters only along x, and only through ``num_ctas`` (which also
splits each program's tensors across the cluster). A kernel whose entry carries ``.explicitcluster`` and
``.reqnctapercluster x, y, z`` has a compile-time cluster shape, and the CUDA driver launches it in clusters of
that shape with no launch attribute at all (as ``__cluster_dims__`` does in CUDA C++), in any dimension. So
the grid still counts CTAs, each CTA is its own program, and stock Triton's launcher, ``CompiledKernel[grid]``,
:class:`utlx.launch.DirectLaunch` and CUDA graphs launch it unchanged. The shape comes from the compile options
(``options.ctas_per_cga``: :mod:`utlx.fork_surface`), so the metadata and the on-disk key carry it too.
"""

from __future__ import annotations

import re
from typing import Any

from utlx.compiler.common.errors import UtlxCompileError

#: The opening brace of the (single) kernel entry's body, after its parameter list and performance directives.
_ENTRY = re.compile(r"^\.visible \.entry [^\n]*\((?:.|\n)*?^\)\n((?:\.[a-z]+[^\n]*\n)*)\{$", re.M)
#: The most CTAs a cluster may have: 8 is portable; 16 needs a non-portable opt-in the launcher does not make.
MAX_PORTABLE = 8


def cluster_dims(metadata: Any) -> tuple[int, int, int] | None:
    """The kernel's ``ctas_per_cga`` when it asks for clusters of more than one CTA, else None."""
    dims = metadata.get("ctas_per_cga") if isinstance(metadata, dict) else getattr(metadata, "ctas_per_cga", None)
    if not dims:
        return None
    dims = tuple(int(d) for d in dims)
    return dims if dims[0] * dims[1] * dims[2] > 1 else None


def add_cluster_directives(ptx: str, ctx: Any = None) -> str:
    """``ptx`` with ``.explicitcluster`` + ``.reqnctapercluster`` when its compile asked for clusters, else as is."""
    dims = cluster_dims(getattr(ctx, "metadata", None) or {})
    if dims is None:
        return ptx
    size = dims[0] * dims[1] * dims[2]
    if size > MAX_PORTABLE:
        raise UtlxCompileError("ctas_per_cga", f"clusters of {size} CTAs ({dims}) exceed the portable maximum of "
                               f"{MAX_PORTABLE}, which is what stock Triton's launcher can launch")
    m = _ENTRY.search(ptx)
    if m is None:
        raise UtlxCompileError("ctas_per_cga", "found no kernel entry in the PTX to give its cluster shape")
    if ".reqnctapercluster" in (m.group(1) or ""):
        return ptx
    directives = f".explicitcluster\n.reqnctapercluster {dims[0]}, {dims[1]}, {dims[2]}\n"
    at = m.end() - 1  # the body's "{"
    if isinstance(ctx.metadata, dict):
        ctx.metadata["cluster_dims"] = dims  # Meta's build mirrors ctas_per_cga there too
    return ptx[:at] + directives + sync_after_barrier_inits(ptx[at:])


#: Markers of ops by which a CTA touches a peer's barriers or shared memory (:mod:`.cluster_ptx` kinds).
_PEER_KINDS = re.compile(r"// utlx-cluster:(?:remote_arrive|multicast|st_async|st_cluster|pair_mode|commit2|tma2)\b")
_INIT = re.compile(r"^\s*(?:@!?%p\d+\s+)?mbarrier\.init\.")
#: Where the straight-line start of the kernel ends: a branch or a branch target (debug labels do not count).
_CONTROL = re.compile(r"^\s*(?:\$L__BB\w*:|(?:@!?%p\d+\s+)?bra(?:\.uni)?\s)")
CLUSTER_SYNC = ("\tfence.mbarrier_init.release.cluster; // utlx: barriers initialised before any peer uses them\n"
                "\tbarrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;")


def sync_after_barrier_inits(body: str) -> str:
    """A cluster barrier after the kernel's mbarrier inits when its CTAs use each other's barriers or memory.

    Why: a peer may arrive on (or complete bytes on, or store next to) a barrier only once its owner initialised
    it, and CTAs of a cluster start at different times. Meta's compiler inserts this sync; TLX kernels such as
    ``blackwell_gemm_2cta`` rely on it. Placed after the last ``mbarrier.init`` when every init is in the
    kernel's straight-line start (which every thread runs: Triton's lowering of allocations at the kernel's top
    level); otherwise the kernel keeps its own synchronisation (``tlx.cluster_barrier()``) and nothing is added.
    """
    if not _PEER_KINDS.search(body):
        return body
    lines = body.split("\n")
    last = None
    straight = True
    for i, line in enumerate(lines):
        if _CONTROL.match(line):
            straight = False
        elif _INIT.match(line):
            if not straight:
                return body
            last = i
    if last is None:
        return body
    return "\n".join([*lines[:last + 1], CLUSTER_SYNC, *lines[last + 1:]])
