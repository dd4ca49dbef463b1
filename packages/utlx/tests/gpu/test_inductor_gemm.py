"""torch.compile(mode="max-autotune") of GEMMs with ``utlx.inductor`` on Hopper: utlx's template is offered
(``allow``) or the only choice (``force``), and the compiled outputs match float32 eager.

Checked, on fresh random bf16/fp16 data against the same function run eagerly in float32: mm (square and ragged),
addmm, bmm, linear + bias + GELU and a SwiGLU MLP, in both modes; that ``utlx.inductor.stats["gemm"]`` counted
the utlx choice as added for every GEMM lowering of the graph (and, in force, as the only one); in force, that the
generated code runs the utlx kernel and, for linear + bias + GELU, that the bias and the GELU are in the utlx
kernel itself (Inductor fused its epilogue). Not checked here: speed (``tools/bench/bench_inductor_gemm.py``).
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.gpu

os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")  # the utlx compile must not reuse a stock graph
os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)

if torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("the utlx GEMM template needs sm_90 (TMA, wgmma)", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402
import utlx.inductor  # noqa: E402
from torch._inductor import config  # noqa: E402
from torch._inductor.utils import run_and_get_code  # noqa: E402


def _rand(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=dtype) / shape[-1] ** 0.25


def _mm(dtype, m=2048, n=2048, k=2048):
    return (lambda a, b: a @ b), (_rand(m, k, dtype=dtype), _rand(k, n, dtype=dtype)), {1}


def _addmm(dtype):
    m, n, k = 1024, 1536, 768
    return (lambda c, a, b: torch.addmm(c, a, b, beta=0.5)), (
        _rand(n, dtype=dtype), _rand(m, k, dtype=dtype), _rand(k, n, dtype=dtype)), {1}


def _bmm(dtype):
    return torch.bmm, (_rand(4, 512, 256, dtype=dtype), _rand(4, 256, 384, dtype=dtype)), {1}


def _linear_gelu(dtype):
    m, n, k = 2048, 4096, 1024
    return (lambda x, w, b: F.gelu(F.linear(x, w, b))), (
        _rand(m, k, dtype=dtype), _rand(n, k, dtype=dtype), _rand(n, dtype=dtype)), {1}


def _swiglu(dtype):
    m, d, h = 1024, 1024, 2816
    x, wg, wu = _rand(m, d, dtype=dtype), _rand(h, d, dtype=dtype), _rand(h, d, dtype=dtype)
    wd = _rand(d, h, dtype=dtype)
    return (lambda x, wg, wu, wd: F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)), (x, wg, wu, wd), {2, 3}


#: Each case: (function, inputs, how many GEMM lowerings it may have: Inductor may unfuse addmm's bias into an mm
#: epilogue, or merge the SwiGLU's gate and up projections of one input into one GEMM).
CASES = {"mm": _mm, "mm_ragged": lambda dt: _mm(dt, 1000, 1544, 776), "addmm": _addmm, "bmm": _bmm,
         "linear_bias_gelu": _linear_gelu, "swiglu": _swiglu}


def _run(mode: str, fn, args):
    torch._dynamo.reset()
    utlx.inductor.enable(mode)
    try:
        compiled = torch.compile(fn, mode="max-autotune", fullgraph=True, dynamic=False)
        with config.patch(benchmark_epilogue_fusion=False):
            out, code = run_and_get_code(compiled, *args)
    finally:
        utlx.inductor.disable()
    return out, "\n".join(code)


#: Every case in bf16; fp16 (the same templates with another wgmma type) on two of them: each case is a max-autotune
#: compile of 10-20 s on the H200, and the GPU session's time is short.
DTYPE_CASES = [(torch.bfloat16, c) for c in CASES] + [(torch.float16, c) for c in ("mm_ragged", "linear_bias_gelu")]


@pytest.mark.parametrize("mode", ["allow", "force"])
@pytest.mark.parametrize(("dtype", "case"), DTYPE_CASES,
                         ids=[f"{'bf16' if d == torch.bfloat16 else 'fp16'}-{c}" for d, c in DTYPE_CASES])
def test_compiled_gemm_matches_fp32_eager_and_utlx_was_offered(case, mode, dtype):
    fn, args, gemms = CASES[case](dtype)
    ref = fn(*(a.float() for a in args))
    stats = utlx.inductor.stats["gemm"]
    added, forced = sum(stats["added"].values()), sum(stats["forced"].values())
    out, code = _run(mode, fn, args)
    assert sum(stats["added"].values()) - added in gemms, stats
    if mode == "force":
        assert sum(stats["forced"].values()) - forced in gemms, stats
    err = (out.float() - ref).abs().max().item() / ref.abs().max().item()
    assert err < (2e-2 if dtype == torch.bfloat16 else 5e-3), err
    if mode == "force":
        # a utlx kernel (persistent or warp-specialized) is what runs: Inductor renames every template kernel
        # (triton_tem_fused_...), so it is told by its source, which imports utlx's device helpers
        assert "from utlx.kernels" in code and "import utlx.language as tlx" in code, code[:2000]
        if case == "linear_bias_gelu":  # the bias and the GELU are in the utlx kernel: its epilogue was fused
            kernels = [part for part in code.split("async_compile.triton(") if "from utlx.kernels" in part]
            assert kernels and all("erf" in part and "in_ptr" in part for part in kernels), kernels[:1]
