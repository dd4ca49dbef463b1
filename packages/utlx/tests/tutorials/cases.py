"""The Hopper tutorial kernels of Meta's TLX wheel, each driven through the tutorial's own host function.

One :class:`Case` per kernel: which tutorial file, how to call its host function on small CPU tensors
(fresh random data per seed), the float32 reference, and what the compiled PTX/TTGIR must show (what the
tutorial promises: wgmma, cp.async or TMA, mbarriers, setmaxnreg, the warp-specialized partitions).
Shared by the compile test (host function under the compile-only driver, launches recorded) and the
interpreter run (``run_tutorial.py`` under ``TRITON_INTERPRET=1``), so both exercise the same calls.

On the CPU (compile-only driver, interpreter) shapes are small but still iterate every ring: more K/KV
blocks than buffers, and (with the interpreter's 2 fake SMs) several tiles per persistent program. On a GPU
(``device="cuda"``) they are the sizes of the wheel's own tests (GEMM 4096^3, attention 4x8x1024x128).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: (output, float32 reference, atol, rtol) of one host-function result
Check = tuple[Any, Any, float, float]

WGMMA = r"wgmma\.mma_async\.sync\.aligned\.m64n{n}k16\.f32\.f16\.f16"
TMA_LOAD = r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes|" \
           r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.mbarrier::complete_tx::bytes"
TMA_STORE = r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta"
MBARRIER = (r"mbarrier\.init\.shared", r"mbarrier\.try_wait\.parity", r"mbarrier\.arrive\.expect_tx")
# named barriers 9 and 10 of 256 threads (PTX spells them bar.* or barrier.*[.aligned])
NAMED_BARRIERS = tuple(rf"\bbar(?:rier)?\.{op}(?:\.aligned)?\s+{bar},\s*256;" for op in ("sync", "arrive")
                       for bar in (9, 10))


@dataclass(frozen=True)
class Case:
    """One tutorial kernel as the acceptance tests drive it."""

    id: str
    tutorial: str  # file stem in tlx/tutorials (hyphens allowed)
    run: Callable[[ModuleType, Any, int, str], list[Check]]  # (module, torch, seed, device)
    launches: int  # kernel launches one run makes
    ptx: tuple[str, ...]  # regexes that must all match the PTX of every launched kernel
    partitions: tuple[tuple[int, ...], ...] = ()  # per launch: num_warps of each non-default partition
    setmaxnreg: int | None = None  # the consumer register count the tutorial asks for (registers=)
    num_warps: int = 4  # the warps the first config gives the kernel (the default task's, when specialized)


def _on(device: str, *tensors: Any) -> list[Any]:
    """Random data is drawn on the CPU (one generator, any device) and moved."""
    return [t.to(device) for t in tensors]


def _gemm_inputs(torch: Any, seed: int, device: str) -> list[Any]:
    m, n, k = (256, 256, 320) if device == "cpu" else (4096, 4096, 4096)
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn((m, k), generator=gen).to(torch.float16)
    b = torch.randn((k, n), generator=gen).to(torch.float16)
    return _on(device, a, b)


def _gemm_check(out: Any, a: Any, b: Any) -> Check:
    return out, a.float() @ b.float(), 5e-2, 1e-2


def _run_matmul(attr: str) -> Callable[[ModuleType, Any, int, str], list[Check]]:
    def run(mod: ModuleType, torch: Any, seed: int, device: str = "cpu") -> list[Check]:
        a, b = _gemm_inputs(torch, seed, device)
        return [_gemm_check(getattr(mod, attr)(a, b), a, b)]

    return run


def _attention_inputs(torch: Any, seed: int, device: str) -> list[Any]:
    shape = (1, 2, 384, 128) if device == "cpu" else (4, 8, 1024, 128)
    gen = torch.Generator().manual_seed(seed)
    return _on(device, *[(torch.randn(shape, generator=gen) * 0.5).to(torch.float16) for _ in range(3)])


def attention_reference(q: Any, k: Any, v: Any, sm_scale: float, causal: bool = False) -> Any:
    """softmax(q k^T * sm_scale) v in float32 (the reference every attention test compares against)."""
    import torch

    s = (q.float() @ k.float().transpose(-1, -2)) * sm_scale
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v.float()


def _run_attention(mod: ModuleType, torch: Any, seed: int, device: str = "cpu") -> list[Check]:
    q, k, v = _attention_inputs(torch, seed, device)
    sm_scale = 0.5
    return [(mod.attention(q, k, v, sm_scale), attention_reference(q, k, v, sm_scale), 1e-2, 0.0)]


def _run_vector_add2(mod: ModuleType, torch: Any, seed: int, device: str = "cpu") -> list[Check]:
    gen = torch.Generator().manual_seed(seed)
    x, y, a, b = _on(device, *(torch.rand(5000 if device == "cpu" else 98432, generator=gen) for _ in range(4)))
    plain = mod.add2(x, y, a, b)
    ws = mod.add2_warp_specialized(x, y, a, b)
    refs = (x.double() + y.double(), a.double() + b.double())
    return [(out, ref.float(), 0.0, 0.0) for out, ref in zip((*plain, *ws), refs * 2, strict=True)]


CASES = [
    Case("hopper_gemm_pipelined", "hopper_gemm_pipelined", _run_matmul("matmul"), 1,
         (WGMMA.format(n=256), r"cp\.async\.cg\.shared\.global", r"cp\.async\.commit_group",
          r"cp\.async\.wait_group"), num_warps=8),
    Case("hopper_gemm_ws", "hopper_gemm_ws", _run_matmul("matmul"), 1,
         (WGMMA.format(n=128), TMA_LOAD, TMA_STORE, *MBARRIER), partitions=((4, 4),)),
    Case("hopper_persistent_gemm_ws_pingpong", "hopper-persistent-gemm-ws-pingpong",
         _run_matmul("matmul_tlx_ws_persistent"), 1,
         (WGMMA.format(n=128), TMA_LOAD, TMA_STORE, *MBARRIER, *NAMED_BARRIERS), partitions=((4, 4),),
         setmaxnreg=232),
    Case("hopper_persistent_gemm_ws_cooperative", "hopper-persistent-gemm-ws-cooperative",
         _run_matmul("matmul_tlx_ws_persistent"), 1,
         (WGMMA.format(n=256), TMA_LOAD, TMA_STORE, *MBARRIER), partitions=((4, 4),), setmaxnreg=232),
    # hopper_fa_ws / _pipelined: the first autotune config has NUM_MMA_GROUPS=1 (one 4-warp consumer)
    Case("hopper_fa_ws", "hopper_fa_ws", _run_attention, 1,
         (WGMMA.format(n=128), TMA_LOAD, TMA_STORE, *MBARRIER, r"ex2\.approx"), partitions=((4,),),
         setmaxnreg=232),
    Case("hopper_fa_ws_pipelined", "hopper_fa_ws_pipelined", _run_attention, 1,
         (WGMMA.format(n=128), TMA_LOAD, TMA_STORE, *MBARRIER, r"ex2\.approx"), partitions=((4,),),
         setmaxnreg=232),
    Case("hopper_fa_ws_pipelined_pingpong", "hopper_fa_ws_pipelined_pingpong", _run_attention, 1,
         (WGMMA.format(n=128), TMA_LOAD, TMA_STORE, *MBARRIER, *NAMED_BARRIERS, r"ex2\.approx"),
         partitions=((4, 4),), setmaxnreg=232),
    Case("hopper_fa_ws_pipelined_pingpong_persistent", "hopper_fa_ws_pipelined_pingpong_persistent", _run_attention, 1,
         (WGMMA.format(n=128), TMA_LOAD, TMA_STORE, *MBARRIER, *NAMED_BARRIERS, r"ex2\.approx"),
         partitions=((4, 4),), setmaxnreg=232),
    # add2 (no tasks) then add2_warp_specialized (default task + one 4-warp task)
    Case("vector_add2", "vector-add2", _run_vector_add2, 2, (r"ld\.global", r"st\.global"),
         partitions=((), (4,))),
]

BY_ID = {c.id: c for c in CASES}
