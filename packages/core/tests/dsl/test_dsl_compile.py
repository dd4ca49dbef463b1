"""Ops declared through ``tritonx.dsl`` compile for cuda:90 and hip:gfx942 on the CPU, each implementation
kind with its effect in the IR or assembly, and kernels that do not use them stay stock."""

from __future__ import annotations

import re

import dsl_kernels as dk
import dsl_ops as dt
import pytest
import triton
import tritonx
from tritonx.dsl import KernelTarget

# Marked smoke: the repo's compile smoke runs it on every Triton version of the matrix.
pytestmark = pytest.mark.smoke

ASM = {"cuda:90": "ptx", "hip:gfx942": "amdgcn"}


def compile_(target, kernel, signature, constexprs=None):
    return tritonx.compile_for(target, kernel, signature=signature, constexprs=constexprs or {})


def test_emitted_op_is_one_instruction_per_backend():
    with tritonx.activate(dt.lang.pipeline()):
        cuda = compile_("cuda:90", dk.rotate_kernel, dk.I32, {"N": 128, "R": 8})
        hip = compile_("hip:gfx942", dk.rotate_kernel, dk.I32, {"N": 128, "R": 8})
    assert re.search(r"shf\.l\.wrap\.b32 %r\d+, (%r\d+), \1, 8;", cuda.asm["ptx"])
    assert re.search(r"v_alignbit_b32 (v\d+), (v\d+), \2, 24", hip.asm["amdgcn"])
    assert "tt.elementwise_inline_asm" in cuda.asm["ttir"] and "dsltest|" not in cuda.asm["ttir"]
    stock = compile_("cuda:90", dk.plain_kernel, dk.F32, {"N": 128})
    assert "shf.l.wrap" not in stock.asm["ptx"]


def test_ops_called_from_a_jit_helper_compile_too():
    with tritonx.activate(dt.lang.pipeline()):
        ptx = compile_("cuda:90", dk.helper_kernel, dk.I32, {"N": 128}).asm["ptx"]
    assert re.search(r"shf\.l\.wrap\.b32 %r\d+, (%r\d+), \1, 5;", ptx)


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_lowered_op_is_a_placeholder_in_ttir_and_ttgir_ops_after_conversion(target):
    with tritonx.activate(dt.lang.pipeline()):
        compiled = compile_(target, dk.shared_kernel, dk.F32, {"N": 128})
    ttir, ttgir = compiled.asm["ttir"], compiled.asm["ttgir"]
    assert ttir.count('"dsltest|via_shared|') == 1
    assert "dsltest|" not in ttgir
    assert ttgir.count("ttg.local_alloc") == 1 and ttgir.count("ttg.local_load") == 1
    asm = compiled.asm[ASM[target]]
    if target.startswith("cuda"):
        assert "stmatrix" in asm and "ldmatrix" in asm  # the shared round trip, as NVIDIA lowers it
    else:
        assert "ds_write" in asm and "ds_read" in asm


@pytest.mark.parametrize(("target", "expected"), [("cuda:90", 2), ("cuda:80", 1), ("hip:gfx942", 0)])
def test_the_most_specific_target_pattern_wins(target, expected):
    with tritonx.activate(dt.lang.pipeline()):
        ttir = compile_(target, dk.target_kernel, {"out_ptr": "*i32"}).asm["ttir"]
    assert re.search(rf"arith\.constant {expected} : i32", ttir), ttir


def test_kernels_without_the_language_compile_as_stock():
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        stock = compile_("cuda:90", dk.plain_kernel, dk.F32, {"N": 128})
        with tritonx.activate(dt.lang.pipeline()):
            edited = compile_("cuda:90", dk.plain_kernel, dk.F32, {"N": 128})
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        assert edited.asm[stage] == stock.asm[stage], stage


def test_the_plugin_of_a_language_enables_it():
    tritonx.register_plugin(dt.lang.plugin())
    tritonx.enable_plugins(["dsltest"])
    ptx = compile_("cuda:90", dk.rotate_kernel, dk.I32, {"N": 128, "R": 3}).asm["ptx"]
    assert re.search(r"shf\.l\.wrap\.b32 %r\d+, (%r\d+), \1, 3;", ptx)
    tritonx.disable_plugins(["dsltest"])


def test_a_bound_pipeline_enables_it_for_that_kernel_only():
    bound = tritonx.pipeline(dt.lang.pipeline())(dk.rotate_kernel_to_bind)
    ptx = compile_("cuda:90", bound, dk.I32, {"N": 128, "R": 4}).asm["ptx"]
    assert re.search(r"shf\.l\.wrap\.b32 %r\d+, (%r\d+), \1, 4;", ptx)


def test_the_language_key_enters_tritons_key():
    with tritonx.activate(dt.lang.pipeline()):
        active = tritonx.active_key()
        first = compile_("cuda:90", dk.rotate_kernel, dk.I32, {"N": 128, "R": 8})
    assert active
    other = dt.lang.pipeline().copy("dsltest-v2")
    other.extra_cache_key = lambda: "another version of the language"
    with tritonx.activate(other):
        assert tritonx.active_key() != active
        second = compile_("cuda:90", dk.rotate_kernel, dk.I32, {"N": 128, "R": 8})
    assert first.hash != second.hash


@pytest.mark.parametrize(("target", "warp"), [("cuda:90", 32), ("hip:gfx942", 64)])
def test_lowering_gets_the_pass_contexts_target_object(target, warp):
    """One target type from the public API to the lowerings (issue 30): the lowering's target is the very
    object the pass context carries, with the compile's warp count; no re-parsed text."""
    dt.LOWERED_FOR.clear()
    with tritonx.activate(dt.lang.pipeline()):
        tritonx.compile_for(target, dk.shared_kernel, signature=dk.F32, constexprs={"N": 128},
                            options={"num_warps": 8})
    [(lowered, passed)] = dt.LOWERED_FOR
    assert lowered is passed
    assert lowered == KernelTarget(target.partition(":")[0], tritonx.Target.parse(target).arch, warp, num_warps=8)
    assert str(lowered) == target and lowered == target


def test_target_parsing_from_backend_options():
    class Options:
        backend_name, arch, num_warps, warp_size = "cuda", "sm90a", 8, 32

    assert KernelTarget.from_options(Options()) == KernelTarget("cuda", 90, 32, num_warps=8)
    assert KernelTarget.parse("hip:gfx942").capability == 0 and KernelTarget.parse("cuda:90").name == "cuda:90"
