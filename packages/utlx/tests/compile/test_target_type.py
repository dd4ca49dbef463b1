"""utlx's compiler uses tritonx's one target type (issue 30): the lowering gets the pass context's target
object, and a module's own ``ttg.target`` is read into that type (no target text taken apart in utlx)."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
import tritonx
import utlx as tlx
from _helpers import compile_kernel
from tritonx.dsl import KernelTarget
from utlx.compiler.common import lowering
from utlx.compiler.common.target import smem_limit, target_of


@triton.jit
def _round_trip(a_ptr, out_ptr):
    offs = tl.arange(0, 64)
    bufs = tlx.local_alloc((64,), tl.float32, 1)
    tlx.local_store(bufs[0], tl.load(a_ptr + offs))
    tl.store(out_ptr + offs, tlx.local_load(bufs[0]))


@pytest.mark.parametrize(("target", "warp"), [("cuda:90", 32), ("hip:gfx942", 64)])
def test_the_lowering_gets_the_pass_contexts_target(monkeypatch, target, warp):
    seen = []
    real = lowering.lower_found

    def recording(module, found, arch, **kw):
        seen.append(kw.get("target"))
        return real(module, found, arch, **kw)

    monkeypatch.setattr(lowering, "lower_found", recording)
    k = compile_kernel(_round_trip, {"a_ptr": "*fp32", "out_ptr": "*fp32"}, {}, target=target, num_warps=8)
    assert "ttg.local_alloc" in k.asm["ttgir"]
    [got] = seen  # the module's lowering (a probe clone's, NVIDIA's copy-width measure, is lowered apart)
    assert isinstance(got, KernelTarget) and (got.name, got.warp_size, got.num_warps) == (target, warp, 8)


def test_a_modules_target_is_read_into_tritonx_target():
    text = 'module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "hip:gfx950"} {\n}'
    assert target_of(text) == tritonx.Target.parse("hip:gfx950") and isinstance(target_of(text), tritonx.Target)
    assert target_of("module {\n}") is None  # before the conversion: no target yet


@pytest.mark.parametrize(("target", "limit"), [("cuda:90", 232448), ("cuda:110", 232448), ("cuda:86", 65536),
                                               ("hip:gfx950", 163840), ("hip:gfx1100", 65536), ("", 65536)])
def test_shared_memory_budget_of_a_target_or_its_text(target, limit):
    assert smem_limit(target) == limit
    if target:
        assert smem_limit(tritonx.Target.parse(target)) == limit
