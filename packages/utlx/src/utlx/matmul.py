"""``utlx.matmul(a, b)``: pick the best utlx GEMM kernel and configuration for a shape, run it.

Why our own small autotuner: the choice is between *kernels* (TMA persistent, TMA split-K for skinny
shapes, cp.async+wgmma ring, register-staged ring), their configurations and their grids, and some
candidates are only legal for some inputs (TMA and cp.async need 16-byte aligned rows). A first H200
run showed what a naive tuner gets wrong: 5 ms of timing per candidate picked a kernel 30% slower than the best one. So:

* every candidate is compiled and checked against a cuBLAS/rocBLAS reference *before* anything is
  timed (a compile error or a wrong result discards it, with the reason kept in the report);
* survivors are screened with ``do_bench`` (median), then the few fastest are re-timed in several
  interleaved rounds (median of medians), so clock drift hits all finalists alike;
* the winner is cached in-process per exact problem and on disk per (device name, Triton version,
  utlx version, dtype, alignment, shape class) so a later process does not tune again;
* the hot path (cache hit) does only what the launch needs: the per-shape launcher is built once.

The selection (:func:`~utlx.tuning.select_best`, in :mod:`utlx.tuning`, which ``utlx.attention`` tunes with too)
and the disk cache (:class:`~utlx.tuning_cache.TuningCache`) take plain callables and paths, so their logic is
tested on the CPU with mock timings; both are re-exported here.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utlx import compat, eager, gemm_launch
from utlx.gemm_launch import GemmLaunch, Problem, layout, tma_ready
from utlx.kernels.amd import amd_pipelined
from utlx.kernels.nvidia import hopper_pipelined
from utlx.kernels.nvidia import hopper_tma_persistent as tma
from utlx.kernels.nvidia import hopper_tma_splitk as splitk
from utlx.kernels.nvidia import hopper_tma_streamk as streamk
from utlx.kernels.nvidia import hopper_ws_cluster as ws_cluster
from utlx.kernels.nvidia import hopper_ws_persistent as ws
from utlx.kernels.nvidia import hopper_ws_pingpong as pingpong
from utlx.launch import _pipelines_key_fn
from utlx.settings import OFF, settings
from utlx.tuning import CandidateResult, TuneReport, check_budget, select_best
from utlx.tuning_cache import TuningCache, TuningCacheWarning, shape_class  # noqa: F401  (public here too)

Launcher = Callable[[Any, Any, Any], None]

#: Largest shared memory one block may use on sm_90 (H100/H200).
SMEM_LIMIT = tma.SMEM_LIMIT


def _cfg(bm: int, bn: int, bk: int, stages: int, group_m: int = 8) -> dict[str, int]:
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group_m, "NUM_STAGES": stages}


#: cp.async ring configurations tried on Hopper besides the kernel module's own ``CONFIGS``.
PIPELINED_EXTRA = [(_cfg(128, 256, 64, 4), 8)]

#: Register-staged configurations on NVIDIA: the portable fallback (any alignment, any NVIDIA GPU;
#: ~170 TFLOPS on an H200, so never preferred where TMA/cp.async candidates are legal).
REGISTER_STAGED_NVIDIA = [(_cfg(128, 128, 64, 2), 8), (_cfg(64, 64, 32, 2), 4)]

#: A problem is *skinny* (LLM decode/prefill: activations x weights) when M is at most this and K at least
#: :data:`SKINNY_MIN_K`. Only skinny problems get :data:`SKINNY_TILE_CONFIGS` and the split-K kernel, so
#: tuning the big shapes costs no more than before.
SKINNY_MAX_M = 512
SKINNY_MIN_K = 2048

#: Narrow one-program-per-tile TMA configurations for skinny problems: at N = 8192 they give 128 tiles
#: (64x64 for M <= 64, 128x64 for M = 128) where the regular ones give 64, with deep 128-wide K rings.
SKINNY_TILE_CONFIGS = [
    (_cfg(64, 64, 128, 6), 4),    # 200 KB
    (_cfg(128, 64, 128, 4), 4),   # 208 KB
    (_cfg(128, 64, 128, 4), 8),
    # 208 KB: at M = 128 two row tiles x 64 column tiles, each m64n128 wgmma twice as wide as the 128x64 tile's
    # m64n64. On the H200 (2026-12-01, fifth session): 0.963-0.974x cuBLAS at M = 128 against 0.937-0.949x
    (_cfg(64, 128, 128, 4), 4),
]


def is_skinny(M: int, N: int, K: int) -> bool:
    """Whether :func:`candidates` adds the skinny-problem kernels (see :data:`SKINNY_MAX_M`)."""
    return M <= SKINNY_MAX_M and K >= SKINNY_MIN_K


# --------------------------------------------------------------------------------------------------
# Candidates

#: The kernel module of each family that estimates its shared memory before compiling (``smem_bytes``).
_SMEM_ESTIMATES = {"tma_persistent": tma, "ws_persistent": ws, "ws_pingpong": pingpong, "ws_cluster": ws_cluster,
                   "tma_splitk": splitk, "tma_streamk": streamk}


@dataclass(frozen=True)
class Candidate:
    """One kernel family plus one configuration (constexprs, num_warps) and grid mode."""

    family: str  # "tma_persistent" | "ws_persistent" | "tma_splitk" | "tma_streamk" | "hopper_pipelined" | ...
    constexprs: tuple[tuple[str, int], ...]
    num_warps: int
    grid_mode: str = "tiles"  # TMA kernel: "persistent" or "tiles"; the pointer kernels are one program per tile

    @property
    def name(self) -> str:
        """The kernel family (kept for callers of the first version of this module)."""
        return self.family

    @property
    def config(self) -> dict[str, int]:
        return dict(self.constexprs)

    @property
    def id(self) -> str:
        """Stable text id (what the disk cache stores): family, grid, tile, stages, group, warps (then
        ``/e<EPILOGUE_SUBTILE>`` for a subtiled epilogue, ``/k<SPLIT_K>`` for the split-K kernel, ``/m<MIN_SHARE>``
        for a stream-K one whose minimum share is not 4, ``/shareb`` for the cluster kernel's B-sharing pairs, and
        ``/acol`` ``/bcol`` for the column-major-operand variants)."""
        c = self.config
        text = (f"{self.family}/{self.grid_mode}/{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}x{c['BLOCK_SIZE_K']}"
                f"/s{c['NUM_STAGES']}/g{c['GROUP_SIZE_M']}/w{self.num_warps}")
        if c.get("EPILOGUE_SUBTILE", 1) != 1:
            text += f"/e{c['EPILOGUE_SUBTILE']}"
        if "SPLIT_K" in c:
            text += f"/k{c['SPLIT_K']}"
        if c.get("MIN_SHARE", 4) != 4:
            text += f"/m{c['MIN_SHARE']}"
        if c.get("SHARE_B"):
            text += "/shareb"
        return text + ("/acol" if c.get("A_COL") else "") + ("/bcol" if c.get("B_COL") else "")

    def smem_bytes(self, elem_bytes: int = 2) -> int | None:
        """Shared memory per block when it is known before compiling (None: not estimated)."""
        c = self.config
        kernels = _SMEM_ESTIMATES.get(self.family)
        if kernels is not None:
            return kernels.smem_bytes(c, elem_bytes)
        if self.family == "hopper_pipelined":
            return c["NUM_STAGES"] * (c["BLOCK_SIZE_M"] + c["BLOCK_SIZE_N"]) * c["BLOCK_SIZE_K"] * elem_bytes
        return None

    def launch_key(self, M: int, N: int, num_sms: int) -> tuple:
        """Two candidates with the same launch key run the very same compiled kernel on the same grid."""
        if self.family == "tma_persistent":
            return (self.family, self.constexprs, self.num_warps, tma.grid_for(M, N, self.config, num_sms,
                                                                                self.grid_mode))
        return (self.family, self.constexprs, self.num_warps)

    def bind(self, problem: Problem, pdl: bool | None = None) -> GemmLaunch:
        """A ``run(a, b, c)`` for this problem with grid, arguments and (once compiled) the launch cached.
        ``pdl``: programmatic dependent launch on or off (None: ``UTLX_PDL`` decides)."""
        return gemm_launch.bind(self.family, self.config, self.num_warps, self.grid_mode, problem, pdl)

    def launch(self, a: Any, b: Any, c: Any) -> None:
        """Run once on these tensors (builds the launcher; :func:`matmul` caches it instead)."""
        self.bind(Problem.of(a, b, _device_info(a.device).num_sms))(a, b, c)


def _make(family: str, configs: Sequence[tuple[dict[str, int], int]], grid_mode: str = "tiles",
          a_col: bool = False, b_col: bool = False) -> list[Candidate]:
    cols = {**({"A_COL": 1} if a_col else {}), **({"B_COL": 1} if b_col else {})}
    return [Candidate(family, tuple(sorted({**const, **cols}.items())), nw, grid_mode) for const, nw in configs]


def fallback_candidates(kind: str) -> list[Candidate]:
    """The register-staged kernel: legal for any alignment on any GPU utlx supports."""
    configs = amd_pipelined.CONFIGS if kind == "amd" else REGISTER_STAGED_NVIDIA
    return _make("register_staged", configs)


def ws_enabled() -> bool:
    """The warp-specialized kernel is a candidate unless ``UTLX_MATMUL_WS=0``."""
    return settings.matmul_ws


def candidates(kind: str, aligned: bool, elem_bytes: int = 2, smem_limit: int = SMEM_LIMIT, a_col: bool = False,
               b_col: bool = False, shape: tuple[int, int, int] | None = None) -> list[Candidate]:
    """Candidates for a device kind ("hopper", "nvidia", "amd"), alignment and operand layout, best guesses first.

    Hopper with TMA-addressable operands (16-byte aligned base and major stride, see
    :func:`utlx.gemm_launch.tma_ready`) gets the TMA kernels (persistent and one-program-per-tile grids,
    warp-specialized) minus configurations whose shared memory exceeds ``smem_limit``, plus the cp.async
    ring when both operands are row-major. A column-major operand (``a_col``/``b_col``: a transposed
    view) selects the TMA kernels' ``A_COL``/``B_COL`` variants. Everything else gets the register-staged
    kernel, which takes any strides. ``shape`` ``(M, N, K)``: a skinny one (:func:`is_skinny`) adds the
    narrow-tile TMA configurations and the split-K kernel (:mod:`utlx.kernels.nvidia.hopper_tma_splitk`).
    """
    if kind != "hopper" or not aligned:
        return fallback_candidates(kind)
    out = (_make("tma_persistent", tma.CONFIGS, "persistent", a_col, b_col)
           + _make("tma_persistent", tma.TILE_CONFIGS, "tiles", a_col, b_col))
    if not (a_col or b_col):
        out += _make("hopper_pipelined", list(hopper_pipelined.CONFIGS) + PIPELINED_EXTRA)
    out += _make("tma_streamk", streamk.TUNED, "persistent", a_col, b_col)
    if ws_enabled():
        out += _make("ws_persistent", [cfg for _, _, cfgs in ws.ws_candidates() for cfg in cfgs], "persistent",
                     a_col, b_col)
        out += _make("ws_pingpong", pingpong.CONFIGS, "persistent", a_col, b_col)
        # not ws_cluster: on the H200, sharing A it runs 0-5% behind ws_persistent on every issue shape, and its
        # narrow 128x64 tiles ~4% behind tma_persistent's 64x128 ones at M = 128; sharing B (cuBLAS's own
        # layout on these shapes) it beat ws_persistent's best on 2 of 16 (shape, dtype) cells, by 0.2%, and
        # trailed on the rest by up to 2.7% (2026-12-02), so it would only lengthen tuning (docs/utlx.md)
    if shape is not None and is_skinny(*shape):
        out += (_make("tma_persistent", SKINNY_TILE_CONFIGS, "tiles", a_col, b_col)
                + _make("tma_splitk", splitk.CONFIGS, "tiles", a_col, b_col))
    seen: set[str] = set()
    kept = []
    for cand in out:
        smem = cand.smem_bytes(elem_bytes)
        if cand.id in seen or (smem is not None and smem > smem_limit):
            continue
        seen.add(cand.id)
        kept.append(cand)
    return kept


def for_problem(cands: Sequence[Candidate], M: int, N: int, num_sms: int, K: int | None = None) -> list[Candidate]:
    """Drop candidates that would launch exactly what an earlier one launches (e.g. a persistent grid
    with fewer tiles than SMs is the one-program-per-tile grid), stream-K candidates where the tiles fill
    whole rounds or not even one (:func:`utlx.kernels.nvidia.hopper_tma_streamk.useful`: there it is the persistent
    kernel), and, given ``K``, split-K candidates that cannot pay on this problem
    (:func:`utlx.kernels.nvidia.hopper_tma_splitk.useful`)."""
    seen: set[tuple] = set()
    out = []
    for cand in cands:
        if cand.family == "tma_splitk" and K is not None and not splitk.useful(M, N, K, cand.config, num_sms):
            continue
        if cand.family == "tma_streamk" and not streamk.useful(M, N, cand.config, num_sms):
            continue
        key = cand.launch_key(M, N, num_sms)
        if key not in seen:
            seen.add(key)
            out.append(cand)
    return out


# --------------------------------------------------------------------------------------------------
# Disk cache


def default_cache_path() -> Path | None:
    """``$UTLX_MATMUL_CACHE`` (a file; ``0``/``off`` disables), else ``$UTLX_CACHE_DIR``,
    ``$XDG_CACHE_HOME/utlx`` or ``~/.cache/utlx``, file ``matmul-tuning.json``."""
    chosen = settings.matmul_cache
    if chosen is not None:
        return None if chosen == OFF else Path(chosen).expanduser()
    return Path(settings.cache_dir) / "matmul-tuning.json"


# --------------------------------------------------------------------------------------------------
# Device side


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "hopper" | "nvidia" | "amd"
    name: str
    num_sms: int


@functools.cache
def _device_info_by_index(index: int) -> DeviceInfo:
    import torch

    props = torch.cuda.get_device_properties(index)
    if getattr(torch.version, "hip", None):
        kind = "amd"
    else:
        kind = "hopper" if props.major == 9 else "nvidia"
    return DeviceInfo(kind, props.name, props.multi_processor_count)


def _device_info(device: Any) -> DeviceInfo:
    index = device.index
    if index is None:
        import torch

        index = torch.cuda.current_device()
    return _device_info_by_index(index)


def _aligned(t: Any) -> bool:
    """``t`` (row- or column-major) can be addressed by a TMA descriptor / 16-byte cp.async copies."""
    return tma_ready(tuple(t.stride()), t.data_ptr(), t.element_size())


def reference_check(a: Any, b: Any, c: Any, ref: Any) -> Callable[[Candidate, Launcher], str | None]:
    """A ``check(cand, run)`` that runs ``run`` into ``c`` (pre-filled with NaN) and compares with ``ref``."""
    import torch

    ref32 = ref.float()
    finite = bool(torch.isfinite(ref32).all().item())
    scale = ref32.abs().max().item() if finite and ref32.numel() else 0.0
    tol = 2e-2 * scale + 1e-2

    def check(cand: Candidate, run: Launcher) -> str | None:
        c.fill_(float("nan"))
        run(a, b, c)
        torch.cuda.synchronize()
        if not finite:  # inputs with inf/nan: nothing sound to compare against
            return None
        err = (c.float() - ref32).abs().max().item()
        if not math.isfinite(err) or err > tol:
            return f"{cand.id}: max abs error {err:.3g} > {tol:.3g} (reference max {scale:.3g})"
        return None

    return check


#: Ready launches by exact problem (see :func:`plan_key`); bounded, oldest dropped first.
_PLANS: dict[tuple, Any] = {}
_PLANS_CAPACITY = 1024
#: Tuning reports by :func:`_problem_key` (shape, dtype, layout, alignment: what the choice depends on).
_REPORTS: dict[tuple, TuneReport] = {}
_LOCK = threading.RLock()
#: tritonx's active-pipelines key function (resolved on the first miss; a compiled kernel is only valid
#: under the pipelines it was compiled with, so the plan key includes it).
_active_key: Callable[[], str] = lambda: ""


def _problem_key(a: Any, b: Any) -> tuple:
    """What a tuning choice depends on: device, dtype, M, N, K, operand layouts and TMA alignment."""
    M, K = a.shape
    N = b.shape[1]
    aligned = _aligned(a) and _aligned(b) and (N * a.element_size()) % 16 == 0
    return (a.device.index, a.dtype, M, N, K, layout(tuple(a.stride())), layout(tuple(b.stride())), aligned)


def plan_key(a: Any, b: Any) -> tuple:
    """The hot-path key: everything a ready launch was specialized for, read straight off the tensors.

    Shapes, strides, dtypes and devices of both operands, 16-byte alignment of both data pointers, and
    the active tritonx pipelines. Anything :func:`matmul` validates is in it, so a hit needs no checks.
    """
    pa, pb = a.data_ptr(), b.data_ptr()
    return (a.shape, b.shape, a.stride(), b.stride(), a.dtype, b.dtype, a.device, b.device, not pa & 15,
            not pb & 15, _active_key())


#: select_best's timing effort: "full" (the defaults, what the H200 runs showed is needed to pick within
#: ~1%) and "quick" (a third of the timing, for benchmark sweeps that reuse nothing).
EFFORT = {"full": {}, "quick": {"screen_rep_ms": 10.0, "final_rep_ms": 25.0, "top_k": 3, "rounds": 2}}


def tune(a: Any, b: Any, c: Any | None = None, *, force: bool = False, budget_s: float | None = None,
         use_disk_cache: bool = True, cache: TuningCache | None = None, effort: str = "full") -> TuneReport:
    """Choose (and remember) the kernel :func:`matmul` runs for inputs like ``a`` and ``b``.

    ``force``: tune even when a choice is already cached in memory or on disk. ``budget_s``: stop
    tuning after about this many seconds (default ``$UTLX_MATMUL_TUNE_BUDGET_S`` or 120). ``effort``:
    a key of :data:`EFFORT`.
    """
    if effort not in EFFORT:
        raise ValueError(f"utlx.matmul.tune: effort must be one of {sorted(EFFORT)}, got {effort!r}")
    check_budget(budget_s)
    import torch
    from triton.testing import do_bench

    from utlx.plugin import ensure_active

    ensure_active()  # the candidates are TLX kernels
    key = _problem_key(a, b)
    M, K = a.shape
    N = b.shape[1]
    if c is None:
        c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    elif tuple(c.shape) != (M, N) or c.stride() != (N, 1):
        raise ValueError(f"utlx.matmul.tune: c must be a contiguous {M}x{N} tensor, got shape {tuple(c.shape)} "
                         f"and strides {c.stride()}")
    info = _device_info(a.device)
    a_layout, b_layout, aligned = key[-3:]
    if "strided" in (a_layout, b_layout):
        aligned = False  # only the register-staged kernel takes arbitrary strides
    a_col, b_col = a_layout == "col", b_layout == "col"
    with _LOCK:
        if not force and key in _REPORTS:
            return _REPORTS[key]
        space = candidates(info.kind, aligned, a.element_size(), a_col=a_col, b_col=b_col, shape=(M, N, K))
        cands = for_problem(space, M, N, info.num_sms, K)
        cache = cache if cache is not None else TuningCache(default_cache_path() if use_disk_cache else None)
        disk_key = TuningCache.key(info.name, _dtype_tag(a.dtype, a_layout, b_layout), aligned, M, N, K)
        if not force:
            cached_id = cache.get(disk_key)
            hit = next((cand for cand in space if cand.id == cached_id), None)
            if hit is not None:
                report = TuneReport(hit, [CandidateResult(hit.id, "ok", "from the disk cache")], "disk-cache")
                _REPORTS[key] = report
                return report

        if _capturing():
            raise RuntimeError(f"utlx.matmul: {M}x{N}x{K} {a.dtype} is not tuned yet, and tuning cannot run while a "
                               f"CUDA graph is being captured; call utlx.matmul once on these shapes before capturing")
        if budget_s is None:
            budget_s = settings.matmul_tune_budget_s
        ref = torch.matmul(a, b)
        launchers: dict[str, Launcher] = {}
        problem = Problem.of(a, b, info.num_sms)

        def launcher(cand: Candidate) -> Launcher:
            if cand.id not in launchers:
                launchers[cand.id] = cand.bind(problem)
            return launchers[cand.id]

        checker = reference_check(a, b, c, ref)

        def check(cand: Candidate) -> str | None:
            return checker(cand, launcher(cand))

        def timer(cand: Candidate, rep_ms: float) -> float:
            run = launcher(cand)
            return do_bench(lambda: run(a, b, c), warmup=max(5.0, rep_ms / 3), rep=rep_ms, return_mode="median")

        report = select_best(cands, check, timer, budget_s=budget_s, **EFFORT[effort])
        if report.winner is None:  # every fast candidate failed: the portable kernel
            fb = [cand for cand in fallback_candidates(info.kind) if cand.id not in {x.id for x in cands}]
            if fb:
                more = select_best(fb, check, timer, budget_s=budget_s, **EFFORT[effort])
                report = TuneReport(more.winner, report.results + more.results, "tuned",
                                    report.elapsed_s + more.elapsed_s, partial=report.partial or more.partial)
        if report.winner is None:
            lines = [f"  {r.id}: {r.status}: {r.detail}" for r in report.results]
            raise RuntimeError(f"utlx.matmul: no kernel ran correctly for {M}x{N}x{K} {a.dtype} on {info.name}:\n"
                               + "\n".join(lines))
        _REPORTS[key] = report
        cache.put(disk_key, report.winner.id, partial=report.partial, ms=report.winner_ms, shape=[M, N, K],
                  time=time.strftime("%Y-%m-%dT%H:%M:%S"))
        del ref
        return report


def tuning_candidates(a: Any, b: Any) -> list[Candidate]:
    """The candidates :func:`tune` would try for inputs like ``a`` and ``b`` (after deduplication)."""
    a_layout, b_layout, aligned = _problem_key(a, b)[-3:]
    info = _device_info(a.device)
    aligned = aligned and "strided" not in (a_layout, b_layout)
    M, K = a.shape
    N = b.shape[1]
    space = candidates(info.kind, aligned, a.element_size(), a_col=a_layout == "col", b_col=b_layout == "col",
                       shape=(M, N, K))
    return for_problem(space, M, N, info.num_sms, K)


def precompile(a: Any, b: Any, cands: Sequence[Candidate] | None = None) -> list[str]:
    """Compile, without launching, every kernel :func:`tune` would try for inputs like ``a`` and ``b``.

    Why: compiling ~20 candidates dominates a first tuning; run this in parallel worker processes (they
    share Triton's on-disk cache) and tuning afterwards only loads and times. Returns the failures as
    text (a failing candidate is reported again, with its reason, when it is tuned).
    """
    import torch

    from utlx.plugin import ensure_active

    ensure_active()
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
    problem = Problem.of(a, b, _device_info(a.device).num_sms)
    errors = []
    for cand in cands if cands is not None else tuning_candidates(a, b):
        try:
            cand.bind(problem).compile(a, b, c)
        except Exception as exc:  # reported, not raised: tuning records it per candidate
            errors.append(f"{cand.id}: {type(exc).__name__}: {exc}"[:300])
    return errors


def select(a: Any, b: Any, c: Any) -> Candidate:
    """The chosen candidate for this problem (tuned on first use, then cached)."""
    winner = tune(a, b, c).winner
    assert winner is not None  # tune raises otherwise
    return winner


def _capturing() -> bool:
    """A CUDA graph is being captured on the current stream (tuning syncs and times: not allowed then)."""
    import torch

    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _device_guard(device: Any) -> Any:
    """Make ``device`` current while a plan is made (compiles and handles belong to one device)."""

    import torch

    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


def _dtype_tag(dtype: Any, a_layout: str, b_layout: str) -> str:
    """The disk cache's dtype field: the dtype, plus the operand layouts when not both row-major."""
    tag = str(dtype).replace("torch.", "")
    return tag if (a_layout, b_layout) == ("row", "row") else f"{tag}|a:{a_layout}|b:{b_layout}"


def _validate(a: Any, b: Any) -> None:
    """Raise a clear error for inputs :func:`matmul` does not take (the hot path never sees them)."""
    import torch

    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"utlx.matmul: expected two torch tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"utlx.matmul: expected 2-D tensors, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"utlx.matmul: inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"utlx.matmul: expected two fp16 or two bf16 tensors, got {a.dtype} and {b.dtype}")
    if a.device != b.device or not (a.is_cuda or _interpreted(a)):
        raise ValueError(f"utlx.matmul: both tensors must be on the same GPU, got {a.device} and {b.device} "
                         "(CPU tensors only under TRITON_INTERPRET=1)")


def _interpreted(t: Any) -> bool:
    """A CPU tensor under ``TRITON_INTERPRET=1``: :class:`_InterpretedPlan` multiplies it."""
    return t.device.type == "cpu" and compat.interpreting()


def needs_copy(t: Any, contiguous_row_stride: int, kind: str) -> bool:
    """Whether an operand is copied to row-major before the launch.

    Yes when it is neither row- nor column-major (only the slow register-staged kernel takes arbitrary
    strides), and on Hopper when it cannot be addressed by TMA as it is but its contiguous copy could
    (e.g. a column-major view with an odd leading dimension): the copy is one memory pass, the TMA
    kernels are ~4x faster than the register-staged one. Row- and column-major views are never copied
    when they can be used directly.
    """
    strides = tuple(t.stride())
    if layout(strides) == "strided":
        return True
    es = t.element_size()
    return kind == "hopper" and not tma_ready(strides, t.data_ptr(), es) and (contiguous_row_stride * es) % 16 == 0


class _FixedPlan:
    """The plan of a problem with nothing to multiply (M, N or K is 0)."""

    def __init__(self, M: int, N: int, dtype: Any, device: Any, zero: bool) -> None:
        self.M, self.N, self.dtype, self.device, self.zero = M, N, dtype, device, zero

    def matmul(self, a: Any, b: Any, pa: int, pb: int) -> Any:
        import torch

        make = torch.zeros if self.zero else torch.empty
        return make(self.M, self.N, dtype=self.dtype, device=self.device)


class _CopyPlan:
    """A plan that first copies the operands :func:`needs_copy` names to row-major."""

    def __init__(self, inner: GemmLaunch, copy_a: bool, copy_b: bool) -> None:
        self.inner, self.copy_a, self.copy_b = inner, copy_a, copy_b

    def matmul(self, a: Any, b: Any, pa: int, pb: int) -> Any:
        if self.copy_a:
            a = a.contiguous()
            pa = a.data_ptr()
        if self.copy_b:
            b = b.contiguous()
            pb = b.data_ptr()
        return self.inner.matmul(a, b, pa, pb)


class _InterpretedPlan:
    """CPU tensors under ``TRITON_INTERPRET=1``: utlx's portable (register-staged) GEMM in Triton's interpreter.

    Slow (the interpreter runs numpy per program): for tests and debugging. Nothing to tune on a CPU, so the
    smallest tile of the portable kernel, bound once to this exact problem like any other plan. The same
    plan serves ``utlx.matmul`` and the custom op ``torch.ops.utlx.matmul`` (whose implementation calls it).
    """

    def __init__(self, a: Any, b: Any) -> None:
        self.copy_a, self.copy_b = a.stride(1) != 1, b.stride(1) != 1
        a = a.contiguous() if self.copy_a else a
        b = b.contiguous() if self.copy_b else b
        self.shape = (a.shape[0], b.shape[1])
        smallest = min(fallback_candidates("nvidia"), key=lambda cand: cand.config["BLOCK_SIZE_M"])
        self.launch = smallest.bind(Problem.of(a, b, num_sms=1))  # no device to ask for its SM count

    def matmul(self, a: Any, b: Any, pa: int, pb: int) -> Any:
        import torch

        a = a.contiguous() if self.copy_a else a
        b = b.contiguous() if self.copy_b else b
        c = torch.empty(self.shape, dtype=a.dtype)
        self.launch(a, b, c)
        return c


def _make_plan(a: Any, b: Any) -> Any:
    """Validate, tune (or find the tuning), bind the winner to this exact problem."""
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0 or K == 0:
        return _FixedPlan(M, N, a.dtype, a.device, zero=K == 0 and M > 0 and N > 0)
    if _interpreted(a):
        return _InterpretedPlan(a, b)
    info = _device_info(a.device)
    copy_a, copy_b = needs_copy(a, K, info.kind), needs_copy(b, N, info.kind)
    a2 = a.contiguous() if copy_a else a
    b2 = b.contiguous() if copy_b else b
    report = tune(a2, b2)
    assert report.winner is not None  # tune raises otherwise
    launch = report.winner.bind(Problem.of(a2, b2, info.num_sms))
    return _CopyPlan(launch, copy_a, copy_b) if copy_a or copy_b else launch


def _is_compiling() -> bool:
    """``torch.compiler.is_compiling()``, resolved on first use (about 0.2 us per eager call)."""
    global _is_compiling
    import torch

    _is_compiling = torch.compiler.is_compiling
    return _is_compiling()


def _torch_ops_matmul() -> Any:
    import torch

    return torch.ops.utlx.matmul


def _matmul_miss(a: Any, b: Any) -> Any:
    """First call for this exact problem: validate, activate utlx, make and remember the plan, run it."""
    global _active_key
    from utlx.plugin import ensure_active

    _validate(a, b)
    ensure_active()  # TLX kernels need the utlx lowering in Triton's pipeline
    _active_key = _pipelines_key_fn()
    key = plan_key(a, b)
    with _LOCK, _device_guard(a.device):
        plan = _PLANS.get(key)
        if plan is None:
            plan = _make_plan(a, b)
            while len(_PLANS) >= _PLANS_CAPACITY:
                del _PLANS[next(iter(_PLANS))]
            _PLANS[key] = plan
        return plan.matmul(a, b, a.data_ptr(), b.data_ptr())


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for 2-D fp16/bf16 CUDA tensors with fp32 accumulation; returns a new row-major tensor.

    CPU tensors are taken under ``TRITON_INTERPRET=1`` (the portable GEMM in Triton's interpreter; slow).

    Row- and column-major operands (e.g. ``x @ w.T``) are used as they are. A call whose exact problem
    (shapes, strides, dtypes, devices, pointer alignment, active pipelines) was seen before costs one
    dictionary lookup, the output allocation and one kernel launch; no host sync. Under ``torch.compile``
    the call becomes the custom op ``torch.ops.utlx.matmul`` (:mod:`utlx.torch_ops`), so Dynamo captures it
    instead of tracing into the plan lookup and launcher.
    """
    if _is_compiling():
        from utlx import torch_ops  # noqa: F401  (importing registers torch.ops.utlx.*)

        return _torch_ops_matmul()(a, b)
    try:
        pa, pb = a.data_ptr(), b.data_ptr()
        plan = _PLANS[(a.shape, b.shape, a.stride(), b.stride(), a.dtype, b.dtype, a.device, b.device, not pa & 15,
                       not pb & 15, _active_key())]
    except (KeyError, AttributeError, TypeError):
        return _matmul_miss(a, b)
    return plan.matmul(a, b, pa, pb)


def report_for(a: Any, b: Any) -> TuneReport | None:
    """The tuning report behind :func:`matmul`'s choice for inputs like these (None: not tuned yet)."""
    return _REPORTS.get(_problem_key(a, b))


# utlx.torch_ops' custom op calls these (it looks them up instead of importing this module, which imports it)
eager.register("matmul", matmul)
