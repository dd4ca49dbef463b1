"""The fork's ``triton.language.extra.cuda.inline_ptx_lib``: packed fp32 pair arithmetic and a fast tanh.

Why here: Meta's fork ships this module and its Blackwell tutorials import it by that path; stock Triton has no
such module. While ``triton.language.extra.tlx`` is utlx, ``triton.language.extra.cuda.inline_ptx_lib`` resolves to
this module (``utlx.language._alias``). Each name is a ``utlx`` op: on Blackwell it is one ``.f32x2`` PTX
instruction per pair of elements (``mul``/``sub``/``fma``/``add``: PTX ISA 8.6, sm_100), under the interpreter its
plain fp32 arithmetic; other targets get an error naming the op (the fork defines them for sm_100 only).
"""

from __future__ import annotations

from utlx.language._op import op


@op
def _mul_f32x2(a, b, _semantic=None):
    """``a * b`` (fp32), two elements per ``mul.rn.f32x2``."""


@op
def _sub_f32x2(a, b, _semantic=None):
    """``a - b`` (fp32), two elements per ``sub.rn.f32x2``."""


@op
def _fma_f32x2(a, b, c, _semantic=None):
    """``a * b + c`` (fp32, fused), two elements per ``fma.rn.f32x2``."""


@op
def _reduce_fadd2(p0a, p1a, p0b, p1b, _semantic=None):
    """Two independent sums in one ``add.rn.f32x2``: returns ``(p0a + p0b, p1a + p1b)``."""


@op
def tanh_approx_fp32(x, _semantic=None):
    """``tanh(x)`` with the hardware approximation (``tanh.approx.f32``)."""


__all__ = ["_fma_f32x2", "_mul_f32x2", "_reduce_fadd2", "_sub_f32x2", "tanh_approx_fp32"]
