"""utlx's Inductor GEMM templates, rendered (``gemm_render``'s stand-ins for Inductor's hooks), run on the CPU.

Under ``TRITON_INTERPRET=1`` the rendered kernel runs with utlx's interpreter (TMA loads into the ring,
mbarriers, wgmma) on small ragged problems (M, N, K not multiples of the tile; K and N multiples of 8, a TMA
rule; M too where A is column-major), persistent on 2 programs so each walks several tiles through one ring;
outputs are checked against float32 torch references on fresh random data: plain mm (row- and column-major
operands), addmm's bias + GELU epilogue (a ``linear`` + GELU: column-major weight), and bmm over a batch; the
warp-specialized template (producer task + two replicated consumers) for mm and linear + bias + GELU.
"""

from __future__ import annotations

import pytest
import torch
from gemm_render import load, mm_defines, render
from utlx.inductor.gemm_template import BMM_SOURCE, MM_SOURCE, WS_MM_SOURCE
from utlx_interp_host import randn

TILE = dict(bm=32, bn=32, bk=32, stages=3)


def _run(tmp_path, name, source, a, b, out, bias=None, epilogue="none", num_sms=2, grid=None, **layout):
    shapes = {"A": tuple(a.shape), "B": tuple(b.shape), "C": tuple(out.shape)}
    strides = {"A": list(a.stride()), "B": list(b.stride()), "C": list(out.stride())}
    defines = mm_defines(TILE["bm"], TILE["bn"], TILE["bk"], TILE["stages"], num_sms=num_sms, group_m=2, **layout)
    if source is WS_MM_SOURCE:
        defines["CONSUMER_REGS"] = 232
    module = load(render(source, defines, shapes, strides, epilogue=epilogue), tmp_path, name)
    args = (a, b, bias, out) if bias is not None else (a, b, out)
    module.utlx_gemm_kernel[grid or (num_sms,)](*args, num_warps=4)


def _close(out: torch.Tensor, ref: torch.Tensor) -> None:
    scale = ref.abs().max().item()
    err = (out.float() - ref).abs().max().item()
    assert err <= 2e-2 * max(1.0, scale), (err, scale)


#: (template, m, n, k, a column-major, b column-major): the persistent template over two ragged shapes and three
#: layouts; the warp-specialized one (a producer task and two replicated consumers, each storing its half) over two.
MM_CASES = [("persistent", shape, layout) for shape in [(72, 48, 104), (40, 24, 56)]
            for layout in [(False, False), (False, True), (True, False)]]
MM_CASES += [("ws", (72, 48, 104), layout) for layout in [(False, False), (True, True)]]


@pytest.mark.parametrize(("template", "shape", "layout"), MM_CASES)
def test_mm(tmp_path, template, shape, layout):
    (m, n, k), (a_col, b_col) = shape, layout
    a32, b32 = randn(m, k), randn(k, n)
    a = a32.half().T.contiguous().T if a_col else a32.half()
    b = b32.half().T.contiguous().T if b_col else b32.half()
    out = torch.full((m, n), float("nan"), dtype=torch.half)
    source = {"persistent": MM_SOURCE, "ws": WS_MM_SOURCE}[template]
    _run(tmp_path, f"interp_{template}_mm_{m}_{int(a_col)}{int(b_col)}", source, a, b, out, a_col=a_col, b_col=b_col)
    _close(out, a.float() @ b.float())


@pytest.mark.parametrize("source", [MM_SOURCE, WS_MM_SOURCE], ids=["persistent", "ws"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_linear_bias_gelu_epilogue(tmp_path, dtype, source):
    m, n, k = 70, 40, 104
    x, weight, bias = randn(m, k).to(dtype), randn(n, k).to(dtype), randn(n).to(dtype)
    out = torch.full((m, n), float("nan"), dtype=dtype)
    name = f"interp_linear_gelu_{dtype}_{int(source is WS_MM_SOURCE)}".replace(".", "_")
    _run(tmp_path, name, source, x, weight.T, out, bias=bias, epilogue="bias_gelu", b_col=True)
    ref = torch.nn.functional.gelu(x.float() @ weight.float().T + bias.float())
    _close(out, ref)


def test_bmm(tmp_path):
    batch, m, n, k = 3, 40, 48, 72
    a, b = randn(batch, m, k).half(), randn(batch, k, n).half()
    out = torch.full((batch, m, n), float("nan"), dtype=torch.half)
    _run(tmp_path, "interp_bmm", BMM_SOURCE, a, b, out, num_sms=1, grid=(1, batch))
    _close(out, a.float() @ b.float())
