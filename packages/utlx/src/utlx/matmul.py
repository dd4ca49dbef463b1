"""``utlx.matmul(a, b)``: pick the best utlx GEMM kernel and configuration for a shape, run it.

Why our own small autotuner: the choice is between *kernels* (TMA persistent, cp.async+wgmma ring,
register-staged ring), their configurations and their grids, and some candidates are only legal for
some inputs (TMA and cp.async need 16-byte aligned rows). A first H200 run showed what a naive tuner
gets wrong: 5 ms of timing per candidate picked a kernel 30% slower than the best one. So:

* every candidate is compiled and checked against a cuBLAS/rocBLAS reference *before* anything is
  timed (a compile error or a wrong result discards it, with the reason kept in the report);
* survivors are screened with ``do_bench`` (median), then the few fastest are re-timed in several
  interleaved rounds (median of medians), so clock drift hits all finalists alike;
* the winner is cached in-process per exact problem and on disk per (device name, Triton version,
  utlx version, dtype, alignment, shape class) so a later process does not tune again;
* the hot path (cache hit) does only what the launch needs: the per-shape launcher is built once.

The selection (:func:`select_best`) and the disk cache (:class:`TuningCache`) take plain callables
and paths, so their logic is tested on the CPU with mock timings.
"""

from __future__ import annotations

import functools
import json
import math
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import triton

from utlx import compat
from utlx.__about__ import __version__
from utlx.kernels import amd_pipelined, hopper_pipelined
from utlx.kernels import hopper_tma_persistent as tma
from utlx.kernels import hopper_ws_persistent as ws

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


# --------------------------------------------------------------------------------------------------
# Candidates


@dataclass(frozen=True)
class Candidate:
    """One kernel family plus one configuration (constexprs, num_warps) and grid mode."""

    family: str  # "tma_persistent" | "ws_persistent" | "hopper_pipelined" | "register_staged"
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
        """Stable text id (what the disk cache stores): family, grid, tile, stages, group, warps."""
        c = self.config
        return (f"{self.family}/{self.grid_mode}/{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}x{c['BLOCK_SIZE_K']}"
                f"/s{c['NUM_STAGES']}/g{c['GROUP_SIZE_M']}/w{self.num_warps}")

    def smem_bytes(self, elem_bytes: int = 2) -> int | None:
        """Shared memory per block when it is known before compiling (None: not estimated)."""
        c = self.config
        if self.family == "tma_persistent":
            return tma.smem_bytes(c, elem_bytes)
        if self.family == "ws_persistent":
            return ws.smem_bytes(c, elem_bytes)
        if self.family == "hopper_pipelined":
            return c["NUM_STAGES"] * (c["BLOCK_SIZE_M"] + c["BLOCK_SIZE_N"]) * c["BLOCK_SIZE_K"] * elem_bytes
        return None

    def launch_key(self, M: int, N: int, num_sms: int) -> tuple:
        """Two candidates with the same launch key run the very same compiled kernel on the same grid."""
        if self.family == "tma_persistent":
            return (self.family, self.constexprs, self.num_warps, tma.grid_for(M, N, self.config, num_sms,
                                                                                self.grid_mode))
        return (self.family, self.constexprs, self.num_warps)

    def bind(self, M: int, N: int, K: int, num_sms: int) -> Launcher:
        """A ``run(a, b, c)`` for this problem size with the grid and arguments computed once."""
        if self.family == "tma_persistent":
            return tma.make_launcher(M, N, (self.config, self.num_warps), num_sms, self.grid_mode)
        if self.family == "ws_persistent":
            return ws.make_launcher(M, N, (self.config, self.num_warps), num_sms)
        kernel_fn = {"hopper_pipelined": hopper_pipelined.matmul_kernel_pipelined_hopper,
                     "register_staged": amd_pipelined.matmul_kernel_pipelined_amd}[self.family]
        const = self.config
        grid = (triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"]),)
        kernel = compat.FastLaunch(kernel_fn, grid, const, self.num_warps)

        def run(a: Any, b: Any, c: Any) -> None:
            kernel(a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

        return run

    def launch(self, a: Any, b: Any, c: Any) -> None:
        """Run once on these tensors (builds the launcher; :func:`matmul` caches it instead)."""
        self.bind(a.shape[0], b.shape[1], a.shape[1], _device_info(a.device).num_sms)(a, b, c)


def _make(family: str, configs: Sequence[tuple[dict[str, int], int]], grid_mode: str = "tiles") -> list[Candidate]:
    return [Candidate(family, tuple(sorted(const.items())), nw, grid_mode) for const, nw in configs]


def fallback_candidates(kind: str) -> list[Candidate]:
    """The register-staged kernel: legal for any alignment on any GPU utlx supports."""
    configs = amd_pipelined.CONFIGS if kind == "amd" else REGISTER_STAGED_NVIDIA
    return _make("register_staged", configs)


def ws_enabled() -> bool:
    """The warp-specialized kernel is a candidate unless ``UTLX_MATMUL_WS=0``."""
    import os

    return os.environ.get("UTLX_MATMUL_WS", "1").strip() not in ("0", "")


def candidates(kind: str, aligned: bool, elem_bytes: int = 2, smem_limit: int = SMEM_LIMIT) -> list[Candidate]:
    """Candidates for a device kind ("hopper", "nvidia", "amd") and input alignment, best guesses first.

    Hopper with 16-byte aligned rows gets the TMA kernel (persistent and one-program-per-tile grids) and
    the cp.async ring, minus configurations whose shared memory exceeds ``smem_limit``; everything else
    gets the register-staged kernel.
    """
    if kind != "hopper" or not aligned:
        return fallback_candidates(kind)
    out = (_make("tma_persistent", tma.CONFIGS, "persistent") + _make("tma_persistent", tma.TILE_CONFIGS, "tiles")
           + _make("hopper_pipelined", list(hopper_pipelined.CONFIGS) + PIPELINED_EXTRA))
    if ws_enabled():
        out += _make("ws_persistent", [cfg for _, _, cfgs in ws.ws_candidates() for cfg in cfgs], "persistent")
    seen: set[str] = set()
    kept = []
    for cand in out:
        smem = cand.smem_bytes(elem_bytes)
        if cand.id in seen or (smem is not None and smem > smem_limit):
            continue
        seen.add(cand.id)
        kept.append(cand)
    return kept


def for_problem(cands: Sequence[Candidate], M: int, N: int, num_sms: int) -> list[Candidate]:
    """Drop candidates that would launch exactly what an earlier one launches (e.g. a persistent grid
    with fewer tiles than SMs is the one-program-per-tile grid)."""
    seen: set[tuple] = set()
    out = []
    for cand in cands:
        key = cand.launch_key(M, N, num_sms)
        if key not in seen:
            seen.add(key)
            out.append(cand)
    return out


# --------------------------------------------------------------------------------------------------
# Selection (pure logic: the checks and timers are callables)


@dataclass
class CandidateResult:
    """What tuning learnt about one candidate."""

    id: str
    status: str = "pending"  # ok | compile-error | wrong-result | timing-error | skipped
    detail: str = ""
    screen_ms: float | None = None
    final_ms: list[float] = field(default_factory=list)

    @property
    def ms(self) -> float | None:
        """Best estimate: the median of the final rounds, else the screening time."""
        if self.final_ms:
            return statistics.median(self.final_ms)
        return self.screen_ms

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "detail": self.detail, "screen_ms": self.screen_ms,
                "final_ms": self.final_ms, "ms": self.ms}


@dataclass
class TuneReport:
    """The outcome of choosing a kernel for one problem."""

    winner: Candidate | None
    results: list[CandidateResult]
    source: str  # "tuned" | "disk-cache"
    elapsed_s: float = 0.0

    @property
    def winner_ms(self) -> float | None:
        if self.winner is None:
            return None
        return next((r.ms for r in self.results if r.id == self.winner.id), None)

    def to_dict(self) -> dict[str, Any]:
        return {"winner": self.winner.id if self.winner else None, "winner_ms": self.winner_ms,
                "source": self.source, "elapsed_s": round(self.elapsed_s, 3),
                "candidates": [r.to_dict() for r in self.results]}


def select_best(cands: Sequence[Candidate], check: Callable[[Candidate], str | None],
                timer: Callable[[Candidate, float], float], *, screen_rep_ms: float = 25.0,
                final_rep_ms: float = 60.0, top_k: int = 4, within: float = 0.03, rounds: int = 3,
                budget_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> TuneReport:
    """Choose the fastest correct candidate.

    1. ``check(cand)`` for every candidate first (compiles it; returns an error text for a wrong result,
       raises for a compile/launch failure): nothing is timed while compiles are still happening.
    2. ``timer(cand, rep_ms)`` once per survivor (screening).
    3. The ``top_k`` fastest, plus any within ``within`` of the best, are timed ``rounds`` more times in
       rotating order; the winner has the lowest median of those.
    Past ``budget_s`` the remaining steps are skipped (at least one candidate is always checked and,
    when several pass, the winner is the best measured so far).
    """
    start = clock()
    over = (lambda: clock() - start > budget_s) if budget_s is not None else (lambda: False)
    results = {c.id: CandidateResult(c.id) for c in cands}
    ok: list[Candidate] = []
    for cand in cands:
        res = results[cand.id]
        if ok and over():
            res.status, res.detail = "skipped", "tuning budget spent"
            continue
        try:
            err = check(cand)
        except Exception as exc:  # compile error, launch error, resource limits
            res.status, res.detail = "compile-error", f"{type(exc).__name__}: {exc}"[:500]
            continue
        if err:
            res.status, res.detail = "wrong-result", err[:500]
            continue
        res.status = "ok"
        ok.append(cand)

    timed: list[Candidate] = []
    if len(ok) > 1:
        for cand in ok:
            if timed and over():
                break
            try:
                results[cand.id].screen_ms = float(timer(cand, screen_rep_ms))
            except Exception as exc:
                results[cand.id].status, results[cand.id].detail = "timing-error", f"{type(exc).__name__}: {exc}"[:500]
                continue
            timed.append(cand)
        timed.sort(key=lambda c: results[c.id].screen_ms)
        if timed:
            best = results[timed[0].id].screen_ms
            finalists = [c for i, c in enumerate(timed) if i < top_k or results[c.id].screen_ms <= best * (1 + within)]
            if len(finalists) > 1:
                for r in range(rounds):
                    if over():
                        break
                    order = finalists[r % len(finalists):] + finalists[:r % len(finalists)]
                    for cand in order:
                        try:
                            results[cand.id].final_ms.append(float(timer(cand, final_rep_ms)))
                        except Exception as exc:  # keep its earlier numbers; it simply gets fewer samples
                            results[cand.id].detail = f"final round: {type(exc).__name__}: {exc}"[:500]
    elif ok:
        timed = ok

    def score(c: Candidate) -> float:
        ms = results[c.id].ms
        return ms if ms is not None and math.isfinite(ms) else math.inf

    winner = min(timed, key=score) if timed else (ok[0] if ok else None)
    return TuneReport(winner, [results[c.id] for c in cands], "tuned", clock() - start)


# --------------------------------------------------------------------------------------------------
# Disk cache


def shape_class(M: int, N: int, K: int) -> str:
    """Each dimension rounded up to a power of two: nearby shapes share a tuning."""
    return "x".join(str(1 << max(0, int(x) - 1).bit_length()) for x in (M, N, K))


def default_cache_path() -> Path | None:
    """``$UTLX_MATMUL_CACHE`` (a file; ``0``/``off`` disables), else ``$UTLX_CACHE_DIR``,
    ``$XDG_CACHE_HOME/utlx`` or ``~/.cache/utlx``, file ``matmul-tuning.json``."""
    env = os.environ.get("UTLX_MATMUL_CACHE")
    if env is not None:
        return None if env.strip().lower() in ("", "0", "off", "false", "no") else Path(env).expanduser()
    base = os.environ.get("UTLX_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = os.path.join(xdg, "utlx") if xdg else os.path.join(os.path.expanduser("~"), ".cache", "utlx")
    return Path(base) / "matmul-tuning.json"


class TuningCache:
    """Winners per (device name, Triton version, utlx version, dtype, alignment, shape class), as JSON.

    Unreadable or corrupt files are treated as empty and write errors are ignored: a cache must never
    make ``matmul`` fail. Writes merge with what is on disk and replace the file atomically.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path

    @staticmethod
    def key(device_name: str, dtype: str, aligned: bool, M: int, N: int, K: int) -> str:
        return (f"{device_name}|triton {triton.__version__}|utlx {__version__}|{dtype}|"
                f"{'aligned' if aligned else 'unaligned'}|{shape_class(M, N, K)}")

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> str | None:
        entry = self._read().get(key)
        if isinstance(entry, dict) and isinstance(entry.get("candidate"), str):
            return entry["candidate"]
        return None

    def put(self, key: str, candidate_id: str, **info: Any) -> None:
        if self.path is None:
            return
        data = self._read()
        data[key] = {"candidate": candidate_id, **info}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            os.replace(tmp, self.path)
        except OSError:
            pass


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
    return t.stride(1) == 1 and (t.stride(0) * t.element_size()) % 16 == 0 and t.data_ptr() % 16 == 0


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


_PLANS: dict[tuple, Launcher] = {}
_REPORTS: dict[tuple, TuneReport] = {}
_LOCK = threading.RLock()


def _problem_key(a: Any, b: Any) -> tuple:
    M, K = a.shape
    N = b.shape[1]
    aligned = _aligned(a) and _aligned(b) and (N * a.element_size()) % 16 == 0
    return (a.device.index, a.dtype, M, N, K, aligned)


def tune(a: Any, b: Any, c: Any | None = None, *, force: bool = False, budget_s: float | None = None,
         use_disk_cache: bool = True, cache: TuningCache | None = None) -> TuneReport:
    """Choose (and remember) the kernel :func:`matmul` runs for inputs like ``a`` and ``b``.

    ``force``: tune even when a choice is already cached in memory or on disk. ``budget_s``: stop
    tuning after about this many seconds (default ``$UTLX_MATMUL_TUNE_BUDGET_S`` or 120).
    """
    import torch
    from triton.testing import do_bench

    from utlx.plugin import ensure_active

    ensure_active()  # the candidates are TLX kernels
    key = _problem_key(a, b)
    M, K = a.shape
    N = b.shape[1]
    if c is None:
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    info = _device_info(a.device)
    aligned = key[-1]
    with _LOCK:
        if not force and key in _REPORTS:
            return _REPORTS[key]
        space = candidates(info.kind, aligned, a.element_size())
        cands = for_problem(space, M, N, info.num_sms)
        cache = cache if cache is not None else TuningCache(default_cache_path() if use_disk_cache else None)
        disk_key = TuningCache.key(info.name, str(a.dtype).replace("torch.", ""), aligned, M, N, K)
        if not force:
            cached_id = cache.get(disk_key)
            hit = next((cand for cand in space if cand.id == cached_id), None)
            if hit is not None:
                report = TuneReport(hit, [CandidateResult(hit.id, "ok", "from the disk cache")], "disk-cache")
                _PLANS[key] = hit.bind(M, N, K, info.num_sms)
                _REPORTS[key] = report
                return report

        if budget_s is None:
            budget_s = float(os.environ.get("UTLX_MATMUL_TUNE_BUDGET_S", "120"))
        ref = torch.matmul(a, b)
        launchers: dict[str, Launcher] = {}

        def launcher(cand: Candidate) -> Launcher:
            if cand.id not in launchers:
                launchers[cand.id] = cand.bind(M, N, K, info.num_sms)
            return launchers[cand.id]

        checker = reference_check(a, b, c, ref)

        def check(cand: Candidate) -> str | None:
            return checker(cand, launcher(cand))

        def timer(cand: Candidate, rep_ms: float) -> float:
            run = launcher(cand)
            return do_bench(lambda: run(a, b, c), warmup=max(5.0, rep_ms / 3), rep=rep_ms, return_mode="median")

        report = select_best(cands, check, timer, budget_s=budget_s)
        if report.winner is None:  # every fast candidate failed: the portable kernel
            fb = [cand for cand in fallback_candidates(info.kind) if cand.id not in {x.id for x in cands}]
            if fb:
                more = select_best(fb, check, timer, budget_s=budget_s)
                report = TuneReport(more.winner, report.results + more.results, "tuned",
                                    report.elapsed_s + more.elapsed_s)
        if report.winner is None:
            lines = [f"  {r.id}: {r.status}: {r.detail}" for r in report.results]
            raise RuntimeError(f"utlx.matmul: no kernel ran correctly for {M}x{N}x{K} {a.dtype} on {info.name}:\n"
                               + "\n".join(lines))
        _PLANS[key] = launcher(report.winner)
        _REPORTS[key] = report
        cache.put(disk_key, report.winner.id, ms=report.winner_ms, shape=[M, N, K],
                  time=time.strftime("%Y-%m-%dT%H:%M:%S"))
        del ref
        return report


def select(a: Any, b: Any, c: Any) -> Candidate:
    """The chosen candidate for this problem (tuned on first use, then cached)."""
    winner = tune(a, b, c).winner
    assert winner is not None  # tune raises otherwise
    return winner


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for 2-D fp16/bf16 CUDA/ROCm tensors with fp32 accumulation; returns a new tensor.

    Under ``torch.compile`` the call becomes the custom op ``torch.ops.utlx.matmul`` (see
    :mod:`utlx.torch_ops`), so Dynamo captures it instead of tracing into the tuner and launcher.
    """
    import torch

    if torch.compiler.is_compiling():
        from utlx import torch_ops  # noqa: F401  (importing registers torch.ops.utlx.*)

        return torch.ops.utlx.matmul(a, b)
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
    run = _PLANS.get(_problem_key(a, b))
    if run is None:
        tune(a, b, c)
        run = _PLANS[_problem_key(a, b)]
    run(a, b, c)
    return c


def report_for(a: Any, b: Any) -> TuneReport | None:
    """The tuning report behind :func:`matmul`'s choice for inputs like these (None: not tuned yet)."""
    return _REPORTS.get(_problem_key(a, b))


def selected(a: Any, b: Any) -> str:
    """Id of the kernel configuration :func:`matmul` uses for these inputs (for benchmarks/tests)."""
    winner = tune(a, b).winner
    return winner.id if winner is not None else "none"
