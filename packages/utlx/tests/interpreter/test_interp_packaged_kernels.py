"""utlx's own packaged GEMM kernels (``utlx.kernels``, written for the GPU) run unchanged on the CPU."""

from __future__ import annotations

import importlib
import inspect

import pytest
import triton
from utlx_interp_host import check_against_fp32, make_inputs


def _kernel_module(name: str):
    """``utlx.kernels.<vendor>.<name>``: ``amd_*`` kernels under ``amd``, ``hopper_*`` under ``nvidia``."""
    return importlib.import_module(f"utlx.kernels.{'amd' if name.startswith('amd_') else 'nvidia'}.{name}")

_CONSTS = dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=2, NUM_STAGES=3)


@pytest.mark.parametrize(("module", "kernel"), [("amd_pipelined", "matmul_kernel_pipelined_amd"),
                                                ("hopper_pipelined", "matmul_kernel_pipelined_hopper")])
def test_pointer_gemm_kernels(module, kernel):
    fn = getattr(_kernel_module(module), kernel)
    params = inspect.signature(fn.fn).parameters
    a, b, c = make_inputs(96, 80, 160)
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, 32) * triton.cdiv(n, 32),)
    fn[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
             **{name: v for name, v in _CONSTS.items() if name in params})
    check_against_fp32(c, a, b)


def test_tma_persistent_gemm_kernel():
    mod = importlib.import_module("utlx.kernels.nvidia.hopper_tma_persistent")
    a, b, c = make_inputs(96, 80, 160, seed=7)
    c.zero_()
    mod.launch(a, b, c, config=(dict(_CONSTS), 4), num_sms=2)
    check_against_fp32(c, a, b)


@pytest.mark.parametrize(("a_col", "b_col"), [(False, True), (True, False), (True, True)])
def test_tma_persistent_gemm_kernel_column_major_operands(a_col, b_col):
    """Transposed views (``x.T``) go in as they are: descriptors over their row-major storage and a
    ``local_trans`` view for the dot (the ``_colmajor`` kernel)."""
    mod = importlib.import_module("utlx.kernels.nvidia.hopper_tma_persistent")
    a, b, c = make_inputs(96, 80, 160, seed=11)
    a_in = a.T.contiguous().T if a_col else a
    b_in = b.T.contiguous().T if b_col else b
    assert mod.column_major(a_in) == a_col and mod.column_major(b_in) == b_col
    c.zero_()
    mod.launch(a_in, b_in, c, config=(dict(_CONSTS), 4), num_sms=2)
    check_against_fp32(c, a, b)


# Epilogue subtiling (EPILOGUE_SUBTILE): C leaves in 2 or 4 column slices through two staging buffers. Persistent
# launches on 2 programs, so each walks several tiles and the slices' buffers alternate across tiles; the shapes
# are ragged in M, N and K (a slice can lie wholly past N: TMA clips it).
_SUBTILE_CASES = [("hopper_tma_persistent", (96, 80, 160), 2, "fp16", False, False),
                  ("hopper_tma_persistent", (70, 200, 104), 4, "bf16", False, True),
                  ("hopper_tma_persistent", (40, 136, 40), 4, "fp16", True, False),
                  ("hopper_ws_persistent", (96, 200, 160), 4, "fp16", False, False),
                  ("hopper_ws_persistent", (72, 80, 104), 2, "bf16", True, True),
                  ("hopper_ws_pingpong", (96, 200, 160), 4, "fp16", False, False),
                  ("hopper_ws_pingpong", (72, 80, 104), 2, "bf16", True, True),
                  ("hopper_ws_pingpong", (152, 328, 72), 1, "fp16", True, False)]


@pytest.mark.parametrize(("module", "shape", "subtile", "dtype", "a_col", "b_col"), _SUBTILE_CASES,
                         ids=[f"{c[0][7:]}-{'x'.join(map(str, c[1]))}-e{c[2]}-{c[3]}-{'c' if c[4] else 'r'}"
                              f"{'c' if c[5] else 'r'}" for c in _SUBTILE_CASES])
def test_subtiled_epilogue(module, shape, subtile, dtype, a_col, b_col):
    import torch

    mod = _kernel_module(module)
    m, n, k = shape
    a, b, c = make_inputs(m, n, k, dtype={"fp16": torch.float16, "bf16": torch.bfloat16}[dtype], seed=m + n)
    a_in = a.T.contiguous().T if a_col else a
    b_in = b.T.contiguous().T if b_col else b
    const = dict(_CONSTS, BLOCK_SIZE_N=64, EPILOGUE_SUBTILE=subtile)
    mod.launch(a_in, b_in, c, config=(const, 4), num_sms=2)
    check_against_fp32(c, a, b)


def test_subtiled_epilogue_rejects_a_bad_subtile():
    tp = importlib.import_module("utlx.kernels.nvidia.hopper_tma_persistent")
    with pytest.raises(ValueError, match=r"EPILOGUE_SUBTILE must be one of \(1, 2, 4\) and divide "
                                         r"BLOCK_SIZE_N=256, got 3"):
        tp.descriptor_blocks(128, 256, 64, epilogue_subtile=3)


# Split-K (hopper_tma_splitk): small tiles so the problems below have several tiles and K slices. Shapes are
# ragged w.r.t. the tile and K is not a multiple of SPLIT_K * BLOCK_SIZE_K; (56, 40, 40) with SPLIT_K=3 leaves
# the last slice with no k-step at all (cdiv(40, 32) = 2 k-steps over 3 slices).
_SPLITK_CASES = [((40, 48, 200), 3, "fp16", False, False), ((70, 40, 104), 2, "bf16", False, True),
                 ((16, 64, 96), 4, "fp16", True, False), ((56, 40, 40), 3, "bf16", True, True)]


@pytest.mark.parametrize(("shape", "split_k", "dtype", "a_col", "b_col"), _SPLITK_CASES,
                         ids=[f"{'x'.join(map(str, c[0]))}-k{c[1]}-{c[2]}-{'c' if c[3] else 'r'}{'c' if c[4] else 'r'}"
                              for c in _SPLITK_CASES])
def test_tma_splitk_gemm_kernel(shape, split_k, dtype, a_col, b_col):
    """Every K slice adds its fp32 partial into the workspace; the last one to arrive writes C."""
    import torch

    mod = importlib.import_module("utlx.kernels.nvidia.hopper_tma_splitk")
    m, n, k = shape
    a, b, c = make_inputs(m, n, k, dtype={"fp16": torch.float16, "bf16": torch.bfloat16}[dtype], seed=m + k)
    a_in = a.T.contiguous().T if a_col else a
    b_in = b.T.contiguous().T if b_col else b
    mod.launch(a_in, b_in, c, config=(dict(_CONSTS, SPLIT_K=split_k), 4))
    check_against_fp32(c, a, b)


@pytest.mark.parametrize(("shape", "split_k", "dtype", "a_col", "b_col"), _SPLITK_CASES[::3],
                         ids=[f"{'x'.join(map(str, c[0]))}-k{c[1]}" for c in _SPLITK_CASES[::3]])
def test_tma_splitk_leaves_its_workspace_zeroed_for_the_next_call(shape, split_k, dtype, a_col, b_col):
    """The kernel is self-cleaning: the last slice of each tile zeroes the tile's partial sums and resets its
    arrival counter, so one workspace serves consecutive launches (what utlx.matmul's per-stream workspace
    relies on). Two launches on fresh data through the same, larger-than-needed workspace: both correct, and
    the workspace all-zero after each."""
    import torch

    mod = importlib.import_module("utlx.kernels.nvidia.hopper_tma_splitk")
    m, n, k = shape
    const = dict(_CONSTS, SPLIT_K=split_k)
    numel = mod.workspace_numel(m, n, const)
    ws = torch.zeros(numel + 37, dtype=torch.float32)  # the kernel only touches the first ``numel`` words
    for seed in (1, 2):
        a, b, c = make_inputs(m, n, k, dtype={"fp16": torch.float16, "bf16": torch.bfloat16}[dtype], seed=seed)
        a_in = a.T.contiguous().T if a_col else a
        b_in = b.T.contiguous().T if b_col else b
        mod.launch(a_in, b_in, c, config=(const, 4), workspace=ws)
        check_against_fp32(c, a, b)
        assert ws.count_nonzero().item() == 0, f"launch {seed} left {ws.count_nonzero().item()} words set"


def test_tma_splitk_workspace_must_start_zeroed():
    """The workspace is an input: partial sums or counters left in it change the result (so the zero check
    above matters). A workspace holding 1.0 everywhere gives a wrong C."""
    import torch

    mod = importlib.import_module("utlx.kernels.nvidia.hopper_tma_splitk")
    const = dict(_CONSTS, SPLIT_K=2)
    a, b, c = make_inputs(40, 48, 200, seed=5)
    ws = torch.zeros(mod.workspace_numel(40, 48, const), dtype=torch.float32)
    ws[:40 * 48] = 1.0
    mod.launch(a, b, c, config=(const, 4), workspace=ws)
    with pytest.raises(AssertionError):
        check_against_fp32(c, a, b)
    with pytest.raises(ValueError, match="workspace must be fp32 with at least"):
        mod.launch(a, b, c, config=(const, 4), workspace=torch.zeros(10, dtype=torch.float32))


def test_tma_splitk_through_the_matmul_candidate():
    """``Candidate.bind`` makes a ``SplitKLaunch`` (under the interpreter every call takes Triton's own path,
    with a fresh zeroed workspace): run it twice on new data; the second result must not carry the first
    call's sums."""
    import torch
    from utlx.gemm_launch import Problem, SplitKLaunch
    from utlx.matmul import Candidate

    cand = Candidate("tma_splitk", tuple(sorted(dict(_CONSTS, SPLIT_K=2).items())), 4, "tiles")
    assert cand.id == "tma_splitk/tiles/32x32x32/s3/g2/w4/k2"
    a, b, c = make_inputs(48, 72, 136, dtype=torch.float16, seed=3)
    launch = cand.bind(Problem.of(a, b, 4))
    assert isinstance(launch, SplitKLaunch) and launch.grid == (2 * 3 * 2,)  # 2x3 tiles, 2 slices
    for seed in (3, 4):
        a, b, c = make_inputs(48, 72, 136, dtype=torch.float16, seed=seed)
        launch(a, b, c)
        check_against_fp32(c, a, b)


# The skinny configurations utlx.matmul ships, at their own tile sizes (not the small test tiles above), on ragged
# problems with a few tiles and k-steps each (rows of 16-byte multiples, a TMA rule), B row- and column-major
# (``x @ w.T`` is the decode case).
_SHIPPED_SKINNY = [("tma_persistent", {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                                       "NUM_STAGES": 4}, (72, 200, 304)),
                   ("tma_splitk", {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                                   "NUM_STAGES": 2, "SPLIT_K": 4}, (16, 200, 1096))]


@pytest.mark.parametrize("b_col", [False, True], ids=["rr", "rc"])
@pytest.mark.parametrize(("family", "const", "shape"), _SHIPPED_SKINNY, ids=[f[0] for f in _SHIPPED_SKINNY])
def test_shipped_skinny_configurations(family, const, shape, b_col):
    """Through ``Candidate.bind``, as utlx.matmul launches them (132 SMs; one program per tile or slice)."""
    import importlib

    from utlx.gemm_launch import Problem

    m = importlib.import_module("utlx.matmul")
    shipped = m.SKINNY_TILE_CONFIGS if family == "tma_persistent" else m.splitk.CONFIGS
    assert (const, 4) in shipped
    M, N, K = shape
    for seed in (N + K, N + K + 1):  # the second call on fresh data must not carry the first one's sums
        a, b, c = make_inputs(M, N, K, seed=seed)
        b_in = b.T.contiguous().T if b_col else b
        c.fill_(float("nan"))
        cand = m.Candidate(family, tuple(sorted(dict(const, **({"B_COL": 1} if b_col else {})).items())), 4, "tiles")
        cand.bind(Problem.of(a, b_in, 132))(a, b_in, c)
        check_against_fp32(c, a, b)
