"""On a GPU: pipelines change what real launches run, results stay right, and the JIT's in-memory
cache follows activation (a pipeline never reuses another's kernel; switching back is a hit)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():  # pragma: no cover - CPU machines
    pytest.skip("needs an NVIDIA GPU", allow_module_level=True)

import triton  # noqa: E402
import tritonx  # noqa: E402
from tritonx.integration.probe_kernels import probe_matmul  # noqa: E402

#: a JIT function of its own (its own in-memory cache) over tritonx's probe matmul: M, N, K below are whole tiles
mm = triton.jit(probe_matmul.fn)


def _run(M=512, N=384, K=1024):
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    kernel = mm[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    ref = a.float() @ b.float()
    torch.testing.assert_close(c.float(), ref, atol=0.5, rtol=2e-2)
    return kernel


def test_pipelines_key_the_in_memory_cache_on_real_launches():
    # Triton 3.7+ adds the hook's key to the JIT key only while a hook is installed: install it first,
    # as any activation does, so the first stock launch is keyed like the later ones
    from tritonx.runtime import current

    current().hook.ensure_installed()
    stock = _run()
    p = tritonx.Pipeline("gpu-nopipe").disable("tritongpu-pipeline")
    with tritonx.activate(p):
        edited = _run()
    back = _run()
    with tritonx.activate(p):
        edited_again = _run()
    assert "cp.async" in stock.asm["ptx"]
    assert "cp.async" not in edited.asm["ptx"]
    assert back is stock  # switching back: in-memory hit
    assert edited_again is edited


def test_python_pass_runs_once_per_pipeline_on_launch():
    calls = []
    p = tritonx.Pipeline("gpu-count").insert_after("tritongpu-coalesce", lambda m, c: calls.append(c.target))
    with tritonx.activate(p):
        _run(M=256, N=256, K=256)
        _run(M=256, N=256, K=256)
    assert calls == ["cuda:90"]
