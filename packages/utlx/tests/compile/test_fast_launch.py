"""utlx.launch.FastLaunch: the JIT once per specialization, then CompiledKernel[grid] with every parameter."""

from __future__ import annotations

import tritonx
from utlx import launch


class FakeCompiled:
    def __init__(self, log):
        self.log = log

    def __getitem__(self, grid):
        def runner(*args):
            grid[0], grid[1], grid[2]  # like Triton's CompiledKernel runner: a 3-D grid is required
            self.log.append(("fast", grid, args))

        return runner


class FakeJit:
    arg_names = ["a", "n", "BLOCK", "STAGES"]

    def __init__(self):
        self.log = []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.log.append(("jit", grid, args, kwargs))
            return FakeCompiled(self.log)

        return launch


class Ptr:
    def __init__(self, addr):
        self.addr = addr

    def data_ptr(self):
        return self.addr


def test_first_call_jits_later_calls_skip_binding():
    jit = FakeJit()
    fl = launch.FastLaunch(jit, (4,), {"BLOCK": 128, "STAGES": 3}, num_warps=8)
    fl(Ptr(1024), 64)
    fl(Ptr(2048), 64)
    kind, grid, args, kwargs = jit.log[0]
    assert (kind, grid, args[1], kwargs) == ("jit", (4,), 64, {"BLOCK": 128, "STAGES": 3, "num_warps": 8})
    kind, grid, args = jit.log[1]
    assert kind == "fast" and grid == (4, 1, 1) and args[1:] == (64, 128, 3)  # 3-D grid; constexprs in order


def test_new_specialization_goes_through_the_jit_again():
    jit = FakeJit()
    fl = launch.FastLaunch(jit, (1,), {"BLOCK": 16, "STAGES": 2}, num_warps=4)
    fl(Ptr(1024), 64)
    fl(Ptr(1026), 64)  # misaligned pointer: another specialization
    fl(Ptr(1024), 65)  # n no longer divisible by 16
    assert [e[0] for e in jit.log] == ["jit", "jit", "jit"]
    fl(Ptr(4096), 64)
    assert jit.log[-1][0] == "fast"


def test_active_pipelines_are_part_of_the_key():
    jit = FakeJit()
    fl = launch.FastLaunch(jit, (1,), {"BLOCK": 16, "STAGES": 2}, num_warps=4)
    fl(Ptr(1024), 64)
    with tritonx.activate(tritonx.Pipeline("fast-launch-key")):
        fl(Ptr(1024), 64)
    assert [e[0] for e in jit.log] == ["jit", "jit"]


def test_interpreter_launches_are_never_cached():
    class InterpretedJit(FakeJit):
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                self.log.append(("interp", grid, args, kwargs))
                # the interpreter runs the kernel and returns nothing

            return launch

    jit = InterpretedJit()
    fl = launch.FastLaunch(jit, (1,), {"BLOCK": 16, "STAGES": 2}, num_warps=4)
    fl(Ptr(1024), 64)
    fl(Ptr(1024), 64)
    assert [e[0] for e in jit.log] == ["interp", "interp"]


def test_parameters_left_at_their_default_are_passed_to_the_launcher():
    """A JIT parameter with a default (``EPILOGUE_SUBTILE=1``) that the caller does not set is bound by the
    JIT on the first call; the direct calls after it must pass that default too (they failed with a
    KeyError on the H200 when the GEMM kernels gained EPILOGUE_SUBTILE)."""

    def kernel(a, n, BLOCK, STAGES, SUBTILE=1):  # what FakeJit.fn stands for
        pass

    jit = FakeJit()
    jit.arg_names = ["a", "n", "BLOCK", "STAGES", "SUBTILE"]
    jit.fn = kernel
    fl = launch.FastLaunch(jit, (2,), {"BLOCK": 64, "STAGES": 4}, num_warps=4)
    fl(Ptr(1024), 64)
    fl(Ptr(1024), 64)
    kind, _, args = jit.log[1]
    assert kind == "fast" and args[1:] == (64, 64, 4, 1)
