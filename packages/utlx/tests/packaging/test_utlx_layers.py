"""utlx's modules import one way (issue 30): language <- compiler | interpreter <- kernels <- host APIs.

The tiers, bottom up: ``base`` (``utlx.compat``, ``utlx.settings``, ``utlx.__about__``), ``language`` (the TLX
surface), the two paths that give the ops their meaning, ``compiler`` and ``interpreter``, side by side (neither
imports the other), ``kernels`` (device code), and the host APIs above them all (``matmul``, ``attention``, the
launch path, torch integration, the plugin). Inside the compiler, ``common`` imports no vendor, and ``nvidia`` and
``amd`` do not import each other: a vendor is chosen where its bodies are registered, never by importing another.
The kernels are filed the same way: ``utlx.kernels.nvidia`` and ``utlx.kernels.amd`` import each other never, and
the kernels' shared helpers beside them (``utlx.kernels.tiles``, ``ws_ring``, ...) import no vendor's kernel.
Among the host modules, the host APIs (``matmul``, ``attention``) stand side by side on what they share (the
selection in ``utlx.tuning``, the disk cache in ``utlx.tuning_cache``, the launch path), and neither imports the
other; the kernels' shared device helpers are ``utlx.kernels.tiles``, which imports no other kernel module.
"""

from __future__ import annotations

import pytest
from import_graph import graph

#: Kernel modules that still import a host module (their launchers live beside the device code); each is
#: expected to be there, so the list can only shrink (the test fails on a new one and on one that left).
KERNELS_REACHING_HOST = {
    ("utlx.kernels.nvidia.hopper_tma_persistent", "utlx.launch"),
    ("utlx.kernels.nvidia.hopper_tma_splitk", "utlx.splitk_workspace"),
    ("utlx.kernels.nvidia.hopper_tma_streamk", "utlx.splitk_workspace"),
    ("utlx.kernels.nvidia.hopper_ws_persistent", "utlx.launch"),
    ("utlx.kernels.nvidia.hopper_ws_streamk", "utlx.launch"),
    ("utlx.kernels.nvidia.hopper_ws_streamk", "utlx.splitk_workspace"),
}


def tier(module: str) -> tuple[str, int] | None:
    """``(name, rank)`` of a utlx module's tier (None for other packages)."""
    parts = module.split(".")
    if parts[0] == "utlx_tlx_alias":
        return ("base", 0)
    if parts[0] != "utlx":
        return None
    sub = parts[1] if len(parts) > 1 else "__init__"
    if sub in ("compat", "settings", "__about__"):
        return ("base", 0)
    if sub == "language":
        return ("language", 1)
    if sub in ("compiler", "interpreter"):
        return (sub, 2)
    if sub == "kernels":
        return ("kernels", 3)
    return ("host", 4)


def violations(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Every import that points up a tier, across the two paths, or from one compiler vendor to another."""
    bad = set()
    for module, deps in edges.items():
        mine = tier(module)
        if mine is None:
            continue
        for dep in deps:
            theirs = tier(dep)
            if theirs is None:
                continue
            up = theirs[1] > mine[1] or (theirs[1] == mine[1] == 2 and theirs[0] != mine[0])
            mine_vendor, their_vendor = _vendor(module), _vendor(dep)
            # a vendor may use common; common uses no vendor, and no vendor uses another
            crossed = None not in (mine_vendor, their_vendor) and their_vendor not in ("common", mine_vendor)
            if up or crossed:
                bad.add((module, dep))
    return bad


def _vendor(module: str) -> str | None:
    """``common``, ``nvidia`` or ``amd`` for the compiler's and the kernels' modules (the kernels' shared helpers,
    ``utlx.kernels.tiles`` and its neighbours outside the vendor folders, count as common), else None."""
    parts = module.split(".")
    if parts[:2] == ["utlx", "compiler"] and len(parts) > 2 and parts[2] in ("common", "nvidia", "amd"):
        return parts[2]
    if parts[:2] == ["utlx", "kernels"]:
        return parts[2] if len(parts) > 2 and parts[2] in ("nvidia", "amd") else "common"
    return None


def test_the_rules_catch_planted_violations():
    planted = {
        "utlx.language.barrier": {"utlx.compiler.common.lowering"},  # up a tier
        "utlx.interpreter.ops_mem": {"utlx.compiler.common.values"},  # across the two paths
        "utlx.compiler.common.lowering": {"utlx.compiler.nvidia.retire"},  # common -> vendor
        "utlx.compiler.amd.ops": {"utlx.compiler.nvidia.copy_width"},  # vendor -> vendor
        "utlx.compiler.nvidia.tma_ops": {"utlx.compiler.common.values", "utlx.language._op"},  # allowed
        "utlx.kernels.ws_ring": {"utlx.kernels.nvidia.hopper_tma_persistent"},  # shared kernel helper -> vendor
        "utlx.kernels.amd.amd_pipelined": {"utlx.kernels.nvidia.hopper_pipelined",  # kernel vendor -> vendor
                                           "utlx.kernels.tiles"},  # allowed
    }
    assert violations(planted) == {
        ("utlx.language.barrier", "utlx.compiler.common.lowering"),
        ("utlx.interpreter.ops_mem", "utlx.compiler.common.values"),
        ("utlx.compiler.common.lowering", "utlx.compiler.nvidia.retire"),
        ("utlx.compiler.amd.ops", "utlx.compiler.nvidia.copy_width"),
        ("utlx.kernels.ws_ring", "utlx.kernels.nvidia.hopper_tma_persistent"),
        ("utlx.kernels.amd.amd_pipelined", "utlx.kernels.nvidia.hopper_pipelined"),
    }


def test_the_walk_sees_the_compiler_split():
    edges = graph()
    assert {"utlx.compiler.common.lowering", "utlx.compiler.nvidia.tma_ops", "utlx.compiler.amd.ops"} <= set(edges)
    assert "utlx.compiler.common.lowering" in edges["utlx.compiler.nvidia.vendor"]


def test_the_walk_sees_the_kernels_split():
    """The kernels are filed by vendor (``utlx.kernels.nvidia``, ``utlx.kernels.amd``) over shared helpers."""
    edges = graph()
    assert {"utlx.kernels.nvidia.hopper_tma_persistent", "utlx.kernels.amd.amd_pipelined"} <= set(edges)
    assert "utlx.kernels.tiles" in edges["utlx.kernels.amd.amd_pipelined"]
    assert "utlx.kernels.tiles" in edges["utlx.kernels.nvidia.hopper_pipelined"]


@pytest.mark.parametrize("rank", ["language", "compiler", "interpreter", "kernels"])
def test_utlx_imports_point_down(rank):
    found = {(m, d) for m, d in violations(graph()) if tier(m)[0] == rank}
    if rank == "kernels":
        assert found == KERNELS_REACHING_HOST, "kernel modules reaching host modules changed: move the launcher " \
            "out of the kernel module (or, if one left, drop it from KERNELS_REACHING_HOST)"
    else:
        assert found == set(), f"{rank} modules import upwards or across: {sorted(found)}"


#: The host APIs: side by side, none imports another.
HOST_APIS = {"utlx.matmul", "utlx.attention"}
#: What the host APIs share for tuning: imports no host API.
TUNING = {"utlx.tuning", "utlx.tuning_cache"}


def host_violations(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """A host API importing another, the tuning modules importing a host API, the kernels' shared helpers importing
    a kernel module."""
    bad = set()
    for module, deps in edges.items():
        for dep in deps:
            if (module in HOST_APIS | TUNING and dep in HOST_APIS and dep != module) or (
                    module == "utlx.kernels.tiles" and dep.startswith("utlx.kernels.")):
                bad.add((module, dep))
    return bad


def test_the_host_rules_catch_planted_violations():
    planted = {
        "utlx.attention": {"utlx.matmul", "utlx.tuning", "utlx.tuning_cache"},  # the first is not allowed
        "utlx.tuning": {"utlx.attention"},
        "utlx.kernels.tiles": {"utlx.kernels.nvidia.hopper_pipelined"},
        "utlx.matmul": {"utlx.tuning", "utlx.kernels.tiles"},  # allowed
    }
    assert host_violations(planted) == {("utlx.attention", "utlx.matmul"), ("utlx.tuning", "utlx.attention"),
                                        ("utlx.kernels.tiles", "utlx.kernels.nvidia.hopper_pipelined")}


def test_host_apis_stand_side_by_side():
    edges = graph()
    assert "utlx.tuning" in edges["utlx.attention"] and "utlx.tuning" in edges["utlx.matmul"]
    assert host_violations(edges) == set()
