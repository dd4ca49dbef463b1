"""Cases run under ``TRITON_INTERPRET=1`` in a fresh interpreter (``python dsl_interp_cases.py <case>``).

Each case runs a kernel of ``dsl_kernels`` on fresh random data and compares it with a numpy reference;
it prints ``ok <case>`` or raises. Why a script: ``TRITON_INTERPRET`` must be set before Triton is
imported, and the other tests of this process compile for GPU targets.
"""

from __future__ import annotations

import os
import sys

import numpy as np


def rotate() -> None:
    import dsl_kernels as dk
    import torch

    rng = np.random.default_rng()
    x = torch.from_numpy(rng.integers(-(2**31), 2**31 - 1, size=512, dtype=np.int64).astype(np.int32))
    out = torch.empty_like(x)
    r = int(rng.integers(1, 32))
    dk.rotate_kernel[(4,)](x, out, N=128, R=r)
    u = x.numpy().view(np.uint32)
    ref = ((u << np.uint32(r)) | (u >> np.uint32(32 - r))).view(np.int32)
    assert np.array_equal(out.numpy(), ref), (r, out.numpy()[:4], ref[:4])
    dk.helper_kernel[(1,)](x, out, N=128)
    assert np.array_equal(out.numpy()[:128], ((u << np.uint32(5)) | (u >> np.uint32(27))).view(np.int32)[:128])


def shared() -> None:
    import dsl_kernels as dk
    import torch

    x = torch.randn(256, dtype=torch.float32)
    out = torch.empty_like(x)
    dk.shared_kernel[(2,)](x, out, N=128)
    assert torch.equal(out, x * 2.0)


def native_meaning() -> None:
    import dsl_kernels as dk
    import torch

    x = torch.randn(128, dtype=torch.float32)
    out = torch.empty_like(x)
    dk.native_kernel[(1,)](x, out, N=128)
    assert torch.allclose(out, x + x + 1.0)


def raw_value() -> None:
    import dsl_kernels as dk
    import torch

    out = torch.zeros(1, dtype=torch.int32)
    dk.target_kernel[(1,)](out)
    assert int(out[0]) == -1


def bad_argument() -> None:
    import dsl_kernels as dk
    import torch
    from triton.runtime.interpreter import InterpreterError

    x = torch.zeros(128, dtype=torch.int32)
    try:
        dk.rotate_kernel[(1,)](x, x, N=128, R=33)
    except InterpreterError as exc:
        text = str(exc)
        assert "dsltest.rotate_left: argument 'n' must satisfy 0 <= n < 32, got 33" in text, text
        source = open(dk.__file__).read().splitlines()
        line = 1 + next(i for i, t in enumerate(source) if "dt.rotate_left(tl.load(x_ptr + offs), R)" in t)
        assert f"dsl_kernels.py:{line})" in text, text  # the kernel line that calls the op
    else:
        raise AssertionError("an out-of-range rotation was accepted")


def missing_cpu_body() -> None:
    import dsl_kernels as dk
    import torch
    from triton.runtime.interpreter import InterpreterError

    x = torch.zeros(64, dtype=torch.float32)
    try:
        dk.cuda_only_kernel[(1,)](x, N=64)
    except InterpreterError as exc:
        assert "dsltest.cuda_only: has no interpreter implementation (TRITON_INTERPRET=1)" in str(exc), str(exc)
    else:
        raise AssertionError("an op without CPU body ran")


def outside_a_kernel() -> None:
    import dsl_ops as dt
    from tritonx.errors import DslError

    try:
        dt.rotate_left(1, 2)
    except DslError as exc:
        assert "dsltest.rotate_left can only be called inside a @triton.jit kernel" in str(exc), str(exc)
    else:
        raise AssertionError("an op ran outside a kernel")


CASES = {f.__name__: f for f in (rotate, shared, native_meaning, raw_value, bad_argument, missing_cpu_body,
                                 outside_a_kernel)}

if __name__ == "__main__":
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    for name in sys.argv[1:]:
        CASES[name]()
        print(f"ok {name}")
