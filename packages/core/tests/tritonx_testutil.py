"""Helpers shared by the core tests (a module, not conftest: conftest names are not unique)."""

from __future__ import annotations


def ptx_counts(kernel) -> dict[str, int]:
    """cp.async copies and wgmma instructions in a compiled kernel's PTX."""
    ptx = kernel.asm["ptx"]
    return {"cp.async": ptx.count("cp.async.cg") + ptx.count("cp.async.ca"), "wgmma": ptx.count("wgmma.mma_async")}
