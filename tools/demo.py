"""The tritonx demo: TLX GEMMs compiled on the CPU for Hopper and AMD through tritonx pipelines.

It shows what the plugins changed: the pass lists with utlx's inserted passes marked, the effect of
a user pipeline (software pipelining switched off) in the PTX, and the TLX kernels' assembly
(cp.async + wgmma on Hopper, LDS + MFMA on AMD). With an NVIDIA GPU present it also runs the Hopper
GEMM and checks it against a float32 reference. AMD is compile-verified only (no AMD GPU here).

    python tools/demo.py
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.table import Table

console = Console(width=110)
ONES = ("stride_ak", "stride_bn", "stride_cn")


def compile_tlx(kernel, signature, constexprs, target, num_warps):
    import tritonx

    sig = dict(signature)
    consts = dict(constexprs)
    for name in ONES:
        sig[name], consts[name] = "constexpr", 1
    for name in consts:
        sig[name] = "constexpr"
    attrs = {(kernel.arg_names.index(n),): [["tt.divisibility", 16]] for n, t in sig.items() if t != "constexpr"}
    return tritonx.compile_for(target, kernel, sig, consts, options={"num_warps": num_warps}, attrs=attrs)


def show_edits(target: str) -> None:
    import tritonx

    cap = tritonx.capture(target)
    active = ", ".join(p.name for p in tritonx.active())
    table = Table(title=f"{target}: stage passes edited by active plugins ({active})")
    for col in ("stage", "#", "pass", "mark", "by"):
        table.add_column(col)
    for stage in cap:
        for info in cap[stage]:
            if info.mark:
                table.add_row(stage, str(info.index), info.name, info.mark, info.edit or "")
    table.caption = "  ".join(f"{s}: {len(cap[s])} passes" for s in cap)
    console.print(table)


def asm_stats(kernel, target: str) -> dict[str, int]:
    asm = kernel.asm
    if target.startswith("cuda"):
        ptx = asm["ptx"]
        stats = {"cp.async": ptx.count("cp.async.cg") + ptx.count("cp.async.ca"),
                 "cp.async.wait_group": ptx.count("cp.async.wait_group"),
                 "wgmma.mma_async": ptx.count("wgmma.mma_async"), "shared bytes": kernel.metadata.shared}
        for extra in ("cp.async.bulk.tensor", "mbarrier.try_wait", "setmaxnreg"):
            if extra in ptx:
                stats[extra] = ptx.count(extra)
        return stats
    gcn = asm["amdgcn"]
    return {"ds_write": gcn.count("ds_write"), "ds_read": gcn.count("ds_read"), "v_mfma": gcn.count("v_mfma"),
            "shared bytes": kernel.metadata.shared}


def main() -> int:
    import triton
    import tritonx

    t0 = time.time()
    console.rule("[bold]tritonx demo")
    console.print(f"triton {triton.__version__} | tritonx-core {tritonx.__version__}")
    import utlx
    from utlx.kernels.amd import amd_pipelined as amd
    from utlx.kernels.nvidia import hopper_pipelined as hopper

    tritonx.apply_environment()  # installed plugins that are on by default (utlx) or named in TRITONX_PLUGINS
    enabled = [p.name for p in tritonx.list_plugins() if tritonx.is_plugin_enabled(p.name)]
    console.print(f"utlx {utlx.__version__}; enabled plugins: {enabled}")
    show_edits("cuda:90")

    console.rule("A user pipeline on a stock matmul (cuda:90)")
    stock = tritonx.compile_for("cuda:90")
    nopipe = tritonx.Pipeline("no-software-pipelining").disable("tritongpu-pipeline")
    with tritonx.activate(nopipe):
        edited = tritonx.compile_for("cuda:90")
    table = Table("", "stock", "disable('tritongpu-pipeline')")
    for key, a in asm_stats(stock, "cuda:90").items():
        table.add_row(key, str(a), str(asm_stats(edited, "cuda:90")[key]))
    console.print(table)

    results = {}
    for label, mod, target in (("Hopper cp.async+wgmma TLX GEMM", hopper, "cuda:90"),
                               ("AMD register-staged TLX GEMM", amd, "hip:gfx942"),
                               ("AMD register-staged TLX GEMM", amd, "hip:gfx950")):
        consts, warps = mod.CONFIGS[0]
        kernel_fn = getattr(mod, "matmul_kernel_pipelined_hopper", None) or mod.matmul_kernel_pipelined_amd
        k = compile_tlx(kernel_fn, mod.SIGNATURE, consts, target, warps)
        results[(label, target)] = asm_stats(k, target)
    from utlx.kernels.nvidia import hopper_tma_persistent as tma
    from utlx.kernels.nvidia import hopper_ws_persistent as ws

    for label, mod, fn in (("Hopper persistent TMA TLX GEMM", tma, tma.matmul_kernel_tma_persistent),
                           ("Hopper warp-specialized TLX GEMM", ws, ws.matmul_kernel_ws_persistent)):
        consts, warps = mod.CONFIGS[0]
        sig = mod.signature(consts["BLOCK_SIZE_M"], consts["BLOCK_SIZE_N"], consts["BLOCK_SIZE_K"])
        consts = dict(consts, NUM_SMS=132)
        sig.update({k: "constexpr" for k in consts})
        k = tritonx.compile_for("cuda:90", fn, sig, consts, options={"num_warps": warps})
        results[(label, "cuda:90")] = asm_stats(k, "cuda:90")
    console.rule("TLX GEMMs compiled on the CPU (the same ops, per-vendor lowering)")
    for (label, target), stats in results.items():
        console.print(f"[bold]{label}[/] for {target}: " + ", ".join(f"{k}={v}" for k, v in stats.items()))
    assert results[("Hopper cp.async+wgmma TLX GEMM", "cuda:90")]["wgmma.mma_async"] > 0

    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        console.rule("GPU run")
        a = torch.randn(1000, 777, device="cuda", dtype=torch.float16)
        b = torch.randn(777, 1500, device="cuda", dtype=torch.float16)
        c = utlx.matmul(a, b)
        ref = a.float() @ b.float()
        err = (c.float() - ref).abs().max().item()
        console.print(f"utlx.matmul 1000x1500x777 vs float32 reference: max abs error {err:.4f}")
        if err > 0.5:
            return 1
    else:
        console.print("No GPU here: compile-only (AMD is compile-verified only in any case).")
    console.print(f"done in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
