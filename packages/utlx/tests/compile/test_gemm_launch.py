"""utlx.gemm_launch / utlx.launch on the CPU: what each call path hands the JIT, the runner and the C launcher.

A fake JIT kernel records its launches and returns a fake ``CompiledKernel``; ``utlx.compat``'s launcher
hooks are replaced by recorders (the real calling convention is checked against each Triton version's
own ``CudaLauncher`` in test_launch_convention.py). CPU tensors stand in for CUDA ones.
"""

from __future__ import annotations

import gc
import weakref

import pytest

torch = pytest.importorskip("torch")

from utlx import compat, gemm_launch, launch  # noqa: E402
from utlx.gemm_launch import GemmLaunch, Problem  # noqa: E402
from utlx.kernels.nvidia import hopper_pipelined  # noqa: E402

CONSTS = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "NUM_STAGES": 3}
POINTER_ARGS = list(hopper_pipelined.matmul_kernel_pipelined_hopper.arg_names)
DESC_ARGS = ["a_desc", "b_desc", "c_desc", "M", "N", "K", *CONSTS, "NUM_SMS"]


class FakeCompiled:
    """``CompiledKernel[grid]`` returns a runner; this one records its calls."""

    def __init__(self, log):
        self.log = log

    def __getitem__(self, grid):
        def runner(*args):
            self.log.append(("runner", grid, args))

        return runner


class FakeJit:
    """Records ``kernel[grid](*args, **kwargs)`` and returns a :class:`FakeCompiled`."""

    def __init__(self, arg_names, log):
        self.arg_names = arg_names
        self.log = log
        self.__name__ = "fake_kernel"

    def __getitem__(self, grid):
        def launch_(*args, **kwargs):
            self.log.append(("jit", grid, args, kwargs))
            return FakeCompiled(self.log)

        return launch_

    def run(self, *args, grid, warmup, **kwargs):
        """``kernel.run(..., warmup=True)``: compile without launching."""
        assert warmup
        self.log.append(("compile", grid, args, kwargs))
        return FakeCompiled(self.log)


@pytest.fixture
def fake_launcher(monkeypatch):
    """compat's launcher pieces as recorders: a direct call, the stream, the hooks state, the expander."""
    log: list = []
    state = {"idle": True, "metas": None, "direct": True}

    def direct_launch(compiled, grid, cluster_ctas=1):
        if not state["direct"]:
            return None
        if cluster_ctas != 1:
            return lambda stream, args: log.append(("direct", grid, stream, args, f"clusters of {cluster_ctas}"))
        return lambda stream, args: log.append(("direct", grid, stream, args))

    monkeypatch.setattr(compat, "direct_launch", direct_launch)
    monkeypatch.setattr(compat, "tensordesc_metas", lambda compiled: state["metas"])
    monkeypatch.setattr(compat, "current_stream_fn", lambda: (lambda dev: 0x5EED))
    monkeypatch.setattr(compat, "launch_hooks_idle_fn", lambda: (lambda: state["idle"]))
    monkeypatch.setattr(compat, "tensordesc_expander", lambda: (
        lambda desc, meta: [("tmap", desc.base.data_ptr(), tuple(desc.block_shape), meta["id"]), *desc.shape,
                            *desc.strides]))
    monkeypatch.setattr(gemm_launch, "_current_device_fn", lambda: (lambda: None))  # CPU tensors: index None
    return log, state


def _problem(a, b):
    return Problem.of(a, b, num_sms=4)


def _tensors(M=96, N=80, K=48, b_col=False, dtype=torch.float16, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g).to(dtype)
    b = torch.randn(N, K, generator=g).to(dtype).T if b_col else torch.randn(K, N, generator=g).to(dtype)
    return a, b


def test_pointer_kernel_first_call_jits_then_launches_directly(fake_launcher):
    log, _ = fake_launcher
    a, b = _tensors()
    M, K = a.shape
    N = b.shape[1]
    gl = GemmLaunch(FakeJit(POINTER_ARGS, log), CONSTS, 4, (6,), _problem(a, b))
    c = torch.empty(M, N, dtype=a.dtype)
    gl(a, b, c)
    kind, grid, args, kwargs = log.pop()
    assert kind == "jit" and grid == (6,) and kwargs == dict(CONSTS, num_warps=4)
    assert args[:3] == (a, b, c) and args[3:] == (M, N, K, K, 1, N, 1, N, 1)
    gl(a, b, c)
    kind, grid, stream, args = log.pop()
    assert (kind, grid, stream) == ("direct", (6, 1, 1), 0x5EED)
    assert args == (a.data_ptr(), b.data_ptr(), c.data_ptr(), M, N, K, K, 1, N, 1, N, 1, *CONSTS.values())
    # the hot path: a fresh output, the same launch
    out = gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    kind, _, _, args = log.pop()
    assert kind == "direct" and out.shape == (M, N) and out.dtype == a.dtype and args[2] == out.data_ptr()
    assert not log


def test_hooks_fall_back_to_triton_runner(fake_launcher):
    log, state = fake_launcher
    a, b = _tensors()
    gl = GemmLaunch(FakeJit(POINTER_ARGS, log), CONSTS, 4, (6,), _problem(a, b))
    gl.matmul(a, b, a.data_ptr(), b.data_ptr())  # first: the JIT
    state["idle"] = False  # e.g. proton set a launch hook
    c = gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    kind, grid, args = log.pop()
    assert kind == "runner" and grid == (6, 1, 1) and args[:3] == (a, b, c) and args[-5:] == tuple(CONSTS.values())
    state["idle"] = True
    gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    assert log.pop()[0] == "direct"


def test_misaligned_output_goes_back_through_the_jit(fake_launcher):
    log, _ = fake_launcher
    a, b = _tensors()
    gl = GemmLaunch(FakeJit(POINTER_ARGS, log), CONSTS, 4, (6,), _problem(a, b))
    gl(a, b, torch.empty(96, 80, dtype=a.dtype))
    storage = torch.empty(96 * 80 + 1, dtype=a.dtype)
    c = storage[1:].view(96, 80)  # 2 bytes off a 16-byte boundary: the kernel was specialized for aligned C
    gl(a, b, c)
    assert [e[0] for e in log] == ["jit", "jit"]


def test_no_direct_launch_means_the_runner(fake_launcher):
    log, state = fake_launcher
    state["direct"] = False  # e.g. a kernel with global scratch
    a, b = _tensors()
    gl = GemmLaunch(FakeJit(POINTER_ARGS, log), CONSTS, 4, (6,), _problem(a, b))
    gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    assert [e[0] for e in log] == ["jit", "runner"]


def test_missing_constexpr_is_a_clear_error(fake_launcher):
    log, _ = fake_launcher
    a, b = _tensors()
    with pytest.raises(ValueError, match=r"fake_kernel needs constexprs \['NUM_STAGES'\]"):
        GemmLaunch(FakeJit(POINTER_ARGS, log), {k: v for k, v in CONSTS.items() if k != "NUM_STAGES"}, 4, (6,),
                   _problem(a, b))


def _desc_launch(log, state, a, b):
    state["metas"] = [{"id": "A"}, {"id": "B"}, {"id": "C"}]
    p = _problem(a, b)
    blocks = ([32, 64] if p.a_col else [64, 32]), ([64, 32] if p.b_col else [32, 64]), [64, 64]
    return GemmLaunch(FakeJit(DESC_ARGS, log), dict(CONSTS, NUM_SMS=4), 4, (4,), p, blocks)


def test_descriptor_kernel_caches_encoded_descriptors(fake_launcher):
    log, state = fake_launcher
    a, b = _tensors()
    gl = _desc_launch(log, state, a, b)
    c0 = gl.matmul(a, b, a.data_ptr(), b.data_ptr())  # through the JIT: host TensorDescriptors
    kind, _, args, _ = log.pop()
    assert kind == "jit" and [d.block_shape for d in args[:3]] == [[64, 32], [32, 64], [64, 64]]
    assert args[0].base is a and args[2].base is c0
    del c0
    out = gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    kind, _, _, direct = log.pop()
    assert kind == "direct"
    assert direct[0] == ("tmap", a.data_ptr(), (64, 32), "A") and direct[1:5] == (96, 48, 48, 1)
    assert direct[5] == ("tmap", b.data_ptr(), (32, 64), "B")
    assert direct[10] == ("tmap", out.data_ptr(), (64, 64), "C") and direct[15:18] == (96, 80, 48)
    assert direct[18:] == (*CONSTS.values(), 4)
    misses = [cache.misses for cache in gl.caches]
    gl.matmul(a, b, a.data_ptr(), b.data_ptr())  # same A and B: no new encoding for them
    assert [cache.misses for cache in gl.caches][:2] == misses[:2]


def test_column_major_operand_is_described_through_its_transpose(fake_launcher):
    log, state = fake_launcher
    a, b = _tensors(b_col=True)
    assert b.stride() == (1, 48)  # a transposed view, no copy
    gl = _desc_launch(log, state, a, b)
    gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    _, _, args, _ = log.pop()
    assert args[1].base.stride() == (48, 1) and args[1].block_shape == [64, 32]  # the row-major [N, K] storage
    gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    direct = log.pop()[3]
    assert direct[5] == ("tmap", b.data_ptr(), (64, 32), "B") and direct[6:10] == (80, 48, 48, 1)


def test_cluster_kernel_is_compiled_then_only_launched_directly(fake_launcher):
    """A kernel for clusters of CTAs (``ws_cluster``) must never go through Triton's own launch, which cannot
    form clusters and would leave every CTA waiting for its peer: not for the first call, not while launch hooks
    are set, and not when no direct launch exists (an error instead)."""
    log, state = fake_launcher
    a, b = _tensors()
    state["metas"] = [{"id": "A"}, {"id": "B"}, {"id": "C"}]
    blocks = [32, 32], [32, 64], [32, 64]
    gl = GemmLaunch(FakeJit(DESC_ARGS, log), dict(CONSTS, NUM_SMS=4), 4, (4,), _problem(a, b), blocks,
                    cluster_ctas=2)
    c = gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    assert [e[0] for e in log] == ["compile", "direct"]
    assert log[-1][1] == (4, 1, 1) and log[-1][-1] == "clusters of 2" and log[-1][3][10][1] == c.data_ptr()
    state["idle"] = False  # a launch hook (proton, ...) would send other kernels to Triton's runner
    gl.matmul(a, b, a.data_ptr(), b.data_ptr())
    gl(a, b, torch.empty(96, 80, dtype=a.dtype))
    assert [e[0] for e in log] == ["compile", "direct", "direct", "direct"]
    storage = torch.empty(96 * 80 + 1, dtype=a.dtype)
    with pytest.raises(ValueError, match="16-byte aligned C"):
        gl(a, b, storage[1:].view(96, 80))
    state["direct"] = False  # e.g. a kernel with global scratch: no C-launcher path, so no clusters
    gl2 = GemmLaunch(FakeJit(DESC_ARGS, log), dict(CONSTS, NUM_SMS=4), 4, (4,), _problem(a, b), blocks,
                     cluster_ctas=2)
    with pytest.raises(RuntimeError, match="clusters of 2 CTAs"):
        gl2.matmul(a, b, a.data_ptr(), b.data_ptr())
    assert "runner" not in [e[0] for e in log] and "jit" not in [e[0] for e in log]


def test_descriptor_cache_is_bounded_and_keeps_no_tensor_alive(monkeypatch):
    monkeypatch.setattr(compat, "tensordesc_expander", lambda: (lambda desc, meta: [desc.base.data_ptr()]))
    cache = launch.DescriptorCache([16, 16], {"id": 0}, capacity=2)
    tensors = [torch.empty(32, 32, dtype=torch.float16) for _ in range(3)]
    for t in tensors:
        assert cache.get(t, t.data_ptr()) == (t.data_ptr(),)
    assert list(cache.entries) == [tensors[1].data_ptr(), tensors[2].data_ptr()]  # the oldest went first
    cache.get(tensors[2], tensors[2].data_ptr())
    assert cache.misses == 3
    ref = weakref.ref(tensors[2])
    del tensors[:], t
    gc.collect()
    assert ref() is None  # only addresses are kept
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        launch.DescriptorCache([16, 16], {}, capacity=0)


def test_bind_picks_kernel_grid_and_boxes_per_family():
    a, b = _tensors(M=300, N=512, K=136)
    row = Problem.of(a, b, 132)
    col = Problem.of(a, b.T.contiguous().T, 132)
    cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 3}
    t = gemm_launch.bind("tma_persistent", cfg, 8, "persistent", row)
    assert t.jit_fn.__name__ == "matmul_kernel_tma_persistent" and t.grid == (6,)
    assert t.blocks == ([128, 64], [64, 256], [128, 256]) and t.constexprs["NUM_SMS"] == 1 << 24
    t = gemm_launch.bind("tma_persistent", dict(cfg, B_COL=1), 8, "tiles", col)
    assert t.jit_fn.__name__ == "matmul_kernel_tma_persistent_colmajor" and t.blocks[1] == [256, 64]
    assert (t.constexprs["A_COL"], t.constexprs["B_COL"]) == (False, True)
    w = gemm_launch.bind("ws_persistent", cfg, 4, "persistent", row)
    assert w.jit_fn.__name__ == "matmul_kernel_ws_persistent" and w.blocks == ([64, 64], [64, 256], [64, 256])
    p = gemm_launch.bind("hopper_pipelined", cfg, 8, "tiles", row)
    assert p.blocks is None and p.grid == (3 * 2,)
    with pytest.raises(ValueError, match="cannot run a problem with a_col=False, b_col=True"):
        gemm_launch.bind("tma_persistent", cfg, 8, "persistent", col)  # a row-major candidate on a col problem
    with pytest.raises(ValueError, match="unknown kernel family 'nope'"):
        gemm_launch.bind("nope", cfg, 8, "tiles", row)


@pytest.mark.parametrize(("strides", "expected"), [((64, 1), "row"), ((1, 64), "col"), ((2, 64), "strided"),
                                                   ((1, 1), "row")])
def test_layout(strides, expected):
    assert gemm_launch.layout(strides) == expected


def test_tma_ready_needs_aligned_base_and_major_stride():
    assert gemm_launch.tma_ready((64, 1), 1024, 2)
    assert gemm_launch.tma_ready((1, 64), 1024, 2)
    assert not gemm_launch.tma_ready((1, 63), 1024, 2)  # 126-byte columns
    assert not gemm_launch.tma_ready((64, 1), 1026, 2)
    assert not gemm_launch.tma_ready((2, 64), 1024, 2)


def test_pad_grid():
    assert launch.pad_grid((5,)) == (5, 1, 1) and launch.pad_grid((2, 3)) == (2, 3, 1)
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        launch.pad_grid(())
