"""utlx's Inductor GEMM templates (``utlx.inductor.gemm_template``) render and compile for cuda:90 on a CPU.

Two renderings, both compiled with ``triton.compile`` for ``GPUTarget("cuda", 90, 32)``:

* with stand-ins for Inductor's hooks (``gemm_render``), whose ``store_output`` emits a fused addmm bias + GELU
  epilogue the way Inductor's code reads: checked in the TTGIR / PTX are the design's TMA loads into the
  mbarrier-tracked ring, device-side descriptors, wgmma of the tile's shape, and the epilogue (the bias load
  and the erf) in the same kernel; every configuration utlx offers fits one sm_90 block's shared memory;
* by Inductor itself (its real ``TritonTemplate`` rendering, ``store_output`` and addmm epilogue, run on a
  device that answers as an sm_90 GPU: ``inductor_fake_hopper``), for mm with a column-major weight, addmm and
  bmm: the generated module compiles and has the same wgmma / TMA code.
"""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest
import triton
from _helpers import compile_kernel
from gemm_render import load, mm_defines, render

torch = pytest.importorskip("torch")

from utlx.inductor import gemm  # noqa: E402
from utlx.inductor.gemm_template import BMM_SOURCE, MM_SOURCE, WS_MM_SOURCE  # noqa: E402
from utlx.kernels.nvidia.hopper_tma_persistent import SMEM_LIMIT  # noqa: E402

TMA_LOAD = re.compile(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global\.mbarrier::complete_tx::bytes")


@pytest.fixture(autouse=True, scope="module")
def _inductor_cache(tmp_path_factory):
    from inductor_fake_hopper import private_inductor_cache

    with private_inductor_cache(tmp_path_factory.mktemp("inductor-cache")):
        yield


@pytest.fixture(autouse=True, scope="module")
def _allocator():
    triton.set_allocator(lambda size, align, stream: None)  # device-side descriptors need one (never called here)


def _compile_rendered(tmp_path, bm, bn, bk, stages, warps, epilogue="bias_gelu", dtype="bf16"):
    m, n, k = 4096, 4096, 4096
    src = render(MM_SOURCE, mm_defines(bm, bn, bk, stages, b_col=True), {"A": (m, k), "B": (k, n), "C": (m, n)},
                 strides={"B": [1, k]}, epilogue=epilogue)
    module = load(src, tmp_path, f"utlx_gemm_render_{bm}_{bn}_{stages}_{warps}_{epilogue}")
    sig = {"A": f"*{dtype}", "B": f"*{dtype}", "out_ptr0": f"*{dtype}"}
    if epilogue != "none":
        sig["in_ptr2"] = f"*{dtype}"
    return src, compile_kernel(module.utlx_gemm_kernel, sig, {}, "cuda:90", warps)


@pytest.fixture(scope="module")
def compiled_main(tmp_path_factory):
    return _compile_rendered(tmp_path_factory.mktemp("gemm"), *gemm.CONFIGS[0])


def test_rendered_source_is_complete_and_carries_the_epilogue(compiled_main):
    src, _ = compiled_main
    assert "{{" not in src and "}}" not in src and "{%" not in src
    assert "tl.math.erf(tmp2" in src and "tl.load(in_ptr2 + (idx_n)" in src
    assert src.count("tl.store(out_ptr0") == 1


def test_ptx_has_tma_ring_wgmma_and_the_fused_epilogue(compiled_main):
    _, k = compiled_main
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in ptx  # 128x256 tile: two warpgroups of 64 rows
    assert TMA_LOAD.search(ptx)
    assert "tensormap.replace.tile.global_address" in ptx  # descriptors made on the device from Inductor's pointers
    assert "mbarrier.try_wait" in ptx and "mbarrier.arrive.expect_tx" in ptx
    assert "math.erf" in ttgir  # GELU, in this kernel
    assert ttgir.count("tt.load") >= 1  # the bias row (A and B come by TMA, not tt.load)
    assert "tt.descriptor_load" not in ttgir  # no stock (non-TLX) descriptor loads: the ring's are utlx's
    assert "ttg.warp_specialize" not in ttgir  # the persistent (not warp-specialized) design


@pytest.mark.parametrize("config", gemm.CONFIGS[1:], ids=lambda c: "x".join(map(str, c)))
def test_every_offered_config_compiles_and_fits_shared_memory(tmp_path, config):
    _, k = _compile_rendered(tmp_path, *config, dtype="fp16")
    assert k.metadata.shared <= SMEM_LIMIT, (config, k.metadata.shared)
    # a wgmma covers 64 rows and the tile's whole width, whatever the warpgroups' share of the rows
    assert f"wgmma.mma_async.sync.aligned.m64n{config[1]}k16.f32.f16.f16" in k.asm["ptx"]


def test_first_config_fits_shared_memory(compiled_main):
    _, k = compiled_main
    assert k.metadata.shared <= SMEM_LIMIT


def test_bmm_template_renders_and_compiles(tmp_path):
    b, m, n, kk = 3, 512, 384, 256
    src = render(BMM_SOURCE, mm_defines(128, 128, 64, 4), {"A": (b, m, kk), "B": (b, kk, n), "C": (b, m, n)})
    assert "operand_descriptor(A + idx_q * stride_aq, " in src  # each batch its own matrices
    module = load(src, tmp_path, "utlx_bmm_render")
    k = compile_kernel(module.utlx_gemm_kernel, {"A": "*fp16", "B": "*fp16", "out_ptr0": "*fp16"}, {}, "cuda:90", 8)
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in k.asm["ptx"]
    assert TMA_LOAD.search(k.asm["ptx"])


# --- rendered by Inductor itself --------------------------------------------------------------------------------


def _inductor_kernel(op: str, tmp_name: str, ws: bool = False):
    import utlx.inductor as ui
    from inductor_fake_hopper import contiguous, fake_hopper, generated_source, input_node, lowering, template_choices

    ui.enable("force")
    try:
        with fake_hopper(), lowering() as graph:
            if op == "bmm":
                inputs = [input_node(graph, "a", [2, 256, 192], contiguous([2, 256, 192])),
                          input_node(graph, "b", [2, 192, 320], contiguous([2, 192, 320]))]
            else:
                inputs = [input_node(graph, "a", [256, 512], [512, 1]), input_node(graph, "b", [512, 384], [1, 512])]
                if op == "addmm":
                    inputs.insert(0, input_node(graph, "bias", [256, 384], [0, 1]))
            choices = template_choices(op, inputs, beta=0.5)
    finally:
        ui.disable()
    choice = next(c for c in choices if "BLOCK_M=128" in c.description and "BLOCK_N=128" in c.description
                  and ("CONSUMER_REGS" in c.description if ws else "num_warps=8" in c.description))
    src = generated_source(choice)
    spec = importlib.util.spec_from_file_location(tmp_name, choice.bmreq.module_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[tmp_name] = module
    spec.loader.exec_module(module)
    kernel = next(v for name, v in vars(module).items() if name.startswith("triton_utlx_hopper_"))
    meta = kernel.triton_meta
    return src, compile_kernel(kernel.fn, dict(meta["signature"]), {}, "cuda:90", 4 if ws else 8)


@pytest.mark.parametrize("op", ["mm", "addmm", "bmm"])
def test_inductor_renders_the_template_and_it_compiles(op):
    src, k = _inductor_kernel(op, f"utlx_inductor_rendered_{op}")
    assert "mainloop(a_desc, b_desc, buffers_A, buffers_B, ready" in src
    assert "tl.store(out_ptr0" in src
    if op == "addmm":  # Inductor's addmm epilogue: beta * bias + acc, bias read as the prefix input
        assert "tl.load(in_ptr0 + (tl.broadcast_to(idx_n" in src  # the bias row, broadcast over M
        assert "0.5" in src and re.search(r"= acc \+ tmp\d", src)
    if op == "mm":
        assert "B_COL : tl.constexpr = True" in src
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx
    assert TMA_LOAD.search(ptx) and "mbarrier.try_wait" in ptx


@pytest.mark.parametrize("op", ["mm", "addmm"])
def test_inductor_renders_the_warp_specialized_template_and_it_compiles(op):
    src, k = _inductor_kernel(op, f"utlx_inductor_rendered_ws_{op}", ws=True)
    assert "ws_ring.produce(" in src and "replicate=2" in src and src.count("tl.store(out_ptr0") == 1
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count("ttg.warp_specialize(") == 1 and "requestedRegisters = array<i32: 232, 232>" in ttgir
    assert re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232;", ptx)
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx
    assert TMA_LOAD.search(ptx) and "mbarrier.try_wait" in ptx
    assert k.metadata.shared <= SMEM_LIMIT


@pytest.mark.parametrize("config", gemm.WS_CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_warp_specialized_configs_compile_with_the_fused_epilogue(tmp_path, config):
    bm, bn, bk, stages, warps = config
    m = n = kk = 4096
    defines = dict(mm_defines(bm, bn, bk, stages, b_col=True), CONSUMER_REGS=gemm.CONSUMER_REGS)
    src = render(WS_MM_SOURCE, defines, {"A": (m, kk), "B": (kk, n), "C": (m, n)}, strides={"B": [1, kk]},
                 epilogue="bias_gelu")
    module = load(src, tmp_path, f"utlx_ws_render_{bm}_{bn}_{stages}")
    sig = {"A": "*bf16", "B": "*bf16", "in_ptr2": "*bf16", "out_ptr0": "*bf16"}
    k = compile_kernel(module.utlx_gemm_kernel, sig, {}, "cuda:90", warps)
    assert k.metadata.shared <= SMEM_LIMIT, (config, k.metadata.shared)
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.bf16.bf16" in k.asm["ptx"]
    assert "math.erf" in k.asm["ttgir"] and k.asm["ttgir"].count("ttg.warp_specialize(") == 1
