"""No silent stale cache: pipelines key Triton's caches, on disk and in memory, on every version."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import triton
import tritonx
from tritonx import compat
from tritonx.engine.keys import pipeline_key
from tritonx.integration.probe_kernels import PROBE_CONSTEXPRS, PROBE_SIGNATURE
from tritonx_testutil import ptx_counts


def _counting_pipeline(name: str, calls: list):
    def count(module, ctx):
        calls.append(ctx.pipeline)

    return tritonx.Pipeline(name).insert_after("tritongpu-coalesce", count, pass_name="count")


@pytest.mark.smoke
def test_switching_recompiles_and_switching_back_hits(compile_probe):
    calls: list = []
    p = _counting_pipeline("counted", calls)
    with tritonx.activate(p):
        first = compile_probe()
    stock = compile_probe()
    with tritonx.activate(p):
        again = compile_probe()
    assert calls == ["counted"]  # the third compile was a cache hit: the pass did not run again
    assert first.hash == again.hash != stock.hash


@pytest.mark.smoke
def test_two_pipelines_never_share_a_binary(compile_probe):
    a = tritonx.Pipeline("same-name").disable("tritongpu-pipeline")
    b = tritonx.Pipeline("same-name")
    with tritonx.activate(a):
        ka = compile_probe()
    with tritonx.activate(b):
        kb = compile_probe()
    assert ka.hash != kb.hash
    assert ptx_counts(ka)["cp.async"] == 0 < ptx_counts(kb)["cp.async"]


def test_python_passes_are_keyed_by_code():
    def make(offset):
        def p(module, ctx):
            return offset + 1

        return p

    def other(module, ctx):
        return 2

    k = lambda fn: pipeline_key(tritonx.Pipeline("k").insert_after("tritongpu-coalesce", fn, pass_name="p"))
    assert k(make(1)) == k(make(1))  # same code, same captured value: same key in every process
    assert k(make(1)) != k(make(2))  # captured settings matter
    assert k(make(1)) != k(other)  # different code


def test_in_memory_key_follows_activation(runtime):
    runtime.hook.ensure_installed()
    key_call = runtime.hook.function
    stock_pair = key_call()
    p = tritonx.Pipeline("mem").disable("tritongpu-pipeline")
    with tritonx.activate(p):
        active_pair = key_call()
    assert key_call() == stock_pair == ("", "")
    assert active_pair != stock_pair
    with tritonx.activate(p):
        assert key_call() == active_pair
    if not compat.HOOK_HAS_KEY_CALL:  # Triton 3.6: the JIT's own key function carries it
        import triton.runtime.jit as jit

        with tritonx.activate(p):
            key = jit.compute_cache_key({}, [("i32", 1)], "opts")
        assert active_pair[0] in key


def _twin_kernels(directory: Path):
    """Two JIT functions with identical source (so identical stock cache keys), written into ``directory``.

    Why a directory from the caller (pytest's ``tmp_path``): a ``mkdtemp()`` here was never removed and left
    a ``tmp*/twin_kernel.py`` in the temp folder per test.
    """
    import textwrap

    src = textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.jit
        def twin(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
            rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
            b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for _ in range(0, tl.cdiv(K, BLOCK_K)):
                acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
                a_ptrs += BLOCK_K
                b_ptrs += BLOCK_K * stride_bk
            tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))
    ''')
    import importlib.util
    import sys

    out = []
    for i in range(2):
        path = directory / "twin_kernel.py"  # same file name and source for both
        path.write_text(src)
        spec = importlib.util.spec_from_file_location(f"twin_mod_{i}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        out.append(mod.twin)
    return out


def _compile_kernel(kernel, target="cuda:90"):
    from tritonx.integration.capture import divisible

    return tritonx.compile_for(target, kernel, PROBE_SIGNATURE, PROBE_CONSTEXPRS, attrs=divisible(9))


def test_per_kernel_pipeline_only_applies_to_that_kernel(tmp_path):
    plain, bound = _twin_kernels(tmp_path)
    stock = _compile_kernel(plain)
    tritonx.pipeline(tritonx.Pipeline("kernel-only").disable("tritongpu-pipeline"))(bound)
    edited = _compile_kernel(bound)
    again_plain = _compile_kernel(plain)
    assert ptx_counts(edited)["cp.async"] == 0
    assert ptx_counts(stock)["cp.async"] > 0 and ptx_counts(again_plain)["cp.async"] > 0
    assert edited.hash != stock.hash == again_plain.hash


def test_concurrent_compiles_with_different_kernel_pipelines(tmp_path):
    plain, bound = _twin_kernels(tmp_path)
    tritonx.pipeline(tritonx.Pipeline("threaded").disable("tritongpu-pipeline"))(bound)
    results: dict = {}
    errors: list = []

    def work(name, kernel):
        try:
            results[name] = ptx_counts(_compile_kernel(kernel))["cp.async"]
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"{n}{i}", k)) for i in range(2)
               for n, k in (("plain", plain), ("bound", bound))]
    # one scope, on this thread: knobs.scope() is not thread-safe (interleaved exits leave
    # TRITON_ALWAYS_COMPILE=1 in os.environ, so every later child process of this worker misses its cache)
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert all(v > 0 for n, v in results.items() if n.startswith("plain"))
    assert all(v == 0 for n, v in results.items() if n.startswith("bound"))
