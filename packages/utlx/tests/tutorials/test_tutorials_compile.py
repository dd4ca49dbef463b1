"""Every Hopper TLX tutorial kernel of Meta's wheel compiles for cuda:90 with utlx, through its own host function.

Each case imports the tutorial file as it is (its ``import triton.language.extra.tlx as tlx`` resolves to
utlx), calls its host function (``matmul``, ``attention``, ``add2``, ...) on small CPU tensors under the
compile-only driver (``compile_only_gpu.py``: target cuda:90, launches recorded, autotuning reduced to the
first surviving config), and checks the PTX of every launched kernel for what the tutorial promises:
wgmma, cp.async or TMA (``cp.async.bulk.tensor``), mbarriers, named barriers for the pingpong ones, and,
for warp-specialized kernels, the partitions (TTGIR ``partitionN ... num_warps(W)`` and the PTX thread
count ``.reqntid``) and the consumers' ``setmaxnreg``. Expected failures (``expected.COMPILE``) are strict
xfails that quote the first error.
"""

from __future__ import annotations

import re
import traceback

import pytest

torch = pytest.importorskip("torch")

import cases  # noqa: E402
import expected  # noqa: E402
import tutorial_package  # noqa: E402
from compile_only_gpu import compile_only_gpu  # noqa: E402
from run_tutorial import first_error  # noqa: E402


def _params(table: dict[str, str]) -> list:
    return [pytest.param(c, id=c.id, marks=expected.xfail_marks(table, c.id)) for c in cases.CASES]


def _partitions(ttgir: str) -> list[int]:
    return [int(w) for _, w in re.findall(r"partition(\d+)\(.*\) num_warps\((\d+)\)", ttgir)]


@pytest.mark.parametrize("case", _params(expected.COMPILE))
def test_compiles_for_cuda90_through_the_host_function(case, tutorials_dir, utlx_compile_path):
    with compile_only_gpu() as gpu, tutorial_package.tutorials_package(tutorials_dir):
        try:
            case.run(tutorial_package.load(case.tutorial), torch, 0)
        except Exception as exc:
            expected.raise_first_error(expected.COMPILE, case.id, first_error(exc), "".join(
                traceback.format_exception(exc))[-4000:])
    assert len(gpu.launches) == case.launches, [launch.name for launch in gpu.launches]
    partitions = case.partitions or tuple(() for _ in gpu.launches)
    for launch, parts in zip(gpu.launches, partitions, strict=True):
        ptx, ttgir = launch.asm("ptx"), launch.asm("ttgir")
        assert re.search(r"^\.target sm_90a", ptx, re.M), f"{launch.name}: not compiled for sm_90a"
        missing = [pat for pat in case.ptx if not re.search(pat, ptx)]
        assert not missing, f"{launch.name}: PTX lacks {missing}"
        assert _partitions(ttgir) == list(parts), f"{launch.name}: partitions {_partitions(ttgir)}, want {parts}"
        threads = re.search(r"\.reqntid (\d+)", ptx)
        assert threads and int(threads.group(1)) == 32 * (case.num_warps + sum(parts)), threads
        if case.setmaxnreg is not None:
            # the consumers' count is set with .inc or .dec depending on what the kernel started with
            assert re.search(rf"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+{case.setmaxnreg};", ptx), \
                f"{launch.name}: no setmaxnreg to {case.setmaxnreg} for the consumers"
        if not parts:
            assert "setmaxnreg" not in ptx and "ttg.warp_specialize" not in ttgir


def test_every_hopper_tutorial_of_the_wheel_has_a_case(tutorials_dir):
    """A new Hopper tutorial in a future wheel must not be silently left out."""
    hopper = {p.stem for p in tutorials_dir.glob("hopper*.py")} | {"vector-add2"}
    assert hopper == {c.tutorial for c in cases.CASES}
