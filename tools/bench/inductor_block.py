"""The real client of ``utlx.inductor`` (issue 31): a small transformer block compiled end to end.

Why a whole block and not flex_attention alone: users call ``torch.compile`` on models, where the attention
kernel sits between matmuls, norms and pointwise code that Inductor fuses around it; an integration that wins
on the isolated op and loses in the model (a layout copy, a broken fusion, a slower backward) only shows here.

The block: RMSNorm, one QKV projection (GQA: ``kv_heads`` <= ``heads``), FlexAttention with a causal,
sliding-window or document (causal within each document) ``BlockMask``, the output projection and a residual,
then RMSNorm, a SwiGLU MLP (``w2(silu(x w1) * x w3)``) and a residual. It is compiled with
``torch.compile(mode="max-autotune")`` twice in one process, stock (``utlx.inductor`` off) and with
``utlx.inductor.enable("allow")``, each checked against the same block run eagerly in float32, then timed in a
plain loop (host cost included): the forward under ``torch.no_grad()`` and forward+backward
(``torch.autograd.grad`` of the output with a fixed random cotangent, for the input and every weight).

Device-agnostic: :data:`TINY` runs on the CPU (stock Inductor's C++ flex lowering; utlx has no CPU kernel,
so ``allow`` must change nothing and ``utlx.inductor.stats`` must say why). FlexAttention has no backward on
the CPU (torch raises), so there only the forward is checked and timed.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import torch
import torch.nn.functional as F
import utlx.inductor
from torch import nn
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

MASKS = ("causal", "sliding", "document")


@dataclasses.dataclass(frozen=True)
class BlockShape:
    """Sizes of one block run: ``batch`` x ``seq`` tokens of width ``dim`` = ``heads`` x head dim."""

    batch: int
    seq: int
    dim: int
    heads: int
    kv_heads: int
    hidden: int
    window: int
    dtype: torch.dtype

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    def __post_init__(self) -> None:
        if self.dim % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"BlockShape: dim {self.dim} / heads {self.heads} / kv_heads {self.kv_heads} "
                             "must divide evenly")


#: The H200 run: head dim 128 (where the utlx flex template applies), GQA 4:1, bf16.
H200 = BlockShape(batch=2, seq=4096, dim=2048, heads=16, kv_heads=4, hidden=5632, window=1024, dtype=torch.bfloat16)
#: The CPU path of the default test suite: seconds of compile (after the C++ cache is warm), float32.
TINY = BlockShape(batch=1, seq=256, dim=64, heads=2, kv_heads=1, hidden=128, window=64, dtype=torch.float32)


class RMSNorm(nn.Module):
    """``x / rms(x) * weight`` computed in float32 (as the eager reference does), cast back to the input dtype."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + self.eps) * self.weight.float()).to(x.dtype)


class Block(nn.Module):
    """One pre-norm transformer block whose attention is ``flex_attention`` with the given ``BlockMask``."""

    def __init__(self, shape: BlockShape) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = shape.heads, shape.kv_heads, shape.head_dim
        self.norm1, self.norm2 = RMSNorm(shape.dim), RMSNorm(shape.dim)
        self.qkv = nn.Linear(shape.dim, (shape.heads + 2 * shape.kv_heads) * shape.head_dim, bias=False)
        self.proj = nn.Linear(shape.dim, shape.dim, bias=False)
        self.w1 = nn.Linear(shape.dim, shape.hidden, bias=False)
        self.w3 = nn.Linear(shape.dim, shape.hidden, bias=False)
        self.w2 = nn.Linear(shape.hidden, shape.dim, bias=False)

    def forward(self, x: torch.Tensor, block_mask: BlockMask) -> torch.Tensor:
        b, n, _ = x.shape
        d = self.head_dim
        q, k, v = self.qkv(self.norm1(x)).split([self.heads * d, self.kv_heads * d, self.kv_heads * d], dim=-1)
        q, k, v = (t.view(b, n, -1, d).transpose(1, 2) for t in (q, k, v))
        a = flex_attention(q, k, v, block_mask=block_mask, enable_gqa=self.kv_heads != self.heads)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, -1))
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def make_mask(kind: str, shape: BlockShape, device: str) -> BlockMask:
    """The ``BlockMask`` of ``kind`` (causal / sliding: causal within ``window`` / document: causal within
    documents cut at seeded random points, about one per 512 tokens, at least two documents)."""
    n = shape.seq
    if kind == "causal":
        def mask_mod(b, h, q, kv):
            return q >= kv
    elif kind == "sliding":
        window = shape.window

        def mask_mod(b, h, q, kv):
            return (q >= kv) & (q - kv <= window)
    elif kind == "document":
        g = torch.Generator().manual_seed(0)
        cuts = torch.randint(1, n, (max(n // 512, 2),), generator=g)
        starts = torch.zeros(n, dtype=torch.int32)
        starts[cuts] = 1
        doc = torch.cumsum(starts, 0).to(torch.int32).to(device)

        def mask_mod(b, h, q, kv):
            return (doc[q] == doc[kv]) & (q >= kv)
    else:
        raise ValueError(f"inductor_block: mask must be one of {', '.join(MASKS)}, got {kind!r}")
    return create_block_mask(mask_mod, None, None, n, n, device=device)


def build(shape: BlockShape, device: str, seed: int = 0) -> tuple[Block, torch.Tensor, torch.Tensor]:
    """(block in ``shape.dtype`` on ``device``, input x, output cotangent dy), fresh seeded random data."""
    torch.manual_seed(seed)
    block = Block(shape)
    with torch.no_grad():
        for p in block.parameters():  # RMSNorm weights away from 1, so a dropped weight would show
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    block = block.to(device=device, dtype=shape.dtype)
    g = torch.Generator(device=device).manual_seed(seed + 1)
    x = torch.randn(shape.batch, shape.seq, shape.dim, device=device, dtype=shape.dtype, generator=g)
    dy = torch.randn(shape.batch, shape.seq, shape.dim, device=device, dtype=shape.dtype, generator=g)
    return block, x, dy


def rel_err(a: torch.Tensor, ref: torch.Tensor) -> float:
    """max |a - ref| / max |ref| (in float32): one number per tensor, comparable across dtypes."""
    return (a.float() - ref).abs().max().item() / max(ref.abs().max().item(), 1e-12)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], device: str, iters: int, runs: int = 5) -> float:
    """Seconds per call: the median of ``runs`` plain loops of ``iters`` back-to-back calls (host cost in)."""
    for _ in range(2):
        fn()
    samples = []
    for _ in range(runs):
        sync(device)
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync(device)
        samples.append((time.perf_counter() - t0) / iters)
    return statistics.median(samples)


def _switch(mode: str) -> None:
    torch._dynamo.reset()
    if mode == "off":
        utlx.inductor.disable()
    else:
        utlx.inductor.enable(mode)


def _stats() -> dict[str, Any]:
    return copy.deepcopy(utlx.inductor.stats)


def _delta(before: Any, after: Any) -> Any:
    """What changed in ``utlx.inductor.stats`` (nested counters): the nonzero differences only."""
    if isinstance(after, dict):
        was = before if isinstance(before, dict) else {}
        return {key: d for key, value in after.items() if (d := _delta(was.get(key), value))}
    return after - (before or 0) if isinstance(after, int | float) else None


@contextlib.contextmanager
def output_code() -> Iterator[list[str]]:
    """Inductor's output code of every graph compiled inside (``torch._inductor.utils.run_and_get_code``'s hook,
    kept on: the stock ``save_output_code`` still runs)."""
    from torch._inductor.graph import GraphLowering

    codes: list[str] = []
    stock = GraphLowering.save_output_code  # a class attribute, None unless a debug hook is set

    def save_output_code(code: str) -> None:
        codes.append(code)
        if stock is not None:
            stock(code)

    with mock.patch.object(GraphLowering, "save_output_code", save_output_code):
        yield codes


#: Every utlx template kernel's source starts by importing the TLX language (``utlx.inductor.flex_template``).
UTLX_KERNEL_MARK = "import utlx.language"


def _grads(block: nn.Module, fn: Callable[..., torch.Tensor], x: torch.Tensor, bm: BlockMask, dy: torch.Tensor
           ) -> list[torch.Tensor]:
    x = x.detach().requires_grad_(True)
    y = fn(x, bm)
    return list(torch.autograd.grad(y, [x, *block.parameters()], dy))


def run_mask(shape: BlockShape, kind: str, device: str, mode: str, iters: int, backward: bool) -> dict[str, Any]:
    """Check and time one mask: stock vs ``mode``, against the float32 eager block. Returns one result row."""
    block, x, dy = build(shape, device)
    bm = make_mask(kind, shape, device)
    ref_block = copy.deepcopy(block).float()
    with torch.no_grad():
        ref = ref_block(x.float(), bm)
    ref_grads = _grads(ref_block, ref_block, x.float(), bm, dy.float()) if backward else []
    row: dict[str, Any] = {"mask": kind, "dtype": str(shape.dtype).removeprefix("torch."), "device": device}
    outs: dict[str, torch.Tensor] = {}
    half = shape.dtype in (torch.float16, torch.bfloat16)
    floor, grad_floor = (2e-2, 3e-2) if half else (1e-4, 1e-4)
    for m in ("off", mode):
        before = _stats()
        _switch(m)
        try:
            stack = contextlib.ExitStack()
            codes = stack.enter_context(output_code())
            fn = torch.compile(block, mode="max-autotune")
            t0 = time.perf_counter()
            with torch.no_grad():
                outs[m] = fn(x, bm)
            row[f"compile_s_fwd_{m}"] = time.perf_counter() - t0
            row[f"err_fwd_{m}"] = rel_err(outs[m], ref)

            def fwd(fn=fn) -> torch.Tensor:
                with torch.no_grad():
                    return fn(x, bm)

            row[f"ms_fwd_{m}"] = timed(fwd, device, iters) * 1e3
            if backward:
                t0 = time.perf_counter()
                grads = _grads(block, fn, x, bm, dy)
                row[f"compile_s_fwdbwd_{m}"] = time.perf_counter() - t0
                row[f"err_grads_{m}"] = [rel_err(g, r) for g, r in zip(grads, ref_grads, strict=True)]
                row[f"ms_fwdbwd_{m}"] = timed(lambda fn=fn: _grads(block, fn, x, bm, dy), device, iters) * 1e3
        finally:
            stack.close()
            row[f"graphs_{m}"] = len(codes)
            row[f"utlx_kernels_{m}"] = sum(code.count(UTLX_KERNEL_MARK) for code in codes)
            row[f"stats_{m}"] = _delta(before, _stats())
            _switch("off")
    e_off, e_on = row["err_fwd_off"], row[f"err_fwd_{mode}"]
    ok = math.isfinite(e_on) and e_on <= max(2 * e_off, floor) and e_off <= 5 * floor  # stock sane too
    if backward:
        for g_off, g_on in zip(row["err_grads_off"], row[f"err_grads_{mode}"], strict=True):
            ok &= math.isfinite(g_on) and g_on <= max(2 * g_off, grad_floor)
    row["identical_outputs"] = bool(torch.equal(outs["off"], outs[mode]))
    row["ok"] = bool(ok)
    return row


def describe(row: dict[str, Any], mode: str) -> list[str]:
    """The printed lines of one result row."""
    lines = [f"block {row['dtype']} {row['device']} {row['mask']:9s} fwd err stock {row['err_fwd_off']:.2e} "
             f"utlx {row[f'err_fwd_{mode}']:.2e}  stock {row['ms_fwd_off']:.3f} ms utlx {row[f'ms_fwd_{mode}']:.3f} "
             f"ms {row['ms_fwd_off'] / row[f'ms_fwd_{mode}']:.2f}x  {'ok' if row['ok'] else 'FAIL'}"]
    if "ms_fwdbwd_off" in row:
        worst = (max(row["err_grads_off"]), max(row[f"err_grads_{mode}"]))
        lines.append(f"block {row['dtype']} {row['device']} {row['mask']:9s} fwd+bwd worst grad err stock "
                     f"{worst[0]:.2e} utlx {worst[1]:.2e}  stock {row['ms_fwdbwd_off']:.3f} ms utlx "
                     f"{row[f'ms_fwdbwd_{mode}']:.3f} ms {row['ms_fwdbwd_off'] / row[f'ms_fwdbwd_{mode}']:.2f}x")
    else:
        lines.append(f"block {row['dtype']} {row['device']} {row['mask']:9s} fwd+bwd not run: FlexAttention has no "
                     f"backward on {row['device']} in torch {torch.__version__}")
    lines.append(f"block {row['mask']:9s} utlx.inductor.stats changes: stock compile {row['stats_off']}, {mode} "
                 f"compile {row[f'stats_{mode}']}; utlx kernels in the generated code: stock "
                 f"{row['utlx_kernels_off']}, {mode} {row[f'utlx_kernels_{mode}']} "
                 f"(of {row[f'graphs_{mode}']} graphs); "
                 f"outputs identical: {row['identical_outputs']}")
    return lines


def run(shape: BlockShape, device: str, masks: tuple[str, ...], mode: str = "allow", iters: int = 10,
        budget_s: float = float("inf"), emit: Callable[[str], None] = print,
        on_row: Callable[[list[dict[str, Any]]], None] | None = None) -> list[dict[str, Any]]:
    """Every mask in turn (one line per failure, then the next); after ``budget_s`` no further mask starts.
    ``on_row(rows)`` after each mask (the benchmark writes its JSON then: a run cut by a timeout keeps its rows)."""
    backward = not device.startswith("cpu")
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    for kind in masks:
        if rows and time.perf_counter() - start > budget_s:  # the first mask always runs
            emit(f"block {kind}: not run (budget of {budget_s:.0f} s spent)")
            continue
        try:
            row = run_mask(shape, kind, device, mode, iters, backward)
        except Exception as e:  # one line per failing mask, then the next
            emit(f"block {kind} ERROR {type(e).__name__}: {str(e)[:300]}")
            rows.append({"mask": kind, "ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"})
        else:
            rows.append(row)
            for line in describe(row, mode):
                emit(line)
        if on_row is not None:
            on_row(rows)
    return rows
