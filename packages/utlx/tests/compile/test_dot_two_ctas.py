"""``tl.dot(..., two_ctas=True)`` (Meta's fork surface): compiled as each CTA's own dot, byte-identical PTX to the
plain dot, with a UtlxPerformanceWarning naming the line (utlx/fork_surface.py, seam ``utlx.dot-two-ctas``)."""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
from _helpers import compile_kernel
from utlx.compiler.common.errors import UtlxPerformanceWarning


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, TWO: tl.constexpr):
    rm = tl.arange(0, 128)
    rn = tl.arange(0, 128)
    rk = tl.arange(0, 64)
    a = tl.load(a_ptr + rm[:, None] * 64 + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * 128 + rn[None, :])
    if TWO:
        acc = tl.dot(a, b, tl.zeros((128, 128), tl.float32), two_ctas=True)
    else:
        acc = tl.dot(a, b, tl.zeros((128, 128), tl.float32))
    tl.store(c_ptr + rm[:, None] * 128 + rn[None, :], acc)


_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}


def test_dot_two_ctas_is_the_per_cta_dot_with_a_warning_naming_the_line():
    with pytest.warns(UtlxPerformanceWarning) as record:
        two = compile_kernel(_dot, _SIG, {"TWO": True}, "cuda:100").asm["ptx"]
    (w,) = [r for r in record if issubclass(r.category, UtlxPerformanceWarning)]
    line = _dot.fn.__code__.co_firstlineno + 8  # the two_ctas=True call
    assert re.search(rf"utlx\.dot: two_ctas=True .* \(test_dot_two_ctas\.py:{line}\)", str(w.message)), w.message
    one = compile_kernel(_dot, _SIG, {"TWO": False}, "cuda:100").asm["ptx"]
    assert re.search(r"tcgen05\.mma\.cta_group::1\.kind::f16", two)
    assert "cta_group::2" not in two
    strip = re.compile(r"^\s*\.(loc|file)\b.*$|_dot_\w+", re.M)  # line tables differ (another source line)
    assert strip.sub("", two) == strip.sub("", one)


@triton.jit
def _dot_bad(a_ptr, b_ptr, c_ptr, FLAG):
    rm = tl.arange(0, 16)
    a = tl.load(a_ptr + rm[:, None] * 16 + rm[None, :])
    tl.store(c_ptr + rm[:, None] * 16 + rm[None, :], tl.dot(a, a, two_ctas=FLAG))


def test_dot_two_ctas_must_be_a_compile_time_bool():
    with pytest.raises(Exception) as info:
        compile_kernel(_dot_bad, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "FLAG": "i32"}, {},
                       "cuda:100")
    assert "tl.dot: two_ctas must be a compile-time bool" in str(info.value)
