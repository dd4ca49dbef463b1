"""The compile-only driver (``compile_only_gpu.py``) the tutorial tests stand on: it compiles for cuda:90, runs
nothing, answers the host queries like an H200, keeps the first surviving autotune config, and restores
stock Triton afterwards."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from compile_only_gpu import CompileOnlyDriver, NoDeviceError, compile_only_gpu  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime import autotuner  # noqa: E402
from triton.runtime.driver import driver as driver_config  # noqa: E402

pytestmark = pytest.mark.usefixtures("utlx_compile_path")


@triton.jit
def _add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def _prune_first(configs, named_args, **kwargs):
    return configs[1:]


_PRE_HOOK_CALLS: list[int] = []

_tuned = triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w, pre_hook=lambda nargs: _PRE_HOOK_CALLS.append(nargs["BLOCK"]))
             for b, w in ((16, 1), (32, 2), (64, 4))],
    key=["n"], prune_configs_by={"early_config_prune": _prune_first})(_add_one)


def test_installs_an_h200_stand_in_and_restores_everything():
    saved = (driver_config._active, torch.cuda.get_device_properties, torch.cuda.get_device_capability,
             autotuner.Autotuner.prune_configs, autotuner.Autotuner._bench)
    with pytest.raises(RuntimeError, match="boom"), compile_only_gpu() as gpu:
        assert triton.runtime.driver.active is gpu
        assert gpu.get_current_target() == GPUTarget("cuda", 90, 32)
        assert triton.runtime.driver.active.get_active_torch_device() == torch.device("cpu")
        assert torch.cuda.get_device_properties("cuda").multi_processor_count == 132
        assert torch.cuda.get_device_capability() == (9, 0)
        raise RuntimeError("boom")  # restored on error too
    assert (driver_config._active, torch.cuda.get_device_properties, torch.cuda.get_device_capability,
            autotuner.Autotuner.prune_configs, autotuner.Autotuner._bench) == saved


def test_props_can_be_overridden():
    with compile_only_gpu(props={"multi_processor_count": 2}) as gpu:
        assert torch.cuda.get_device_properties(0).multi_processor_count == 2
        assert gpu.utils.get_device_properties(0)["max_shared_mem"] == 232448


def test_a_launch_compiles_for_sm90_is_recorded_and_runs_nothing():
    x = torch.arange(100, dtype=torch.float32)
    out = torch.full((100,), -7.0)
    with compile_only_gpu() as gpu:
        _add_one[(4,)](x, out, 100, BLOCK=32)
    (launch,) = gpu.launches
    assert launch.name == "_add_one" and launch.grid == (4, 1, 1) and launch.num_warps == 4
    assert launch.constants["BLOCK"] == 32
    assert any(a is x for a in launch.args) and any(a is out for a in launch.args)
    ptx = launch.asm("ptx")
    assert ".target sm_90a" in ptx and "ld.global" in ptx and "st.global" in ptx
    assert "tt.load" in launch.asm("ttir")
    assert torch.equal(out, torch.full((100,), -7.0))  # recorded, not run
    with pytest.raises(KeyError, match="_add_one"):
        launch.asm("no-such-stage")


def test_autotune_launches_the_first_surviving_config_without_timing():
    x = torch.arange(300, dtype=torch.float32)
    out = torch.empty(300)
    _PRE_HOOK_CALLS.clear()
    with compile_only_gpu() as gpu:  # timing would need the (absent) benchmarker: NoDeviceError
        _tuned[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, out, 300)
    (launch,) = gpu.launches
    assert launch.constants["BLOCK"] == 32 and launch.num_warps == 2 and launch.grid == (10, 1, 1)
    assert _PRE_HOOK_CALLS == [32]  # the config's own pre_hook ran once, on the chosen config


def test_asking_for_a_real_gpu_is_a_clear_error():
    with compile_only_gpu(), pytest.raises(NoDeviceError, match="needs a real GPU"):
        triton.testing.do_bench(lambda: None)
    drv = CompileOnlyDriver()
    with pytest.raises(NoDeviceError, match="device 3 does not exist"):
        drv.set_current_device(3)
    assert not CompileOnlyDriver.is_active()  # never picked by Triton on its own
