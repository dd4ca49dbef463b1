"""The fork-only Triton surface TLX code uses, present while utlx is enabled and gone when it is not.

``triton.Config(..., ctas_per_cga=...)`` (Meta's Hopper GEMM tutorial builds such configs at import),
launches carrying ``ctas_per_cga``, the autotuner facing cluster configs, and ``GPUTarget.is_cuda_backend``.
Disabling utlx (environment at start-up, or tritonx at run time) gives back stock Triton's behaviour.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import make_backend
from utlx import fork_surface
from utlx.fork_surface import UtlxClusterLaunchError
from utlx.plugin import ensure_active

SRC = [str(Path(__file__).resolve().parents[3] / sub / "src") for sub in ("utlx", "core")]


@pytest.fixture(autouse=True)
def utlx_enabled():
    assert ensure_active() == "tritonx"
    assert fork_surface.installed()


def test_config_accepts_ctas_per_cga():
    single = triton.Config({"BM": 128}, num_warps=4, ctas_per_cga=(1, 1, 1))
    pair = triton.Config({"BM": 128}, num_warps=4, ctas_per_cga=(2, 1, 1))
    plain = triton.Config({"BM": 128}, num_warps=4)
    assert single.ctas_per_cga == (1, 1, 1) and plain.ctas_per_cga is None
    # a cluster of one CTA is a plain launch: same launch keywords, equal configs
    assert "ctas_per_cga" not in single.all_kwargs() and single == plain and hash(single) == hash(plain)
    assert pair.all_kwargs()["ctas_per_cga"] == (2, 1, 1) and pair != single
    assert str(pair).endswith("ctas_per_cga: (2, 1, 1)")


@pytest.mark.parametrize("bad", [(2, 1), (0, 1, 1), "abc", (True, 1, 1)])
def test_config_rejects_malformed_clusters(bad):
    with pytest.raises(UtlxClusterLaunchError, match=r"triton\.Config: ctas_per_cga must be three positive"):
        triton.Config({}, ctas_per_cga=bad)


@triton.jit
def _probe(x_ptr, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), 1.0)


def _pack(kwargs: dict) -> object:
    """Triton's compile-path check of a launch's keywords (``JITFunction._pack_args``), on the CPU."""
    backend = make_backend(GPUTarget("cuda", 90, 32))
    options, *_ = _probe._pack_args(backend, dict(kwargs), {"x_ptr": 0, "N": 16},
                                    [("*fp32", "D"), ("constexpr", 16)], {})
    return options


def test_launch_keyword_single_cta_cluster_is_a_plain_launch():
    options = _pack({"num_warps": 4, "ctas_per_cga": (1, 1, 1)})
    assert options.num_warps == 4 and options.num_ctas == 1


def test_launch_keyword_larger_cluster_rides_on_the_compile_options():
    """TLX's clusters (one program per CTA) are compiled in, not launched through num_ctas: the shape is an
    attribute of the options, so it is in their hash (its own compiled kernel) and in the metadata."""
    options = _pack({"num_warps": 4, "ctas_per_cga": (4, 2, 1)})
    assert options.ctas_per_cga == (4, 2, 1) and options.num_ctas == 1
    plain = _pack({"num_warps": 4})
    assert not hasattr(plain, "ctas_per_cga") and plain.hash() != options.hash()
    assert _pack({"num_warps": 4, "ctas_per_cga": [2, 1, 1]}).hash() != options.hash()


def test_launch_keyword_larger_cluster_is_refused_where_no_clusters_exist():
    backend = make_backend(GPUTarget("cuda", 80, 32))
    with pytest.raises(UtlxClusterLaunchError, match=r"launching _probe: ctas_per_cga=\(2, 1, 1\) asks for "
                                                     r"thread-block clusters of 2 CTAs, which need sm_90"):
        _probe._pack_args(backend, {"ctas_per_cga": (2, 1, 1)}, {"x_ptr": 0, "N": 16},
                          [("*fp32", "D"), ("constexpr", 16)], {})
    hip = make_backend(GPUTarget("hip", "gfx942", 64))
    with pytest.raises(UtlxClusterLaunchError, match=r"NVIDIA GPUs only"):
        _probe._pack_args(hip, {"ctas_per_cga": (2, 1, 1)}, {"x_ptr": 0, "N": 16},
                          [("*fp32", "D"), ("constexpr", 16)], {})


def test_autotuner_keeps_cluster_configs_for_compiled_kernels(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    configs = [triton.Config({"N": 16}, ctas_per_cga=(2, 1, 1)), triton.Config({"N": 32}, ctas_per_cga=(1, 1, 1))]
    tuner = triton.autotune(configs=configs, key=[])(_probe)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [c.kwargs["N"] for c in tuner.prune_configs({})] == [16, 32]


def test_autotuner_keeps_cluster_configs_under_the_interpreter(monkeypatch):
    # the interpreter runs the CTAs of a cluster together (utlx.interpreter.cluster): nothing is skipped
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    configs = [triton.Config({"N": 16}, ctas_per_cga=(2, 1, 1)), triton.Config({"N": 32}, ctas_per_cga=(1, 1, 1)),
               triton.Config({"N": 64})]
    tuner = triton.autotune(configs=configs, key=[])(_probe)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = tuner.prune_configs({})
    assert [c.kwargs["N"] for c in kept] == [16, 32, 64]
    assert kept[0].all_kwargs()["ctas_per_cga"] == (2, 1, 1)


def test_gpu_target_is_cuda_backend():
    assert GPUTarget("cuda", 90, 32).is_cuda_backend() is True
    assert GPUTarget("hip", "gfx942", 64).is_cuda_backend() is False


def test_disabled_at_run_time_gives_stock_triton_back():
    import tritonx

    tritonx.disable_plugins(["utlx"])
    try:
        with pytest.raises(TypeError, match="ctas_per_cga"):
            triton.Config({}, ctas_per_cga=(1, 1, 1))
        assert not hasattr(GPUTarget("cuda", 90, 32), "is_cuda_backend")
        with pytest.raises(KeyError, match="ctas_per_cga was specified but unrecognised"):
            _pack({"ctas_per_cga": (1, 1, 1)})
        configs = [triton.Config({"N": 16}), triton.Config({"N": 32})]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert len(triton.autotune(configs=configs, key=[])(_probe).prune_configs({})) == 2
    finally:
        tritonx.enable_plugins(["utlx"])
    assert triton.Config({}, ctas_per_cga=(1, 1, 1)).ctas_per_cga == (1, 1, 1)
    assert GPUTarget("cuda", 90, 32).is_cuda_backend()


@pytest.mark.parametrize("env", [{"UTLX_DISABLE": "1"}, {"TRITONX_PLUGINS": "none-of-them"}])
def test_disabled_by_the_environment_patches_nothing(env):
    code = textwrap.dedent("""
        import sys, triton, utlx
        from triton.backends.compiler import GPUTarget
        from utlx import fork_surface
        try:
            triton.Config({}, ctas_per_cga=(1, 1, 1))
            accepted = True
        except TypeError:
            accepted = False
        print(accepted, fork_surface.installed(), hasattr(GPUTarget("cuda", 90, 32), "is_cuda_backend"))
    """)
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path[:0] = {SRC!r}\n" + code],
                          capture_output=True, text=True, timeout=180,
                          env={"PATH": "/usr/bin:/bin", **env})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["False", "False", "False"]


def test_autotune_key_names_that_are_not_arguments_are_ignored():
    """The fork (and Triton 3.6-3.8) ignore them; Triton 3.9 raises at decoration unless utlx leaves them out."""
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 16})], key=["n", "NOT_AN_ARGUMENT"])
    @triton.jit
    def _kernel(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)

    from utlx import compat

    want = ["n"] if compat.AUTOTUNER_REJECTS_UNKNOWN_KEYS else ["n", "NOT_AN_ARGUMENT"]  # older: kept, never used
    assert list(_kernel.keys) == want


@triton.jit
def _streaming_copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, cache_modifier=".cs") + 1.0)


def _compile_streaming(block: int):
    from triton.compiler import ASTSource

    src = ASTSource(_streaming_copy, {"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": block})
    return triton.compile(src, target=GPUTarget("hip", "gfx942", 64))


@pytest.mark.smoke
def test_streaming_loads_compile_on_every_version_as_on_3_8():
    """``tl.load(cache_modifier=".cs")`` (the AMD tutorials' streaming loads): loads take it from Triton 3.8 on;
    utlx gives 3.6/3.7 the same meaning, so the AMDGCN load is non-temporal everywhere."""
    amdgcn = _compile_streaming(256).asm["amdgcn"]
    loads = [line for line in amdgcn.splitlines() if "buffer_load_dword" in line or "global_load_dword" in line]
    assert loads and all(" nt" in line for line in loads), loads


@pytest.mark.smoke
@pytest.mark.skipif(triton.__version__ >= "3.8", reason="Triton 3.8+ loads take '.cs' themselves")
def test_streaming_loads_are_stocks_error_again_when_utlx_is_disabled():
    import tritonx

    tritonx.disable_plugins(["utlx"])
    try:
        with pytest.raises(Exception, match=r"Cache modifier \.cs not supported"):
            _compile_streaming(128)  # another specialisation: not served from the cache of the test above
    finally:
        tritonx.enable_plugins(["utlx"])


@pytest.mark.smoke
def test_aggregates_without_init_get_the_field_constructor_on_every_version():
    """``@aggregate`` classes without ``__init__`` (fbtriton's ``amd_fa_cluster``): Triton 3.8+ builds the
    constructor from the annotations; utlx gives 3.6/3.7 the same one, so the kernel compiles everywhere."""
    from triton.compiler import ASTSource
    from triton.language.core import _aggregate

    # Real (not string) annotations, as in a file without ``from __future__ import annotations``: 3.6/3.7 check
    # each field's value against its annotation with isinstance.
    Pair = _aggregate(type("Pair", (), {"__annotations__": {"lo": tl.tensor, "hi": tl.tensor}}))

    @triton.jit
    def kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        p = Pair(tl.load(x_ptr + offs), hi=tl.load(x_ptr + BLOCK + offs))
        tl.store(y_ptr + offs, p.lo * 2.0 + p.hi)

    src = ASTSource(kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    ttir = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ttir"]
    assert ttir.count("tt.load") == 2 and "arith.mulf" in ttir and "arith.addf" in ttir
