"""Cluster forms of TLX ops on stock Triton: multicast TMA loads and arrivals on a peer CTA's mbarrier.

``async_descriptor_load(..., multicast_targets=)`` and ``barrier_arrive(..., remote_cta_rank=)`` mark the stock
instruction they change; ``utlx.compiler.nvidia.cluster_ptx`` rewrites it in the PTX. Checked here: the rewrite of
each instruction form (Triton 3.6 and 3.8 spell the TMA destination differently), that a marker around
nothing is a compile error naming the op, that unmarked PTX is returned as it is, and the 2-CTA GEMM
(``hopper_ws_cluster``) compiled for cuda:90: one multicast load, a mapa + remote arrive per slot release,
one cluster barrier per task, no cluster-scope fence on the k-loop's arrivals, no spills; the same kernel
sharing B (``SHARE_B``: one multicast B half per CTA rank, each in its own arm of a branch). Markers carry an id
that pairs each begin with its end: without it LLVM hoisted the two arms' identical begin markers above the
branch (a compile error, "an end marker without its begin marker"). The GPU test
(``tests/gpu/test_ws_cluster.py``) runs both kernels against a float32 reference.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx.language as tlx
from _helpers import compile_kernel, ptxas_report, spills
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.nvidia import cluster_ptx
from utlx.kernels.nvidia import hopper_ws_cluster as cl

MC = "\tmov.u32 %r12, %r10; // utlx-cluster:multicast"
RA = "\tmov.u32 %r13, %r11; // utlx-cluster:remote_arrive"
END = "\tmov.u32 %r14, 0; // utlx-cluster:end"


@pytest.mark.parametrize("space", ["shared::cta", "shared::cluster"])
def test_tma_load_becomes_multicast(space):
    load = (f"\t@%p8 cp.async.bulk.tensor.2d.{space}.global.mbarrier::complete_tx::bytes [%r120], "
            "[%rd5, {%r639, %r121}], [%r117];")
    out = cluster_ptx.rewrite("\n".join([MC, load, END]))
    assert "cvt.u16.u32 %utlx_mask, %r12;" in out
    assert ("@%p8 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
            "[%r120], [%rd5, {%r639, %r121}], [%r117], %utlx_mask;") in out


def test_arrive_becomes_remote():
    out = cluster_ptx.rewrite("\n".join([RA, "\t@%p19 mbarrier.arrive.shared::cta.b64 _, [%r242];", END]))
    assert "mapa.shared::cluster.u32 %utlx_bar, %r242, %r13;" in out
    # the CTA-scope release CUTLASS uses: a cluster-scope one costs a GPU-wide MEMBAR on every k-step
    assert "@%p19 mbarrier.arrive.shared::cluster.b64 _, [%utlx_bar];" in out


def test_an_end_marker_of_another_op_is_an_error():
    lines = ["\tmov.u32 %r12, %r10; // utlx-cluster:multicast@7",
             "\tcp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [%rd5, {%r2, %r3}], "
             "[%r4];",
             "\tmov.u32 %r14, 0; // utlx-cluster:end@8"]
    with pytest.raises(UtlxCompileError, match=r"utlx\.async_descriptor_load.*@7.*@8"):
        cluster_ptx.rewrite("\n".join(lines))
    lines[-1] = lines[-1].replace("@8", "@7")
    assert ".multicast::cluster" in cluster_ptx.rewrite("\n".join(lines))


def test_unmarked_ptx_is_returned_as_it_is():
    text = "\t@%p19 mbarrier.arrive.shared::cta.b64 _, [%r242];\n"
    assert cluster_ptx.rewrite(text) is text


@pytest.mark.parametrize(("lines", "op"), [
    ([MC, "\tadd.s32 %r1, %r2, %r3;", END], "async_descriptor_load"),  # the marker encloses nothing
    ([RA, "\tadd.s32 %r1, %r2, %r3;"], "barrier_arrive"),  # never closed
    ([RA, "\tmbarrier.try_wait.parity.shared::cta.b64 complete, [%r1], %r2;", END], "barrier_arrive"),
])
def test_a_marker_that_rewrites_nothing_is_an_error(lines, op):
    with pytest.raises(UtlxCompileError, match=f"utlx.{op}"):
        cluster_ptx.rewrite("\n".join(lines))


@pytest.fixture(scope="module")
def cluster_gemm():
    const, nw = cl.CONFIGS[1]  # 128x128x64, 4 stages
    sig = cl.signature(const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"])
    return compile_kernel(cl.matmul_kernel_ws_cluster, sig, dict(const, NUM_SMS=132), "cuda:90", nw), const


def test_cluster_gemm_ptx(cluster_gemm):
    k, const = cluster_gemm
    ptx = k.asm["ptx"]
    assert ptx.count(".multicast::cluster [") == 1  # the A half, to both CTAs
    assert ptx.count("mapa.shared::cluster.u32") == 4  # two consumers x (k-loop release, retire)
    assert "mbarrier.arrive.release.cluster" not in ptx
    assert ptx.count("barrier.cluster.arrive") == 3  # one per task: every warp passes it
    assert re.search(r"\.reqntid 384", ptx)  # 4 + 4 + 4 warps: no padding warp outside the cluster barrier
    assert spills(ptxas_report(ptx)) == (0, 0)
    assert k.metadata.shared <= cl.smem_bytes(const) < k.metadata.shared + cl.SMEM_SLACK


@triton.jit
def _multicast_on(desc, out, TARGETS: tl.constexpr):
    buf = tlx.local_alloc((64, 64), tl.float16, 1)
    bar = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bar[0], 8192)
    tlx.async_descriptor_load(desc, buf[0], [0, 0], bar[0], multicast_targets=TARGETS)
    tlx.barrier_wait(bar[0], 0)
    tl.store(out + tl.arange(0, 64), tl.sum(tlx.local_load(buf[0]).to(tl.float32), 0))


def _compile_multicast(targets, target="cuda:90"):
    sig = {"desc": "tensordesc<fp16[64, 64]>", "out": "*fp32"}
    return compile_kernel(_multicast_on, sig, {"TARGETS": targets}, target, 4)


def test_multicast_targets_give_the_cta_mask():
    ptx = _compile_multicast((0, 2)).asm["ptx"]
    marker = re.search(r"mov\.u32 (%r\d+), (%r\d+); // utlx-cluster:multicast", ptx)
    assert marker and re.search(rf"mov\.b32\s+{marker.group(2)}, 5;", ptx)  # CTAs 0 and 2: mask 0b101
    assert f"cvt.u16.u32 %utlx_mask, {marker.group(1)};" in ptx and ".multicast::cluster [" in ptx


@pytest.mark.parametrize(("targets", "target", "match"), [
    ((0, 0), "cuda:90", "names a CTA twice"),
    ((0, 16), "cuda:90", "rank must be in 0..15"),
])
def test_bad_multicast_is_an_error_naming_the_op(targets, target, match):
    with pytest.raises(Exception, match=match) as err:
        _compile_multicast(targets, target)
    assert "async_descriptor_load" in str(err.value)


@triton.jit
def _multicast_per_rank(desc, out):
    """One multicast load per arm of a runtime branch, into different halves of one buffer."""
    buf = tlx.local_alloc((64, 128), tl.float16, 1)
    bar = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bar[0], 16384)
    if tl.program_id(0) % 2 == 0:
        tlx.async_descriptor_load(desc, tlx.local_slice(buf[0], [0, 0], [64, 64]), [0, 0], bar[0],
                                  multicast_targets=[0, 1])
    else:
        tlx.async_descriptor_load(desc, tlx.local_slice(buf[0], [0, 64], [64, 64]), [0, 64], bar[0],
                                  multicast_targets=[0, 1])
    tlx.barrier_wait(bar[0], 0)
    tl.store(out + tl.arange(0, 128), tl.sum(tlx.local_load(buf[0]).to(tl.float32), 0))


def _marker_pairs(ptx):
    """(kind, begin id, end id) of every marker pair, in PTX order; every begin must be followed by an end."""
    marks = re.findall(r"// utlx-cluster:(\w+)@(\d+)", ptx)
    begins, ends = marks[::2], marks[1::2]
    assert marks and len(begins) == len(ends), marks
    assert all(k != "end" for k, _ in begins) and all(k == "end" for k, _ in ends), marks
    return [(k, b, e) for (k, b), (_, e) in zip(begins, ends, strict=True)]


def test_a_multicast_load_in_each_arm_of_a_branch_keeps_its_own_markers():
    sig = {"desc": "tensordesc<fp16[64, 64]>", "out": "*fp32"}
    ptx = compile_kernel(_multicast_per_rank, sig, {}, "cuda:90", 4).asm["ptx"]
    pairs = _marker_pairs(ptx)
    assert [k for k, _, _ in pairs] == ["multicast", "multicast"]
    assert all(b == e for _, b, e in pairs) and pairs[0][1] != pairs[1][1]
    assert ptx.count(".multicast::cluster [") == 2


@pytest.fixture(scope="module")
def share_b_gemm():
    const, nw = cl.CONFIGS[0]  # 128x256x64, 3 stages
    const = dict(const, SHARE_B=1)
    sig = cl.signature(128, 256, 64, share_b=True)
    return compile_kernel(cl.matmul_kernel_ws_cluster, sig, dict(const, NUM_SMS=132), "cuda:90", nw), const, sig


def test_share_b_gemm_multicasts_one_b_half_per_rank(share_b_gemm):
    k, const, sig = share_b_gemm
    ptx = k.asm["ptx"]
    assert sig["b_desc"] == "tensordesc<fp16[64, 128]>"  # each CTA loads half of the 64x256 B tile
    assert ptx.count(".multicast::cluster [") == 2  # B half 0 (rank 0's arm) and half 1 (rank 1's)
    # both A halves of the CTA's own tile stay single-CTA loads
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.mbarrier", ptx)) == 2
    pairs = _marker_pairs(ptx)
    assert [k for k, _, _ in pairs].count("multicast") == 2 and all(b == e for _, b, e in pairs)
    assert spills(ptxas_report(ptx)) == (0, 0)
    assert k.metadata.shared <= cl.smem_bytes(const) < k.metadata.shared + cl.SMEM_SLACK


def test_share_b_pairs_are_vertical():
    const = dict(cl.CONFIGS[0][0], SHARE_B=1)
    assert cl.programs(384, 512, const, 132) == 2 * 2 * 2  # 3 row tiles -> 2 pairs, 2 column tiles
    assert cl.programs(384, 512, cl.CONFIGS[0][0], 132) == 2 * 3 * 1  # sharing A: 3 rows x 1 pair of columns
    assert cl.descriptor_blocks(128, 256, 64, b_col=True, share_b=True)[1] == [128, 64]
