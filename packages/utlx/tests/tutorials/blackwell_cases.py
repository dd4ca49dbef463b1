"""The Blackwell (sm_100) TLX tutorial kernels of Meta's wheel and of its fork, each driven through its own host code.

One :class:`Case` per kernel entry: where the file comes from (``wheel``: the ``triton-utlx`` wheel the tests
download; ``fork``: fbtriton at the pinned commit, through ``$UTLX_FBTRITON_DIR``), the tutorial module, how to
call its host function on small CPU tensors (the file's own input helpers where it has them), the float32
reference where the test checks numbers under the interpreter, and what the PTX of its launches must show
(``tcgen05.mma``, TMEM loads, TMA, mbarriers, ...).

The same call serves the compile test (host function under the compile-only driver for ``cuda:100``, launches
recorded, autotuning reduced to the first surviving config) and the interpreter run (``TRITON_INTERPRET=1``,
outputs compared with the reference), so both exercise the tutorial exactly as a user calls it.

No Blackwell GPU is available to the developers: these kernels are compile- and interpreter-verified only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from cases import attention_reference

#: (output, float32 reference, atol, rtol) of one host-function result
Check = tuple[Any, Any, float, float]

TCGEN05_MMA = r"tcgen05\.mma\.cta_group::1\.kind::f16"
TCGEN05_MMA_2CTA = r"tcgen05\.mma\.cta_group::2"
TCGEN05_SCALED = r"tcgen05\.mma\.cta_group::\d\.kind::mxf8f6f4\.block_scale"
TCGEN05_LD = r"tcgen05\.ld\.sync\.aligned"
TCGEN05_COMMIT = r"tcgen05\.commit\.cta_group::\d"
TCGEN05_ALLOC = r"tcgen05\.alloc\.cta_group::\d"
TMA_LOAD = r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global|cp\.async\.bulk\.tensor\.\dd\.shared::cta\.global"
MBARRIER_WAIT = r"mbarrier\.try_wait\.parity"
CLC = r"clusterlaunchcontrol\.try_cancel"
REMOTE_SMEM = r"mapa\.shared::cluster|\.shared::cluster\.u32|st\.async|mbarrier\.arrive[^\n]*shared::cluster"

TMEM_KERNEL = (TCGEN05_ALLOC, TCGEN05_LD, MBARRIER_WAIT)


@dataclass(frozen=True)
class Case:
    """One Blackwell kernel entry as the corpus tests drive it."""

    id: str  # "<source>.<tutorial>[.<variant>]"
    source: str  # "wheel" or "fork"
    module: str  # dotted module under the tutorials package (file stem, hyphens allowed)
    run: Callable[[ModuleType, Any, int], list[Check]]  # (module, torch, seed) -> checks (reference may be None)
    ptx: tuple[str, ...]  # regexes that must each match the PTX of at least one launch
    interpret: bool = True  # checked numerically under the interpreter too
    slow: bool = False  # minutes to compile: marked slow


def _gen(torch: Any, seed: int) -> Any:
    return torch.Generator().manual_seed(seed)


def _gemm(attr: str = "matmul", m: int = 256, n: int = 256, k: int = 512) -> Callable[..., list[Check]]:
    def run(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
        gen = _gen(torch, seed)
        a = (torch.randn((m, k), generator=gen) / 4).to(torch.float16)
        b = (torch.randn((k, n), generator=gen) / 4).to(torch.float16)
        return [(getattr(mod, attr)(a, b), a.float() @ b.float(), 5e-2, 1e-2)]

    return run


def _attention_qkv(torch: Any, seed: int, n_ctx: int = 512, dtype: Any = None) -> list[Any]:
    gen = _gen(torch, seed)
    shape = (1, 2, n_ctx, 128)
    return [(torch.randn(shape, generator=gen) * 0.5).to(dtype or torch.float16) for _ in range(3)]


def _attention(*extra: Any, causal: bool | None = None) -> Callable[..., list[Check]]:
    """``attention(q, k, v, sm_scale[, causal], *extra)`` of the FA tutorials."""

    def run(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
        q, k, v = _attention_qkv(torch, seed)
        sm_scale = 0.5
        args = (q, k, v, sm_scale) if causal is None else (q, k, v, sm_scale, causal, *extra)
        return [(mod.attention(*args), attention_reference(q, k, v, sm_scale, bool(causal)), 1e-2, 0.0)]

    return run


def _mxfp8_attention(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
    """vs attention of the dequantized inputs: the file's ``*_ref`` are the bf16 tensors *before* MXFP8
    quantization, whose error alone (up to 1/16 an element) exceeds the tolerance for some seeds; what is left
    is the kernel's own quantization of P and its bf16 output."""
    from torchao.prototype.mx_formats.mx_tensor import MXTensor, ScaleCalculationMode

    def dequantized(x2d: Any) -> Any:  # as generate_attention_inputs quantizes (deterministic)
        return MXTensor.to_mx(x2d, torch.float8_e4m3fn, scaling_mode=ScaleCalculationMode.RCEIL,
                              is_swizzled_scales=True).dequantize(torch.float32)

    torch.manual_seed(seed)
    shape = (1, 2, 512, 128)
    (q, qs, qref), (k, ks, kref), (v, vs, vref) = mod.generate_attention_inputs(shape, "cpu", torch.float8_e4m3fn)
    sm_scale = 0.5
    out = mod.attention(q, k, v, qs, ks, vs, sm_scale, False)
    qd, kd = (dequantized(x.reshape(-1, shape[-1])).reshape(shape) for x in (qref, kref))
    vd = dequantized(vref.reshape(-1, shape[-1]).t().contiguous()).t().reshape(shape)  # V: quantized along N
    return [(out, attention_reference(qd, kd, vd, sm_scale, False), 5e-2, 5e-2)]


def _grouped_gemm(attr: str) -> Callable[..., list[Check]]:
    def run(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
        gen = _gen(torch, seed)
        sizes = (256, 128, 384)
        a = [torch.rand((s, s), generator=gen).to(torch.float16) for s in sizes]
        b = [torch.rand((s, s), generator=gen).to(torch.float16) for s in sizes]
        outs = getattr(mod, attr)(a, b)
        return [(o, x.float() @ y.float(), 5e-2, 1e-2) for o, x, y in zip(outs, a, b, strict=True)]

    return run


def _layernorm(attr: str) -> Callable[..., list[Check]]:
    def run(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
        gen = _gen(torch, seed)
        m, n = 64, 8192
        x, w, b = (torch.randn(shape, generator=gen).to(torch.float16) for shape in ((m, n), (n,), (n,)))
        out = getattr(mod, attr)(x, w, b, 1e-5)
        out = out[0] if isinstance(out, tuple) else out
        ref = torch.nn.functional.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
        return [(out, ref, 2e-2, 1e-2)]

    return run


def _scaled_mm(mode: str) -> Callable[..., list[Check]]:
    """``blackwell_scaled_mm_ws(a, b, scale_a, scale_b, scale_mode=...)``: FP8 operands, float32 scales per
    128-block (blockwise), row or tensor; the reference applies the scales to the float32 product."""

    def run(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
        gen = _gen(torch, seed)
        m = n = k = 256
        a = (torch.randn((m, k), generator=gen) * 0.1).to(torch.float8_e4m3fn)
        b = (torch.randn((n, k), generator=gen) * 0.1).to(torch.float8_e4m3fn)
        if mode == "blockwise":
            sa = torch.rand((m, k // 128), generator=gen).t().contiguous().t()
            sb = torch.rand((n // 128, k // 128), generator=gen)
            ref = torch.zeros((m, n))
            for g in range(k // 128):
                part = a.float()[:, g * 128:(g + 1) * 128] @ b.float()[:, g * 128:(g + 1) * 128].t()
                ref += part * sa[:, g][:, None] * sb[:, g].repeat_interleave(128)[None, :]
        else:
            sa, sb = torch.rand((m,), generator=gen), torch.rand((n,), generator=gen)
            ref = (a.float() @ b.float().t()) * sa[:, None] * sb[None, :]
        out = mod.blackwell_scaled_mm_ws(a, b, sa, sb, scale_mode=mode)
        return [(out, ref, 1e-1, 5e-2)]

    return run


def _mxfp8_gemm(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
    """The fork's test: torchao MXTensor operands (swizzled E8M0 scales), vs the dequantized product."""
    from torchao.prototype.mx_formats.mx_tensor import MXTensor, ScaleCalculationMode

    gen = _gen(torch, seed)
    m, n, k = 256, 256, 256
    a = (torch.randn((m, k), generator=gen) * 0.5).to(torch.bfloat16)
    b = (torch.randn((n, k), generator=gen) * 0.5).to(torch.bfloat16)
    a_mx, b_mx = (MXTensor.to_mx(x, torch.float8_e4m3fn, scaling_mode=ScaleCalculationMode.RCEIL,
                                 is_swizzled_scales=True) for x in (a, b))
    out = mod.matmul(a_mx.qdata, b_mx.qdata, a_mx.scale, b_mx.scale)
    ref = a_mx.dequantize(torch.float32) @ b_mx.dequantize(torch.float32).T
    return [(out, ref, 1e-1, 1e-2)]


def _gdpa(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
    torch.manual_seed(seed)
    # Sequence lengths are multiples of the kernel's BLOCK_N (128): its K/V descriptors span every sequence and it
    # masks no key, so a partial last block would read the next sequence's keys (the tutorial's own behaviour).
    lengths = torch.tensor([256, 128, 256, 128], dtype=torch.int32)[torch.randperm(4)]
    data = mod.generate_jagged_data(4, 256, 256, H=2, sparsity=0.5, dense_q=False, bias=False, num_objects=lengths,
                                    dtype=torch.bfloat16, device="cpu")
    out = mod.gdpa_forward_tlx(query=data["q_weights"], key=data["k_weights"], value=data["v_weights"],
                               query_offset=data["q_offsets"].to(torch.int32),
                               key_offset=data["k_offsets"].to(torch.int32),
                               output_offset=data["output_offsets"], max_seq_len_q=data["max_seq_len_q"],
                               max_seq_len_kv=data["max_seq_len_k"], activation="fast_gelu", is_causal=False)
    return [(out, _gdpa_reference(torch, data["q_weights"], data["k_weights"], data["v_weights"],
                                  data["q_offsets"], data["k_offsets"]), 16.0, 3e-2)]


def _gdpa_reference(torch: Any, q: Any, k: Any, v: Any, q_offsets: Any, k_offsets: Any) -> Any:
    """GDPA with the kernel's ``fast_gelu``: per sequence and head, ``o = act(q k^T) v`` with no softmax and no
    scale, where ``act(x) = x * tanh(x * (c1 x^2 + c0)) + x`` (twice the tanh-GELU); P is rounded to the input type
    before the second product as the kernel stores it (bf16 in TMEM). The tolerance (3%) covers Triton's interpreter
    truncating float32 -> bfloat16 conversions (measured: 1 + 2**-8 + 2**-12 becomes 1.0), a bias on P and O."""
    out = torch.zeros(q.shape, dtype=torch.float32)
    for b in range(len(q_offsets) - 1):
        q0, q1, k0, k1 = int(q_offsets[b]), int(q_offsets[b + 1]), int(k_offsets[b]), int(k_offsets[b + 1])
        qb, kb, vb = (x.detach().float().transpose(0, 1) for x in (q[q0:q1], k[k0:k1], v[k0:k1]))  # [H, L, D]
        s = qb @ kb.transpose(1, 2)
        p = (s * torch.tanh(s * (0.0356774081 * s * s + 0.7978845608)) + s).to(q.dtype).float()
        out[q0:q1] = (p @ vb).transpose(0, 1)
    return out


def _hstu_cross(mod: ModuleType, torch: Any, seed: int) -> list[Check]:
    torch.manual_seed(seed)
    batch, heads, dim, max_kv, max_targets = 4, 2, 128, 256, 16
    lengths = torch.randint(1, max_kv + 1, (batch,))
    targets = torch.randint(1, max_targets + 1, (batch,))
    seq_offsets = torch.zeros(batch + 1, dtype=torch.int64)
    seq_offsets[1:] = torch.cumsum(lengths, 0)
    seq_offsets_q = torch.zeros(batch + 1, dtype=torch.int64)
    seq_offsets_q[1:] = torch.cumsum(targets, 0)
    # Wider than the tutorial's +-0.1 so that alpha * q k^T spans SiLU's curved part (not its linear tail at 0).
    q = torch.empty((int(seq_offsets_q[-1]), heads, dim), dtype=torch.bfloat16).uniform_(-1.0, 1.0)
    k, v = (torch.empty((int(seq_offsets[-1]), heads, dim), dtype=torch.bfloat16).uniform_(-1.0, 1.0)
            for _ in range(2))
    max_seq_len = max_kv + max_targets
    out = mod.hstu_cross_mha(max_seq_len=max_seq_len, max_q_len=max_targets, alpha=dim ** -0.5, q=q, k=k, v=v,
                             seq_offsets=seq_offsets, seq_offsets_q=seq_offsets_q, enable_tma=False,
                             num_softmax_heads=0, attn_scale=torch.tensor(1.0 / max_seq_len), variant="tlx_single_q",
                             causal=False, num_targets=targets)
    ref = _hstu_cross_reference(torch, q, k, v, seq_offsets_q, seq_offsets, dim ** -0.5, max_seq_len)
    return [(out, ref, 1e-4, 2e-2)]


def _hstu_cross_reference(torch: Any, q: Any, k: Any, v: Any, offsets_q: Any, offsets_kv: Any, alpha: float,
                          max_seq_len: int) -> Any:
    """HSTU cross attention (no softmax): per sequence and head, ``o = silu(alpha q k^T) v / max_seq_len`` over that
    sequence's keys, SiLU's output rounded to V's type before the second product as the kernel stores it (the
    interpreter truncates float32 -> bfloat16: about 0.5% low, within the 2% tolerance)."""
    out = torch.zeros(q.shape, dtype=torch.float32)
    for b in range(len(offsets_q) - 1):
        q0, q1, k0, k1 = int(offsets_q[b]), int(offsets_q[b + 1]), int(offsets_kv[b]), int(offsets_kv[b + 1])
        qb, kb, vb = (x.float().transpose(0, 1) for x in (q[q0:q1], k[k0:k1], v[k0:k1]))  # [H, L, D]
        p = torch.nn.functional.silu(alpha * (qb @ kb.transpose(1, 2))).to(v.dtype).float()
        out[q0:q1] = (p @ vb).transpose(0, 1) / max_seq_len
    return out


def _both(stem: str, run: Callable[..., list[Check]], ptx: tuple[str, ...], variant: str = "",
          **kw: Any) -> list[Case]:
    """The wheel's copy and the fork's copy of one tutorial."""
    suffix = f".{variant}" if variant else ""
    return [Case(f"{src}.{stem}{suffix}", src, stem, run, ptx, **kw) for src in ("wheel", "fork")]


CASES: list[Case] = [
    *_both("blackwell_gemm_pipelined", _gemm(), (TCGEN05_MMA, TMA_LOAD, MBARRIER_WAIT)),
    *_both("blackwell_gemm_ws", _gemm(), (TCGEN05_MMA, TCGEN05_COMMIT, TMA_LOAD, *TMEM_KERNEL)),
    *_both("blackwell_gemm_clc", _gemm(), (TCGEN05_MMA, CLC, TMA_LOAD, *TMEM_KERNEL)),
    # its clusters are ctas_per_cga=(4, 2, 1): the grid (M/128, N/128) must be a multiple (a launch of a partial
    # cluster fails on the GPU, and under the interpreter)
    *_both("blackwell_gemm_2cta", _gemm(m=512), (TCGEN05_MMA_2CTA, TMA_LOAD, *TMEM_KERNEL)),
    *_both("blackwell_fa_ws", _attention(), (TCGEN05_MMA, TMA_LOAD, *TMEM_KERNEL)),
    *_both("blackwell_fa_ws_persistent", _attention(causal=False), (TCGEN05_MMA, TMA_LOAD, *TMEM_KERNEL)),
    *_both("blackwell_fa_ws_persistent", _attention(causal=True), (TCGEN05_MMA, TMA_LOAD, *TMEM_KERNEL), "causal"),
    *_both("blackwell_fa_ws_pipelined", _attention(causal=False), (TCGEN05_MMA, TMA_LOAD, *TMEM_KERNEL)),
    *_both("blackwell_fa_ws_pipelined", _attention(causal=True), (TCGEN05_MMA, TMA_LOAD, *TMEM_KERNEL), "causal"),
    # the wheel's host function also takes the backward's BWD_BLOCK_M1 and GROUP_SIZE_M; the fork's does not
    Case("wheel.blackwell_fa_ws_pipelined_persistent", "wheel", "blackwell_fa_ws_pipelined_persistent",
         _attention(128, 8, causal=False), (TCGEN05_MMA, TMA_LOAD, *TMEM_KERNEL)),
    Case("fork.blackwell_fa_ws_pipelined_persistent", "fork", "blackwell_fa_ws_pipelined_persistent",
         _attention(causal=False), (TCGEN05_MMA, TMA_LOAD, *TMEM_KERNEL)),
    *_both("blackwell_fa_ws_pipelined_persistent_mxfp8", _mxfp8_attention, (TCGEN05_SCALED, TMA_LOAD, *TMEM_KERNEL)),
    *_both("blackwell-grouped-gemm_test", _grouped_gemm("group_gemm_tlx_fn"), (TCGEN05_MMA, *TMEM_KERNEL)),
    *_both("blackwell-multi-cta-layernorm_test", _layernorm("multi_cta_layernorm"), (REMOTE_SMEM,)),
    *_both("blackwell-gdpa", _gdpa, (TCGEN05_MMA, TMA_LOAD, *TMEM_KERNEL)),
    *_both("blackwell-cross-attention", _hstu_cross, (TCGEN05_MMA, *TMEM_KERNEL)),
    # the fork's Blackwell files that the wheel does not ship
    Case("fork.blackwell_fa_clc", "fork", "blackwell_fa_clc", _attention(causal=False),
         (TCGEN05_MMA, CLC, TMA_LOAD, *TMEM_KERNEL)),
    Case("fork.blackwell_multi_cta_layernorm_ws_test", "fork", "blackwell_multi_cta_layernorm_ws_test",
         _layernorm("multi_cta_layernorm_ws"), (REMOTE_SMEM,)),
    Case("fork.blackwell_scaled_mm_ws.blockwise", "fork", "blackwell_scaled_mm_ws", _scaled_mm("blockwise"),
         (TCGEN05_MMA.replace("f16", "f8f6f4"), TMA_LOAD, *TMEM_KERNEL)),
    Case("fork.blackwell_scaled_mm_ws.rowwise", "fork", "blackwell_scaled_mm_ws", _scaled_mm("rowwise"),
         (TCGEN05_MMA.replace("f16", "f8f6f4"), TMA_LOAD, *TMEM_KERNEL)),
    Case("fork.blackwell_gemm_ws_mxfp8", "fork", "blackwell_gemm_ws_mxfp8", _mxfp8_gemm,
         (TCGEN05_SCALED, TMA_LOAD, *TMEM_KERNEL)),
    Case("fork.blackwell-triton-addmm-2cta_test", "fork", "blackwell-triton-addmm-2cta_test",
         # tl.dot(two_ctas=True) is compiled as each CTA's own dot (same values; a UtlxPerformanceWarning says so):
         # stock Triton's pipelined tcgen05 MMA of one CTA, fed by TMA
         _gemm("matmul_2cta_host_tma", 512, 512, 512), (TCGEN05_MMA, TMA_LOAD)),
]

BY_ID = {c.id: c for c in CASES}

#: The fork's Blackwell files with no case, each with the reason (the corpus test keeps this list complete).
NOT_CASES: dict[str, str] = {
    "blackwell_dist_all_gather": "a multi-GPU collective over torch.distributed symmetric memory: no TLX compute "
                                 "kernel a single compile-only device can drive",
}


def blackwell_files(tutorials: Any) -> set[str]:
    """Every top-level Blackwell tutorial module of a tutorials folder (``blackwell*.py``)."""
    return {p.stem for p in tutorials.glob("blackwell*.py")}
