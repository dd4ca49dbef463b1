"""Every warpgroup retires its wgmma reads of a ring before the ring's bytes are reused (utlx.compiler.nvidia.retire).

The bug this guards against (H200, 2026-12-01): the split-K kernel at 128x128x128, 3 stages, 8 warps gave
inf in a few rows of one warp on some launches. With two consumer warpgroups, the faster one left its final
``async_dot_wait(0)`` and wrote the accumulator's layout-conversion scratch (which the allocator had put on
the dead ring) while the slower one's last wgmma still read that stage. These tests pin a CTA barrier between
the final full wgmma wait and the epilogue's first shared-memory write, show that the kernel would lack it
without the pass, and that kernels without async wgmma get nothing.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
from _helpers import compile_kernel
from utlx.compiler.nvidia import retire
from utlx.kernels.nvidia import hopper_pipelined as hp
from utlx.kernels.nvidia import hopper_tma_splitk as sk

#: The configuration that failed on the GPU (two warpgroups, BK=128).
FAILED = next((c, nw) for c, nw in sk.CONFIGS
              if (c["BLOCK_SIZE_M"], c["BLOCK_SIZE_K"], c["NUM_STAGES"], nw) == (128, 128, 3, 8))


def _compile_splitk(const, nw):
    fn, _ = sk.kernel_for()
    return compile_kernel(fn, sk.signature(const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]),
                          dict(const), "cuda:90", nw)


def _barrier_between_full_wait_and_epilogue(ptx: str) -> bool:
    """Is there a ``bar.sync`` after the last ``wgmma.wait_group 0`` and before the next shared-memory write?"""
    lines = ptx.splitlines()
    wait = max(i for i, line in enumerate(lines) if re.search(r"wgmma\.wait_group\.sync\.aligned\s+0;", line))
    after = lines[wait + 1:]
    first_write = next(i for i, line in enumerate(after) if re.search(r"\bst\.shared|stmatrix", line))
    return any("bar.sync" in line for line in after[:first_write])


def test_split_k_retires_every_warpgroup_before_the_epilogue():
    k = _compile_splitk(*FAILED)
    assert _barrier_between_full_wait_and_epilogue(k.asm["ptx"])
    assert _barrier_after_full_wait_in_ttgir(k.asm["ttgir"])


def _barrier_after_full_wait_in_ttgir(ttgir: str) -> bool:
    lines = ttgir.splitlines()
    wait = max(i for i, line in enumerate(lines) if re.search(r"ttng\.warp_group_dot_wait .*pendings = 0", line))
    return bool(re.search(r"(gpu\.barrier|ttg\.barrier)", lines[wait + 1]))  # the spelling differs by version


def test_without_the_pass_there_is_no_barrier(monkeypatch):
    """The same kernel compiled with the pass switched off has no barrier after its full wait in TTGIR (the
    test can fail). Triton 3.9's own membar pass happens to put one in the PTX; 3.6-3.8's does not."""
    monkeypatch.setattr(retire, "insert_retire_barriers", lambda *args, **kwargs: 0)
    const, nw = FAILED
    k = _compile_splitk(dict(const, GROUP_SIZE_M=4), nw)  # another specialisation: no cache hit from above
    assert not _barrier_after_full_wait_in_ttgir(k.asm["ttgir"])


@pytest.mark.parametrize("config", [i for i, (_, nw) in enumerate(hp.CONFIGS) if nw == 8])
def test_two_warpgroup_cp_async_gemm_retires_before_the_epilogue(config):
    const, nw = hp.CONFIGS[config]
    k = compile_kernel(hp.matmul_kernel_pipelined_hopper, hp.SIGNATURE, const, "cuda:90", nw,
                       ("stride_ak", "stride_bn", "stride_cn"))
    assert _barrier_between_full_wait_and_epilogue(k.asm["ptx"])


@triton.jit
def _plain_dot(a_ptr, b_ptr, c_ptr, BM: tl.constexpr):
    offs = tl.arange(0, BM)
    a = tl.load(a_ptr + offs[:, None] * BM + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BM + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BM + offs[None, :], tl.dot(a, b).to(tl.float16))


def test_kernels_without_tlx_wgmma_get_no_retire_barrier(monkeypatch):
    calls = []
    real = retire.retire_points
    monkeypatch.setattr(retire, "retire_points", lambda *a: calls.append(real(*a)) or calls[-1])
    k = compile_kernel(_plain_dot, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}, {"BM": 64}, "cuda:90", 4)
    assert all(points == [] for points in calls)  # nothing to retire (utlx's lowering may not even run)
    # and the TTGIR holds no CTA barrier at all (Triton adds its own only later, in the LLVM lowering)
    assert not re.search(r"(gpu\.barrier|ttg\.barrier)", k.asm["ttgir"])
