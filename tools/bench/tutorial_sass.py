"""Compile one of Meta's Hopper FA tutorials for cuda:90 on the CPU, on utlx and on Meta's own build, and
compare what the two produce: ptxas resources, SASS, TTGIR.

    python tools/bench/tutorial_sass.py [--tutorials NAME ...] [--n-ctx 2048] [--head-dim 128] [--dtype fp16]
        [--batch 4] [--heads 32] [--out DIR]

Why: issue 10 wants Meta's tutorials, run unchanged on utlx, within 5% of the same tutorial on Meta's
``triton-utlx`` build. GPU timings of the two are noisy (a few %); if both builds hand ptxas the same
program, the SASS is the same and any measured gap is noise. This tool shows that, or shows exactly which
instructions differ, without a GPU.

How: one child process per build compiles the tutorial through its own host function ``attention(q, k, v,
sm_scale)`` on CPU tensors of the given shape, under the compile-only driver of the tutorial tests
(``packages/utlx/tests/tutorials/compile_only_gpu.py``: target cuda:90, launches recorded, not run, and
autotuning reduced to the first surviving config). The FA tutorials have exactly one autotune config, so
that is also the config Meta's autotuner runs on a GPU (the report says how many there were). The children's
environments are those of ``tools/device/tlx_tutorial_tests.py`` (``environment``): ``utlx`` keeps this
process's environment (run it with ``PYTHONPATH=packages/core/src:packages/utlx/src``), ``meta`` is the
current Triton plus Meta's unpacked wheel with its ``libutlx.so`` in ``TRITON_PLUGIN_PATHS``, nothing of the
repo. Each child uses a private Triton cache (so everything is compiled afresh) and ``TRITON_DUMP_PTXAS_LOG``
(ptxas's own ``-v`` report for that compile), and writes each launched kernel's TTGIR, PTX, cubin and
metadata to ``--out/artifacts/<tutorial>/<build>/``.

Then this process compares the two builds with the tools Triton ships (``triton.knobs.nvidia``: nvdisasm,
cuobjdump):

1. ptxas registers, spill stores/loads, stack; shared memory (Triton's metadata) and cuobjdump's resource
   usage of the cubin;
2. the SASS (``nvdisasm -c``), addresses stripped and label names unified, compared three ways: as is
   (registers kept), with register numbers masked, and as opcodes only; per view the instructions identical in
   order (``difflib``'s matching blocks, autojunk off) and its ratio; the opcode histogram difference; and the
   loops (backward branches): each loop's size and opcode histogram per build, paired in order, because an
   instruction that differs inside the hot loop matters and one in the prologue does not;
3. the TTGIR op histogram and the ratio of its normalised text (SSA names and locations stripped).

Writes ``tutorial-sass.json`` and ``tutorial-sass.md`` to --out (default $TRITONX_BENCH_OUT, $OUT or
bench-out). Exit 0 when both builds compiled every tutorial asked for (identical or not), 2 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BUILDS = ("meta", "utlx")
DEFAULT_TUTORIALS = ("hopper_fa_ws_pipelined_pingpong_persistent", "hopper_fa_ws_pipelined_pingpong")
STAGES = ("ttgir", "ptx", "cubin", "json")
REPORT = "tutorial-sass"


def _load(path: Path, name: str) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader, path
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def attention_bench() -> ModuleType:
    """``tools/bench/attention.py``: the tutorial names, the dtypes and sm_scale (stdlib-only at import)."""
    return _load(ROOT / "tools/bench/attention.py", "tritonx_bench_attention")


def tutorial_runner() -> ModuleType:
    """``tools/device/tlx_tutorial_tests.py``: Meta's wheel and the two builds' environments."""
    return _load(ROOT / "tools/device/tlx_tutorial_tests.py", "tlx_tutorial_tests")


# ---------------------------------------------------------------- the child: compile and dump


@dataclass(frozen=True)
class Shape:
    """The attention inputs the host function gets (CPU tensors; only their shape and dtype matter)."""

    batch: int
    heads: int
    n_ctx: int
    head_dim: int
    dtype: str

    def label(self) -> str:
        return f"{self.dtype} B={self.batch} H={self.heads} N_CTX={self.n_ctx} D={self.head_dim}"


def _autotune_configs(module: ModuleType) -> list[str]:
    """The configs of every autotuned kernel in the tutorial module (what its autotuner chooses from)."""
    from triton.runtime.autotuner import Autotuner

    return [str(c) for obj in vars(module).values() if isinstance(obj, Autotuner) for c in obj.configs]


def compile_tutorial(build: str, tutorial: str, shape: Shape, tutorials: Path, dest: Path) -> dict[str, Any]:
    """Run the tutorial's host function under the compile-only driver; dump every launched kernel to ``dest``.

    Runs in the child process of ``build`` (its environment decides whose TLX ``import_implementation`` finds).
    """
    import tlx_tutorials_pytest
    import torch
    import tutorial_package
    from compile_only_gpu import compile_only_gpu
    from triton.runtime.cache import get_cache_manager

    tlx_tutorials_pytest.import_implementation(build, tutorials)
    dtype = attention_bench().torch_dtype(shape.dtype)
    size = (shape.batch, shape.heads, shape.n_ctx, shape.head_dim)
    log = io.StringIO()
    t0 = time.monotonic()
    with compile_only_gpu() as gpu, tutorial_package.tutorials_package(tutorials), contextlib.redirect_stdout(log):
        module = tutorial_package.load(tutorial)
        q, k, v = (torch.empty(size, dtype=dtype) for _ in range(3))  # never read: launches are not run
        module.attention(q, k, v, attention_bench().sm_scale_for(shape.head_dim))
        configs = _autotune_configs(module)
    seconds = time.monotonic() - t0
    tlx = sys.modules.get(tutorial_package.PARENT)
    kernels = []
    dest.mkdir(parents=True, exist_ok=True)
    for launch in gpu.launches:
        cache = get_cache_manager(launch.metadata.hash)
        for ext in STAGES:
            found = cache.get_file(f"{launch.name}.{ext}")
            if found is None:
                raise FileNotFoundError(f"tutorial_sass: no {ext} of {launch.name} in Triton's cache")
            (dest / f"{launch.name}.{ext}").write_bytes(Path(found).read_bytes())
        kernels.append({"name": launch.name, "grid": launch.grid, "num_warps": launch.num_warps,
                        "shared": launch.shared, "constants": {str(k): v for k, v in launch.constants.items()}})
    (dest / "ptxas.log").write_text(log.getvalue())
    return {"build": build, "tutorial": tutorial, "tlx": str(getattr(tlx, "__file__", tlx)),
            "autotune_configs": configs, "compile_s": round(seconds, 2), "kernels": kernels}


def child_main(args: argparse.Namespace) -> int:
    """``--child BUILD``: compile ``--tutorials[0]`` and write ``compile.json`` next to the artifacts."""
    shape = Shape(args.batch, args.heads, args.n_ctx, args.head_dim, args.dtype)
    dest = Path(args.artifacts)
    result = compile_tutorial(args.child, args.tutorials[0], shape, Path(args.tutorials_dir), dest)
    (dest / "compile.json").write_text(json.dumps(result, indent=1, default=str))
    return 0


# ---------------------------------------------------------------- the parent: run the children


def compile_in_child(build: str, tutorial: str, shape: Shape, wheel: Path, dest: Path,
                     timeout: float = 600) -> dict[str, Any]:
    """This script with ``--child build`` in that build's environment; its ``compile.json`` or the error."""
    runner = tutorial_runner()
    shutil.rmtree(dest, ignore_errors=True)  # nothing of an earlier run may pass for this one's
    with tempfile.TemporaryDirectory(prefix=f"tutorial-sass-{build}-") as scratch:
        env = runner.environment(build, wheel, Path(scratch))
        env.update(TRITON_CACHE_DIR=str(Path(scratch) / "triton-cache"), TRITON_DUMP_PTXAS_LOG="1")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", build, "--artifacts", str(dest),
               "--tutorials-dir", str(wheel / "tlx" / "tutorials"), "--tutorials", tutorial,
               "--batch", str(shape.batch), "--heads", str(shape.heads), "--n-ctx", str(shape.n_ctx),
               "--head-dim", str(shape.head_dim), "--dtype", shape.dtype]
        try:
            proc = subprocess.run(cmd, env=env, cwd=scratch, capture_output=True, text=True, timeout=timeout)
            output, rc = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired:
            output, rc = f"timed out after {timeout:.0f} s", -1
    done = dest / "compile.json"
    if rc != 0 or not done.is_file():
        return {"build": build, "tutorial": tutorial, "error": f"child exited {rc}: {error_summary(output)}",
                "output_tail": output[-4000:]}
    return json.loads(done.read_text())


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failure|Exit)\b.*")


def error_summary(output: str) -> str:
    """The exception line of a child's traceback and, for a compile error, the source line it points at."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    at = max((i for i, line in enumerate(lines) if _EXCEPTION_LINE.match(line)), default=None)
    if at is None:
        return lines[-1][:400] if lines else "no output"
    source = [line.strip() for line in lines[at + 1:] if line.strip() != "^"]
    return " ".join([lines[at].strip(), *source[-1:]])[:400]


# ---------------------------------------------------------------- analysis (pure functions, tested)


_PTXAS_PATTERNS = {
    "registers": r"Used (\d+) registers",
    "spill_stores": r"(\d+) bytes spill stores",
    "spill_loads": r"(\d+) bytes spill loads",
    "stack_frame": r"(\d+) bytes stack frame",
    "barriers": r"used (\d+) barriers",
}


def ptxas_resources(log: str, kernel: str) -> dict[str, int]:
    """Registers, spills, stack frame and barriers of ``kernel`` from a ``ptxas -v`` report (its last compile)."""
    start = log.rfind(f"Compiling entry function '{kernel}'")
    if start < 0:
        return {}
    section = log[start:]
    out = {}
    for key, pattern in _PTXAS_PATTERNS.items():
        found = re.search(pattern, section)
        if found:
            out[key] = int(found.group(1))
    return out


def resource_usage(text: str) -> dict[str, int]:
    """``cuobjdump -res-usage``'s ``REG:168 STACK:24 SHARED:1024 ...`` as a dict."""
    return {k.lower(): int(v) for k, v in re.findall(r"\b([A-Z]+(?:\[\d+\])?):(\d+)\b", text)}


@dataclass(frozen=True)
class Sass:
    """A kernel's SASS: instructions without addresses, and where each label points (instruction index)."""

    instructions: list[str]
    labels: dict[str, int] = field(default_factory=dict)


_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;?\s*$")
_LABEL = re.compile(r"^(\.L\w+):\s*$")
_PREDICATE = re.compile(r"^@!?U?P\w+\s+")


def parse_sass(text: str) -> Sass:
    """The instruction lines of ``nvdisasm -c`` output, in order, with whitespace collapsed."""
    instructions: list[str] = []
    labels: dict[str, int] = {}
    for line in text.splitlines():
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(instructions)
            continue
        found = _INSTRUCTION.match(line)
        if found:
            instructions.append(" ".join(found.group(1).split()))
    return Sass(instructions, labels)


def opcode(instruction: str) -> str:
    """``@!P0 SYNCS.EXCH.64 URZ, [UR6], UR10`` -> ``SYNCS.EXCH.64`` (the predicate is not the operation)."""
    return _PREDICATE.sub("", instruction).split(" ", 1)[0]


_REGISTERS = ((re.compile(r"\b(U?R)\d+\b"), r"\1#"), (re.compile(r"\b(U?P)[0-6]\b"), r"\1#"),
              (re.compile(r"\bB\d+\b"), "B#"))
_LABEL_REF = re.compile(r"\.L_x_\d+")


def normalise(instruction: str, mask_registers: bool) -> str:
    """Label names unified (their numbers follow block order, not meaning); register numbers masked on request."""
    text = _LABEL_REF.sub(".L", instruction)
    if mask_registers:
        for pattern, repl in _REGISTERS:
            text = pattern.sub(repl, text)
    return text


def sequence_match(a: Sequence[str], b: Sequence[str]) -> dict[str, Any]:
    """How much of ``a`` and ``b`` is identical in order: matched count (difflib blocks) and ratio 2M/(|a|+|b|)."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    total = len(a) + len(b)
    return {"identical_in_order": matched, "ratio": round(2 * matched / total, 4) if total else 1.0,
            "identical": list(a) == list(b)}


def histogram_delta(a: Counter[str], b: Counter[str]) -> dict[str, list[int]]:
    """``{key: [count in a, count in b]}`` for every key whose counts differ."""
    return {k: [a[k], b[k]] for k in sorted(set(a) | set(b)) if a[k] != b[k]}


def loops(sass: Sass) -> list[tuple[int, int]]:
    """(first, last) instruction index of each loop, in order of start: a branch back to a label at or before it.

    Only branches in the function's body count: ptxas moves the retry paths of mbarrier waits behind the last
    ``EXIT`` and jumps back from there, which is no loop. Branches back to one label make one loop (the last).
    """
    exits = [i for i, ins in enumerate(sass.instructions) if opcode(ins) == "EXIT"]
    body_end = exits[-1] if exits else len(sass.instructions)
    spans: dict[int, int] = {}
    for i, instruction in enumerate(sass.instructions[:body_end]):
        if opcode(instruction).startswith("BRA"):
            target = re.search(r"`\((\.L\w+)\)", instruction)
            start = sass.labels.get(target.group(1)) if target else None
            if start is not None and start <= i:
                spans[start] = max(i, spans.get(start, i))
    return sorted(spans.items())


def innermost(spans: Sequence[tuple[int, int]], min_size: int) -> list[bool]:
    """Per loop: does it contain no other loop of at least ``min_size`` instructions (the hot loops)?"""
    big = [s for s in spans if s[1] - s[0] + 1 >= min_size]
    return [not any(o != s and s[0] <= o[0] and o[1] <= s[1] for o in big) for s in spans]


def differences(a: Sequence[str], b: Sequence[str], loops_b: Sequence[tuple[int, int]],
                limit: int = 40) -> list[dict[str, Any]]:
    """The blocks where ``a`` and ``b`` differ (difflib opcodes), with the loop of ``b`` each falls in."""
    out = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        where = [n for n, (lo, hi) in enumerate(loops_b) if lo <= j1 <= hi or lo <= max(j2 - 1, j1) <= hi]
        out.append({"tag": tag, "a": [i1, i2], "b": [j1, j2], "a_text": list(a[i1:min(i2, i1 + 8)]),
                    "b_text": list(b[j1:min(j2, j1 + 8)]), "in_loops_of_b": where})
    return out[:limit] if limit else out


def compare_sass(a: Sass, b: Sass, min_loop: int = 32) -> dict[str, Any]:
    """SASS of build a vs build b: sizes, identical-in-order per view, opcode histogram delta, loop pairs."""
    views = {
        "exact": ([normalise(i, False) for i in a.instructions], [normalise(i, False) for i in b.instructions]),
        "registers_masked": ([normalise(i, True) for i in a.instructions],
                             [normalise(i, True) for i in b.instructions]),
        "opcodes": ([opcode(i) for i in a.instructions], [opcode(i) for i in b.instructions]),
    }
    hist_a, hist_b = Counter(views["opcodes"][0]), Counter(views["opcodes"][1])
    loops_a, loops_b = loops(a), loops(b)
    inner = innermost(loops_b, min_loop)
    pairs = []
    for n, (la, lb) in enumerate(zip(loops_a, loops_b, strict=False)):  # counts may differ
        if max(la[1] - la[0], lb[1] - lb[0]) + 1 < min_loop:
            continue  # spin-waits on an mbarrier and other short loops
        ops_a = [opcode(i) for i in a.instructions[la[0]:la[1] + 1]]
        ops_b = [opcode(i) for i in b.instructions[lb[0]:lb[1] + 1]]
        masked_a = views["registers_masked"][0][la[0]:la[1] + 1]
        masked_b = views["registers_masked"][1][lb[0]:lb[1] + 1]
        pairs.append({"loop": n, "span": [list(la), list(lb)], "size": [len(ops_a), len(ops_b)],
                      "innermost": inner[n], "opcode_delta": histogram_delta(Counter(ops_a), Counter(ops_b)),
                      "exact": sequence_match(views["exact"][0][la[0]:la[1] + 1], views["exact"][1][lb[0]:lb[1] + 1]),
                      "registers_masked": sequence_match(masked_a, masked_b),
                      "same_multiset": Counter(masked_a) == Counter(masked_b)})
    diffs = differences(*views["registers_masked"], loops_b, limit=0)
    return {
        "instructions": [len(a.instructions), len(b.instructions)],
        "views": {name: sequence_match(x, y) for name, (x, y) in views.items()},
        "common_multiset": sum((hist_a & hist_b).values()),
        "opcode_delta": histogram_delta(hist_a, hist_b),
        "loops": [len(loops_a), len(loops_b)],
        "loop_pairs": pairs,
        "difference_blocks": len(diffs),
        "difference_blocks_in_hot_loops": sum(1 for d in diffs if any(inner[n] and
                                                                      loops_b[n][1] - loops_b[n][0] + 1 >= min_loop
                                                                      for n in d["in_loops_of_b"])),
        "differences": diffs[:40],
    }


_TTGIR_OP = re.compile(r"^\s*(?:%[\w#:]+(?:\s*,\s*%[\w#:]+)*\s*=\s*)?\"?([a-z_][a-z0-9_]*\.[a-z0-9_.]+)\"?[\s(<{]")
_SSA = re.compile(r"%[\w#]+")
_LOC = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)")


def ttgir_ops(text: str) -> Counter[str]:
    """How often each op occurs in a TTGIR module (location lines are not ops)."""
    ops: Counter[str] = Counter()
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        found = _TTGIR_OP.match(line + " ")
        if found:
            ops[found.group(1)] += 1
    return ops


def normalise_ttgir(text: str) -> list[str]:
    """TTGIR lines without locations and SSA names (names follow creation order, not meaning)."""
    lines = []
    for line in text.splitlines():
        if line.startswith("#loc") or not line.strip():
            continue
        lines.append(_SSA.sub("%", _LOC.sub("", line)).strip())
    return lines


def compare_ttgir(a: str, b: str) -> dict[str, Any]:
    ops_a, ops_b = ttgir_ops(a), ttgir_ops(b)
    return {"ops": [sum(ops_a.values()), sum(ops_b.values())], "op_delta": histogram_delta(ops_a, ops_b),
            "normalised_text": sequence_match(normalise_ttgir(a), normalise_ttgir(b))}


# ---------------------------------------------------------------- the parent: tools and report


def nvidia_tool(name: str) -> str:
    """Path of a CUDA tool Triton ships (``nvdisasm``, ``cuobjdump``), honouring Triton's ``TRITON_*_PATH``."""
    import triton

    tool = getattr(getattr(triton, "knobs", None), "nvidia", None)
    if tool is not None and hasattr(tool, name):
        return getattr(tool, name).path
    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    if not path.is_file():
        raise FileNotFoundError(f"tutorial_sass: Triton ships no {name} ({path})")
    return str(path)


def _run_tool(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"tutorial_sass: {' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done.stdout


def code_bytes(cubin: Path, kernel: str) -> bytes:
    """The kernel's machine code: its ``.text.<kernel>`` section of the cubin (an ELF file)."""
    from elftools.elf.elffile import ELFFile

    with cubin.open("rb") as f:
        section = ELFFile(f).get_section_by_name(f".text.{kernel}")
        if section is None:
            raise ValueError(f"tutorial_sass: {cubin} has no .text.{kernel} section")
        return section.data()


def kernel_facts(folder: Path, kernel: dict[str, Any]) -> dict[str, Any]:
    """Everything compared about one kernel of one build, read from its artifacts."""
    name = kernel["name"]
    cubin = folder / f"{name}.cubin"
    sass_text = _run_tool([nvidia_tool("nvdisasm"), "-c", str(cubin)])
    (folder / f"{name}.sass").write_text(sass_text)
    metadata = json.loads((folder / f"{name}.json").read_text())
    return {"kernel": kernel, "ptxas": ptxas_resources((folder / "ptxas.log").read_text(), name),
            "res_usage": resource_usage(_run_tool([nvidia_tool("cuobjdump"), "-res-usage", str(cubin)])),
            "shared": metadata.get("shared"), "num_warps": metadata.get("num_warps"),
            "sass": parse_sass(sass_text), "code": code_bytes(cubin, name),
            "ttgir": (folder / f"{name}.ttgir").read_text()}


def compare_builds(tutorial: str, compiled: dict[str, dict[str, Any]], artifacts: Path) -> dict[str, Any]:
    """The report of one tutorial: per kernel, meta's figures vs utlx's."""
    report: dict[str, Any] = {"tutorial": tutorial, "builds": {b: {k: v for k, v in compiled[b].items()
                                                                      if k != "kernels"} for b in BUILDS}}
    errors = {b: compiled[b]["error"] for b in BUILDS if "error" in compiled[b]}
    if errors:
        report["error"] = errors
        return report
    names = [[k["name"] for k in compiled[b]["kernels"]] for b in BUILDS]
    if names[0] != names[1]:
        report["error"] = f"the builds launched different kernels: meta {names[0]}, utlx {names[1]}"
        return report
    report["kernels"] = []
    for kmeta, kutlx in zip(compiled["meta"]["kernels"], compiled["utlx"]["kernels"], strict=True):
        fm, fu = kernel_facts(artifacts / "meta", kmeta), kernel_facts(artifacts / "utlx", kutlx)
        report["kernels"].append({
            "name": kmeta["name"],
            "constants": [kmeta["constants"], kutlx["constants"]],
            "same_constants": kmeta["constants"] == kutlx["constants"],
            "grid": [kmeta["grid"], kutlx["grid"]],
            "num_warps": [fm["num_warps"], fu["num_warps"]],
            "shared": [fm["shared"], fu["shared"]],
            "ptxas": [fm["ptxas"], fu["ptxas"]],
            "res_usage": [fm["res_usage"], fu["res_usage"]],
            "code_bytes_identical": fm["code"] == fu["code"],
            "sass": compare_sass(fm["sass"], fu["sass"]),
            "ttgir": compare_ttgir(fm["ttgir"], fu["ttgir"]),
        })
        report["kernels"][-1]["verdict"] = verdict(report["kernels"][-1])
    return report


def verdict(kernel: dict[str, Any]) -> str:
    """One sentence: identical machine code, or where the SASS differs and whether the hot loops do."""
    if kernel["code_bytes_identical"]:
        return "identical machine code"
    sass = kernel["sass"]
    hot = [p for p in sass["loop_pairs"] if p["innermost"]]
    hot_state = ("identical" if all(p["exact"]["identical"] for p in hot) else "identical up to register numbers"
                 if all(p["registers_masked"]["identical"] for p in hot) else "DIFFERENT")
    delta = ", ".join(f"{op} {a}/{b}" for op, (a, b) in sass["opcode_delta"].items()) or "none"
    return (f"machine code differs in {sass['difference_blocks']} blocks (registers masked), "
            f"{sass['difference_blocks_in_hot_loops']} of them in hot loops; the {len(hot)} hot loops are "
            f"{hot_state}; opcode counts that differ (meta/utlx): {delta}")


def _pair(values: Sequence[Any]) -> str:
    a, b = values
    return f"{a}" if a == b else f"**{a} / {b}**"


def markdown(result: dict[str, Any]) -> str:
    """One section per tutorial: figures as ``meta / utlx`` (bold where they differ)."""
    lines = [f"# Meta's FA tutorials: Meta's build vs utlx, {result['shape']}, cuda:90 (compiled on the CPU)", "",
             f"Triton {result['triton']}; figures are `meta / utlx`, one number where both agree.", ""]
    for rep in result["tutorials"]:
        lines.append(f"## {rep['tutorial']}")
        if "error" in rep:
            errors = rep["error"] if isinstance(rep["error"], dict) else {"both": rep["error"]}
            lines += ["", *[f"- {build}: error: {text}" for build, text in errors.items()], ""]
            continue
        configs = rep["builds"]["meta"].get("autotune_configs", [])
        lines += ["", f"Autotune configs: {len(configs)} (compiled: the first, "
                  f"{'the only one' if len(configs) == 1 else 'as the compile-only driver keeps'}): "
                  f"`{configs[0] if configs else '?'}`", ""]
        for k in rep["kernels"]:
            sass, views = k["sass"], k["sass"]["views"]
            pm, pu = k["ptxas"]
            lines += [f"### kernel `{k['name']}`", "", f"**{k['verdict']}**", "",
                      "| | |", "|---|---|",
                      f"| same constexprs | {k['same_constants']} |",
                      f"| grid, warps | {_pair([tuple(g) for g in k['grid']])}, {_pair(k['num_warps'])} |",
                      *[f"| ptxas {key.replace('_', ' ')} | {_pair([pm.get(key), pu.get(key)])} |"
                        for key in ("registers", "spill_stores", "spill_loads", "stack_frame", "barriers")],
                      f"| shared memory (bytes) | {_pair(k['shared'])} |",
                      f"| machine code (cubin `.text`) byte-identical | {k['code_bytes_identical']} |",
                      f"| SASS instructions | {_pair(sass['instructions'])} |",
                      *[f"| SASS identical in order, {view.replace('_', ' ')} | {v['identical_in_order']} "
                        f"(ratio {v['ratio']}){' identical' if v['identical'] else ''} |"
                        for view, v in views.items()],
                      f"| SASS common instructions (opcode multiset) | {sass['common_multiset']} |",
                      f"| loops (backward branches) | {_pair(sass['loops'])} |",
                      f"| TTGIR ops | {_pair(k['ttgir']['ops'])}, normalised text ratio "
                      f"{k['ttgir']['normalised_text']['ratio']} |", ""]
            if sass["opcode_delta"]:
                lines += ["SASS opcodes whose counts differ (meta / utlx): " + ", ".join(
                    f"`{op}` {a}/{b}" for op, (a, b) in sass["opcode_delta"].items()), ""]
            lines += [f"Blocks of differing instructions (registers masked): {sass['difference_blocks']}, "
                      f"in hot (innermost) loops: {sass['difference_blocks_in_hot_loops']}. Loops of >= 32 "
                      "instructions (hot = innermost), meta vs utlx:", ""]
            for loop in sass["loop_pairs"]:
                delta = ", ".join(f"`{op}` {a}/{b}" for op, (a, b) in loop["opcode_delta"].items()) or "none"
                same = ("identical" if loop["exact"]["identical"] else "identical up to register numbers"
                        if loop["registers_masked"]["identical"] else
                        f"in-order ratio {loop['registers_masked']['ratio']} (registers masked), same instructions "
                        f"{loop['same_multiset']}")
                lines.append(f"- loop {loop['loop']}{' (hot)' if loop['innermost'] else ''}, "
                             f"{_pair(loop['size'])} instructions: {same}; opcode delta: {delta}")
            if k["ttgir"]["op_delta"]:
                lines += ["", "TTGIR ops whose counts differ (meta / utlx): " + ", ".join(
                    f"`{op}` {a}/{b}" for op, (a, b) in k["ttgir"]["op_delta"].items())]
            lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- command line


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tutorials", nargs="+", default=list(DEFAULT_TUTORIALS),
                    help=f"FA tutorial files of Meta's wheel (default: {' '.join(DEFAULT_TUTORIALS)})")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--n-ctx", type=int, default=2048)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--dtype", choices=("fp16", "bf16"), default="fp16")
    ap.add_argument("--out", default=os.environ.get("TRITONX_BENCH_OUT") or os.environ.get("OUT") or "bench-out")
    ap.add_argument("--child", choices=BUILDS, help=argparse.SUPPRESS)
    ap.add_argument("--artifacts", help=argparse.SUPPRESS)
    ap.add_argument("--tutorials-dir", help=argparse.SUPPRESS)
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = parser().parse_args(argv)
    known = attention_bench().META_TUTORIALS
    unknown = [t for t in args.tutorials if t not in known]
    if unknown:
        parser().error(f"--tutorials: {unknown} are not FA tutorials this tool knows (known: {', '.join(known)})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    import triton

    runner = tutorial_runner()
    wheel = runner.meta_wheel().meta_wheel_dir()
    if wheel is None:
        print(f"tutorial_sass.py: {runner.meta_wheel().unavailable_reason()}", file=sys.stderr)
        return 2
    shape = Shape(args.batch, args.heads, args.n_ctx, args.head_dim, args.dtype)
    out = Path(args.out).resolve()  # the children run in scratch folders
    result: dict[str, Any] = {"shape": shape.label(), "triton": triton.__version__, "wheel": str(wheel),
                              "target": "cuda:90", "tutorials": []}
    for tutorial in args.tutorials:
        artifacts = out / "artifacts" / tutorial
        compiled = {b: compile_in_child(b, tutorial, shape, wheel, artifacts / b) for b in BUILDS}
        result["tutorials"].append(compare_builds(tutorial, compiled, artifacts))
        print(f"{tutorial}: " + ", ".join(f"{b} failed" if "error" in c else f"{b} compiled in {c['compile_s']} s"
                                           for b, c in compiled.items()), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{REPORT}.json").write_text(json.dumps(result, indent=1, default=str))
    text = markdown(result)
    (out / f"{REPORT}.md").write_text(text)
    print(text)
    print(f"wrote {out / REPORT}.json and .md; artifacts (TTGIR, PTX, cubin, SASS) under {out / 'artifacts'}")
    return 2 if any("error" in rep for rep in result["tutorials"]) else 0


if __name__ == "__main__":
    sys.exit(main())
