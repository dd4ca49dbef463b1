"""The utlx FlexAttention template rendered without Inductor, the way Inductor renders it (test helper).

Why a stand-in: Inductor only lowers flex_attention for a GPU it can see, and there is none on the CPU machines
that run the compile and interpreter tests. :func:`render` fills the template's ``{{...}}`` hooks with what
Inductor emits in their place for static shapes: the kernel signature (the nine named inputs, then one
``in_ptrN`` per buffer a mod captures, then ``out_ptr0``) and constexpr defines, literal strides and sizes,
the inlined score_mod / mask_mod code and the output store. The mod bodies are written the way Inductor's
``ModificationWrapper`` writes them: a captured buffer is ``tl.load(in_ptrN + index)`` of the plain index
name (``doc[q_idx] == doc[kv_idx]`` becomes ``tmp0 = tl.load(in_ptr9 + m)``, ``tmp1 = tl.load(in_ptr9 + n)``,
``tmp2 = tmp0 == tmp1``), and the result is assigned to the output name last.

:func:`block_lists` builds the BlockMask lists (partial and full KV blocks per 128-row Q block) from a dense
mask, and :func:`reference` is the float32 flex forward those tests compare against.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import jinja2
from template_render import contiguous_strides, load  # noqa: F401 (load: the renderers' API)

NAMED = ["Q", "K", "V", "LSE", "MAX", "KV_NUM_BLKS", "KV_IDX", "FULL_KV_NUM_BLKS", "FULL_KV_IDX"]
BLOCK = 128  # SPARSE_Q_BLOCK_SIZE = SPARSE_KV_BLOCK_SIZE = TILE_M = BLOCK_N

#: score_mods: (body with {score}/{m}/{n}/{h}/{out} and {buf} for the captured buffer, captured buffer or None).
SCORE_MODS: dict[str, tuple[str, str | None]] = {
    "none": ("{out} = ({score})", None),
    # ALiBi with a captured per-head slope tensor: s + slopes[h] * (kv - q)
    "alibi": ("tmp0 = tl.load({buf} + {h})\ntmp1 = {n} - {m}\ntmp2 = tmp1.to(tl.float32)\ntmp3 = tmp0 * tmp2\n"
              "tmp4 = {score} + tmp3\n{out} = tmp4", "slopes"),
    # ALiBi with one literal slope (no captured buffer)
    "alibi-literal": ("tmp0 = ({n} - {m}).to(tl.float32)\n{out} = {score} + tmp0 * 0.0625", None),
    # tanh softcap 20: 20 * tanh(s / 20)
    "softcap": ("tmp0 = {score} * 0.05\ntmp1 = libdevice.tanh(tmp0)\ntmp2 = tmp1 * 20.0\n{out} = tmp2", None),
}
#: mask_mods: (body with {m}/{n}/{out}/{buf}, captured buffer or None).
MASK_MODS: dict[str, tuple[str, str | None]] = {
    "none": ("{out} = True", None),
    "causal": ("tmp0 = {m} >= {n}\n{out} = tmp0", None),
    # only the first 100 query rows see anything: the rest are fully masked rows (O = 0, logsumexp -inf), and
    # a 128-row tile past them has no KV block at all
    "prefix": ("tmp0 = {m} < 100\n{out} = tmp0", None),
    # document mask over a captured int32 tensor of document ids: doc[q] == doc[kv]
    "document": ("tmp0 = tl.load({buf} + {m})\ntmp1 = tl.load({buf} + {n})\ntmp2 = tmp0 == tmp1\n{out} = tmp2", "doc"),
}


@dataclass(frozen=True)
class Problem:
    """One flex forward: shapes (B, HQ, Q_LEN, D) for Q and (B, HKV, KV_LEN, D) for K and V, and its mods."""

    b: int = 1
    hq: int = 2
    hkv: int = 2
    q_len: int = 256
    kv_len: int = 256
    d: int = 128
    score_mod: str = "none"
    mask_mod: str = "none"
    full: bool = True  # HAS_FULL_BLOCKS: full blocks listed apart (they skip mask_mod)
    options: dict[str, Any] = field(default_factory=dict)  # template kwargs: OVERLAP, NUM_KV, ...

    @property
    def captured(self) -> list[str]:
        """Buffers the mods capture, in Inductor's argument order (score_mod's first)."""
        names = [SCORE_MODS[self.score_mod][1], MASK_MODS[self.mask_mod][1]]
        return [n for n in names if n is not None]

    @property
    def args(self) -> list[str]:
        return NAMED + [f"in_ptr{9 + i}" for i in range(len(self.captured))] + ["out_ptr0"]


def defines(p: Problem) -> dict[str, Any]:
    """The constexprs Inductor's ``def_kernel`` defines for this problem (the stock options plus utlx's)."""
    out = {"BLOCK_M": 64, "TILE_M": 128, "BLOCK_N": 128, "NUM_KV": 2, "CONSUMER_REGS": 240, "OVERLAP": False,
           "PTX_CVT": os.environ.get("TRITON_INTERPRET", "0") != "1",  # inline PTX: not in the interpreter
           "QK_HEAD_DIM": p.d, "V_HEAD_DIM": p.d, "SPARSE_Q_BLOCK_SIZE": BLOCK, "SPARSE_KV_BLOCK_SIZE": BLOCK,
           "SM_SCALE": p.d ** -0.5, "GQA_SHARED_HEADS": p.hq // p.hkv, "HAS_FULL_BLOCKS": p.full,
           "IS_DIVISIBLE": p.q_len % BLOCK == 0 and p.kv_len % BLOCK == 0, "ROWS_GUARANTEED_SAFE": False,
           "OUTPUT_LOGSUMEXP": True, "OUTPUT_MAX": False,
           "SCORE_IS_QK": p.score_mod == "none"}  # utlx.inductor.flex sets it where score_mod is the identity
    out.update(p.options)
    return out


def shapes(p: Problem) -> dict[str, tuple[int, ...]]:
    nq, nkv = -(-p.q_len // BLOCK), -(-p.kv_len // BLOCK)
    return {"Q": (p.b, p.hq, p.q_len, p.d), "K": (p.b, p.hkv, p.kv_len, p.d), "V": (p.b, p.hkv, p.kv_len, p.d),
            "KV_NUM_BLKS": (1, 1, nq), "KV_IDX": (1, 1, nq, nkv)}


def render(p: Problem) -> str:
    """The template source as a Python module, its hooks filled as Inductor fills them."""
    from utlx.inductor.flex_template import SOURCE

    dims = shapes(p)
    args = p.args
    bufs = {name: f"in_ptr{9 + i}" for i, name in enumerate(p.captured)}
    define_text = "\n".join(["INDEX_DTYPE : tl.constexpr = tl.int32"]
                            + [f"{k} : tl.constexpr = {v!r}" for k, v in defines(p).items()])

    def def_kernel(*names: str) -> str:
        assert list(names) == NAMED, names
        body = "\n".join("    " + line for line in define_text.splitlines())
        return f"@triton.jit\ndef utlx_flex_kernel({', '.join(args)}):\n{body}"

    def modification(subgraph_number: int, output_name: str, score: str, b: str, h: str, m: str, n: str,
                     out: str | None = None) -> str:
        body, buf = (SCORE_MODS[p.score_mod] if subgraph_number == 0 else MASK_MODS[p.mask_mod])
        return body.format(out=output_name, score=score, m=m, n=n, h=h, buf=bufs.get(buf, ""))

    def store_output(indices, val, mask, indent_width=4, val_shape=None) -> str:
        s = contiguous_strides(dims["Q"])
        z, h, m, dd = indices
        return (f"tl.store(out_ptr0 + ({z} * {s[0]} + {h} * {s[1]} + {m} * {s[2]} + {dd}), "
                f"{val}.to(out_ptr0.dtype.element_ty), {mask})")

    def indent_except_first(text: str, n: int) -> str:
        lines = text.splitlines(True)
        return "".join(lines[:1] + [" " * 4 * n + line for line in lines[1:]])

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["indent_except_first"] = indent_except_first
    ctx = {"def_kernel": def_kernel,
           "stride": lambda name, i=None: (", ".join(map(str, contiguous_strides(dims[name]))) if i is None
                                           else str(contiguous_strides(dims[name])[i])),
           "size": lambda name, i: str(dims[name][i]), "gen_argdefs": lambda: ", ".join(args),
           "gen_defines": lambda: define_text, "modification": modification, "store_output": store_output}
    header = ("import triton\nimport triton.language as tl\n"
              "from triton.language.extra import libdevice\n")
    return header + env.from_string(SOURCE).render(**ctx)


def signature(p: Problem, dtype: str = "bf16") -> dict[str, str]:
    """The kernel's pointer signature as Inductor's launcher types it."""
    sig = {name: f"*{dtype}" for name in ("Q", "K", "V", "out_ptr0")}
    full_list = "*i32" if p.full else "*fp32"  # without full blocks Inductor passes empty float tensors for them
    sig.update(LSE="*fp32", MAX="*fp32", KV_NUM_BLKS="*i32", KV_IDX="*i32", FULL_KV_NUM_BLKS=full_list,
               FULL_KV_IDX=full_list)
    for i, name in enumerate(p.captured):
        sig[f"in_ptr{9 + i}"] = "*fp32" if name == "slopes" else "*i32"
    return sig


# ------------------------------------------------------------------------------------------ numeric checks


def dense_mask(p: Problem, captured: dict[str, Any]) -> Any:
    """mask_mod as a dense [Q_LEN, KV_LEN] bool tensor (the same for every batch and head here)."""
    import torch

    q = torch.arange(p.q_len)[:, None]
    kv = torch.arange(p.kv_len)[None, :]
    if p.mask_mod == "causal":
        return q >= kv
    if p.mask_mod == "prefix":
        return (q < 100) & (kv >= 0)
    if p.mask_mod == "document":
        doc = captured["doc"]
        return doc[q] == doc[kv]
    return torch.ones(p.q_len, p.kv_len, dtype=torch.bool)


def block_lists(p: Problem, mask: Any) -> dict[str, Any]:
    """KV_NUM_BLKS, KV_IDX, FULL_KV_NUM_BLKS, FULL_KV_IDX for a dense mask, as ``create_block_mask`` makes them:
    per Q block, the KV blocks with some but not all kept (partial; every non-empty one without full blocks)
    and those with all kept (full), in increasing order, the rest of each row padded with zeros."""
    import torch

    nq, nkv = -(-p.q_len // BLOCK), -(-p.kv_len // BLOCK)
    padded = torch.zeros(nq * BLOCK, nkv * BLOCK, dtype=torch.bool)
    padded[: p.q_len, : p.kv_len] = mask
    blocks = padded.reshape(nq, BLOCK, nkv, BLOCK).permute(0, 2, 1, 3).reshape(nq, nkv, -1)
    # a block past the end is judged on its real rows and columns only (the kernel masks the rest)
    valid = torch.zeros_like(padded)
    valid[: p.q_len, : p.kv_len] = True
    vblocks = valid.reshape(nq, BLOCK, nkv, BLOCK).permute(0, 2, 1, 3).reshape(nq, nkv, -1)
    any_kept = blocks.any(-1)
    all_kept = (blocks | ~vblocks).all(-1) & any_kept
    partial = any_kept & ~all_kept if p.full else any_kept
    out: dict[str, Any] = {}
    for prefix, which in (("", partial), ("FULL_", all_kept)):
        num = which.sum(-1).to(torch.int32)
        idx = torch.zeros(nq, nkv, dtype=torch.int32)
        for i in range(nq):
            cols = torch.nonzero(which[i]).flatten().to(torch.int32)
            idx[i, : len(cols)] = cols
        out[prefix + "KV_NUM_BLKS"] = num.reshape(1, 1, nq).contiguous()
        out[prefix + "KV_IDX"] = idx.reshape(1, 1, nq, nkv).contiguous()
    if not p.full:
        out["FULL_KV_NUM_BLKS"] = torch.empty(0, dtype=torch.float32)
        out["FULL_KV_IDX"] = torch.empty(0, dtype=torch.float32)
    return out


def reference(p: Problem, q: Any, k: Any, v: Any, captured: dict[str, Any]) -> tuple[Any, Any]:
    """float32 flex forward: (O, base-2 logsumexp) with score_mod, mask_mod and GQA as flex defines them
    (a fully masked row gives O = 0 and logsumexp -inf)."""
    import torch

    group = p.hq // p.hkv
    kf = k.float().repeat_interleave(group, dim=1)
    vf = v.float().repeat_interleave(group, dim=1)
    s = q.float() @ kf.transpose(-1, -2) * (p.d ** -0.5)
    qi = torch.arange(p.q_len)[:, None].float()
    ki = torch.arange(p.kv_len)[None, :].float()
    if p.score_mod == "alibi":
        s = s + captured["slopes"].float()[None, :, None, None] * (ki - qi)
    elif p.score_mod == "alibi-literal":
        s = s + (ki - qi) * 0.0625
    elif p.score_mod == "softcap":
        s = 20.0 * torch.tanh(s / 20.0)
    s = s.masked_fill(~dense_mask(p, captured), float("-inf"))
    lse = torch.logsumexp(s, -1)
    o = torch.softmax(s, -1).nan_to_num(0.0) @ vf
    return o, lse / math.log(2)
