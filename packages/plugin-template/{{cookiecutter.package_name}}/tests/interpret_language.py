"""Run the plugin's op under Triton's interpreter against a numpy reference (``TRITON_INTERPRET=1``).

A script, not a test module: the interpreter must be on before Triton is imported, and the tests that
compile for GPU targets run in the pytest process. ``tests/test_language.py`` runs it.
"""

from __future__ import annotations

import os

import numpy as np
import torch
{%- if cookiecutter.variant == "python" %}
from triton.runtime.interpreter import InterpreterError

from kernels import rotate
{%- else %}

from kernels import square_op_add
{%- endif %}

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
rng = np.random.default_rng()
{%- if cookiecutter.variant == "python" %}

n, bits = 1000, int(rng.integers(1, 32))
x = torch.from_numpy(rng.integers(-(2**31), 2**31 - 1, size=n, dtype=np.int64).astype(np.int32))
out = torch.zeros_like(x)
rotate[(4,)](x, out, n, BLOCK=256, BITS=bits)
u = x.numpy().view(np.uint32)
expected = ((u << np.uint32(bits)) | (u >> np.uint32(32 - bits))).view(np.int32)
assert np.array_equal(out.numpy(), expected), (bits, out[:4], expected[:4])
print("ok rotate_left")

try:
    rotate[(1,)](x, out, n, BLOCK=256, BITS=40)
except InterpreterError as exc:
    assert "{{ cookiecutter.plugin_name }}.rotate_left: argument 'n' must satisfy 0 <= n < 32, got 40" in str(exc), exc
    assert "kernels.py:" in str(exc), exc  # the kernel line calling the op
    print("ok error")
{%- else %}

n = 1000
x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
y = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
out = torch.zeros_like(x)
square_op_add[(4,)](x, y, out, n, BLOCK=256)
expected = x.numpy() * x.numpy() + y.numpy()
assert np.allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6), (out[:4], expected[:4])
print("ok square")
{%- endif %}
