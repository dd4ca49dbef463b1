"""``utlx.attention``'s kernel compiles for cuda:90 the way it was designed (TTGIR, PTX and ptxas checks).

The default run compiles the main D=128 configuration; ``-m slow`` compiles every configuration, with
N_CTX a multiple of the tiles and not, in fp16 and bf16. What is checked, and why:

* three partitions (the producer and two consumer replicas) with a ``setmaxnreg`` budget per replica;
* the pingpong token ring: each consumer waits on its own named barrier and arrives on the other's;
* no ``warp_group_dot_wait`` besides the kernel's own (a pipeliner-inserted ``wait 0`` would make the S
  GEMM synchronous), and no layout conversion of an fp32 accumulator (only P's fp16 registers become
  the A operand of P V, a register-level conversion);
* ptxas: no spills for whole-tile shapes, and no wgmma serialisation warning (C7510-C7515).
"""

from __future__ import annotations

import re

import pytest
from _helpers import compile_kernel, ptxas_report, spills
from utlx.attention import CONFIGS, SMEM_LIMIT, Config, all_configs
from utlx.kernels.nvidia import hopper_flash_attention as fa


def _compile(cfg: Config, d: int, causal: bool, n_ctx: int, dtype: str = "fp16"):
    sig = {"desc_q": f"tensordesc<{dtype}[{cfg.split}, {d}]>", "desc_k": f"tensordesc<{dtype}[{cfg.block_n}, {d}]>",
           "desc_v": f"tensordesc<{dtype}[{cfg.block_n}, {d}]>", "desc_o": f"tensordesc<{dtype}[{cfg.split}, {d}]>",
           "o_ptr": f"*{dtype}", "sched": "*i32", "ws_ptr": "*fp32", "sm_scale": "fp32", "ZH": "i32", "N_CTX": "i32"}
    unaligned = () if n_ctx % 16 == 0 else ("N_CTX",)
    return compile_kernel(fa.attn_fwd_ws, sig, cfg.constexprs(d, causal, n_ctx), "cuda:90", 4, unaligned=unaligned)


def _loop_bodies(ttgir: str) -> list[str]:
    """Text of every scf.for body (up to its scf.yield at the same indentation)."""
    out = []
    lines = ttgir.splitlines()
    for i, line in enumerate(lines):
        if " scf.for " in line:
            indent = len(line) - len(line.lstrip())
            body = []
            for nxt in lines[i + 1:]:
                if nxt.strip().startswith("scf.yield") and len(nxt) - len(nxt.lstrip()) == indent + 2:
                    break
                body.append(nxt)
            out.append("\n".join(body))
    return out


@pytest.fixture(scope="module")
def main_config():
    cfg = CONFIGS[(128, False)][0]
    return cfg, _compile(cfg, 128, False, 4096)


def test_partitions_registers_and_pingpong(main_config):
    cfg, k = main_config
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert len(re.findall(r"partition\d\([^\n]*\) num_warps\(4\)", ttgir)) == cfg.num_consumers
    assert f"requestedRegisters = array<i32: {cfg.consumer_regs}, {cfg.consumer_regs}>" in ttgir
    assert re.search(rf"setmaxnreg\.inc\.sync\.aligned\.u32\s+{cfg.consumer_regs};", ptx)
    # token ring: consumer 0 waits on 9 and passes to 10, consumer 1 the other way round
    assert "bar.sync 9, 256" in ptx and "bar.sync 10, 256" in ptx
    assert "bar.arrive 9, 256" in ptx and "bar.arrive 10, 256" in ptx


def test_gemms_stay_asynchronous(main_config):
    _, k = main_config
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    # per consumer: S_0 + P V of the previous tile (chain), S_j + P V in a step, the masked-free loop's last P V
    waits = re.findall(r"ttng\.warp_group_dot_wait [^{]*\{pendings = (\d+)", ttgir)
    assert sorted(waits) == sorted(["1", "0", "1", "0", "0"] * 2), waits
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 2 * 5 * 8  # 5 GEMMs x 8 k-steps
    for body in _loop_bodies(ttgir):
        for conv in re.findall(r"ttg\.convert_layout [^\n]*", body):
            assert "xf32, #mma>" not in conv.split("->")[0], conv  # no fp32 accumulator shuffled in a loop


def test_ptxas_no_spills_no_serialisation(main_config):
    _, k = main_config
    report = ptxas_report(k.asm["ptx"])
    assert not re.search(r"C751\d", report), report
    assert spills(report) == (0, 0), report


def test_tma_loads_and_deferred_stores(main_config):
    _, k = main_config
    ptx = k.asm["ptx"]
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global\.mbarrier::complete_tx", ptx)
    stores = [m.start() for m in re.finditer(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx)]
    # a chained tile's output store is not waited for right away (only before its staging tile is rewritten,
    # and once at the very end): some store is followed by no read-wait
    assert stores and any("cp.async.bulk.wait_group.read" not in ptx[s:s + 600] for s in stores)
    assert "ex2.approx" in ptx and "fma.rn.f32" in ptx


@pytest.mark.slow
@pytest.mark.parametrize(("d", "causal", "cfg"), all_configs(),
                         ids=[f"d{d}-{'causal' if c else 'full'}-{cfg.id}" for d, c, cfg in all_configs()])
@pytest.mark.parametrize(("n_ctx", "dtype"), [(4096, "fp16"), (1000, "bf16")])
def test_every_configuration_compiles_clean(d, causal, cfg, n_ctx, dtype):
    k = _compile(cfg, d, causal, n_ctx, dtype)
    assert k.metadata.shared <= SMEM_LIMIT, (cfg.id, k.metadata.shared)
    report = ptxas_report(k.asm["ptx"])
    assert not re.search(r"C751\d", report), report
    stores, loads = spills(report)
    if n_ctx % 64 == 0:
        assert (stores, loads) == (0, 0), report
    else:  # the masked-store fallback (N_CTX not a multiple of 64) may spill a few bytes outside the KV loop
        assert stores <= 256 and loads <= 256, report


def test_stream_k_parks_pieces_without_spills():
    """The stream-K variant: the park path (fp32 stores of O from the accumulator's registers, row max and
    row sum, behind a run-time ``slot >= 0`` branch) next to the TMA store, within shared memory, no
    spills; the plain variant has no trace of it."""
    cfg = next(c for c in CONFIGS[(128, False)] if c.stream_k)
    k = _compile(cfg, 128, False, 4096)
    ptx = k.asm["ptx"]
    # straight from the accumulator registers: 8-byte stores, and no 32 KB conversion scratch per consumer
    assert ptx.count("st.global.v2.f32") == 2 * 2 * 32  # 2 epilogue sites x 2 consumers x 32 column pairs
    assert k.metadata.shared <= SMEM_LIMIT
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx)  # whole tiles: TMA stores
    assert spills(ptxas_report(ptx)) == (0, 0)
    plain = _compile(CONFIGS[(128, False)][0], 128, False, 4096).asm["ptx"]
    assert "st.global.v2.f32" not in plain


def test_pdl_waits_for_the_previous_grid_before_any_task_starts():
    """With ``PDL`` (what ``utlx.attention`` launches when UTLX_PDL is on) the kernel says
    ``griddepcontrol.launch_dependents`` and ``griddepcontrol.wait`` once each, before the warp-specialized
    tasks start, so no TMA load or store can run ahead of the previous grid; the default has neither."""
    cfg = CONFIGS[(128, False)][0]
    sig = {"desc_q": f"tensordesc<fp16[{cfg.split}, 128]>", "desc_k": f"tensordesc<fp16[{cfg.block_n}, 128]>",
           "desc_v": f"tensordesc<fp16[{cfg.block_n}, 128]>", "desc_o": f"tensordesc<fp16[{cfg.split}, 128]>",
           "o_ptr": "*fp16", "sched": "*i32", "ws_ptr": "*fp32", "sm_scale": "fp32", "ZH": "i32", "N_CTX": "i32"}
    k = compile_kernel(fa.attn_fwd_ws, sig, dict(cfg.constexprs(128, False, 4096), PDL=True), "cuda:90", 4,
                       launch_pdl=True)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert k.metadata.launch_pdl
    assert ptx.count("griddepcontrol.wait;") == 1 and ptx.count("griddepcontrol.launch_dependents;") == 1
    assert ttgir.index("griddepcontrol.wait") < ttgir.index("ttg.warp_specialize(")
    assert ptx.index("griddepcontrol.wait") < ptx.index("cp.async.bulk.tensor")
    plain = _compile(cfg, 128, False, 4096).asm["ptx"]
    assert "griddepcontrol" not in plain


def test_bind_launches_with_pdl_only_when_utlx_pdl_is_on(monkeypatch):
    """``utlx.attention``'s launch binds the kernel's ``PDL`` constexpr and Triton's ``launch_pdl`` option
    together (one without the other would either do nothing or run ahead of the previous grid)."""
    torch = pytest.importorskip("torch")
    import importlib

    api = importlib.import_module("utlx.attention")  # the module (``utlx.attention`` the attribute is the function)

    made = []

    class Recorder:
        def __init__(self, jit_fn, grid, constexprs, num_warps, options=None):
            made.append((jit_fn, dict(constexprs), dict(options or {})))

    monkeypatch.setattr(api.launch, "FastLaunch", Recorder)
    cfg = CONFIGS[(128, False)][0]
    for value, expected in (("1", True), ("0", False), ("", False)):  # unset: off
        made.clear()
        monkeypatch.setenv("UTLX_PDL", value)
        api._bind(cfg, 4, 32, 2048, 128, False, 132, torch.device("cpu"))
        fn, const, opts = made[0]
        assert fn is fa.attn_fwd_ws
        assert const.get("PDL", False) is expected and opts.get("launch_pdl", False) is expected


def test_bf16_p_is_converted_in_column_pairs():
    """A bf16 P becomes the P V operand with one ``cvt.rn.bf16x2.f32`` per column pair at every site: left to
    LLVM, three of the five sites of the 192-row D=64 kernel converted one element at a time, and ptxas
    packed each pair with an extra PRMT on the softmax's path."""
    cfg = next(c for c in CONFIGS[(64, False)] if c.block_m == 192)
    ptx = _compile(cfg, 64, False, 4096, "bf16").asm["ptx"]
    assert "cvt.rn.bf16.f32" not in ptx
    assert ptx.count("cvt.rn.bf16x2.f32") >= 5 * 32  # 5 P sites x 32 pairs per thread (64 x 128 / 128 threads / 2)
