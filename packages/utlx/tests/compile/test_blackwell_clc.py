"""Cluster launch control (CLC) compiles for sm_100 to ``clusterlaunchcontrol.try_cancel``/``query_cancel`` (issue 27).

Compile-verified only: no Blackwell GPU is available, so each kernel is checked in its PTX (the request in TLX's
cluster form: from cluster CTA 0, multicast; the query; the 16-byte expect on the response's barrier; the stage
handed back) and its TTGIR (Gluon's ``ttng.clc_*`` ops); the tile queue's semantics are checked under the
interpreter (``tests/interpreter/test_interp_clc.py``). Before Triton 3.8 (no Gluon CLC ops) and on Hopper the
ops are refused with an error naming the op.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from utlx import compat
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.nvidia.blackwell import clc_ptx

needs_clc = pytest.mark.skipif(not compat.HAS_CLC, reason="utlx compiles CLC with Triton 3.8+")

TRY_CANCEL = (r"@%utlx_clc0 clusterlaunchcontrol\.try_cancel\.async\.shared::cta\.mbarrier::complete_tx::bytes"
              r"\.multicast::cluster::all\.b128 \[%r\d+\], \[%r\d+\];")
IS_CANCELED = r"clusterlaunchcontrol\.query_cancel\.is_canceled\.pred\.b128"
FIRST_CTAID = r"clusterlaunchcontrol\.query_cancel\.get_first_ctaid::x\.b32\.b128"


@triton.jit
def _persistent(x_ptr, y_ptr, BLOCK: tl.constexpr, MULTI: tl.constexpr):
    ctx = tlx.clc_create_context(num_consumers=1)
    tile = tl.program_id(0)
    p_producer = 1
    p_consumer = 0
    while tile != -1:
        tlx.clc_producer(ctx, p_producer, multi_ctas=MULTI)
        p_producer ^= 1
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)
        tile = tlx.clc_consumer(ctx, p_consumer, multi_ctas=MULTI)
        p_consumer ^= 1


def _compile(fn, **constexprs):
    return compile_kernel(fn, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, constexprs, "cuda:100")


def _count(text: str, pattern: str) -> int:
    return len(re.findall(pattern, text))


@needs_clc
def test_persistent_clc_kernel_issues_try_cancel_and_queries_it():
    k = _compile(_persistent, BLOCK=128, MULTI=False)
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert re.search(r"^\.target sm_100a", ptx, re.M)
    assert _count(ttgir, r"ttng\.clc_try_cancel") == 1 and _count(ttgir, r"ttng\.clc_load_result") == 1
    # two 16-byte responses' worth of shared memory is one [1, 2] x i64 allocation per stage
    assert re.search(r"ttg\.local_alloc : \(\) -> !ttg\.memdesc<1x2xi64", ttgir)
    assert _count(ptx, TRY_CANCEL) == 1
    # issued by cluster CTA 0 only (in a one-CTA cluster: the CTA itself), by the thread Gluon elects
    assert re.search(r"mov\.u32 %utlx_rank, %cluster_ctarank;\n\s*setp\.eq\.and\.u32 %utlx_clc0, %utlx_rank, 0, "
                     r"%p\d+;", ptx)
    assert _count(ptx, IS_CANCELED) == 1 and _count(ptx, FIRST_CTAID) == 1
    assert re.search(r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%r\d+\], 16;", ptx)
    # the consumer fences its generic-proxy read before handing the stage back (predicated: a tile was found)
    query_to_arrive = ptx[ptx.index("get_first_ctaid"):]
    assert re.match(r"(?s).*?fence\.proxy\.async\.shared::cta;.*?@%p\d+ mbarrier\.arrive\.shared::cta\.b64",
                    query_to_arrive)
    # no marker survives as an unmatched pair, and the stock one-CTA form is gone
    assert "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128" not in ptx


@needs_clc
def test_multi_cta_clc_waits_on_cta0_and_hands_the_stage_back_to_cta0():
    ptx = _compile(_persistent, BLOCK=128, MULTI=True).asm["ptx"]
    assert _count(ptx, TRY_CANCEL) == 1
    # every CTA arrives on cluster CTA 0's empty barrier (mapa to rank 0 + a shared::cluster arrive)
    assert re.search(r"mapa\.shared::cluster\.u32 %utlx_bar, %r\d+, %r\d+;\n\s*@%p\d+ "
                     r"mbarrier\.arrive\.shared::cluster\.b64 _, \[%utlx_bar\];", ptx)


@triton.jit
def _next_tile(ctx, phase):
    return tlx.clc_consumer(ctx, phase)


@triton.jit
def _warp_specialized(x_ptr, y_ptr, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """blackwell_gemm_clc's shape: the default task asks, both tasks read every response (one via a helper that
    takes the context as an argument)."""
    ctx = tlx.clc_create_context(num_consumers=2, num_stages=STAGES)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tile = tl.program_id(0)
            phase = 0
            k = 0
            while tile != -1:
                tlx.clc_producer(ctx, phase ^ 1, k=k)
                tile = tlx.clc_consumer(ctx, phase, k=k)
                k = (k + 1) % STAGES
                phase ^= k == 0
        with tlx.async_task(num_warps=4):
            tile = tl.program_id(0)
            phase = 0
            while tile != -1:
                offs = tile * BLOCK + tl.arange(0, BLOCK)
                tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1.0)
                tile = _next_tile(ctx, phase)
                phase ^= 1


@needs_clc
@pytest.mark.parametrize("stages", [1, 2])
def test_warp_specialized_clc_pipeline_asks_in_one_task_and_queries_in_both(stages):
    k = compile_kernel(_warp_specialized, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 128, "STAGES": stages},
                       "cuda:100")
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert "ttg.warp_specialize" in ttgir and re.search(r"partition0\(.*\) num_warps\(\d+\)", ttgir)
    assert re.search(rf"ttg\.local_alloc : \(\) -> !ttg\.memdesc<{stages}x2xi64", ttgir)
    assert _count(ptx, TRY_CANCEL) == 1
    assert _count(ptx, IS_CANCELED) == 2 and _count(ptx, FIRST_CTAID) == 2


@needs_clc
def test_clc_primitives_compile_on_their_own():
    @triton.jit
    def _primitives(out_ptr):
        responses = tlx._alloc_clc_responses(num_responses=2)
        bars = tlx.alloc_barriers(num_barriers=2)
        for i in tl.static_range(2):
            tlx.barrier_expect_bytes(bars[i], 16)
            tlx._clc_issue(responses[i], bars[i])
        for i in tl.static_range(2):
            tlx.barrier_wait(bars[i], 0)
            tl.store(out_ptr + i, tlx._clc_query(tlx.local_view(responses, i)))

    ptx = compile_kernel(_primitives, {"out_ptr": "*i32"}, {}, "cuda:100").asm["ptx"]
    assert _count(ptx, TRY_CANCEL) == 2 and _count(ptx, IS_CANCELED) == 2


@triton.jit
def _misuse(out_ptr, WHICH: tl.constexpr):
    ctx = tlx.clc_create_context(num_consumers=1)
    bars = tlx.alloc_barriers(num_barriers=1)
    if WHICH == "no_phase":
        tlx.clc_producer(ctx)
    elif WHICH == "not_a_context":
        tlx.clc_consumer(bars, 0)
    elif WHICH == "not_a_response":
        tlx._clc_issue(bars[0], bars[0])
    elif WHICH == "stages":
        tlx.clc_create_context(num_consumers=1, num_stages=0)


@needs_clc
@pytest.mark.parametrize(("which", "message"), [
    ("no_phase", "utlx.clc_producer: 'p_producer' (the phase of the stage's empty barrier to wait for) is required"),
    ("not_a_context", "utlx.clc_consumer: 'context' must be the result of tlx.clc_create_context"),
    ("not_a_response", "utlx._clc_issue: 'clc_response_addr' must be"),
    ("stages", "utlx.clc_create_context: 'num_stages' must be a compile-time int >= 1, got 0"),
])
def test_clc_misuse_is_an_error_naming_the_op(which, message):
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_misuse, {"out_ptr": "*fp32"}, {"WHICH": which}, "cuda:100")
    assert message in str(info.value), str(info.value)


@pytest.mark.skipif(compat.HAS_CLC, reason="this Triton has Gluon's CLC ops")
def test_clc_before_triton_38_names_the_op_and_the_version():
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        _compile(_persistent, BLOCK=128, MULTI=False)
    text = str(info.value)
    assert "utlx.clc_create_context:" in text and "Triton 3.8 or newer" in text and "cuda:100" in text, text


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_clc_on_targets_without_it_needs_blackwell(target):
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_persistent, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 128, "MULTI": False}, target)
    text = str(info.value)
    assert "utlx.clc_create_context:" in text and "needs Blackwell (sm_100)" in text and target in text, text


def _marked(body: str, uid: int = 7) -> str:
    return (f"\tmov.u32 %r1, 0; // utlx-clc:begin@{uid}\n{body}\n\tmov.u32 %r2, 0; // utlx-clc:end@{uid}\n")


def test_ptx_rewrite_gives_the_marked_request_its_cluster_form():
    stock = "\t@%p3 clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r5], [%r8];"
    out = clc_ptx.rewrite(_marked(stock))
    assert "setp.eq.and.u32 %utlx_clc0, %utlx_rank, 0, %p3;" in out
    assert re.search(TRY_CANCEL, out)
    unmarked = stock + "\n"
    assert clc_ptx.rewrite(unmarked) == unmarked  # Gluon kernels' own requests stay as they are


@pytest.mark.parametrize(("ptx", "message"), [
    (_marked("\tadd.s32 %r3, %r4, 1;"), "found 0 clusterlaunchcontrol.try_cancel between its markers"),
    (_marked("\tclusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r5];"),
     "cannot give this PTX its cluster form"),
    ("\tmov.u32 %r1, 0; // utlx-clc:begin@3\n", "the try_cancel marker @3 is never closed"),
])
def test_ptx_rewrite_refuses_what_it_cannot_match(ptx, message):
    with pytest.raises(UtlxCompileError) as info:
        clc_ptx.rewrite(ptx)
    assert str(info.value).startswith("utlx._clc_issue:") and message in str(info.value), str(info.value)
