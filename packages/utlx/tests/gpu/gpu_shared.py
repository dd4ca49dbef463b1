"""Helpers the GPU test modules share: the float32-reference check of a GEMM result, the no-sync, CUDA-graph
capture and replay checks of ``utlx.matmul``, and the parallel precompilation of a sweep's cases (one definition
serves every module; the private-tuning fixture is in ``conftest.py``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gpu_env import torch  # (skips the importing module on a machine without a GPU)

#: the device runs Hopper kernels (sm_90, not ROCm)
HOPPER = not getattr(torch.version, "hip", None) and torch.cuda.get_device_capability()[0] == 9


def check_matmul(c: Any, a: Any, b: Any, label: str = "") -> None:
    """``c`` is ``a @ b`` within the fp16/bf16 tolerance of a float32 reference, a fresh row-major output of
    ``a``'s dtype whatever the operand layouts."""
    ref = a.float() @ b.float()
    assert c.shape == ref.shape and c.dtype == a.dtype and c.stride() == (ref.shape[1], 1)
    err = (c.float() - ref).abs().max().item()
    scale = ref.abs().max().item() + 1e-6
    tol = (2e-2 if a.dtype == torch.bfloat16 else 1e-2) * scale + 1e-2
    assert err <= tol, f"{label + ': ' if label else ''}max abs error {err:.4g} > {tol:.4g} (reference max {scale:.4g})"


def precompile(label: str, cases: Sequence[Any], warm_chunk: Callable[[Sequence[Any]], list[str]]) -> list[str]:
    """Compile ``cases`` in spawned worker processes (``warm_chunk`` takes a slice of them and returns its error
    lines), print how long it took and what failed, and return the errors."""
    import concurrent.futures as cf
    import multiprocessing as mp

    workers = max(1, min(14, (os.cpu_count() or 2) - 2))
    chunks = [cases[i::workers] for i in range(workers)]
    start = time.perf_counter()
    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        errors = [e for part in pool.map(warm_chunk, chunks) for e in part]
    print(f"\n[{label}] {len(cases)} cases precompiled by {workers} workers in {time.perf_counter() - start:.0f} s; "
          f"{len(errors)} errors" + "".join(f"\n  {e}" for e in errors))
    return errors


def check_hot_calls_do_not_synchronize(a: Any, b: Any, calls: int = 5) -> None:
    """``utlx.matmul(a, b)`` (already tuned and planned) ``calls`` times with torch's sync debug mode on ``error``:
    the hot path never waits for the device; every result is checked afterwards."""
    import utlx

    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        outs = [utlx.matmul(a, b) for _ in range(calls)]
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for c in outs:
        check_matmul(c, a, b)


def capture_matmul(a: Any, b: Any) -> tuple[Any, Any]:
    """A CUDA graph of ``utlx.matmul(a, b)`` (warmed up on a side stream first, as torch asks) and its output."""
    import utlx

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        utlx.matmul(a, b)  # warm-up on the side stream
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = utlx.matmul(a, b)
    return graph, c


def check_replays(graph: Any, c: Any, a: Any, b: Any, fresh: Iterable[tuple[Any, Any]]) -> None:
    """Replay ``graph`` (captured on ``a``, ``b`` into ``c``) once for each fresh operand pair copied into ``a``
    and ``b``; each replay's ``c`` is checked against that pair."""
    for a_new, b_new in fresh:
        a.copy_(a_new)
        b.copy_(b_new)
        graph.replay()
        torch.cuda.synchronize()
        check_matmul(c, a_new, b_new)
