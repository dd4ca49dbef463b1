"""tools/bench/tutorial_sass.py without a GPU or Meta's wheel: parsing nvdisasm/ptxas/cuobjdump output, the
SASS and TTGIR comparisons, loop finding, the verdict; and (``slow``, needs Meta's wheel) the real
comparison of one FA tutorial on utlx and on Meta's build."""

from __future__ import annotations

import json
from collections import Counter

import pytest

SASS = """\
\t.headerflags\t@"EF_CUDA_SM90"
//--------------------- .text.k --------------------------
\t.section\t.text.k,"ax",@progbits
k:
.text.k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/               @P0 BRA `(.L_x_0) ;
.L_x_1:
        /*0020*/                   FADD R2, R3, R4 ;
        /*0030*/                   FMUL R5, R2, R2 ;
        /*0040*/              @!P1 BRA `(.L_x_1) ;
        /*0050*/                   EXIT ;
.L_x_0:
        /*0060*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR5+0x30010], R3 ;
        /*0070*/                   BRA `(.L_x_1) ;
"""


def test_parse_sass_keeps_instructions_and_label_positions(tutorial_sass_mod):
    m = tutorial_sass_mod
    sass = m.parse_sass(SASS)
    assert sass.instructions[0] == "LDC R1, c[0x0][0x28]" and len(sass.instructions) == 8
    assert sass.labels == {".L_x_1": 2, ".L_x_0": 6}
    assert [m.opcode(i) for i in sass.instructions[:2]] == ["LDC", "BRA"]
    assert m.opcode("@!UP3 SYNCS.EXCH.64 URZ, [UR6+0x30000], UR10") == "SYNCS.EXCH.64"


def test_normalise_unifies_labels_and_masks_registers_on_request(tutorial_sass_mod):
    m = tutorial_sass_mod
    ins = "@!P2 BRA `(.L_x_17)"
    assert m.normalise(ins, False) == "@!P2 BRA `(.L)"
    assert m.normalise("IADD3 R12, UR4, -R3, RZ", True) == "IADD3 R#, UR#, -R#, RZ"
    assert m.normalise("@UP6 ISETP.EQ.U32.AND P2, PT, RZ, UR11, P6", True) == \
        "@UP# ISETP.EQ.U32.AND P#, PT, RZ, UR#, P#"
    assert m.normalise("BSSY B0, `(.L_x_3)", True) == "BSSY B#, `(.L)"


def test_loops_are_backward_branches_before_the_last_exit(tutorial_sass_mod):
    m = tutorial_sass_mod
    sass = m.parse_sass(SASS)
    assert m.loops(sass) == [(2, 4)]  # the retry block behind EXIT jumps back too, but is no loop
    assert m.innermost([(0, 100), (10, 50), (60, 62)], 32) == [False, True, True]


def test_compare_sass_separates_register_renaming_from_real_differences(tutorial_sass_mod):
    m = tutorial_sass_mod
    a = m.parse_sass(SASS)
    renamed = m.parse_sass(SASS.replace("FMUL R5, R2, R2", "FMUL R7, R2, R2"))
    extra = m.parse_sass(SASS.replace("        /*0010*/ ", "        /*0008*/                   MEMBAR.ALL.CTA ;\n"
                                                          "        /*0010*/ ", 1))
    same = m.compare_sass(a, a, min_loop=1)
    assert same["views"]["exact"]["identical"] and same["difference_blocks"] == 0 and not same["opcode_delta"]
    ren = m.compare_sass(a, renamed, min_loop=1)
    assert not ren["views"]["exact"]["identical"] and ren["views"]["registers_masked"]["identical"]
    (loop,) = ren["loop_pairs"]
    assert loop["innermost"] and not loop["exact"]["identical"] and loop["registers_masked"]["identical"]
    more = m.compare_sass(a, extra, min_loop=1)
    assert more["opcode_delta"] == {"MEMBAR.ALL.CTA": [0, 1]} and more["instructions"] == [8, 9]
    assert more["difference_blocks"] == 1 and more["difference_blocks_in_hot_loops"] == 0
    assert more["views"]["opcodes"]["identical_in_order"] == 8 and more["common_multiset"] == 8
    assert more["loop_pairs"][0]["exact"]["identical"]  # the loop itself did not change


def test_sequence_match_and_histogram_delta(tutorial_sass_mod):
    m = tutorial_sass_mod
    r = m.sequence_match(["a", "b", "c", "d"], ["a", "c", "d", "e"])
    assert r == {"identical_in_order": 3, "ratio": 0.75, "identical": False}
    assert m.histogram_delta(Counter("aab"), Counter("abc")) == {"a": [2, 1], "c": [0, 1]}


def test_ptxas_and_cuobjdump_reports(tutorial_sass_mod):
    m = tutorial_sass_mod
    log = ("ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
           "ptxas info    : Used 40 registers\n"
           "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
           "ptxas info    : Function properties for k\n"
           "    24 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads\n"
           "ptxas info    : Used 168 registers, used 11 barriers, 24 bytes cumulative stack size\n")
    assert m.ptxas_resources(log, "k") == {"registers": 168, "spill_stores": 40, "spill_loads": 36,
                                          "stack_frame": 24, "barriers": 11}
    assert m.ptxas_resources(log, "missing") == {}
    usage = m.resource_usage(" Function k:\n  REG:168 STACK:24 SHARED:1024 LOCAL:0 CONSTANT[0]:1328 TEXTURE:0")
    assert usage["reg"] == 168 and usage["shared"] == 1024 and usage["constant[0]"] == 1328


def test_ttgir_ops_and_normalised_text(tutorial_sass_mod):
    m = tutorial_sass_mod
    a = ("#loc1 = loc(\"x.py\":1:2)\n"
         "    %q = ttg.local_alloc : () -> !ttg.memdesc<2x1xi64> loc(#loc1)\n"
         "    ttng.init_barrier %q_2, 1 : !ttg.memdesc<1xi64> loc(#loc2)\n"
         "    %a:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %y) -> (i32, i32) : i32 {\n"
         "    ttng.fence_async_shared {bCluster = false} loc(#loc3)\n")
    b = a.replace("%q_2", "%q_7").replace("    ttng.fence_async_shared {bCluster = false} loc(#loc3)\n", "")
    assert m.ttgir_ops(a) == Counter({"ttg.local_alloc": 1, "ttng.init_barrier": 1, "scf.for": 1,
                                      "ttng.fence_async_shared": 1})
    cmp = m.compare_ttgir(a, b)
    assert cmp["op_delta"] == {"ttng.fence_async_shared": [1, 0]} and cmp["ops"] == [4, 3]
    assert cmp["normalised_text"]["identical_in_order"] == 3  # SSA names and locations do not count


def test_verdict(tutorial_sass_mod):
    m = tutorial_sass_mod
    a = m.parse_sass(SASS)
    b = m.parse_sass(SASS.replace("LDC R1", "ULDC UR1"))
    text = m.verdict({"code_bytes_identical": False, "sass": m.compare_sass(a, b, min_loop=1)})
    assert "differs in 1 blocks" in text and "0 of them in hot loops" in text
    assert "the 1 hot loops are identical;" in text and "LDC 1/0, ULDC 0/1" in text
    renamed = m.parse_sass(SASS.replace("FMUL R5", "FMUL R7"))
    text = m.verdict({"code_bytes_identical": False, "sass": m.compare_sass(a, renamed, min_loop=1)})
    assert "hot loops are identical up to register numbers" in text
    assert m.verdict({"code_bytes_identical": True}) == "identical machine code"


def test_error_summary_names_the_exception_and_the_failing_source_line(tutorial_sass_mod):
    m = tutorial_sass_mod
    output = ('Traceback (most recent call last):\n  File "x.py", line 3, in f\n    g()\n'
              "triton.compiler.errors.CompileTimeAssertionFailure: at 19:4:\n        HEAD_DIM: tl.constexpr,\n"
              "    tl.static_assert(BLOCK_N <= HEAD_DIM)\n    ^\n")
    assert m.error_summary(output) == ("triton.compiler.errors.CompileTimeAssertionFailure: at 19:4: "
                                       "tl.static_assert(BLOCK_N <= HEAD_DIM)")
    assert m.error_summary("ValueError: bad\n") == "ValueError: bad"
    assert m.error_summary("killed\n") == "killed" and m.error_summary("") == "no output"


def test_unknown_tutorial_is_refused(tutorial_sass_mod):
    with pytest.raises(SystemExit):
        tutorial_sass_mod.parse_args(["--tutorials", "hopper_gemm_ws"])
    assert tutorial_sass_mod.parse_args([]).tutorials == list(tutorial_sass_mod.DEFAULT_TUTORIALS)


@pytest.mark.slow
def test_fa_tutorial_hot_loops_match_metas_build(tutorial_sass_mod, tmp_path):
    """The non-persistent pingpong FA tutorial: same resources, hot loops identical to Meta's build, and the
    only opcodes whose counts differ are utlx's one barrier-init fence (and the NOP padding after EXIT)."""
    import meta_wheel

    if meta_wheel.meta_wheel_dir() is None:
        pytest.skip(meta_wheel.unavailable_reason())
    rc = tutorial_sass_mod.main(["--tutorials", "hopper_fa_ws_pipelined_pingpong", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "tutorial-sass.json").read_text())
    assert rc == 0, report
    (kernel,) = report["tutorials"][0]["kernels"]
    assert kernel["same_constants"] and kernel["ptxas"][0] == kernel["ptxas"][1] and kernel["ptxas"][0]
    assert kernel["shared"][0] == kernel["shared"][1]
    hot = [p for p in kernel["sass"]["loop_pairs"] if p["innermost"]]
    assert hot and all(p["exact"]["identical"] for p in hot)
    assert kernel["sass"]["difference_blocks_in_hot_loops"] == 0
    assert set(kernel["sass"]["opcode_delta"]) <= {"FENCE.VIEW.ASYNC.S", "MEMBAR.ALL.CTA", "NOP"}
    assert kernel["sass"]["opcode_delta"].get("MEMBAR.ALL.CTA", [0, 0])[1] - \
        kernel["sass"]["opcode_delta"].get("MEMBAR.ALL.CTA", [0, 0])[0] <= 1
