"""Every edit kind, with its effect shown in the IR or the assembly."""

from __future__ import annotations

import dataclasses

import pytest
import tritonx
from tritonx.compat import libtriton
from tritonx_testutil import ptx_counts


def test_stock_probe_is_pipelined(compile_probe):
    counts = ptx_counts(compile_probe())
    assert counts["cp.async"] > 0 and counts["wgmma"] > 0


@pytest.mark.smoke
def test_disable_removes_software_pipelining(compile_probe):
    stock = compile_probe()
    with tritonx.activate(tritonx.Pipeline("nopipe").disable("tritongpu-pipeline")):
        edited = compile_probe()
    assert ptx_counts(stock)["cp.async"] > 0
    assert ptx_counts(edited)["cp.async"] == 0
    assert "ttg.async_copy_global_to_local" not in edited.asm["ttgir"]
    assert edited.metadata.shared < stock.metadata.shared


def test_adder_name_is_accepted(compile_probe):
    with tritonx.activate(tritonx.Pipeline("by-adder").disable("ttgpuir.add_pipeline")):
        assert ptx_counts(compile_probe())["cp.async"] == 0


def test_insert_named_stock_pass_with_args(compile_probe):
    """Disable the pipeliner where it is, re-insert it (with explicit args) later: copies come back."""
    p = (tritonx.Pipeline("moved")
         .disable("tritongpu-pipeline")
         .insert_after("tritongpu-schedule-loops", "tritongpu-pipeline", args=[3, False]))
    with tritonx.activate(p):
        k = compile_probe()
    assert ptx_counts(k)["cp.async"] > 0


def test_insert_python_pass_sees_live_module(compile_probe):
    seen = {}

    def tag(module, ctx):
        seen["ctx"] = (ctx.pipeline, ctx.stage, ctx.target, ctx.pass_name)
        seen["has_wgmma_layout"] = "nvidia_mma" in str(module)
        module.set_attr("tritonx.tagged", libtriton().ir.builder(module.context).get_bool_attr(True))

    p = tritonx.Pipeline("tagger").insert_after("tritongpu-accelerate-matmul", tag, pass_name="tag")
    with tritonx.activate(p):
        k = compile_probe()
    assert seen["ctx"] == ("tagger", "ttgir", "cuda:90", "tag")  # the target compares equal to its old text
    assert seen["has_wgmma_layout"]  # ran after accelerate-matmul: MMA layouts exist
    assert "tritonx.tagged = true" in k.asm["ttgir"]


@pytest.mark.parametrize(("spec", "warp"), [("cuda:90", 32), ("hip:gfx942", 64)])
def test_pass_context_carries_the_compiles_target(compile_probe, spec, warp):
    """``ctx.target`` is tritonx's target type (issue 30), read from the options Triton compiles with:
    the kernel's warp count included; ``str()`` is the text it used to be."""
    from tritonx.dsl import KernelTarget

    seen = []
    p = tritonx.Pipeline("where").insert_after("convert-triton-to-tritongpu", lambda m, ctx: seen.append(ctx.target),
                                               pass_name="where")
    with tritonx.activate(p):
        compile_probe(spec, options={"num_warps": 8})
    [target] = seen
    assert isinstance(target, KernelTarget) and isinstance(target, tritonx.Target)
    assert (target.name, target.warp_size, target.num_warps) == (spec, warp, 8)
    assert str(target) == spec and f"{target}" == spec and target == spec and target != "cuda:80"


def test_insert_before_runs_before(compile_probe):
    seen = {}

    def look(module, ctx):
        seen["mma"] = "nvidia_mma" in str(module)

    with tritonx.activate(tritonx.Pipeline("b").insert_before("tritongpu-accelerate-matmul", look)):
        compile_probe()
    assert seen["mma"] is False


def test_replace_with_python_pass(compile_probe):
    calls = []
    p = tritonx.Pipeline("mine").replace("tritongpu-pipeline", lambda m, c: calls.append(c.stage), pass_name="mine")
    with tritonx.activate(p):
        k = compile_probe()
    assert calls == ["ttgir"]
    assert ptx_counts(k)["cp.async"] == 0


def test_replace_with_named_pass(compile_probe):
    p = tritonx.Pipeline("swap").replace("tritongpu-pipeline", "tritongpu-pipeline", args=[3, False])
    with tritonx.activate(p):
        cap = tritonx.capture("cuda:90")
        k = compile_probe()
    marks = [(x.name, x.mark) for x in cap["ttgir"] if x.mark]
    assert marks == [("tritongpu-pipeline", "replaced"), ("tritongpu-pipeline[3, False]", "replacement")]
    assert ptx_counts(k)["cp.async"] > 0


def test_occurrence_picks_one_of_repeated_passes():
    seen = []
    p = tritonx.Pipeline("occ").insert_after("canonicalize", lambda m, c: seen.append(1), occurrence=1,
                                             stage="ttgir")
    with tritonx.activate(p):
        cap = tritonx.capture("cuda:90")
    assert len(seen) == 1
    ttgir = cap["ttgir"]
    i = next(i for i, x in enumerate(ttgir) if x.mark == "inserted")
    assert ttgir[i - 1].name == "canonicalize" and ttgir[i - 1].occurrence == 1


def test_override_stage(compile_probe):
    def one_stage(src, metadata, ctx):
        opts = dataclasses.replace(ctx.options, num_stages=1)
        return ctx.backend.make_ttgir(src, metadata, opts, ctx.capability)

    with tritonx.activate(tritonx.Pipeline("ov").override_stage("ttgir", one_stage)):
        k = compile_probe()
    assert ptx_counts(k)["cp.async"] == 0
    assert ptx_counts(k)["wgmma"] > 0


@pytest.mark.parametrize("target,stage", [("cuda:90", "ptx"), ("hip:gfx942", "amdgcn"), ("cuda:90", "llir")])
def test_transform_text_stage(compile_probe, target, stage):
    marker = {"ptx": "// tritonx was here", "amdgcn": "; tritonx was here", "llir": "; tritonx was here"}[stage]
    p = tritonx.Pipeline("stamp").transform_stage(stage, lambda text, ctx: text + f"\n{marker}\n")
    with tritonx.activate(p):
        k = compile_probe(target)
    assert marker in k.asm[stage]


def test_transform_of_a_stage_the_backend_lacks(compile_probe):
    """A ``ptx`` rewrite compiling for AMD: an error naming the edit, unless it is marked not required."""
    seen = []
    strict = tritonx.Pipeline("nvidia-only").transform_stage("ptx", lambda text, ctx: seen.append(1) or text)
    with tritonx.activate(strict), pytest.raises(tritonx.errors.PassNotFoundInStageError, match="transform_stage"):
        compile_probe("hip:gfx942")
    lenient = tritonx.Pipeline("nvidia-only-lenient").transform_stage("ptx", lambda text, ctx: seen.append(1) or text,
                                                                      required=False)
    with tritonx.activate(lenient):
        k = compile_probe("hip:gfx942")
    assert "amdgcn" in k.asm and not seen


def test_override_pipeline_adds_a_stage(compile_probe):
    def add_stats(stages, ctx):
        ptx = stages["ptx"]

        def counted(src, metadata):
            out = ptx(src, metadata)
            return out + f"\n// lines: {out.count(chr(10))}\n"

        stages["ptx"] = counted

    with tritonx.activate(tritonx.Pipeline("stats").override_pipeline(add_stats)):
        k = compile_probe()
    assert "// lines: " in k.asm["ptx"]


def test_amd_disable_stream_pipeliner(compile_probe):
    stock = compile_probe("hip:gfx942")
    with tritonx.activate(tritonx.Pipeline("amd").disable("tritonamdgpu-pipeline")):
        edited = compile_probe("hip:gfx942")
    assert "v_mfma" in edited.asm["amdgcn"]
    assert edited.asm["ttgir"] != stock.asm["ttgir"]


def test_composition_order_is_activation_order():
    order = []
    a = tritonx.Pipeline("a").insert_after("tritongpu-coalesce", lambda m, c: order.append("a"))
    b = tritonx.Pipeline("b").insert_after("tritongpu-coalesce", lambda m, c: order.append("b"))
    with tritonx.activate(b), tritonx.activate(a):
        tritonx.capture("cuda:90")
    assert order == ["b", "a"]
