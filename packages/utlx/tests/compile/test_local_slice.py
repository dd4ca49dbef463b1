"""``tlx.local_slice`` on both vendors: the same kernel compiles for cuda:90 and hip:gfx942 and computes right.

Why: the issue lists ``local_slice`` among the ops that must work on NVIDIA and AMD. The kernel stages a
``BM x 64`` tile of A and a ``64 x BN`` tile of B in shared memory, then feeds ``tl.dot`` two K=32 halves
of each, read through static slices. The compile tests check that the slices became shared-memory
sub-views (``ttg.memdesc_subslice`` or the older ``memdesc_subview``) read by shared-memory loads
(``ds_read`` on AMD, ``ldmatrix``/``ld.shared`` on NVIDIA); the interpreter test runs the kernel on the CPU
(in a subprocess with ``TRITON_INTERPRET=1``, which must be set before Triton is imported) and compares
with a float32 reference.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import triton
import triton.language as tl
import utlx as tlx

BM, BN, BK, HALF = 64, 64, 64, 32
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
CONSTS = {"BM": BM, "BN": BN, "BK": BK}


@triton.jit
def slice_dot_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B for one BM x BN tile with K = BK, accumulated over two K/2 slices of the staged tiles."""
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_bufs = tlx.local_alloc((BM, BK), tl.float16, 1)
    b_bufs = tlx.local_alloc((BK, BN), tl.float16, 1)
    a_view = tlx.local_view(a_bufs, 0)
    b_view = tlx.local_view(b_bufs, 0)
    tlx.local_store(a_view, tl.load(a_ptr + offs_m[:, None] * BK + offs_k[None, :]))
    tlx.local_store(b_view, tl.load(b_ptr + offs_k[:, None] * BN + offs_n[None, :]))
    acc = tl.zeros((BM, BN), tl.float32)
    for h in tl.static_range(2):
        a_half = tlx.local_load(tlx.local_slice(a_view, [0, h * (BK // 2)], [BM, BK // 2]))
        b_half = tlx.local_load(tlx.local_slice(b_view, [h * (BK // 2), 0], [BK // 2, BN]))
        acc = tl.dot(a_half, b_half, acc)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


def _compile(target: str):
    from _helpers import compile_kernel

    return compile_kernel(slice_dot_kernel, SIGNATURE, CONSTS, target)


def _subslices(ttgir: str) -> list[str]:
    return re.findall(r"ttg\.memdesc_sub(?:slice|view) .*", ttgir)


def _check_slices(ttgir: str) -> None:
    """Four static sub-views: A's K halves at columns 0 and 32, B's at rows 0 and 32, of the right shapes."""
    assert "utlx|" not in ttgir  # every placeholder was lowered
    subs = _subslices(ttgir)
    assert len(subs) == 4, subs
    starts = sorted(re.search(r"%\w+\[(\d+), (\d+)\]", s).groups() for s in subs)
    assert starts == [("0", "0"), ("0", "0"), ("0", "32"), ("32", "0")], subs
    assert sum("-> !ttg.memdesc<64x32xf16" in s for s in subs) == 2, subs
    assert sum("-> !ttg.memdesc<32x64xf16" in s for s in subs) == 2, subs


def test_local_slice_compiles_for_hopper():
    k = _compile("cuda:90")
    _check_slices(k.asm["ttgir"])
    ptx = k.asm["ptx"]
    assert "ldmatrix" in ptx and "ld.shared" in ptx  # the slices are read from shared memory
    assert "st.shared" in ptx  # the staging stores
    assert "mma" in ptx  # tl.dot became tensor-core MMA (wgmma or mma.sync)


def test_local_slice_compiles_for_amd():
    k = _compile("hip:gfx942")
    _check_slices(k.asm["ttgir"])
    gcn = k.asm["amdgcn"]
    assert re.search(r"\bds_read", gcn)  # the slices are read from LDS
    assert re.search(r"\bds_write", gcn)  # the staging stores
    assert "v_mfma" in gcn


_INTERPRET_MAIN = "interpret-main"


def _interpret_main() -> None:
    """Run under ``TRITON_INTERPRET=1``: one launch on the CPU, compared with a float32 reference."""
    import torch

    gen = torch.Generator().manual_seed(0)
    a = torch.randn(BM, BK, generator=gen).to(torch.float16)
    b = torch.randn(BK, BN, generator=gen).to(torch.float16)
    c = torch.full((BM, BN), float("nan"), dtype=torch.float32)
    slice_dot_kernel[(1,)](a, b, c, **CONSTS)
    ref = a.float() @ b.float()
    torch.testing.assert_close(c, ref, atol=1e-3 * ref.abs().max().item(), rtol=1e-3)
    # A wrong slice (e.g. both halves reading the first K/2) would be far off: check the halves matter.
    half = a[:, :HALF].float() @ b[:HALF, :].float()
    assert (c - half).abs().max().item() > 1.0
    print(f"OK max_abs_err={(c - ref).abs().max().item():.3e}")


def test_local_slice_under_interpreter():
    pytest.importorskip("torch")
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, __file__, _INTERPRET_MAIN], env=env, capture_output=True, text=True,
                          timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "OK max_abs_err=" in proc.stdout, out[-6000:]


if __name__ == "__main__" and sys.argv[1:] == [_INTERPRET_MAIN]:
    _interpret_main()
