"""The JIT launch path (``kernel.warmup``/``kernel[grid]``) on the CPU, through a stand-in driver.

``JITFunction.run`` keys its in-memory cache with the hook's no-argument call (3.7+) or
``compute_cache_key`` (3.6), then compiles on the same thread. The compile that serves a launch must
use the pipelines that launch was keyed with, even when another thread changes them in between.
"""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
import tritonx
from cpu_stand_in_driver import CpuStandInDriver
from triton.runtime import driver as driver_config

torch = pytest.importorskip("torch")
MARK = "// tritonx-launch:"


@pytest.fixture
def stand_in_driver():
    saved = driver_config.__dict__.get("_active")  # reset_active() would look for a real GPU driver
    driver_config.set_active(CpuStandInDriver())
    yield
    driver_config._active = saved


def _kernel():
    @triton.jit
    def launch_kernel(X, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(X + offs, tl.load(X + offs) + 3.0)

    return launch_kernel


@tritonx.cache_key("launch-mark-v1")
def _mark(text, ctx):
    return f"{text}\n{MARK}{ctx.pipeline}\n"


def _marks(kernel) -> list[str]:
    return [ln[len(MARK):] for ln in kernel.asm["ptx"].splitlines() if ln.startswith(MARK)]


def test_compile_serving_a_launch_uses_the_launch_snapshot(stand_in_driver, monkeypatch):
    kernel, x = _kernel(), torch.empty(64)
    p = tritonx.Pipeline("toggled").transform_stage("ptx", _mark)
    tritonx.activate(tritonx.Pipeline("warm")).deactivate()  # tritonx in the slot, nothing active
    flips = []

    def another_thread_activates(*args, **kwargs):  # runs between the launch's key and its compile
        if not flips:
            flips.append(tritonx.activate(p))
        return None

    monkeypatch.setattr(triton.knobs.runtime, "jit_cache_hook", another_thread_activates)
    stock = kernel.warmup(x, N=64, grid=(1,))
    monkeypatch.setattr(triton.knobs.runtime, "jit_cache_hook", None)
    assert flips and tritonx.active() == (p,)
    assert _marks(stock) == []  # keyed as stock when launched: compiled as stock
    edited = kernel.warmup(x, N=64, grid=(1,))  # now keyed with p: its own compile, edited
    assert _marks(edited) == ["toggled"] and edited.hash != stock.hash
    flips[0].deactivate()
    assert kernel.warmup(x, N=64, grid=(1,)) is stock  # the in-memory entry for stock holds the stock binary


def test_binding_a_kernel_recompiles_it_on_the_next_launch(stand_in_driver):
    kernel, x = _kernel(), torch.empty(32)
    first = kernel.warmup(x, N=32, grid=(1,))
    tritonx.pipeline(tritonx.Pipeline("bound").transform_stage("ptx", _mark))(kernel)
    second = kernel.warmup(x, N=32, grid=(1,))
    assert _marks(first) == [] and _marks(second) == ["bound"]
