"""Render utlx's Inductor GEMM templates (``utlx.inductor.gemm_template``) without Inductor, for CPU tests.

Inductor cannot lower for a GPU on a machine without one, so the template's Jinja source is rendered here with
stand-ins for Inductor's hooks that emit what Inductor emits in their place: the ``@triton.jit`` signature with
the constexpr defines, literal sizes and strides, and a ``store_output`` that applies an epilogue (addmm's bias,
GELU, a cast) to the fp32 accumulator and stores it, the way Inductor's fused epilogue code reads. The compile
tests compile the result for ``cuda:90``; the interpreter tests run it under ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

from typing import Any

import jinja2
from template_render import contiguous_strides, load  # noqa: F401 (load: the renderers' API)

#: Epilogues the stand-in ``store_output`` can emit: none, addmm's bias (``beta * bias + alpha * acc``, bias a row
#: vector of N), and bias followed by exact GELU (``0.5 x (1 + erf(x / sqrt 2))``, Inductor's default; spelled
#: ``tl.math.erf``, which the interpreter runs, where Inductor writes ``libdevice.erf``: the same function).
EPILOGUES = ("none", "bias", "bias_gelu")


def render(source: str, defines: dict[str, Any], shapes: dict[str, tuple[int, ...]],
           strides: dict[str, list[int]] | None = None, epilogue: str = "none", alpha: float = 1.0,
           beta: float = 1.0) -> str:
    """``source`` with Inductor's hooks filled in. ``shapes``: ``A``, ``B`` (2-D, or 3-D for bmm) and the output
    ``C``; ``strides``: per name (contiguous where not given). The kernel is ``utlx_gemm_kernel(A, B[, bias],
    out_ptr0)``."""
    if epilogue not in EPILOGUES:
        raise ValueError(f"gemm_render: epilogue must be one of {EPILOGUES}, got {epilogue!r}")
    strides = {name: list(strides.get(name, contiguous_strides(shape)) if strides else contiguous_strides(shape))
               for name, shape in shapes.items()}
    args = ["A", "B", *(["in_ptr2"] if epilogue != "none" else []), "out_ptr0"]
    define_text = "\n".join(["INDEX_DTYPE : tl.constexpr = tl.int32"]
                            + [f"{k} : tl.constexpr = {v!r}" for k, v in defines.items()])
    batched = len(shapes["C"]) == 3

    def def_kernel(*names: str) -> str:
        assert list(names) == ["A", "B"], names
        body = "\n".join("    " + line for line in define_text.splitlines())
        return f"@triton.jit\ndef utlx_gemm_kernel({', '.join(args)}):\n{body}"

    def store_output(indices: tuple[str, ...], val: str, mask: str, indent_width: int = 4,
                     val_shape: tuple[str, ...] | None = None) -> str:
        c = strides["C"]
        if batched:
            q, m, n = indices
            offset = f"{q} * {c[0]} + {m} * {c[1]} + {n} * {c[2]}"
        else:
            m, n = indices
            offset = f"{m} * {c[0]} + {n} * {c[1]}"
        lines = [f"tmp0 = {val}"]
        if epilogue == "none":
            out = "tmp0"
        else:  # what Inductor emits for addmm's epilogue, then a fused pointwise GELU
            lines += [f"tmp1 = tl.load(in_ptr2 + ({n}), {mask}, eviction_policy='evict_last').to(tl.float32)",
                      f"tmp2 = tmp0 * {alpha!r} + tmp1 * {beta!r}"]
            out = "tmp2"
            if epilogue == "bias_gelu":
                lines += ["tmp3 = 0.5 * tmp2 * (1.0 + tl.math.erf(tmp2 * 0.7071067811865476))"]
                out = "tmp3"
        lines.append(f"tl.store(out_ptr0 + ({offset}), {out}.to(out_ptr0.dtype.element_ty), {mask})")
        return ("\n" + " " * indent_width).join(lines)

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    ctx = {"def_kernel": def_kernel, "store_output": store_output,
           "size": lambda name, i: str(shapes[name][i]), "stride": lambda name, i: str(strides[name][i])}
    header = "import triton\nimport triton.language as tl\n"
    return header + env.from_string(source).render(**ctx)


def mm_defines(bm: int, bn: int, bk: int, stages: int, *, a_col: bool = False, b_col: bool = False,
               num_sms: int = 132, group_m: int = 8) -> dict[str, Any]:
    """The constexprs utlx's heuristic gives the template (``utlx.inductor.gemm.template_kwargs``'s keys)."""
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m, "NUM_STAGES": stages,
            "NUM_SMS": num_sms, "A_COL": a_col, "B_COL": b_col}
