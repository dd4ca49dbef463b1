"""``utlx.matmul(a, b)``: pick the best utlx GEMM kernel and configuration for a shape, run it.

Why our own small autotuner: the choice is between *kernels* (cp.async+wgmma ring, register-staged ring)
and their configurations, and some candidates are only legal for some shapes (cp.async needs 16-byte
aligned rows). Each (device, dtype, M, N, K, layout) is timed once with ``triton.testing.do_bench`` and
the winner is cached in-process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import triton

from utlx.kernels import amd_pipelined, hopper_pipelined, hopper_tma_persistent


@dataclass(frozen=True)
class Candidate:
    """One kernel plus one configuration (constexprs, num_warps)."""

    name: str
    kernel: Any
    constexprs: tuple[tuple[str, int], ...]
    num_warps: int

    def launch(self, a: Any, b: Any, c: Any) -> None:
        if self.name == "tma_persistent":
            hopper_tma_persistent.launch(a, b, c, config=(dict(self.constexprs), self.num_warps))
            return
        M, K = a.shape
        N = b.shape[1]
        const = dict(self.constexprs)
        grid = (triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"]),)
        self.kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                          c.stride(0), c.stride(1), num_warps=self.num_warps, **const)


_CACHE: dict[tuple, Candidate] = {}
_LOCK = threading.Lock()


def _candidates(device_kind: str, aligned: bool) -> list[Candidate]:
    out = []
    if device_kind == "hopper" and aligned:
        for const, nw in hopper_tma_persistent.CONFIGS:
            out.append(Candidate("tma_persistent", hopper_tma_persistent.matmul_kernel_tma_persistent,
                                 tuple(sorted(const.items())), nw))
        for const, nw in hopper_pipelined.CONFIGS:
            out.append(Candidate("hopper_pipelined", hopper_pipelined.matmul_kernel_pipelined_hopper,
                                 tuple(sorted(const.items())), nw))
    if device_kind == "amd":
        configs = amd_pipelined.CONFIGS
    else:  # the register-staged kernel is the portable fallback (any alignment, any NVIDIA GPU)
        configs = [({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                     "NUM_STAGES": 2}, 8),
                   ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                     "NUM_STAGES": 2}, 4)]
    for const, nw in configs:
        out.append(Candidate("register_staged", amd_pipelined.matmul_kernel_pipelined_amd,
                             tuple(sorted(const.items())), nw))
    return out


def _device_kind(torch: Any, device: Any) -> str:
    if getattr(torch.version, "hip", None):
        return "amd"
    major, _ = torch.cuda.get_device_capability(device)
    return "hopper" if major == 9 else "nvidia"


def _aligned(t: Any) -> bool:
    return t.stride(1) == 1 and (t.stride(0) * t.element_size()) % 16 == 0 and t.data_ptr() % 16 == 0


def select(a: Any, b: Any, c: Any) -> Candidate:
    """The fastest legal candidate for this problem (timed once per shape, then cached)."""
    import torch
    from triton.testing import do_bench

    M, K = a.shape
    N = b.shape[1]
    kind = _device_kind(torch, a.device)
    aligned = _aligned(a) and _aligned(b) and _aligned(c)
    key = (str(a.device), kind, str(a.dtype), M, N, K, aligned)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    best, best_ms, errors = None, float("inf"), []
    for cand in _candidates(kind, aligned):
        try:
            cand.launch(a, b, c)
            ms = do_bench(lambda cand=cand: cand.launch(a, b, c), warmup=5, rep=20)
        except Exception as exc:  # a config that does not fit this GPU/shape: skip it
            errors.append(f"{cand.name}{dict(cand.constexprs)}: {type(exc).__name__}: {exc}"[:300])
            continue
        if ms < best_ms:
            best, best_ms = cand, ms
    if best is None:
        raise RuntimeError("utlx.matmul: no kernel compiled for this problem:\n" + "\n".join(errors))
    with _LOCK:
        _CACHE[key] = best
    return best


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for 2-D fp16/bf16 CUDA/ROCm tensors with fp32 accumulation; returns a new tensor."""
    import torch

    from utlx.plugin import ensure_active

    ensure_active()  # TLX kernels need the utlx lowering in Triton's pipeline
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"utlx.matmul: expected 2-D tensors, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"utlx.matmul: inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"utlx.matmul: expected two fp16 or two bf16 tensors, got {a.dtype} and {b.dtype}")
    if not a.is_cuda or a.device != b.device:
        raise ValueError("utlx.matmul: both tensors must be on the same GPU")
    if a.stride(1) != 1:
        a = a.contiguous()
    if b.stride(1) != 1:
        b = b.contiguous()
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return c.zero_()
    select(a, b, c).launch(a, b, c)
    return c


def selected(a: Any, b: Any) -> str:
    """Name and configuration of the kernel :func:`matmul` uses for these inputs (for benchmarks/tests)."""
    import torch

    c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
    cand = select(a, b, c)
    return f"{cand.name} {dict(cand.constexprs)} num_warps={cand.num_warps}"
