"""``tritonx.compile_for`` binds JIT parameter defaults as a launch does, and names a missing parameter."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
import tritonx


@triton.jit
def _scale(x_ptr, n, BLOCK: tl.constexpr = 128, FACTOR: tl.constexpr = 3.0):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * FACTOR, mask=offs < n)


def test_parameters_left_at_their_default_are_bound():
    k = tritonx.compile_for("cuda:90", _scale, {"x_ptr": "*fp32", "n": "i32"}, {"FACTOR": 2.0})
    ttir = k.asm["ttir"]
    assert "tt.make_range {end = 128 : i32, start = 0 : i32}" in ttir  # BLOCK's default
    assert "2.000000e+00" in ttir and "3.000000e+00" not in ttir  # FACTOR as given


def test_a_parameter_with_no_value_and_no_default_is_named():
    with pytest.raises(ValueError, match=r"compile_for\(_scale\).*\bn\b"):
        tritonx.compile_for("cuda:90", _scale, {"x_ptr": "*fp32"}, {})
