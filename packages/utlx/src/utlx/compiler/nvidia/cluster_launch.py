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
    return ptx[:at] + directives + ptx[at:]
