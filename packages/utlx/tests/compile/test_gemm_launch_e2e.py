"""GemmLaunch end to end on the CPU with real kernels: the JIT compiles for cuda:90, Triton's real
``CompiledKernel`` and ``CudaLauncher`` run, only the CUDA driver calls are stand-ins.

A fake active driver (target cuda:90) gives Triton a module loader, device properties, a TMA encoder that
returns readable tuples and a C launcher that records its arguments. GemmLaunch's first call goes through
the JIT (Triton's own path, hooks included); later calls go straight to the recorded C launcher. Both
must hand the launcher the same arguments (grid, stream, function, metadata, expanded kernel arguments),
except for the launch metadata and hook slots, which the direct path leaves empty when no hook is set.
"""

from __future__ import annotations

import importlib

import pytest

torch = pytest.importorskip("torch")

from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.driver import DriverBase  # noqa: E402
from triton.backends.nvidia import driver as nv  # noqa: E402
from triton.compiler.compiler import max_shared_mem  # noqa: E402
from triton.runtime import driver as drv  # noqa: E402
from utlx import compat, gemm_launch  # noqa: E402
from utlx.gemm_launch import Problem  # noqa: E402

m = importlib.import_module("utlx.matmul")

if not compat.version_at_least(3, 7):  # pragma: no cover - the 3.6 launcher is a module compiled per kernel
    pytest.skip("the stand-in C launcher is 3.7+'s generic one", allow_module_level=True)

HOOK_SLOTS = (8, 9, 10)  # launch_metadata, enter hook, exit hook in 3.7+'s launcher arguments


class FakeUtils:
    #: Every fake's launches, in one list: a kernel compiled under an earlier test's fake keeps that fake's
    #: ``launch`` in its cached ``CudaLauncher`` (Triton's in-memory cache), so it must record here too.
    launches: list[tuple] = []

    def __init__(self):
        self.launches.clear()

    def launch(self, *args):
        self.launches.append(args)

    @staticmethod
    def build_signature_metadata(signature):
        return ",".join(signature).encode()

    @staticmethod
    def load_binary(name, kernel, shared, device):
        return 1, 0xF00D, 128, 0, 1024

    @staticmethod
    def get_device_properties(device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536, "warpSize": 32,
                "sm_clock_rate": 1980000, "mem_clock_rate": 3200000, "mem_bus_width": 6144}

    @staticmethod
    def fill_tma_descriptor_tiled(ptr, swizzle, elem_size, dtype, block, shape, strides, padding):
        return ("tmap", ptr, tuple(block), tuple(shape), tuple(strides), swizzle)


class FakeDriver(DriverBase):
    def __init__(self):
        self.target = GPUTarget("cuda", 90, 32)
        self.utils = FakeUtils()
        self.launcher_cls = nv.CudaLauncher

    @classmethod
    def is_active(cls):
        return True

    def get_current_target(self):
        return self.target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0x5EED

    def get_active_torch_device(self):
        return torch.device("cpu")

    def map_python_to_cpp_type(self, ty):
        return "void*"

    def get_benchmarker(self):
        raise NotImplementedError

    def get_device_interface(self):
        raise NotImplementedError

    def get_empty_cache_for_benchmark(self):
        raise NotImplementedError

    def clear_cache(self, cache):
        raise NotImplementedError

    def allocate_default_profile_scratch(self, *args):
        return None


@pytest.fixture
def fake_cuda(monkeypatch):
    fake = FakeDriver()
    saved = drv._active
    drv.set_active(fake)
    monkeypatch.setattr(nv, "PyKernelArg", lambda nested_tuple, type: ("kernel-arg", type))
    monkeypatch.setattr(nv, "ARG_KERNEL", 1, raising=False)
    monkeypatch.setattr(nv, "ARG_TUPLE", 2, raising=False)
    monkeypatch.setattr(nv, "ARG_CONSTEXPR", 3, raising=False)
    monkeypatch.setattr(gemm_launch, "_current_device_fn", lambda: (lambda: None))  # CPU tensors: index None
    monkeypatch.setattr(m, "_device_info", lambda device: m.DeviceInfo("hopper", "Fake H200", 132))
    compat.tensordesc_expander.cache_clear()
    max_shared_mem.cache_clear()  # Triton's per-device limit, cached by device index: the fake H200's here only
    yield fake.utils
    drv._active = saved
    compat.tensordesc_expander.cache_clear()
    max_shared_mem.cache_clear()


def _operands(M, N, K, dtype, a_col, b_col):
    a = torch.randn(M, K).to(dtype)
    b = torch.randn(K, N).to(dtype)
    return (a.T.contiguous().T if a_col else a), (b.T.contiguous().T if b_col else b)


def _without_hook_slots(args):
    return tuple(x for i, x in enumerate(args) if i not in HOOK_SLOTS)


def _as_launcher_reads(kernel_args):
    """What the C launcher reads from each kernel argument: a pointer object's ``data_ptr()`` (Triton's JIT
    passes tensors, utlx's direct path their addresses), everything else as it is."""
    return tuple(x.data_ptr() if hasattr(x, "data_ptr") else x for x in kernel_args)


#: (family, grid mode, A column-major, B column-major, dtype, EPILOGUE_SUBTILE): the first candidate that fits.
#: The subtiled ones take EPILOGUE_SUBTILE explicitly; the others leave it to the kernels' default (1), which
#: the direct launch must pass as the JIT does.
CASES = [("hopper_pipelined", "tiles", False, False, torch.float16, 1),
         ("tma_persistent", "persistent", False, True, torch.bfloat16, 1),
         ("ws_persistent", "persistent", True, False, torch.float16, 1),
         ("tma_persistent", "persistent", False, False, torch.float16, 4),
         ("ws_persistent", "persistent", False, True, torch.bfloat16, 4),
         ("ws_pingpong", "persistent", True, True, torch.float16, 4)]


@pytest.mark.parametrize(("family", "grid_mode", "a_col", "b_col", "dtype", "subtile"), CASES,
                         ids=[f"{c[0]}-{'col' if c[2] else 'row'}-{'col' if c[3] else 'row'}-e{c[5]}" for c in CASES])
def test_direct_launch_matches_the_jit_launch(fake_cuda, monkeypatch, family, grid_mode, a_col, b_col, dtype, subtile):
    monkeypatch.setenv("UTLX_PDL", "1")  # the direct path must pass the PDL flag and constexpr on as the JIT does
    launches = fake_cuda.launches
    a, b = _operands(304, 528, 272, dtype, a_col, b_col)  # ragged vs the tiles, 16-divisible strides
    cand = next(c for c in m.candidates("hopper", True, a_col=a_col, b_col=b_col)
                if c.family == family and c.grid_mode == grid_mode and c.config.get("EPILOGUE_SUBTILE", 1) == subtile)
    launch = cand.bind(Problem.of(a, b, 132))
    c = torch.empty(304, 528, dtype=dtype)
    launch(a, b, c)  # through the JIT (compiles for cuda:90 here) and Triton's CudaLauncher
    assert len(launches) == 1 and launch.direct is not None and launch.direct.call is not None
    via_jit = launches.pop()
    if launch.blocks is not None:
        assert launch.caches is not None  # the descriptors were lowered to TMA: cacheable
    launch(a, b, c)  # the direct path
    direct = launches.pop()
    jit_args, direct_args = _without_hook_slots(via_jit), _without_hook_slots(direct)
    assert jit_args[:-1] == direct_args[:-1]  # grid, stream, function, flags, metadata, annotations, signature
    assert _as_launcher_reads(jit_args[-1]) == _as_launcher_reads(direct_args[-1])  # expanded kernel args
    assert direct[8:11] == (None, None, None)
    if launch.blocks is not None:
        tmaps = [x for x in direct_args[-1] if isinstance(x, tuple) and x[:1] == ("tmap",)]
        assert [t[1] for t in tmaps] == [a.data_ptr(), b.data_ptr(), c.data_ptr()]
        assert launch.blocks[2][-1] == cand.config["BLOCK_SIZE_N"] // subtile  # C's box: one epilogue slice wide
        assert direct_args[-1][-2:] == (subtile, True)  # EPILOGUE_SUBTILE, then PDL: the kernels' last two
        _assert_pdl(launch, via_jit, on=True)
        out = launch.matmul(a, b, a.data_ptr(), b.data_ptr())  # hot path: new C, A and B from the cache
        hot = launches.pop()[-1]
        assert hot[0] is direct_args[-1][0] and hot[5] is direct_args[-1][5]  # the very same encoded maps
        assert hot[10][1] == out.data_ptr()
    else:
        assert direct_args[-1][:3] == (a.data_ptr(), b.data_ptr(), c.data_ptr())


PDL_FLAG = 6  # gridX, gridY, gridZ, stream, function, cooperative, pdl: the launcher's seventh argument


def _assert_pdl(launch, recorded, on: bool) -> None:
    """Programmatic dependent launch is both or neither: the launcher's attribute flag and, in the PTX, the
    trigger plus the wait that must precede every global access (utlx.kernels.grid_dependency)."""
    ptx = launch.direct.compiled.asm["ptx"]
    assert bool(recorded[PDL_FLAG]) is on
    assert ("griddepcontrol.wait" in ptx) is on
    assert ("griddepcontrol.launch_dependents" in ptx) is on
    if on:  # the wait comes before the first TMA load
        assert ptx.index("griddepcontrol.wait") < ptx.index("cp.async.bulk.tensor")


@pytest.mark.parametrize("family", ["tma_persistent", "ws_persistent", "ws_pingpong", "tma_splitk", "tma_streamk"])
@pytest.mark.parametrize("pdl", ["1", "0", ""])  # "": unset, the default (off)
def test_pdl_follows_utlx_pdl(fake_cuda, monkeypatch, family, pdl):
    """UTLX_PDL=1: the Hopper GEMMs launch with the PDL attribute and wait for the previous grid before touching
    memory; UTLX_PDL=0 or unset (the default): neither the attribute nor the instructions (the kernels as before)."""
    monkeypatch.setenv("UTLX_PDL", pdl)
    launches = fake_cuda.launches
    M, N, K = (64, 512, 4096) if family == "tma_splitk" else (304, 528, 272)
    a, b = _operands(M, N, K, torch.float16, False, False)
    cand = next(c for c in m.candidates("hopper", True, shape=(M, N, K)) if c.family == family)
    launch = cand.bind(Problem.of(a, b, 132))
    c = torch.empty(M, N, dtype=torch.float16)
    launch(a, b, c)
    via_jit = launches.pop()
    _assert_pdl(launch, via_jit, on=pdl == "1")
    launch(a, b, c)
    assert launches.pop()[PDL_FLAG] == via_jit[PDL_FLAG]  # the direct path passes the compiled flag on


def _recording_zeros(monkeypatch):
    """Record every ``torch.zeros`` (the workspaces a split-K launch allocates)."""
    made = []
    real_zeros = torch.zeros

    def recording_zeros(*args, **kwargs):
        t = real_zeros(*args, **kwargs)
        made.append(t)
        return t

    monkeypatch.setattr(torch, "zeros", recording_zeros)
    return made


def _workspace_pos(args, M, N, K, n_constexprs=7):
    """Index of the workspace pointer in the launcher's kernel arguments: after M, N, K, before the
    constexpr tail (BLOCK_SIZE_M/N/K, GROUP_SIZE_M, NUM_STAGES, SPLIT_K, then A_COL, B_COL if any, then PDL)."""
    pos = len(args) - n_constexprs - 1
    if args[pos - 3:pos] != (M, N, K):
        pos -= 2  # the _colmajor kernel's A_COL, B_COL
    assert args[pos - 3:pos] == (M, N, K), args
    return pos


def _splitk_launch(M, N, K, a_col=False, b_col=False, pool=None):
    a, b = _operands(M, N, K, torch.float16, a_col, b_col)
    cand = next(c for c in m.tuning_candidates(a, b) if c.family == "tma_splitk" and c.config["SPLIT_K"] == 2)
    launch = cand.bind(Problem.of(a, b, 132))
    assert isinstance(launch, gemm_launch.SplitKLaunch)
    launch.pool = pool if pool is not None else gemm_launch.WorkspacePool()
    return a, b, launch


@pytest.mark.parametrize(("a_col", "b_col"), [(False, False), (False, True)], ids=["row-row", "row-col"])
def test_splitk_direct_launch_matches_the_jit_launch_and_reuses_the_streams_workspace(fake_cuda, monkeypatch, a_col,
                                                                                      b_col):
    """The split-K launch hands the C launcher what the JIT does, except the workspace: the JIT path gets a
    fresh zeroed one (M*N + tiles fp32 words, after M, N, K), the direct paths the one the pool keeps for the
    stream, allocated once and passed again on every later call (no memset per call)."""
    launches = fake_cuda.launches
    M, N, K = 16, 2048, 4096  # skinny: 16 tiles of 64x128 on 132 "SMs", 2 K slices
    a, b, launch = _splitk_launch(M, N, K, a_col, b_col)
    assert launch.grid == (16 * 2,)
    made = _recording_zeros(monkeypatch)
    c = torch.empty(M, N, dtype=torch.float16)
    launch(a, b, c)  # through the JIT
    via_jit = _without_hook_slots(launches.pop())
    launch(a, b, c)  # the direct path
    direct = _without_hook_slots(launches.pop())
    assert len(made) == 2  # the JIT call's own workspace, then the stream's (allocated on first use)
    for ws in made:
        assert ws.dtype == torch.float32 and ws.numel() == M * N + 16 and not ws.any()
    jit_args, direct_args = _as_launcher_reads(via_jit[-1]), _as_launcher_reads(direct[-1])
    assert via_jit[:-1] == direct[:-1]
    pos = _workspace_pos(direct_args, M, N, K)
    assert jit_args[pos] == made[0].data_ptr() and direct_args[pos] == made[1].data_ptr()
    assert jit_args[:pos] == direct_args[:pos] and jit_args[pos + 1:] == direct_args[pos + 1:]
    assert launch.pool.table(None)[0x5EED][2] is made[1]
    for _ in range(3):
        out = launch.matmul(a, b, a.data_ptr(), b.data_ptr())  # hot path: C, one lookup, one launcher call
        hot = _as_launcher_reads(launches.pop()[-1])
        assert hot[pos] == made[1].data_ptr()
    launch(a, b, c)
    assert _as_launcher_reads(launches.pop()[-1])[pos] == made[1].data_ptr()
    assert len(made) == 2 and len(launch.pool) == 1  # nothing zeroed per call
    tmaps = [x for x in hot if isinstance(x, tuple) and x[:1] == ("tmap",)]
    assert [t[1] for t in tmaps] == [a.data_ptr(), b.data_ptr(), out.data_ptr()]


def test_splitk_streams_never_share_a_workspace(fake_cuda, monkeypatch):
    launches = fake_cuda.launches
    M, N, K = 16, 2048, 4096
    a, b, launch = _splitk_launch(M, N, K)
    launch.matmul(a, b, a.data_ptr(), b.data_ptr())  # compile (JIT path)
    launches.clear()
    made = _recording_zeros(monkeypatch)
    seen = {}
    for stream in (0x111, 0x222, 0x111, 0x222, 0x333):
        monkeypatch.setattr(drv.active, "get_current_stream", lambda device=None, s=stream: s)
        launch.direct.stream = drv.active.get_current_stream  # what DirectLaunch bound when it was made
        launch.matmul = launch._fast_matmul()
        launch.matmul(a, b, a.data_ptr(), b.data_ptr())
        args = launches.pop()
        assert args[3] == stream  # the launch runs on that stream ...
        pw = _as_launcher_reads(args[-1])[_workspace_pos(_as_launcher_reads(args[-1]), M, N, K)]
        assert seen.setdefault(stream, pw) == pw  # ... with that stream's workspace, every time
    assert len(set(seen.values())) == 3 and len(made) == 3 and len(launch.pool) == 3


def test_splitk_workspace_grows_by_a_new_zeroed_allocation_and_is_shared_by_problems_on_a_stream(fake_cuda,
                                                                                                monkeypatch):
    launches = fake_cuda.launches
    pool = gemm_launch.WorkspacePool()
    a1, b1, small = _splitk_launch(16, 2048, 4096, pool=pool)
    a2, b2, big = _splitk_launch(32, 4096, 4096, pool=pool)
    for launch, a, b in ((small, a1, b1), (big, a2, b2)):
        launch.matmul(a, b, a.data_ptr(), b.data_ptr())  # compile (JIT path)
    launches.clear()
    made = _recording_zeros(monkeypatch)

    def workspace_of_last_launch(M, N, K):
        args = _as_launcher_reads(launches.pop()[-1])
        return args[_workspace_pos(args, M, N, K)]

    small.matmul(a1, b1, a1.data_ptr(), b1.data_ptr())
    assert len(made) == 1 and made[0].numel() == small.workspace_numel
    assert workspace_of_last_launch(16, 2048, 4096) == made[0].data_ptr()
    big.matmul(a2, b2, a2.data_ptr(), b2.data_ptr())  # needs more: a new zeroed workspace replaces it
    assert len(made) == 2 and made[1].numel() == big.workspace_numel > small.workspace_numel and not made[1].any()
    assert workspace_of_last_launch(32, 4096, 4096) == made[1].data_ptr()
    small.matmul(a1, b1, a1.data_ptr(), b1.data_ptr())  # the bigger one serves the smaller problem too
    assert workspace_of_last_launch(16, 2048, 4096) == made[1].data_ptr() and len(made) == 2
    assert len(pool) == 1
    pool.release()
    assert len(pool) == 0
    small.matmul(a1, b1, a1.data_ptr(), b1.data_ptr())  # after release: allocated again
    assert len(made) == 3 and workspace_of_last_launch(16, 2048, 4096) == made[2].data_ptr()


def test_splitk_under_graph_capture_takes_a_fresh_workspace_per_call(fake_cuda, monkeypatch):
    """While the stream captures, every call zeroes a workspace of its own and the pool is left alone (a
    graph must not hold a pooled workspace: its replays could race eager launches or outlive a growth)."""
    launches = fake_cuda.launches
    M, N, K = 16, 2048, 4096
    a, b, launch = _splitk_launch(M, N, K)
    capturing = [False]
    launch.capturing = lambda: capturing[0]
    c = torch.empty(M, N, dtype=torch.float16)
    launch.matmul(a, b, a.data_ptr(), b.data_ptr())  # compile (JIT path)
    launch.matmul(a, b, a.data_ptr(), b.data_ptr())  # eager: the stream's workspace
    launches.clear()
    assert len(launch.pool) == 1
    pooled = launch.pool.table(None)[0x5EED][0]
    made = _recording_zeros(monkeypatch)
    capturing[0] = True
    launch.matmul(a, b, a.data_ptr(), b.data_ptr())
    launch(a, b, c)
    for ws in made:
        assert ws.numel() == M * N + 16 and not ws.any()
    got = [(lambda args: args[_workspace_pos(args, M, N, K)])(_as_launcher_reads(x[-1])) for x in launches]
    assert len(made) == 2 and got == [ws.data_ptr() for ws in made] and pooled not in got
    assert len(launch.pool) == 1 and launch.pool.table(None)[0x5EED][0] == pooled
    capturing[0] = False
    launches.clear()
    launch.matmul(a, b, a.data_ptr(), b.data_ptr())
    args = _as_launcher_reads(launches.pop()[-1])
    assert args[_workspace_pos(args, M, N, K)] == pooled and len(made) == 2


def test_hooks_take_the_jit_launch_path(fake_cuda):
    from triton import knobs

    launches = fake_cuda.launches
    a, b = _operands(256, 256, 256, torch.float16, False, False)
    cand = m.candidates("hopper", True)[0]
    launch = cand.bind(Problem.of(a, b, 132))
    launch.matmul(a, b, a.data_ptr(), b.data_ptr())
    launches.clear()
    seen = []

    def hook(metadata):
        seen.append(metadata.get()["name"])

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        launch.matmul(a, b, a.data_ptr(), b.data_ptr())
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    (args,) = launches
    assert args[9] is knobs.runtime.launch_enter_hook and args[8] is not None  # Triton's own call
    assert not seen  # the stand-in C launcher does not call hooks; the slot carried them


def test_precompile_compiles_every_candidate_without_launching(fake_cuda):
    a, b = _operands(256, 512, 128, torch.float16, False, True)
    cands = m.tuning_candidates(a, b)
    assert cands and all(c.id.endswith("/bcol") for c in cands)
    errors = m.precompile(a, b, cands[:3])
    assert errors == [] and fake_cuda.launches == []


def test_precompile_reports_failures(fake_cuda):
    a, b = _operands(256, 512, 128, torch.float16, False, False)
    bad = m.Candidate("tma_persistent", tuple(sorted(m._cfg(128, 128, 48, 3).items())), 8, "persistent")
    errors = m.precompile(a, b, [bad])  # a 48-wide TMA box is not a power of two
    assert len(errors) == 1 and errors[0].startswith("tma_persistent/persistent/128x128x48/s3/g8/w8: ")


def test_fake_driver_is_gone_after_the_tests():
    assert not isinstance(drv._active, FakeDriver)

