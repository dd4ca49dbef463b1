"""The AMD TLX tutorial kernels of Meta's fork (pinned commit), each driven through its file's own host code.

One :class:`Case` per kernel entry: the tutorial module (dotted, under ``third_party/tlx/tutorials``), the
target the file is written for (its docstring / the fork's ``testing/test_correctness.py`` skips), how to
call its host function on CPU tensors (the file's own input helpers where it has them: ``make_inputs`` of
``gfx9_gemm/f16_inputs.py`` with B column-major as its benches use, ``make_bmm_inputs``, ``build_inputs``,
``_rand_groups``, ``generate_gdpa_data``), and what the AMDGCN of its launches must show (MFMA, direct-to-LDS
copies, buffer loads, ``s_setprio`` of warp pipelines, ``v_readfirstlane`` of ``assume_uniform``).

Entries: every ``amd_*.py``, ``gfx950_*.py`` and ``gfx9_gemm/**/matmul_kernel*.py`` file's public host
function; ``amd_addmm_glu.py`` has no default entry and contributes the five kernels of its
``KERNEL_REGISTRY``. The gfx1250 (TDM) files are listed too, so the corpus test sees every AMD file.

Shapes are small enough for the CPU (nothing runs: launches are compiled and recorded) and large enough
for each file's own dispatch to take its main path (``inter_wave/a4w4`` needs a grid of more than 64 tiles,
``matmul_kernel_persistent`` only accepts its two tuned shapes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

#: AMDGCN patterns of what a kernel promises (counted over all of a case's launches).
MFMA = r"\bv_mfma_\w+"
DIRECT_TO_LDS = r"\b(?:buffer|global)_load_\w+\b[^\n]*\blds\b|\bglobal_load_lds_\w+"
BUFFER_LOAD = r"\bbuffer_load_(?:dword\w*|ushort|short_d16\w*|ubyte\w*)\b(?![^\n]*\blds\b)"
DS_READ = r"\bds_read\w*"
DS_WRITE = r"\bds_write\w*"
SETPRIO = r"\bs_setprio\b"
READFIRSTLANE = r"\bv_readfirstlane_b32\b"


@dataclass(frozen=True)
class Case:
    """One AMD kernel entry as the corpus test drives it."""

    id: str
    module: str  # dotted path under the tutorials package
    arch: str  # "gfx942" / "gfx950" / "gfx1250"
    run: Callable[[ModuleType, Any], Any]  # (module, torch) -> host function result
    promises: tuple[str, ...] = (MFMA,)  # AMDGCN patterns that must each occur at least once
    warp_pipeline: bool = False  # warp-pipeline stages expected in the TTGIR (warp pipelines exist on Triton 3.7+)
    slow: bool = False  # minutes to compile (marked slow in the test)
    env: dict[str, str] = field(default_factory=dict)  # environment of the case's process
    variant_of: str = ""  # a diagnostic variant of another entry (not counted, not a file of its own)


def _gen(torch: Any, seed: int = 0) -> Any:
    return torch.Generator().manual_seed(seed)


def _randn(torch: Any, *shape: int, dtype: Any = None, scale: float = 1.0, seed: int = 0) -> Any:
    return (torch.randn(*shape, generator=_gen(torch, seed)) * scale).to(dtype or torch.float16)


def _tutorial(mod: ModuleType, name: str) -> ModuleType:
    """A sibling module of the tutorials package (its own input helpers)."""
    import importlib

    return importlib.import_module(f"{mod.__name__.split('.tutorials.')[0]}.tutorials.{name}")


def _gemm(M: int = 512, N: int = 512, K: int = 512, fn: str = "matmul") -> Callable[[ModuleType, Any], Any]:
    def run(mod: ModuleType, torch: Any) -> Any:
        return getattr(mod, fn)(_randn(torch, M, K), _randn(torch, K, N, seed=1))

    return run


def _gfx9_gemm(M: int = 512, N: int = 512, K: int = 1024, b_layout: str = "transposed") -> Callable[..., Any]:
    def run(mod: ModuleType, torch: Any) -> Any:
        a, b = _tutorial(mod, "gfx9_gemm.f16_inputs").make_inputs(M, N, K, "cpu", b_layout)
        return mod.matmul(a, b)

    return run


def _addmm(M: int = 512, N: int = 512, K: int = 512, column_major_b: bool = False) -> Callable[..., Any]:
    def run(mod: ModuleType, torch: Any) -> Any:
        a = _randn(torch, M, K)
        b = _randn(torch, N, K, seed=1).T if column_major_b else _randn(torch, K, N, seed=1)
        return mod.addmm(_randn(torch, N, seed=2), a, b)

    return run


def _bmm(mod: ModuleType, torch: Any) -> Any:
    a, b = mod.make_bmm_inputs(2, 256, 256, 256, "cpu")
    return mod.bmm(a, b)


def _attention(dtype_name: str = "bfloat16") -> Callable[[ModuleType, Any], Any]:
    def run(mod: ModuleType, torch: Any) -> Any:
        q, k, v = (_randn(torch, 1, 2, 512, 128, dtype=getattr(torch, dtype_name), scale=0.5, seed=i) for i in range(3))
        return mod.attention(q, k, v, 128 ** -0.5, False)

    return run


def _fa_bwd(mod: ModuleType, torch: Any) -> Any:
    q, k, v, o, do = (_randn(torch, 1, 2, 256, 64, dtype=torch.bfloat16, scale=0.5, seed=i) for i in range(5))
    return mod.fa_backward(q, k, v, o, do, torch.zeros(1, 2, 256), 64 ** -0.5, False)


def _pa_decode(mod: ModuleType, torch: Any) -> Any:
    query, key_cache, value_cache, context_lens, block_tables = mod.build_inputs(2, [512, 300], 16, 2, 128, 16,
                                                                                 device="cpu")
    return mod.pa_decode_tlx(torch.empty_like(query), query, key_cache, value_cache, context_lens, block_tables,
                             128 ** -0.5)


def _hstu(mod: ModuleType, torch: Any) -> Any:
    lengths = [256, 200]
    offsets = torch.tensor([0, lengths[0], sum(lengths)], dtype=torch.int64)
    q, k, v = (_randn(torch, sum(lengths), 2, 128, dtype=torch.bfloat16, scale=0.3, seed=i) for i in range(3))
    return mod.triton_hstu_attention_fwd(256, 1.0 / 128, q, k, v, offsets, True, None, 0, 0, sort_by_length=True)


def _gdpa(mod: ModuleType, torch: Any) -> Any:
    data = mod.generate_gdpa_data(2, 256, 128, 2, 256, dtype=torch.bfloat16, device="cpu")
    return mod.gdpa(data["q"], data["k"], data["v"], data["q_offsets"], 256, qk_scale=1.0)


def _grouped(mod: ModuleType, torch: Any) -> Any:
    # The host scores its 256x256 quadrant path (the warp-pipelined one) against generic tiles by how well the
    # tiles fill the device's CUs: 256 quadrant tiles on the MI355X stand-in's 256 CUs make it the host's pick
    # (smaller groups leave most CUs idle there and the host picks a generic tile without warp pipelining).
    group_a, group_b = mod._rand_groups([(2048, 4096, 256), (2048, 4096, 256)])
    return mod.grouped_gemm(group_a, group_b)


def _a4w4(M: int, N: int, K: int, fn: str = "matmul") -> Callable[[ModuleType, Any], Any]:
    """Packed e2m1 operands (two per byte) and e8m0 scales near 1.0, K-major, as the a4w4 benches make them."""

    def run(mod: ModuleType, torch: Any) -> Any:
        a = torch.randint(0, 255, (M, K // 2), dtype=torch.uint8, generator=_gen(torch))
        b = torch.randint(0, 255, (N, K // 2), dtype=torch.uint8, generator=_gen(torch, 1))
        a_scales = torch.randint(124, 128, (K // 32, M), dtype=torch.uint8, generator=_gen(torch, 2)).T
        b_scales = torch.randint(124, 128, (K // 32, N), dtype=torch.uint8, generator=_gen(torch, 3)).T
        return getattr(mod, fn)(a, b, a_scales, b_scales)

    return run


def _persistent(mod: ModuleType, torch: Any) -> Any:
    # Only its two tuned shapes are accepted; nothing runs, so uninitialised operands do.
    return mod.matmul(torch.empty(1024, 6144, dtype=torch.float16), torch.empty(20480, 6144, dtype=torch.float16).T)


def _glu(name: str) -> Callable[[ModuleType, Any], Any]:
    def run(mod: ModuleType, torch: Any) -> Any:
        M, N, K = mod.M, mod.N, 1024
        a, b = _randn(torch, M, K), _randn(torch, K, N, seed=1)
        return mod.KERNEL_REGISTRY[name](a, b, _randn(torch, N, seed=2), _randn(torch, M, N, seed=3))

    return run


def _tdm_gemm(mod: ModuleType, torch: Any) -> Any:
    return mod.matmul(_randn(torch, 256, 256), _randn(torch, 256, 256, seed=1))


def _tdm_mxfp(mod: ModuleType, torch: Any) -> Any:
    a = torch.randint(20, 40, (256, 512), dtype=torch.uint8, generator=_gen(torch)).view(torch.float8_e5m2)
    b = torch.randint(20, 40, (512, 256), dtype=torch.uint8, generator=_gen(torch, 1)).view(torch.float8_e5m2)
    a_s = torch.randint(124, 128, (256, 16), dtype=torch.uint8, generator=_gen(torch, 2))
    b_s = torch.randint(124, 128, (256, 16), dtype=torch.uint8, generator=_gen(torch, 3))
    return mod.matmul(a, b, mod.pack_scale(a_s), mod.pack_scale(b_s))


STAGED = (MFMA, DS_READ, DS_WRITE)  # register-staged GEMMs: tl.load + local_store + local_load + tl.dot
DIRECT = (MFMA, DIRECT_TO_LDS, DS_READ)  # direct-to-LDS copies feeding MFMA

CASES: list[Case] = [
    Case("amd_gemm_gfx942", "amd_gemm_gfx942", "gfx942", _gemm(), STAGED),
    Case("amd_addmm_gfx942", "amd_addmm_gfx942", "gfx942", _addmm(), STAGED),
    Case("amd_bmm_gfx942", "amd_bmm_gfx942", "gfx942", _bmm, STAGED),
    Case("amd_gemm_pipelined", "amd_gemm_pipelined", "gfx942", _gemm(), STAGED),
    Case("gfx9.v0_naive", "gfx9_gemm.a16w16.v0_naive.matmul_kernel", "gfx950", _gfx9_gemm()),
    Case("gfx9.v1_buffer_load", "gfx9_gemm.a16w16.v1_buffer_load.matmul_kernel", "gfx950", _gfx9_gemm(),
         (MFMA, BUFFER_LOAD)),
    Case("gfx9.v2_async_copy", "gfx9_gemm.a16w16.v2_async_copy.matmul_kernel", "gfx950", _gfx9_gemm(), DIRECT),
    Case("gfx9.v3_lds", "gfx9_gemm.a16w16.v3_lds.matmul_kernel", "gfx950", _gfx9_gemm(), DIRECT),
    Case("gfx9.v4_global_prefetch", "gfx9_gemm.a16w16.v4_global_prefetch.matmul_kernel", "gfx950", _gfx9_gemm(),
         DIRECT),
    Case("gfx9.v5_local_prefetch", "gfx9_gemm.a16w16.v5_local_prefetch.matmul_kernel", "gfx950", _gfx9_gemm(),
         DIRECT),
    Case("gfx9.v6_loop_unroll", "gfx9_gemm.a16w16.v6_loop_unroll.matmul_kernel", "gfx950", _gfx9_gemm(), DIRECT),
    Case("gfx9.v7_slice", "gfx9_gemm.a16w16.v7_slice.matmul_kernel", "gfx950", _gfx9_gemm(), DIRECT),
    Case("gfx9.v8_warp_pipeline", "gfx9_gemm.a16w16.v8_warp_pipeline.matmul_kernel", "gfx950", _gfx9_gemm(),
         DIRECT, warp_pipeline=True),
    Case("gfx9.v9_beyond_hotloop", "gfx9_gemm.a16w16.v9_beyond_hotloop.matmul_kernel", "gfx950", _gfx9_gemm(),
         DIRECT, warp_pipeline=True),
    Case("gfx9.persistent", "gfx9_gemm.a16w16.matmul_kernel_persistent", "gfx950", _persistent, (MFMA, BUFFER_LOAD),
         slow=True),
    Case("gfx9.inter_wave.a16w16", "gfx9_gemm.inter_wave.a16w16.matmul_kernel", "gfx950",
         _gfx9_gemm(1024, 1024, 1024), DIRECT, warp_pipeline=True),
    Case("gfx9.inter_wave.split_m", "gfx9_gemm.inter_wave.a16w16.matmul_kernel_split_m", "gfx950",
         _gfx9_gemm(1024, 1024, 1024, "contiguous"), DIRECT, warp_pipeline=True),
    Case("gfx9.inter_wave.a4w4", "gfx9_gemm.inter_wave.a4w4.matmul_kernel", "gfx950", _a4w4(4096, 4096, 4096),
         (MFMA, DIRECT_TO_LDS)),
    Case("gfx9.intra_wave.a4w4", "gfx9_gemm.intra_wave.a4w4.matmul_kernel", "gfx950", _a4w4(256, 256, 1024),
         (MFMA, DIRECT_TO_LDS)),
    Case("gfx9.skinny.a4w4", "gfx9_gemm.skinny.a4w4.matmul_kernel", "gfx950", _a4w4(32, 256, 1024, "skinny_matmul"),
         (MFMA, DIRECT_TO_LDS)),
    Case("amd_addmm_gfx950", "amd_addmm_gfx950", "gfx950", _addmm(1024, 1024, 1024, column_major_b=True),
         (MFMA, DIRECT_TO_LDS)),
    Case("amd_bmm", "amd_bmm", "gfx950", _bmm, DIRECT),
    Case("amd_bmm_shared_a", "amd_bmm_shared_a", "gfx950", _bmm, DIRECT),
    Case("amd_grouped_gemm", "amd_grouped_gemm", "gfx950", _grouped, DIRECT, warp_pipeline=True),
    Case("amd_fa_pipelined", "amd_fa_pipelined", "gfx950", _attention("float16"), DIRECT),
    Case("amd_fa_persistent", "amd_fa_persistent", "gfx950", _attention(), DIRECT),
    Case("amd_fa_cluster", "amd_fa_cluster", "gfx950", _attention(), DIRECT, warp_pipeline=True),
    Case("amd_fa_bwd", "amd_fa_bwd", "gfx950", _fa_bwd, (MFMA, DIRECT_TO_LDS, BUFFER_LOAD)),
    Case("amd_pa_decode", "amd_pa_decode", "gfx950", _pa_decode, DIRECT),
    Case("amd_hstu_attn", "amd_hstu_attn", "gfx950", _hstu, DIRECT),
    Case("gfx950_gdpa", "gfx950_gdpa", "gfx950", _gdpa, DIRECT),
    # The file reads two plain float globals in a @jit helper, which Triton (stock and the fork) refuses; with
    # Triton's own switch for that, the TLX part is shown to compile.
    Case("gfx950_gdpa.allow_globals", "gfx950_gdpa", "gfx950", _gdpa, DIRECT,
         env={"TRITON_ALLOW_NON_CONSTEXPR_GLOBALS": "1"}, variant_of="gfx950_gdpa"),
    Case("amd_gemm_warp_pipeline", "amd_gemm_warp_pipeline", "gfx950", _gemm(1024, 1024, 1024), DIRECT,
         warp_pipeline=True),
    *(Case(f"amd_addmm_glu.{name}", "amd_addmm_glu", "gfx950", _glu(name), STAGED if name == "tlx_baseline" else DIRECT)
      for name in ("tlx_baseline", "tlx_simple_async", "tlx_optimized_async", "tlx_optimized", "tlx_persistent")),
    Case("amd_tdm_gemm_pipelined", "amd_tdm_gemm_pipelined", "gfx1250", _tdm_gemm),
    Case("amd_mxfp_gemm_tdm_pipelined", "amd_mxfp_gemm_tdm_pipelined", "gfx1250", _tdm_mxfp),
]

BY_ID = {c.id: c for c in CASES}

#: The corpus of issue 17: gfx942 and gfx950 kernel entries (the gfx1250 TDM files are counted apart).
GFX9 = [c for c in CASES if c.arch in ("gfx942", "gfx950") and not c.variant_of]


def corpus_files(tutorials: Any) -> set[str]:
    """Every AMD kernel file of the tutorials folder, as a dotted module path (what needs a case)."""
    found = {p.stem for p in tutorials.glob("amd_*.py")} | {p.stem for p in tutorials.glob("gfx950_*.py")}
    for path in (tutorials / "gfx9_gemm").rglob("matmul_kernel*.py"):
        found.add(".".join(path.relative_to(tutorials).with_suffix("").parts))
    return found
