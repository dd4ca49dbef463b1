"""GPU GEMM correctness sweep (issue 15): every kernel style x tile x dtype on every sweep shape.

Each case is one test: its shapes run on fresh random data with a NaN-poisoned output and are compared
with a float32 reference (relative Frobenius error under ``gemm_sweep.TOLERANCE``). All kernels are
compiled first, in parallel worker processes (``kernel.run(..., warmup=True)`` into the shared Triton
cache), because compiling ~500 specializations one by one would dominate the run.

``UTLX_SWEEP=full`` runs the whole tile product instead of the all-pairs cover (see gemm_sweep).
"""

from __future__ import annotations

import os
import warnings

import pytest

pytestmark = pytest.mark.gpu

from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)
from gpu_shared import precompile  # noqa: E402

if torch.cuda.get_device_capability()[0] != 9:  # pragma: no cover
    pytest.skip("the sweep's kernels need sm_90 (wgmma, TMA, cp.async)", allow_module_level=True)

import gemm_sweep as G  # noqa: E402

FULL = os.environ.get("UTLX_SWEEP", "") == "full"
CASES = G.cases(full=FULL)


@pytest.fixture(scope="module", autouse=True)
def precompiled():
    yield precompile("sweep", CASES, G.warm_chunk)


@pytest.mark.parametrize(("style", "tile", "dtype"), CASES, ids=[f"{s}-{t.name}-{d}" for s, t, d in CASES])
def test_sweep(style, tile, dtype):
    kernel = G.STYLES[style]
    tol = G.TOLERANCE[dtype]
    bad = []
    for i, (M, N, K) in enumerate(G.shapes(tile)):
        for rep in range(2):  # a race shows as an error that moves between runs
            a, b, c = G.inputs(M, N, K, getattr(torch, dtype), "cuda", seed=1000 * i + rep)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # staged narrow copies warn by design (copy_width)
                kernel.launch(tile, a, b, c)
            torch.cuda.synchronize()
            err = G.relative_error(c, a, b)
            if not err <= tol:  # NaN fails too
                bad.append(f"{M}x{N}x{K} run {rep}: rel err {err:.3g}")
    assert not bad, f"{style} {tile.name} {dtype}: " + "; ".join(bad)
