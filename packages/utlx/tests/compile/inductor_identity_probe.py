"""Compile one FlexAttention + matmul graph in a fresh process, three ways, and print what Inductor generated.

Run as a script (``python inductor_identity_probe.py cpu|cuda``) by the identity tests; a fresh process, because
"utlx never enabled" cannot be had in a test process that other tests already switched on. The three ways:

* ``never``: ``utlx.inductor`` never enabled (nothing of it imported here, and no seam of it installed);
* ``restored``: ``utlx.inductor.enable("allow")`` then ``disable()``;
* ``enabled``: ``enable("allow")`` left on (only with ``--enabled``: on a CPU it must be a no-op).

Each is a fresh ``torch.compile`` (Dynamo reset, FX graph cache off) of the same function on the same inputs,
default mode (max-autotune would pick kernels by timing, so even two stock compiles could differ). Printed: one
JSON object with Inductor's output code per way (``torch._inductor.utils.run_and_get_code``; the per-process
``# AOT ID`` counter line blanked: it numbers the compiles of a process), whether each output equals the first
bit for bit, ``utlx.inductor.stats`` and the seams installed at each step.
"""

from __future__ import annotations

import json
import os
import re
import sys

os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"

import torch
from torch._inductor.utils import run_and_get_code
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

AOT_ID = re.compile(r"^# AOT ID: .*$", re.M)


def graph(x: torch.Tensor, w_qkv: torch.Tensor, w_out: torch.Tensor, block_mask, heads: int) -> torch.Tensor:
    """QKV matmul, flex attention with a BlockMask and an ALiBi-like score_mod, output matmul, GELU."""
    b, n, c = x.shape
    # three buffers: torch 2.11's CPU flex lowering refuses q, k and v that share one ("not supported for now")
    q, k, v = (t.contiguous() for t in (x @ w_qkv).view(b, n, 3, heads, c // heads).permute(2, 0, 3, 1, 4))

    def score_mod(s, bi, h, qi, kv):
        return s + (kv - qi) * 0.01 * (h + 1)

    a = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)
    return torch.nn.functional.gelu(a.transpose(1, 2).reshape(b, n, c) @ w_out)


def inputs(device: str) -> tuple:
    half = device != "cpu"
    n, c, heads = (512, 512, 4) if half else (256, 64, 2)  # cuda: head dim 128, where the utlx template applies
    dtype = torch.bfloat16 if half else torch.float32
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(2, n, c, device=device, dtype=dtype, generator=g)
    w_qkv = torch.randn(c, 3 * c, device=device, dtype=dtype, generator=g) / c**0.5
    w_out = torch.randn(c, c, device=device, dtype=dtype, generator=g) / c**0.5
    bm = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, n, n, device=device)
    return x, w_qkv, w_out, bm, heads


def seams_installed() -> list[str]:
    from tritonx.seams import is_installed

    mod = sys.modules.get("utlx.inductor")
    return [s.name for s in getattr(mod, "SEAMS", ()) if is_installed(s.name)]


def compile_once(args: tuple) -> tuple[torch.Tensor, list[str]]:
    fn = torch.compile(graph, fullgraph=True, dynamic=False)
    out, codes = run_and_get_code(fn, *args)  # resets Dynamo first
    return out, [AOT_ID.sub("# AOT ID: -", code) for code in codes]


def main(argv: list[str]) -> None:
    device, enabled = argv[0], "--enabled" in argv
    args = inputs(device)
    report: dict = {"device": device, "torch": torch.__version__, "codes": {}, "equal": {}, "seams": {}}
    inductor_mod = sys.modules.get("utlx.inductor")  # torch >= 2.14 may import it (as an alias copy) with Inductor
    report["mode_before_never"] = inductor_mod.mode() if inductor_mod and hasattr(inductor_mod, "mode") else "off"
    report["seams"]["never"] = seams_installed()
    first, report["codes"]["never"] = compile_once(args)

    import utlx.inductor

    utlx.inductor.enable("allow")
    report["seams"]["while_enabled"] = seams_installed()
    utlx.inductor.disable()
    report["seams"]["restored"] = seams_installed()
    out, report["codes"]["restored"] = compile_once(args)
    report["equal"]["restored"] = bool(torch.equal(out, first))
    if enabled:
        utlx.inductor.enable("allow")
        before = dict(utlx.inductor.stats["skipped"])
        out, report["codes"]["enabled"] = compile_once(args)
        report["equal"]["enabled"] = bool(torch.equal(out, first))
        report["stats_enabled"] = {"added": utlx.inductor.stats["added"],
                                   "skipped_new": {k: v - before.get(k, 0)
                                                   for k, v in utlx.inductor.stats["skipped"].items()
                                                   if v != before.get(k, 0)}}
        utlx.inductor.disable()
    print("PROBE " + json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
