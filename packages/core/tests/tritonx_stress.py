"""Cache-consistency stress: compiles on threads while other threads toggle activations and bind
pipelines to kernels, all over one Triton cache; then every binary is checked against the pipelines
its key claims.

Every pipeline here leaves a mark in the PTX (``// tritonx-stress:<name>``), so a binary shows which
pipelines really ran. The key of each compile is recorded (a wrapper around tritonx's ``get_cache_key``
wrapper), and the tritonx digest in it names the pipelines it claims (:func:`claims`). A mismatch is a
binary whose marks differ from its key's claim: exactly the wrong-binary-in-the-cache defect.

Compiles go to both :data:`TARGETS` (each job picks one). Used in-process by the default tests, and as a
script for the multi-process runs (several processes on one cache dir, optionally one Redis remote cache;
``remote`` in the report is :func:`tritonx.compat.remote_cache_stats` of the process)::

    python tritonx_stress.py run --cache DIR --kernels DIR --compiles N --seed S --threads T --out keys.json
    python tritonx_stress.py verify --cache DIR --kernels DIR --keys a.json b.json ...
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import itertools
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARK = "// tritonx-stress:"
TARGET = "cuda:90"
#: The targets :func:`run` compiles for (both keep the PTX stage the pipelines mark).
TARGETS = ("cuda:90", "cuda:80")
SIGNATURE = {"X": "*fp32", "Y": "*fp32"}
SIZES = (16, 32, 64, 128)
TWINS = 4
BOUND = (0, 1)  # twin kernels the binder thread binds pipeline "K" to, during the run

KERNEL_SRC = '''
import triton
import triton.language as tl


@triton.jit
def stress_kernel(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs) * 2.0 + 1.0)
'''


def _mark_ptx(text: str, ctx: Any) -> str:
    return f"{text}\n{MARK}{ctx.pipeline}\n"


def pipelines() -> dict[str, Any]:
    """The three pipelines: A and B are toggled globally, K is bound to kernels. Same keys in every process."""
    import tritonx

    mark = tritonx.cache_key("tritonx-stress-mark-v1")(_mark_ptx)
    return {name: tritonx.Pipeline(name).transform_stage("ptx", mark) for name in ("A", "B", "K")}


def twin_kernels(directory: Path, count: int = TWINS) -> list[Any]:
    """``count`` JIT functions loaded from one file: identical source, so identical stock cache keys."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "stress_kernel.py"
    if not path.exists():
        path.write_text(KERNEL_SRC)
    out = []
    for i in range(count):
        spec = importlib.util.spec_from_file_location(f"tritonx_stress_twin_{i}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        out.append(module.stress_kernel)
    return out


def marks(ptx: str) -> frozenset[str]:
    return frozenset(line[len(MARK):].strip() for line in ptx.splitlines() if line.startswith(MARK))


def claims(ps: dict[str, Any]) -> dict[str, frozenset[str]]:
    """tritonx digest -> the pipelines a key carrying it claims, for every state this run can reach."""
    from tritonx.engine.keys import combined_key, pipeline_key
    from tritonx.integration.snapshot import Binding, CompileSnapshot, Snapshot

    out: dict[str, frozenset[str]] = {}
    orders = [(), ("A",), ("B",), ("A", "B"), ("B", "A")]
    k = ps["K"]
    for order, bound in itertools.product(orders, (False, True)):
        active = tuple(ps[n] for n in order)
        snap = Snapshot.of(active, combined_key(pipeline_key(p) for p in active))
        binding = Binding((k,), combined_key([pipeline_key(k)])) if bound else None
        out[CompileSnapshot(snap, binding).digest] = frozenset(order) | ({"K"} if bound else set())
    return out


class KeyRecorder:
    """Records every on-disk key (hash -> key) Triton computes while installed."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> KeyRecorder:
        import triton.compiler.compiler as cc
        from tritonx.runtime import current

        current().hook.ensure_installed()  # tritonx's wrapper first; this one wraps it
        self._cc, self._original = cc, cc.get_cache_key
        original = self._original

        def get_cache_key(*args: Any, **kwargs: Any) -> str:
            key = original(*args, **kwargs)
            with self._lock:
                self.keys[hashlib.sha256(key.encode("utf-8")).hexdigest()] = key
            return key

        get_cache_key.__wrapped__ = original  # type: ignore[attr-defined]
        cc.get_cache_key = get_cache_key
        return self

    def __exit__(self, *exc: object) -> None:
        self._cc.get_cache_key = self._original


@dataclass
class StressResult:
    compiles: int = 0
    seconds: float = 0.0
    toggles: int = 0
    binds: int = 0
    mismatches: list[str] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: compiles retried after CPython's own AST race (see :func:`_is_cpython_ast_race`)
    ast_retries: int = 0
    #: compiles per target
    targets: dict[str, int] = field(default_factory=dict)


def _is_cpython_ast_race(exc: BaseException) -> bool:
    """CPython 3.11's AST constructor keeps its recursion-depth counter per interpreter, not per thread, so two
    threads inside ``ast.parse`` at once can trip its consistency check ("AST constructor recursion depth
    mismatch"). Triton parses kernel sources on every compile; the race is CPython's, not a tritonx fault, and
    the same compile succeeds when run again."""
    return isinstance(exc, SystemError) and "AST constructor recursion depth mismatch" in str(exc)


def check(key: str | None, ptx: str, table: dict[str, frozenset[str]], where: str) -> str | None:
    """A description of the mismatch between a binary and its key's claim, or None when they agree."""
    from tritonx.integration.snapshot import digest_in

    if key is None:
        return f"{where}: no recorded key"
    digest = digest_in(key)
    if digest and digest not in table:
        return f"{where}: key names unknown tritonx digest {digest}"
    claimed = table.get(digest, frozenset())
    got = marks(ptx)
    return None if got == claimed else f"{where}: key claims {sorted(claimed)}, binary has {sorted(got)}"


def run(kernels: list[Any], compiles: int, *, threads: int = 2, seed: int = 0, targets: tuple[str, ...] = TARGETS,
        on_compile: Callable[[int], None] | None = None) -> StressResult:
    """Compile ``compiles`` times on ``threads`` threads while one thread toggles A/B and one binds K.

    ``on_compile(n)`` is called after each finished compile with the number finished so far (a test uses it
    to inject faults mid-run).
    """
    import tritonx

    ps = pipelines()
    table = claims(ps)
    rng = random.Random(seed)
    jobs = [(rng.randrange(len(kernels)), rng.choice(SIZES), rng.choice(targets)) for _ in range(compiles)]
    result = StressResult()
    lock = threading.Lock()
    next_job = iter(range(compiles))
    stop = threading.Event()
    compiled: list[tuple[str, str, str]] = []

    def compiler() -> None:
        while True:
            with lock:
                i = next(next_job, None)
            if i is None:
                return
            twin, size, target = jobs[i]
            for attempt in range(3):
                try:
                    k = tritonx.compile_for(target, kernels[twin], SIGNATURE, {"N": size})
                    break
                except Exception as exc:  # reported as a failure by the caller
                    if _is_cpython_ast_race(exc) and attempt < 2:
                        with lock:
                            result.ast_retries += 1
                        continue
                    result.errors.append(f"compile {i}: {type(exc).__name__}: {exc}")
                    k = None
                    break
            with lock:
                if k is not None:
                    compiled.append((f"compile {i} (twin {twin}, N={size}, {target})", k.hash, k.asm["ptx"]))
                    result.targets[target] = result.targets.get(target, 0) + 1
                done = len(compiled) + len(result.errors)
            if on_compile is not None:
                on_compile(done)

    def toggler() -> None:
        trng = random.Random(seed + 1)
        while not stop.is_set():
            order = trng.choice([("A",), ("B",), ("A", "B"), ("B", "A")])
            with tritonx.activate(*(ps[n] for n in order)):
                result.toggles += 1
                time.sleep(trng.random() * 0.004)
            time.sleep(trng.random() * 0.002)

    def binder() -> None:
        brng = random.Random(seed + 2)
        for twin in BOUND:
            if stop.wait(brng.random() * 0.5):
                return
            tritonx.pipeline(ps["K"])(kernels[twin])
            result.binds += 1

    start = time.perf_counter()
    with KeyRecorder() as recorder:
        helpers = [threading.Thread(target=toggler), threading.Thread(target=binder)]
        workers = [threading.Thread(target=compiler) for _ in range(threads)]
        for t in helpers + workers:
            t.start()
        for t in workers:
            t.join()
        stop.set()
        for t in helpers:
            t.join()
    result.seconds = time.perf_counter() - start
    result.keys = dict(recorder.keys)
    result.compiles = len(compiled)
    for where, hsh, ptx in compiled:
        problem = check(result.keys.get(hsh), ptx, table, where)
        if problem:
            result.mismatches.append(problem)
    return result


def cache_entries(cache_dir: Path) -> Iterator[tuple[str, str]]:
    """(hash, ptx text) of every compiled kernel in a Triton file cache."""
    for meta in cache_dir.glob("*/*.json"):
        if meta.name.startswith("__grp__"):
            continue
        try:
            data = json.loads(meta.read_text())
        except ValueError:
            continue
        ptx = meta.with_suffix(".ptx")
        if "hash" in data and ptx.exists():
            yield data["hash"], ptx.read_text()


@dataclass
class VerifyResult:
    entries: int = 0
    lookups: int = 0
    hits: int = 0
    mismatches: list[str] = field(default_factory=list)
    #: for the first misses: how the lookup's key differs from the closest key of the run (diagnosis)
    misses: list[str] = field(default_factory=list)


def verify(cache_dir: Path, kernels_dir: Path, keys: dict[str, str], states: Iterable[tuple[tuple[str, ...], bool]]
           ) -> VerifyResult:
    """In a fresh process: every cached binary against its key; then look each state up through Triton."""
    import tritonx

    out = VerifyResult()
    ps = pipelines()
    table = claims(ps)
    for hsh, ptx in cache_entries(cache_dir):
        out.entries += 1
        problem = check(keys.get(hsh), ptx, table, f"cache entry {hsh[:12]}")
        if problem:
            out.mismatches.append(problem)
    kernels = twin_kernels(kernels_dir)
    tritonx.pipeline(ps["K"])(kernels[BOUND[0]])
    with KeyRecorder() as recorder:
        _lookups(out, kernels, ps, states, recorder, keys)
    return out


def _explain_miss(hsh: str, key: str, keys: dict[str, str]) -> str:
    from triton.runtime.cache import get_cache_manager

    if hsh in keys:
        manager = get_cache_manager(hsh)
        # a RemoteCacheManager keeps its local dir in the FileCacheManager it materializes into
        where = getattr(manager, "cache_dir", None) or manager._file_cache_manager.cache_dir
        files = sorted(os.listdir(where)) if os.path.isdir(where) else None
        return f"the run made this very key; its cache dir {where} holds {files}"
    return _closest_difference(key, keys.values())


def _closest_difference(key: str, known: Iterable[str]) -> str:
    def common(other: str) -> int:
        n = 0
        while n < min(len(key), len(other)) and key[n] == other[n]:
            n += 1
        return n

    best = max(known, key=common, default="")
    n = common(best)
    return f"differs at {n}: ...{key[max(0, n - 40):n + 80]!r} vs ...{best[max(0, n - 40):n + 80]!r}"


def _lookups(out: VerifyResult, kernels: list[Any], ps: dict[str, Any], states: Iterable[tuple[tuple[str, ...], bool]],
             recorder: KeyRecorder, keys: dict[str, str]) -> None:
    import triton
    import tritonx

    for order, bound in states:
        kernel = kernels[BOUND[0]] if bound else kernels[-1]
        for size in SIZES:
            listener_hits: list[bool] = []

            def listen(*, cache_hit: bool, _hits: list[bool] = listener_hits, **_: Any) -> None:
                _hits.append(cache_hit)

            with tritonx.activate(*(ps[n] for n in order)) if order else _nothing():
                triton.knobs.compilation.listener = listen
                try:
                    k = tritonx.compile_for(TARGET, kernel, SIGNATURE, {"N": size})
                finally:
                    triton.knobs.compilation.listener = None
            out.lookups += 1
            hit = bool(listener_hits and listener_hits[0])
            out.hits += hit
            if not hit and len(out.misses) < 3 and k.hash in recorder.keys:
                out.misses.append(_explain_miss(k.hash, recorder.keys[k.hash], keys))
            expected = frozenset(order) | ({"K"} if bound else set())
            if marks(k.asm["ptx"]) != expected:
                out.mismatches.append(f"lookup {order}{' +K' if bound else ''} N={size}: expected {sorted(expected)}, "
                                      f"got {sorted(marks(k.asm['ptx']))}")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


ALL_STATES = [(order, bound) for order in [(), ("A",), ("B",), ("A", "B"), ("B", "A")] for bound in (False, True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=("run", "verify"))
    parser.add_argument("--kernels", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--compiles", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keys", type=Path, nargs="*", default=[])
    args = parser.parse_args(argv)
    os.environ["TRITON_CACHE_DIR"] = str(args.cache)
    if args.command == "run":
        from tritonx import compat

        remote_cache_stats = getattr(compat, "remote_cache_stats", dict)  # older tritonx: no remote-cache counters
        res = run(twin_kernels(args.kernels), args.compiles, threads=args.threads, seed=args.seed,
                  targets=tuple(args.targets.split(",")))
        report = {"compiles": res.compiles, "seconds": res.seconds, "toggles": res.toggles, "binds": res.binds,
                  "mismatches": res.mismatches, "errors": res.errors, "targets": res.targets,
                  "remote": remote_cache_stats(), "keys": res.keys}
    else:
        keys: dict[str, str] = {}
        for path in args.keys:
            keys.update(json.loads(path.read_text())["keys"])
        ver = verify(args.cache, args.kernels, keys, ALL_STATES)
        report = {"entries": ver.entries, "lookups": ver.lookups, "hits": ver.hits, "mismatches": ver.mismatches,
                  "misses": ver.misses}
    text = json.dumps(report)
    if args.out is not None:
        args.out.write_text(text)
    print("@@stress@@" + json.dumps({k: v for k, v in report.items() if k != "keys"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
