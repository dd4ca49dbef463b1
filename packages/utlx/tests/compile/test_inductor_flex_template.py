"""The utlx FlexAttention template (``utlx.inductor.flex_template``) renders and compiles for cuda:90 on a CPU.

Inductor is not run here (it needs a GPU to lower for one): the template's Jinja source is rendered with stand-ins
for Inductor's hooks that emit what Inductor emits in their place (the kernel signature and constexpr defines,
literal strides and sizes, an inlined score_mod / mask_mod, the output store), then compiled with
``triton.compile`` for ``GPUTarget("cuda", 90, 32)``. Checked: no placeholder is left, the score_mod and mask_mod
code is in the kernel, and the PTX has the design's wgmma GEMMs, TMA loads, mbarriers and three warp groups.
The same module checks the switch (enable / disable / modes / env knob) and that off leaves Inductor as it was.
"""

from __future__ import annotations

import re
from collections import Counter

import flex_render
import pytest
import triton
from _helpers import compile_kernel, ptxas_report, spills
from flex_render import Problem


def _problem(d: int, n_ctx: int, full: bool, score_mod: str = "alibi-literal", mask_mod: str = "causal",
             **options) -> Problem:
    return Problem(b=2, hq=8, hkv=2, q_len=n_ctx, kv_len=n_ctx, d=d, score_mod=score_mod, mask_mod=mask_mod,
                   full=full, options=options)


def render(d: int = 128, n_ctx: int = 4096, full: bool = True) -> str:
    """The template source with Inductor's hooks filled (B=2, Hq=8, Hkv=2, an ALiBi-like score_mod, causal)."""
    return flex_render.render(_problem(d, n_ctx, full))


def _compile(tmp_path, d: int, n_ctx: int, full: bool, dtype: str = "bf16", score_mod: str = "alibi-literal",
             mask_mod: str = "causal", **options):
    p = _problem(d, n_ctx, full, score_mod, mask_mod, **options)
    src = flex_render.render(p)
    tag = "_".join(f"{k}{int(v)}" for k, v in sorted(options.items()))
    module = flex_render.load(src, tmp_path, f"utlx_flex_render_{d}_{n_ctx}_{int(full)}_{score_mod}_{mask_mod}_{tag}"
                              .replace("-", "_"))
    return src, compile_kernel(module.utlx_flex_kernel, flex_render.signature(p, dtype), {}, "cuda:90", 4)


@pytest.fixture(scope="module")
def compiled_main(tmp_path_factory):
    triton.set_allocator(lambda size, align, stream: None)  # device-side descriptors need one (never called here)
    return _compile(tmp_path_factory.mktemp("flex"), 128, 4096, True)


def test_rendered_source_has_no_placeholder_and_inlines_mods(compiled_main):
    src, _ = compiled_main
    assert "{{" not in src and "{%" not in src and "}}" not in src
    assert "post_mod_scores = qk + tmp0 * 0.0625" in src  # score_mod inlined in the scores helper
    assert "tmp0 = m >= n" in src and "mask_mod_output = tmp0" in src  # mask_mod inlined in the mask helper
    assert src.count("tlx.async_task(") == 2


def test_ptx_has_wgmma_tma_and_three_warp_groups(compiled_main):
    _, k = compiled_main
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert len(re.findall(r"partition\d\([^\n]*\) num_warps\(4\)", ttgir)) == 2
    assert re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+240;", ptx)
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx
    # TMA loads (Triton 3.6 spells the destination shared::cluster, 3.8 shared::cta)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global\.mbarrier::complete_tx::bytes", ptx)
    assert "tensormap.replace.tile.global_address" in ptx  # device-side descriptors (per head)
    assert "mbarrier.try_wait" in ptx
    assert "tanh" not in ptx


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize(("d", "n_ctx", "full"), [(64, 4096, True), (128, 1000, False)])
def test_other_shapes_compile(tmp_path, d, n_ctx, full, overlap):
    triton.set_allocator(lambda size, align, stream: None)
    _, k = _compile(tmp_path, d, n_ctx, full, "fp16", OVERLAP=overlap)
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx  # S = Q K^T over 128 columns
    if d == 64:
        assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in ptx  # O += P V, 64 wide


# ------------------------------------------------------------------ the document-mask pathology and its fix
#
# What was wrong (issue 31's 0.10x cell): a mask_mod gathering with the KV index (``doc[n]``) loads as many
# values as a block has columns. At 128 (one per thread of the consumer warpgroup) Triton's layout pass keeps
# that load in a blocked layout of its own, and the softmax then followed it there: S went from the wgmma
# accumulator layout to the blocked one through shared memory every block (49 KB more shared memory), the
# softmax was computed in both layouts, and ptxas spilled 7240 bytes. The template now evaluates the mods on
# the two 64-column halves of S (64 values per gather: rematerialised in the accumulator layout), and issues
# the gathers before it waits for the S GEMM.

def _loads_before_wait(ptx: str, load: str) -> int:
    """How many ``load`` instructions sit in a basic block that waits for a wgmma after them and not before
    them: issued while the GEMM the block waits for is in flight (the block is reached with it committed)."""
    n = 0
    for block in re.split(r"\n\$L__BB\d+_\d+:", ptx):
        first, last = block.find(load), block.rfind(load)
        if first >= 0 and "wgmma.wait_group" not in block[:first] and "wgmma.wait_group" in block[last:]:
            n += block.count(load)
    return n


@pytest.fixture(scope="module")
def document_kernels(tmp_path_factory):
    """{(mask_mod, OVERLAP): (ptxas spills, shared bytes, ttgir, ptx, ptxas report)} at N_CTX 2048, D=128, bf16."""
    triton.set_allocator(lambda size, align, stream: None)
    tmp = tmp_path_factory.mktemp("flexdoc")
    out = {}
    for mask_mod in ("none", "document"):
        for overlap in (False, True):
            _, k = _compile(tmp, 128, 2048, True, score_mod="none", mask_mod=mask_mod, OVERLAP=overlap)
            report = ptxas_report(k.asm["ptx"])
            out[mask_mod, overlap] = (spills(report), k.metadata.shared, k.asm["ttgir"], k.asm["ptx"], report)
    return out


@pytest.mark.parametrize("overlap", [False, True])
def test_document_mask_keeps_the_accumulator_layout(document_kernels, overlap):
    (sp_none, smem_none, ttgir_none, _, _), (sp_doc, smem_doc, ttgir_doc, _, report) = (
        document_kernels["none", overlap], document_kernels["document", overlap])
    # ptxas keeps the wgmmas asynchronous (it serialises them, with a warning, where registers a wgmma is still
    # reading get reused: that would undo the FA3 overlap)
    assert "serialized" not in report and "wgmma" not in report.lower(), report
    # S / P never leave the wgmma accumulator layout: no fp32 block tile in a blocked layout, no extra conversion
    assert not re.search(r"tensor<64x128xf32, #blocked\d*>", ttgir_doc)
    assert ttgir_doc.count("ttg.convert_layout") == ttgir_none.count("ttg.convert_layout")
    assert smem_doc == smem_none  # no shared-memory round trip added by the mask
    assert sp_none == (0, 0)
    if overlap:  # the FA3 loop keeps P_{j-1} and O in flight besides S_j and the document ids: 240 regs are tight
        assert max(sp_doc) <= 32, sp_doc
    else:
        assert sp_doc == (0, 0), sp_doc


@pytest.mark.parametrize("overlap", [False, True])
def test_document_gathers_are_issued_while_the_s_gemm_runs(document_kernels, overlap):
    ptx = document_kernels["document", overlap][3]
    gathers = ptx.count("ld.global.v2.b32")  # doc[n]: 8 two-column loads per 64-column half per thread
    assert gathers >= 32, gathers
    assert _loads_before_wait(ptx, "ld.global.v2.b32") == gathers  # every one before the wait for S


def test_overlap_variant_issues_s_before_the_previous_pv(document_kernels):
    plain, fa3 = document_kernels["none", False][3], document_kernels["none", True][3]
    waits = set(re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+);", plain))
    assert waits == {"0"}, waits  # the plain loop waits for every GEMM it issues
    # FA3: S_j, then P_{j-1} V_{j-1} (two K=64 GEMMs, one per half of P) committed back to back, then the wait for
    # S_j only (2 groups left in flight: the P V GEMMs)
    assert "wgmma.wait_group.sync.aligned 2;" in fa3
    assert any(w.count("wgmma.commit_group") == 3 for w in fa3.split("wgmma.wait_group"))


@pytest.mark.parametrize(("score_mod", "mask_mod"), [("alibi", "causal"), ("softcap", "none"), ("none", "causal")])
def test_other_mods_do_not_spill(tmp_path, score_mod, mask_mod):
    triton.set_allocator(lambda size, align, stream: None)
    for overlap in (False, True):
        _, k = _compile(tmp_path, 128, 2048, True, score_mod=score_mod, mask_mod=mask_mod, OVERLAP=overlap)
        assert spills(ptxas_report(k.asm["ptx"])) == (0, 0), (score_mod, mask_mod, overlap)
        assert not re.search(r"tensor<64x128xf32, #blocked\d*>", k.asm["ttgir"])


def test_deep_ring_variant_compiles_for_d64(tmp_path):
    triton.set_allocator(lambda size, align, stream: None)
    _, k = _compile(tmp_path, 64, 2048, True, "fp16", score_mod="none", mask_mod="document", OVERLAP=True, NUM_KV=3)
    assert k.metadata.shared <= 232448  # sm_90's opt-in shared memory per block
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in k.asm["ptx"]


def test_choices_offer_every_variant():
    """flex.choices makes one choice per variant (autotuning picks): FA3 and plain loops, plus the 3-slot ring
    where shared memory has room (D=64)."""
    from utlx.inductor import flex

    assert [(v["OVERLAP"], v["NUM_KV"]) for v in flex.variants(128)] == [(True, 2), (False, 2)]
    assert [(v["OVERLAP"], v["NUM_KV"]) for v in flex.variants(64)] == [(True, 2), (False, 2), (True, 3), (False, 3)]


def _sass_ops(cubin: bytes, tmp_path) -> list[str]:
    """The opcodes of a cubin's SASS (cuobjdump from the Triton wheel)."""
    import subprocess
    from pathlib import Path

    from triton.backends.nvidia import compiler as nvidia

    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    tool = Path(nvidia.__file__).parent / "bin" / "cuobjdump"
    sass = subprocess.run([str(tool), "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    return re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass, re.M)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("overlap", [False, True])
def test_p_goes_to_bf16_without_byte_permutes(tmp_path, overlap, dtype):
    """P stays in the two halves the mods ran on (the P V GEMM is two K=64 GEMMs): joining them back to 128
    columns reordered the bf16 pairs, one PRMT per pair (64 per block, 128 in the FA3 loop). In fp16 the FA3
    loop had 32 PRMTs per block until its conversion was paired too (``cvt.rn.f16x2.f32``)."""
    triton.set_allocator(lambda size, align, stream: None)
    _, k = _compile(tmp_path, 128, 2048, True, dtype, score_mod="none", mask_mod="document", OVERLAP=overlap)
    ops = _sass_ops(k.asm["cubin"], tmp_path)
    assert "WARPGROUP.ARRIVE" in ops  # the SASS was read (wgmma fences)
    assert ops.count("PRMT") == 0


def _softmax_loops(cubin: bytes, tmp_path) -> list[Counter]:
    """Opcode counts of each innermost SASS loop that runs wgmma and exponentials (the consumers' KV loops), read
    with ``nvdisasm`` and the loop finder of ``tools/bench/tutorial_sass.py``."""
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    from triton import knobs

    root = Path(__file__).resolve().parents[4]
    spec = importlib.util.spec_from_file_location("utlx_tutorial_sass", root / "tools/bench/tutorial_sass.py")
    ts = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = ts
    spec.loader.exec_module(ts)
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    text = subprocess.run([knobs.nvidia.nvdisasm.path, "-c", str(path)], capture_output=True, text=True,
                          check=True).stdout
    sass = ts.parse_sass(text)
    spans = ts.loops(sass)
    out = []
    for (first, last), inner in zip(spans, ts.innermost(spans, 32), strict=True):
        ops = Counter(ts.opcode(i) for i in sass.instructions[first:last + 1])
        if inner and any(o.startswith("HGMMA") for o in ops) and any(o.startswith("MUFU.EX2") for o in ops):
            out.append(ops)
    return out


@pytest.mark.parametrize(("score_mod", "mask_mod", "fmul_per_exp"), [("none", "none", 1), ("none", "causal", 1),
                                                                     ("alibi", "causal", 2)])
def test_softmax_is_one_ffma_and_one_exp_per_score(tmp_path, score_mod, mask_mod, fmul_per_exp):
    """The consumers' KV loop does per score what utlx.attention's does: one FFMA (``s * SCALE - m``) into one
    MUFU.EX2, and one FMUL for the accumulator's rescale (one per output element, as many as scores per thread
    at D=128); a score_mod adds SM_SCALE's multiply, the identity does not. Each row reduction runs once over
    both column halves: one butterfly pair of shuffles per reduction and row (8 per block: 2 rows per thread, max
    and sum; a loop body may hold two blocks). Before 2026-12-04 the no-mask loop had 3 FMUL per exponential and
    16 shuffles per block (596 instructions against utlx.attention's 455; it now has 454)."""
    triton.set_allocator(lambda size, align, stream: None)
    for overlap in (False, True):
        _, k = _compile(tmp_path, 128, 2048, True, score_mod=score_mod, mask_mod=mask_mod, OVERLAP=overlap)
        loops = _softmax_loops(k.asm["cubin"], tmp_path)
        assert loops, "no consumer KV loop found in the SASS"
        for ops in loops:
            exps = sum(n for o, n in ops.items() if o.startswith("MUFU.EX2"))
            shuffles = sum(n for o, n in ops.items() if o.startswith("SHFL"))
            assert exps >= 64, ops  # 64 scores per thread and block (64x128 per warpgroup)
            assert ops["FMUL"] <= fmul_per_exp * exps + 8, (overlap, ops["FMUL"], exps)
            assert shuffles * 8 <= exps, (overlap, shuffles, exps)


@pytest.mark.parametrize(("name", "identity"), [("identity", True), ("alibi", False), ("tanh", False),
                                                 ("head index", False)])
def test_identity_score_mod_is_recognised_from_inductors_subgraph_buffer(name, identity):
    """``flex.score_mod_is_identity`` on the buffer Inductor's own flex code builds from a score_mod graph
    (``build_subgraph_module_buffer`` over the ``score, b, h, m, n`` placeholders): only ``lambda score, ...:
    score`` folds SM_SCALE into the exponent; a mod that returns another placeholder (the head index) or computes
    anything keeps the general path (a wrong True would drop SM_SCALE from its scores)."""
    import torch
    from inductor_fake_hopper import lowering
    from torch._inductor.kernel.flex.common import build_subgraph_module_buffer, create_placeholder
    from torch.fx.experimental.proxy_tensor import make_fx
    from utlx.inductor.flex import score_mod_is_identity

    mods = {"identity": lambda score, b, h, m, n: score, "alibi": lambda score, b, h, m, n: score + (n - m),
            "tanh": lambda score, b, h, m, n: torch.tanh(score), "head index": lambda score, b, h, m, n: h}
    names = (("score", torch.float32), ("b", torch.int32), ("h", torch.int32), ("m", torch.int32), ("n", torch.int32))
    graph = make_fx(mods[name])(torch.tensor(0.5), *(torch.tensor(1, dtype=torch.int32) for _ in range(4)))
    with lowering():
        buffer = build_subgraph_module_buffer([create_placeholder(n, dt, torch.device("cpu")) for n, dt in names],
                                              graph)
    assert score_mod_is_identity({"subgraphs": [buffer, None]}) is identity
    assert score_mod_is_identity({}) is False
