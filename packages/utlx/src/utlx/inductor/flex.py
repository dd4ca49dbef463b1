"""The utlx FlexAttention forward as an Inductor template choice: where it applies, and the choice itself.

:func:`choices` gets what the stock flex lowering gave its own template (recorded by :mod:`utlx.inductor`'s
seam) and returns the utlx template's choice for the same inputs, layout, subgraphs and mutated outputs, or an
empty list where the utlx kernel does not apply (then only the stock choices remain).
"""

from __future__ import annotations

import functools
from typing import Any

from utlx.inductor.applies import is_hopper, static_int
from utlx.inductor.flex_template import SOURCE

#: Head dims of the utlx template (one wgmma K of 64 or 128, TMA rows of 128 or 256 bytes), as utlx.attention.
HEAD_DIMS = (64, 128)
#: Rows per CTA (two consumer warpgroups of 64) and columns per KV block.
TILE_M = 128
BLOCK_N = 128


def grid(batch_size: Any, q_heads: Any, num_queries: Any, d_model: Any, meta: dict[str, Any], *, cdiv: Any
         ) -> tuple[Any, Any, Any]:
    """One CTA per (128-row Q tile, batch, query head): the stock flex grid's convention, with TILE_M rows."""
    return cdiv(num_queries, meta["TILE_M"]), batch_size, q_heads


@functools.cache
def template() -> Any:
    """The ``TritonTemplate`` (made once: Inductor refuses a second template of the same name)."""
    from torch._inductor.select_algorithm import SymbolicGridFn, TritonTemplate

    return TritonTemplate(name="utlx_flex_attention_hopper", grid=SymbolicGridFn(grid), source=SOURCE)


def why_not(recorded: dict[str, Any]) -> str | None:
    """Why the utlx template does not apply to this flex call (one line), or None when it does."""
    import torch

    options = recorded
    nodes = recorded.get("input_nodes") or []
    if len(nodes) != 9:
        return f"unexpected flex template inputs ({len(nodes)})"
    query, key, value = nodes[:3]
    if not is_hopper(query.get_device()):
        return "not an NVIDIA sm_90 device"
    if query.get_dtype() not in (torch.float16, torch.bfloat16):
        return f"dtype {query.get_dtype()} (fp16/bf16 only)"
    if options.get("QK_HEAD_DIM") != options.get("V_HEAD_DIM") or options.get("QK_HEAD_DIM") not in HEAD_DIMS:
        return f"head dims {options.get('QK_HEAD_DIM')}/{options.get('V_HEAD_DIM')} (64 or 128, equal)"
    for name in ("SPARSE_Q_BLOCK_SIZE", "SPARSE_KV_BLOCK_SIZE"):
        size = options.get(name)
        if not isinstance(size, int) or size % 128:
            return f"{name}={size} (a multiple of 128)"
    if options.get("PRESCALE_QK"):
        return "PRESCALE_QK"
    for name, node in (("query", query), ("key", key), ("value", value)):
        strides = [static_int(s) for s in node.get_stride()]
        if strides[-1] != 1 or any(s is None or s % 8 for s in strides[:-1]):
            return f"{name} strides {node.get_stride()} (TMA: unit inner stride, 16-byte aligned rows)"
    return None


#: The utlx template's variants (each one choice): ``OVERLAP`` is the FA3 consumer loop (S_{j+1} issued before
#: the softmax of j, P_j V_j in flight during it), the plain loop waits for each GEMM; ``NUM_KV`` is the K/V ring
#: depth. Inductor's autotuning benchmarks them all (``allow`` mode: with the stock configurations too) and keeps
#: the fastest; which wins is a property of the GPU and the mods, not measured here.
VARIANTS: tuple[dict[str, Any], ...] = (
    {"OVERLAP": True, "NUM_KV": 2},
    {"OVERLAP": False, "NUM_KV": 2},
)
#: Extra ring depths where shared memory has room (D=64: 3 K/V slots of 16 KB each; D=128 would need 224 KB).
DEEP_VARIANTS: dict[int, tuple[dict[str, Any], ...]] = {
    64: ({"OVERLAP": True, "NUM_KV": 3}, {"OVERLAP": False, "NUM_KV": 3}),
}


def variants(head_dim: int) -> tuple[dict[str, Any], ...]:
    """The template kwargs of every utlx choice for this head dim."""
    return VARIANTS + DEEP_VARIANTS.get(head_dim, ())


def score_mod_is_identity(recorded: dict[str, Any]) -> bool:
    """True where the score_mod is ``lambda score, b, h, m, n: score`` (no score_mod given, or one that returns its
    score): then the template folds SM_SCALE into the softmax's exponent (``SCORE_IS_QK``). Inductor lowers such a
    subgraph to a buffer over its ``score`` placeholder itself (``kernel/flex/common.py``
    ``build_subgraph_module_buffer``: the output is the placeholder's ``InputBuffer``, which the template's
    ``modification`` renders as ``post_mod_scores = (qk)``); anything else (a captured tensor, an expression, another
    placeholder) is a computed buffer or another name, and keeps the general path."""
    from torch._inductor import ir

    subgraphs = recorded.get("subgraphs") or []
    score = subgraphs[0] if subgraphs else None
    data = getattr(score, "data", None)
    return (isinstance(score, ir.ComputedBuffer) and isinstance(data, ir.InputBuffer)
            and data.get_name() == "score")


def choices(recorded: dict[str, Any]) -> list[Any]:
    """The utlx choices for a recorded stock flex template call, one per variant (empty where it does not apply)."""
    out: list[Any] = []
    for variant in variants(recorded.get("QK_HEAD_DIM")):
        kwargs = dict(recorded)
        kwargs.update(BLOCK_M=TILE_M // 2, TILE_M=TILE_M, BLOCK_N=BLOCK_N, CONSUMER_REGS=240, PTX_CVT=True,
                      SCORE_IS_QK=score_mod_is_identity(recorded), num_warps=4, num_stages=1, USE_TMA=True,
                      **variant)
        error = template().maybe_append_choice(out, **kwargs)
        if error is not None:
            raise RuntimeError(f"utlx.inductor: the utlx flex template failed to generate ({variant}): {error}")
    return out
