"""Flash-attention forward benchmark: torch SDPA vs Meta's Hopper TLX tutorials (on utlx or on Meta's build)
vs ``utlx.attention``.

    python tools/bench/attention.py [--n-ctx 1024 2048 4096 8192] [--dtype fp16 bf16] [--head-dim 128 64]
        [--causal both|yes|no] [--impl all|sdpa|meta-tutorial|utlx-attention ...] [--tlx utlx|meta]
        [--tutorials NAME ...] [--compare-meta [--alternate N]] [--out DIR] [--budget-s S] [--rounds R]
        [--rep-ms MS]
    python tools/bench/attention.py --join A.json B.json     # one table of two runs (e.g. utlx and Meta)

Issue 10's setting: B=4, H=32, D=128 (and 64), N_CTX 1024..8192, fp16 (and bf16), causal and not. Rows:

* ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention`` with torch's default backend (cuDNN
  attention on the H200 with torch 2.11);
* ``<tutorial>@utlx`` / ``@meta``: each Hopper FA tutorial of Meta's wheel, its ``attention(q, k, v,
  sm_scale)`` as it is (own autotuning), on the TLX named by ``--tlx``. The tutorials have no causal mode
  (causal cells say so). ``--tlx meta`` re-runs this script in a clean environment with Meta's
  triton-utlx (``tools/device/tlx_tutorial_tests.py --impl meta`` builds it: never both ``utlx`` packages
  on one ``sys.path``); ``--compare-meta`` does that after the utlx rows and joins the two. Two builds
  cannot share a process, so ``--alternate N`` runs them N times in turn (utlx here, Meta in its child,
  SDPA timed in both) and reports per tutorial the ratio of the medians and the SDPA-anchored ratio
  ``median(utlx / sdpa) / median(meta / sdpa)``, which cancels the GPU's drift between processes;
* ``utlx.attention``: when utlx has it (a note otherwise).

Method: per shape every implementation is prepared first (first call: compile + autotune, untimed) and
checked against a float32 reference (computed head by head: the full score matrix of N_CTX 8192 would
not fit); a wrong or failing implementation is recorded and skipped. Then ``--rounds`` rotating rounds of
``triton.testing.do_bench`` (plain loop: host cost included, ``median``); the number is the median over
rounds. TFLOPS = 4*B*H*N_CTX^2*D / time, halved for causal. Writes ``attention.json`` (``--tlx meta``:
``attention-meta.json``) to --out (default $TRITONX_BENCH_OUT, $OUT or bench-out); the table is printed last.
Runs with the device image (Python 3.12, torch 2.11, Triton 3.6) or a bundled Triton 3.8.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "packages/utlx/tests/tutorials"  # how Meta's tutorials are found and imported, shared
META_TUTORIALS = ("hopper_fa_ws_pipelined_pingpong_persistent", "hopper_fa_ws_pipelined_pingpong",
                  "hopper_fa_ws_pipelined", "hopper_fa_ws")
IMPL_GROUPS = ("sdpa", "meta-tutorial", "utlx-attention")
BATCH, HEADS = 4, 32
SM_SCALE_NUMERATOR = 1.3  # sm_scale = 1.3 / sqrt(D), as in the H200 reference measurements
ATOL = {"fp16": 1e-2, "bf16": 3e-2}  # vs float32; bf16 keeps 8 mantissa bits

#: (q, k, v, causal, sm_scale) -> output
AttnFn = Callable[[Any, Any, Any, bool, float], Any]


@dataclass(frozen=True)
class Shape:
    dtype: str
    n_ctx: int
    head_dim: int
    causal: bool
    batch: int = BATCH
    heads: int = HEADS

    @property
    def flops(self) -> float:
        return attention_flops(self.batch, self.heads, self.n_ctx, self.head_dim, self.causal)

    @property
    def label(self) -> str:
        return f"{self.dtype} D={self.head_dim} {'causal' if self.causal else 'non-causal'}"


@dataclass
class Impl:
    """One benchmarked implementation; ``unsupported(shape)`` gives the reason it has no number there."""

    name: str
    fn: AttnFn
    unsupported: Callable[[Shape], str | None] = lambda shape: None
    #: after the first call: what the implementation chose for these inputs (utlx.attention: its configuration)
    chose: Callable[[Any, bool], str | None] = lambda q, causal: None


def attention_flops(batch: int, heads: int, n_ctx: int, head_dim: int, causal: bool) -> float:
    """4*B*H*N^2*D: two GEMMs (QK^T and PV) of 2*N*N*D each per head; causal does half the work."""
    flops = 4.0 * batch * heads * n_ctx * n_ctx * head_dim
    return flops / 2 if causal else flops


def sm_scale_for(head_dim: int) -> float:
    return SM_SCALE_NUMERATOR / math.sqrt(head_dim)


def shapes_from_args(args: argparse.Namespace) -> list[Shape]:
    causal = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    return [Shape(dtype, n, d, c, args.batch, args.heads)
            for dtype in args.dtype for d in args.head_dim for c in causal for n in args.n_ctx]


def torch_dtype(name: str) -> Any:
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


# ---------------------------------------------------------------- implementations


def sdpa_impl() -> Impl:
    import torch

    def run(q, k, v, causal, sm_scale):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)

    return Impl("sdpa", run)


def _load(path: Path, name: str) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader, path
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def tutorials_dir() -> Path:
    mw = _load(ROOT / "packages/utlx/tests/meta_wheel.py", "meta_wheel")
    found = mw.tutorials_dir()
    if found is None:
        raise RuntimeError(mw.unavailable_reason())
    return found


def tutorial_impls(tlx: str, names: Sequence[str]) -> list[Impl]:
    """Meta's FA tutorials imported as they are, on the TLX ``tlx`` ('utlx' or 'meta')."""
    if str(HARNESS) not in sys.path:
        sys.path.insert(0, str(HARNESS))
    import tlx_tutorials_pytest
    import tutorial_package

    folder = tutorials_dir()
    tlx_tutorials_pytest.import_implementation(tlx, folder)
    tutorial_package.register(folder)
    impls = []
    for name in names:
        module = tutorial_package.load(name)

        def run(q, k, v, causal, sm_scale, module=module):
            return module.attention(q, k, v, sm_scale)

        impls.append(Impl(f"{name}@{tlx}", run,
                          lambda shape: "the tutorial has no causal mode" if shape.causal else None))
    return impls


def utlx_attention_impl() -> Impl | str:
    """``utlx.attention`` or, while it does not exist, the note saying so."""
    try:
        import utlx
    except ImportError as exc:
        return f"utlx is not importable: {exc}"
    fn = getattr(utlx, "attention", None)
    if fn is None:
        return "utlx.attention does not exist yet (issue 10)"
    import importlib

    api = importlib.import_module("utlx.attention")  # the module (``utlx.attention`` the attribute is the function)
    return Impl("utlx.attention", lambda q, k, v, causal, sm_scale: fn(q, k, v, causal=causal, sm_scale=sm_scale),
                chose=lambda q, causal: api.chosen(q, causal))


def build_impls(groups: Sequence[str], tlx: str, tutorials: Sequence[str]) -> tuple[list[Impl], dict[str, str]]:
    """The implementations asked for, and a note per one that could not be set up (the run goes on)."""
    impls: list[Impl] = []
    notes: dict[str, str] = {}
    if "sdpa" in groups:
        impls.append(sdpa_impl())
    if "meta-tutorial" in groups:
        try:
            impls += tutorial_impls(tlx, tutorials)
        except Exception as exc:
            traceback.print_exc()
            notes[f"tutorials@{tlx}"] = f"setup failed: {type(exc).__name__}: {exc}"[:300]
    if "utlx-attention" in groups:
        got = utlx_attention_impl()
        if isinstance(got, str):
            notes["utlx.attention"] = got
        else:
            impls.append(got)
    return impls, notes


# ---------------------------------------------------------------- measuring


def reference(q: Any, k: Any, v: Any, causal: bool, sm_scale: float, max_bytes: int = 1 << 30) -> Any:
    """softmax(QK^T * sm_scale) V in float32, a few heads at a time (bounded memory for N_CTX 8192+)."""
    import torch

    b, h, n, d = q.shape
    qf, kf, vf = (t.reshape(b * h, n, d) for t in (q, k, v))
    out = torch.empty((b * h, n, d), dtype=torch.float32, device=q.device)
    step = max(1, max_bytes // (n * n * 4))
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1) if causal else None
    for i in range(0, b * h, step):
        s = torch.matmul(qf[i:i + step].float(), kf[i:i + step].float().transpose(-1, -2)) * sm_scale
        if mask is not None:
            s.masked_fill_(mask, float("-inf"))
        out[i:i + step] = torch.matmul(torch.softmax(s, dim=-1), vf[i:i + step].float())
    return out.reshape(b, h, n, d)


def check(out: Any, ref: Any, dtype: str) -> tuple[str | None, float]:
    """(None or what is wrong, max abs error) of ``out`` against the float32 reference."""
    if tuple(out.shape) != tuple(ref.shape):
        return f"wrong shape {tuple(out.shape)}, want {tuple(ref.shape)}", math.inf
    err = (out.float() - ref).abs().max().item()
    if not math.isfinite(err) or err > ATOL[dtype]:
        return f"wrong result: max abs error {err:.3g} > {ATOL[dtype]} vs float32", err
    return None, err


def error_summary(exc: BaseException) -> str:
    """``Type: message``; for a CompilationError its last line (the cause), not the source excerpt above it."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    text = (lines[-1] if type(exc).__name__ == "CompilationError" else lines[0]) if lines else ""
    return f"{type(exc).__name__}: {text}"[:300]


def do_bench_median(fn: Callable[[], Any], rep_ms: float) -> float:
    """Triton's do_bench over back-to-back calls (no CUDA graph: host cost included), median in ms."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=max(5.0, rep_ms / 4), rep=rep_ms, return_mode="median"))


def make_inputs(shape: Shape, device: str, seed: int) -> tuple[Any, Any, Any]:
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    size = (shape.batch, shape.heads, shape.n_ctx, shape.head_dim)
    return tuple(torch.randn(size, generator=gen, device=device, dtype=torch_dtype(shape.dtype)) for _ in range(3))


def bench_shape(shape: Shape, impls: Sequence[Impl], *, timer: Callable[[Callable[[], Any], float], float],
                device: str, rounds: int, rep_ms: float, seed: int = 0) -> dict[str, Any]:
    """Prepare and check every implementation on one shape, then time those that are right, in rotating rounds."""
    q, k, v = make_inputs(shape, device, seed)
    sm_scale = sm_scale_for(shape.head_dim)
    ref = reference(q, k, v, shape.causal, sm_scale)
    row: dict[str, Any] = {**asdict(shape), "flops": shape.flops, "sm_scale": sm_scale, "impls": {}}
    ready: list[Impl] = []
    for impl in impls:
        cell: dict[str, Any] = {}
        row["impls"][impl.name] = cell
        note = impl.unsupported(shape)
        if note:
            cell["note"] = note
            continue
        t0 = time.monotonic()
        try:
            out = impl.fn(q, k, v, shape.causal, sm_scale)  # first call: compile + autotune, untimed
            _sync(device)
            problem, err = check(out, ref, shape.dtype)
            cell["max_abs_error"] = err
            choice = impl.chose(q, shape.causal)
            if choice:
                cell["config"] = choice
        except Exception as exc:
            problem = error_summary(exc)
            traceback.print_exc()
        cell["prepare_s"] = round(time.monotonic() - t0, 2)
        if problem:
            cell["error"] = problem
        else:
            ready.append(impl)
    del ref
    samples: dict[str, list[float]] = {impl.name: [] for impl in ready}
    for r in range(rounds):
        for impl in ready[r % max(1, len(ready)):] + ready[:r % max(1, len(ready))]:
            try:
                samples[impl.name].append(timer(lambda impl=impl: impl.fn(q, k, v, shape.causal, sm_scale), rep_ms))
            except Exception as exc:
                row["impls"][impl.name]["error"] = f"timing: {type(exc).__name__}: {exc}"[:300]
    for name, ms_list in samples.items():
        cell = row["impls"][name]
        if ms_list and "error" not in cell:
            ms = statistics.median(ms_list)
            cell.update(ms=ms, tflops=shape.flops / (ms * 1e-3) / 1e12, round_ms=ms_list)
    return row


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def run(shapes: Sequence[Shape], impls: Sequence[Impl], *, timer: Callable[[Callable[[], Any], float], float],
        device: str, rounds: int, rep_ms: float, budget_s: float) -> list[dict[str, Any]]:
    """Every shape in order; a shape that would not fit the budget (at the longest one's time) is skipped."""
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    longest = 0.0
    for shape in shapes:
        elapsed = time.monotonic() - started
        if longest and elapsed + longest > budget_s:  # the first shape always runs
            why = f"budget: {elapsed:.0f} s of {budget_s:.0f} used, a shape took up to {longest:.0f} s"
            rows.append({**asdict(shape), "flops": shape.flops, "impls": {}, "skipped": why})
            continue
        t0 = time.monotonic()
        try:
            row = bench_shape(shape, impls, timer=timer, device=device, rounds=rounds, rep_ms=rep_ms)
        except Exception as exc:  # e.g. out of memory allocating the inputs
            traceback.print_exc()
            row = {**asdict(shape), "flops": shape.flops, "impls": {}, "error": f"{type(exc).__name__}: {exc}"[:300]}
        took = time.monotonic() - t0
        row["seconds"] = round(took, 1)
        longest = max(longest, took)
        rows.append(row)
        print(f"{shape.label} N_CTX={shape.n_ctx}: " + ", ".join(
            (f"{n} {c['tflops']:.0f}" if "tflops" in c else f"{n} -") + (f" ({c['config']})" if "config" in c else "")
            for n, c in row["impls"].items()), flush=True)
        if device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()
    return rows


# ---------------------------------------------------------------- reporting


def merge(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of several runs joined per shape (implementation names differ: ``...@utlx`` vs ``...@meta``)."""
    merged: dict[tuple, dict[str, Any]] = {}
    for res in results:
        for row in res.get("rows", []):
            key = (row["dtype"], row["head_dim"], row["causal"], row["n_ctx"], row.get("batch"), row.get("heads"))
            into = merged.setdefault(key, {k: v for k, v in row.items() if k != "impls"} | {"impls": {}})
            into["impls"].update(row.get("impls", {}))
    return list(merged.values())


def format_table(rows: Sequence[dict[str, Any]], notes: dict[str, str] | None = None) -> str:
    """One block per (dtype, D, causal): TFLOPS per implementation and N_CTX; '-' with the reason below."""
    lines: list[str] = []
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["dtype"], row["head_dim"], row["causal"]), []).append(row)
    for (dtype, d, causal), group in groups.items():
        group = sorted(group, key=lambda r: r["n_ctx"])
        names = list(dict.fromkeys(n for r in group for n in r["impls"]))
        b, h = group[0].get("batch", BATCH), group[0].get("heads", HEADS)
        lines.append(f"\nflash attention forward, {dtype}, B={b} H={h} D={d}, "
                     f"{'causal (half the FLOPs counted)' if causal else 'non-causal'}: TFLOPS")
        lines.append(f"{'implementation':<52}" + "".join(f"{r['n_ctx']:>9}" for r in group))
        reasons: list[str] = []
        for name in names:
            cells = []
            for r in group:
                cell = r["impls"].get(name, {})
                cells.append(f"{cell['tflops']:9.1f}" if "tflops" in cell else f"{'-':>9}")
                why = cell.get("error") or cell.get("note")
                if why and f"{name}: {why}" not in reasons:
                    reasons.append(f"{name}: {why}")
            lines.append(f"{name:<52}" + "".join(cells))
        for r in group:
            if r.get("skipped") or r.get("error"):
                reasons.append(f"N_CTX={r['n_ctx']}: {r.get('skipped') or r.get('error')}")
        lines += [f"  - {why}" for why in reasons]
        lines += _ratios(group)
    for name, note in (notes or {}).items():
        lines.append(f"note: {name}: {note}")
    return "\n".join(lines).lstrip("\n")


def _ratios(group: Sequence[dict[str, Any]]) -> list[str]:
    """utlx/meta per tutorial and utlx.attention/sdpa, where both have numbers."""
    out = []
    names = list(dict.fromkeys(n for r in group for n in r["impls"]))
    pairs = [(n, n.replace("@utlx", "@meta")) for n in names if n.endswith("@utlx")]
    pairs += [("utlx.attention", "sdpa")]
    for a, b in pairs:
        vals = []
        for r in group:
            ta, tb = r["impls"].get(a, {}).get("tflops"), r["impls"].get(b, {}).get("tflops")
            vals.append(f"{ta / tb:9.3f}" if ta and tb else f"{'':>9}")
        if any(v.strip() for v in vals):
            out.append(f"{'ratio ' + a + ' / ' + b:<52}" + "".join(vals))
    return out


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=str))


# ---------------------------------------------------------------- command line


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-ctx", nargs="+", type=int, default=[1024, 2048, 4096, 8192])
    ap.add_argument("--dtype", nargs="+", choices=("fp16", "bf16"), default=["fp16"])
    ap.add_argument("--head-dim", nargs="+", type=int, choices=(64, 128), default=[128])
    ap.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--heads", type=int, default=HEADS)
    ap.add_argument("--impl", nargs="+", choices=("all", *IMPL_GROUPS), default=["all"])
    ap.add_argument("--tlx", choices=("utlx", "meta"), default="utlx",
                    help="whose TLX runs the tutorials (meta: this script re-run in Meta's environment)")
    ap.add_argument("--tutorials", nargs="+", choices=META_TUTORIALS, default=list(META_TUTORIALS))
    ap.add_argument("--compare-meta", action="store_true",
                    help="then run the tutorial rows on Meta's triton-utlx (own process) and join the tables")
    ap.add_argument("--alternate", type=int, default=1, metavar="N",
                    help="with --compare-meta: N utlx/Meta turns, SDPA in both, anchored ratios (default 1)")
    ap.add_argument("--out", default=os.environ.get("TRITONX_BENCH_OUT") or os.environ.get("OUT") or "bench-out")
    ap.add_argument("--budget-s", type=float, default=420.0, help="whole-run time budget (default 420)")
    ap.add_argument("--rounds", type=int, default=3, help="rotating timing rounds per shape (default 3)")
    ap.add_argument("--rep-ms", type=float, default=100.0, help="do_bench rep per round, ms (default 100)")
    ap.add_argument("--join", nargs="+", metavar="JSON", help="print one table of earlier runs and exit")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = parser().parse_args(argv)
    args.groups = list(IMPL_GROUPS) if "all" in args.impl else list(dict.fromkeys(args.impl))
    if args.tlx == "meta" and ("meta-tutorial" not in args.groups
                               or not set(args.groups) <= {"meta-tutorial", "sdpa"}):
        parser().error("--tlx meta runs only the tutorial rows (and sdpa): add --impl meta-tutorial [sdpa]")
    if args.alternate > 1 and not args.compare_meta:
        parser().error("--alternate is for --compare-meta (turns between utlx and Meta's build)")
    if args.compare_meta and args.tlx == "meta":
        parser().error("--compare-meta is for the utlx run (it starts the Meta run itself)")
    return args


def in_meta_environment() -> bool:
    return os.environ.get("UTLX_TUTORIALS_IMPL") == "meta"


def meta_subprocess(args: argparse.Namespace, argv: Sequence[str], out: Path, scratch: Path | None = None,
                    with_sdpa: bool = False) -> int:
    """This script again, with ``--impl meta-tutorial --tlx meta``, in the environment of Meta's build
    (``scratch``: its private Triton cache, kept between turns of ``--alternate``)."""
    runner = _load(ROOT / "tools/device/tlx_tutorial_tests.py", "tlx_tutorial_tests")
    wheel = runner.meta_wheel().meta_wheel_dir()
    if wheel is None:
        print(f"attention.py: {runner.meta_wheel().unavailable_reason()}", file=sys.stderr)
        return 2
    keep = [a for a in argv if a not in ("--compare-meta",)]
    for option in ("--impl", "--tlx", "--out", "--alternate"):
        keep = _drop_option(keep, option)
    cmd = [sys.executable, str(Path(__file__).resolve()), *keep, "--impl", "meta-tutorial",
           *(["sdpa"] if with_sdpa else []), "--tlx", "meta", "--out", str(out)]
    print("$", " ".join(cmd), flush=True)
    if scratch is not None:
        return subprocess.call(cmd, env=runner.environment("meta", wheel, scratch))
    with tempfile.TemporaryDirectory(prefix="attention-meta-") as tmp:
        return subprocess.call(cmd, env=runner.environment("meta", wheel, Path(tmp)))


def _cells(run: dict[str, Any]) -> dict[tuple, dict[str, float]]:
    """(dtype, D, causal, N_CTX) -> {implementation: TFLOPS} of one run."""
    out: dict[tuple, dict[str, float]] = {}
    for row in run.get("rows", []):
        key = (row["dtype"], row["head_dim"], row["causal"], row["n_ctx"])
        out[key] = {n: c["tflops"] for n, c in row.get("impls", {}).items() if "tflops" in c}
    return out


def alternation_summary(utlx_runs: Sequence[dict[str, Any]], meta_runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per (shape, tutorial) over the turns: TFLOPS lists, ratio of medians, SDPA-anchored ratio."""
    u_cells, m_cells = [_cells(r) for r in utlx_runs], [_cells(r) for r in meta_runs]
    summary: dict[str, Any] = {}
    for key in sorted({k for c in u_cells for k in c}):
        for name in sorted({n for c in u_cells for n in c.get(key, {}) if n.endswith("@utlx")}):
            meta_name = name.replace("@utlx", "@meta")
            u = [c[key][name] for c in u_cells if name in c.get(key, {})]
            m = [c[key][meta_name] for c in m_cells if meta_name in c.get(key, {})]
            u_anch = [c[key][name] / c[key]["sdpa"] for c in u_cells if name in c.get(key, {}) and "sdpa" in c[key]]
            m_anch = [c[key][meta_name] / c[key]["sdpa"] for c in m_cells
                      if meta_name in c.get(key, {}) and "sdpa" in c[key]]
            if not (u and m):
                continue
            entry = {"utlx_tflops": u, "meta_tflops": m,
                     "ratio_of_medians": statistics.median(u) / statistics.median(m)}
            if u_anch and m_anch:
                entry["sdpa_anchored_ratio"] = statistics.median(u_anch) / statistics.median(m_anch)
            summary[f"{name.removesuffix('@utlx')} {key[0]} D={key[1]} {'causal' if key[2] else 'full'} "
                    f"N_CTX={key[3]}"] = entry
    return summary


def format_alternation(summary: dict[str, Any]) -> str:
    lines = ["utlx vs Meta over alternating turns (TFLOPS per turn; ratios of medians; SDPA-anchored):"]
    for label, e in summary.items():
        anch = e.get("sdpa_anchored_ratio")
        lines.append(f"  {label}: utlx {' '.join(f'{x:.0f}' for x in e['utlx_tflops'])} | meta "
                     f"{' '.join(f'{x:.0f}' for x in e['meta_tflops'])} | ratio {e['ratio_of_medians']:.3f}"
                     + (f" | anchored {anch:.3f}" if anch is not None else ""))
    return "\n".join(lines)


def _drop_option(argv: Sequence[str], option: str) -> list[str]:
    """argv without ``option`` and the values that follow it."""
    out, skipping = [], False
    for a in argv:
        if a == option or a.startswith(option + "="):
            skipping = a == option
            continue
        if skipping and not a.startswith("--"):
            continue
        skipping = False
        out.append(a)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    out = Path(args.out)
    if args.join:
        runs = [json.loads(Path(p).read_text()) for p in args.join]
        print(format_table(merge(runs), {k: v for r in runs for k, v in r.get("notes", {}).items()}))
        return 0
    if args.tlx == "meta" and not in_meta_environment():
        return meta_subprocess(args, argv, out)

    import torch

    if not torch.cuda.is_available():
        print("attention.py: no GPU; nothing to benchmark", file=sys.stderr)
        return 2
    impls, notes = build_impls(args.groups, args.tlx, args.tutorials)
    import triton

    def measure() -> dict[str, Any]:
        return {
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "python": platform.python_version(), "tlx": args.tlx, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "method": f"per shape: first call (compile/autotune) and float32 check, then {args.rounds} rotating "
                      f"rounds of do_bench(rep={args.rep_ms} ms, median, plain loop); TFLOPS from the median over "
                      f"rounds", "notes": notes,
            "rows": run(shapes_from_args(args), impls, timer=do_bench_median, device="cuda", rounds=args.rounds,
                        rep_ms=args.rep_ms, budget_s=args.budget_s)}

    results = measure()
    path = out / ("attention-meta.json" if args.tlx == "meta" else "attention.json")
    write_json(results, path)
    runs = [results]
    if args.compare_meta and args.alternate > 1:
        utlx_runs, meta_runs = [results], []
        with tempfile.TemporaryDirectory(prefix="attention-meta-") as scratch:
            for turn in range(args.alternate):
                if turn:
                    utlx_runs.append(measure())
                turn_out = out / f"meta-turn{turn}"
                if meta_subprocess(args, argv, turn_out, Path(scratch), with_sdpa=True) == 0:
                    meta_runs.append(json.loads((turn_out / "attention-meta.json").read_text()))
        summary = alternation_summary(utlx_runs, meta_runs)
        write_json({"utlx_runs": utlx_runs, "meta_runs": meta_runs, "summary": summary},
                   out / "attention-alternating.json")
        runs = [utlx_runs[-1], *meta_runs[-1:]]
        print(format_table(merge(runs), {k: v for r in runs for k, v in r.get("notes", {}).items()}))
        print(format_alternation(summary))
        return 0
    if args.compare_meta:
        meta_path = out / "attention-meta.json"
        if meta_subprocess(args, argv, out) == 0 and meta_path.is_file():
            runs.append(json.loads(meta_path.read_text()))
        else:
            notes["tutorials@meta"] = "the run on Meta's build failed (see its output above)"
    print(f"wrote {path}")
    print(format_table(merge(runs), {k: v for r in runs for k, v in r.get("notes", {}).items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
