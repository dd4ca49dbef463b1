"""One GEMM kernel configuration bound to one problem, launched with the least host work per call.

Why a module of its own: ``utlx.matmul``'s hot path must cost no more than cuBLAS's (~17-22 us per call
on the H200's host), and a GEMM at 2048^3 only needs ~28 us of GPU time. A :class:`GemmLaunch` is made
once per exact problem (shapes, strides, dtype, device, pointer alignment: ``matmul``'s cache key), so
per call it only allocates the output, looks up the cached TMA descriptors and calls Triton's C launcher
(:class:`utlx.launch.DirectLaunch`). Everything else happened once: the grid, the constexpr tail, the
function handle, the descriptors' boxes, the stream getter.

Column-major operands (a transposed view, e.g. ``x @ w.T``) need no copy for the TMA kernels: the
descriptor is built over the operand's transpose (row-major) and the kernel reads the shared tile
through a transposed view (``A_COL`` / ``B_COL``). The pointer kernels take any strides.

The split-K kernel (:class:`SplitKLaunch`) takes one more runtime argument, an all-zero fp32 workspace.
The kernel leaves it zeroed, so the direct launch path takes the one kept for the launch's (device,
stream) (:mod:`utlx.splitk_workspace`: a dictionary lookup, no memset per call); under CUDA-graph
capture, and on Triton's own launch path (the first call, launch hooks), it allocates a fresh zeroed one
per call instead (one ``torch.zeros``: a stream-ordered memset, captured with the kernel).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import triton

from utlx import compat
from utlx.kernels import grid_dependency
from utlx.kernels.amd import amd_pipelined
from utlx.kernels.nvidia import hopper_pipelined
from utlx.kernels.nvidia import hopper_tma_persistent as tma
from utlx.kernels.nvidia import hopper_tma_splitk as splitk
from utlx.kernels.nvidia import hopper_tma_streamk as streamk
from utlx.kernels.nvidia import hopper_ws_cluster as ws_cluster
from utlx.kernels.nvidia import hopper_ws_persistent as ws
from utlx.kernels.nvidia import hopper_ws_pingpong as pingpong
from utlx.launch import DescriptorCache, DirectLaunch, constexpr_defaults
from utlx.splitk_workspace import WORKSPACES, WorkspacePool, capturing_fn

#: Kernel families whose A, B, C parameters are host TMA descriptors.
DESCRIPTOR_FAMILIES = ("tma_persistent", "ws_persistent", "ws_pingpong", "ws_cluster", "tma_splitk", "tma_streamk")
POINTER_KERNELS = {"hopper_pipelined": hopper_pipelined.matmul_kernel_pipelined_hopper,
                   "register_staged": amd_pipelined.matmul_kernel_pipelined_amd}
#: Encoded descriptors kept per operand per problem (distinct data pointers seen recently).
DESCRIPTOR_CACHE_CAPACITY = 8


def layout(strides: tuple[int, int]) -> str:
    """``"row"`` (unit column stride), ``"col"`` (unit row stride: a transposed view) or ``"strided"``."""
    if strides[1] == 1:
        return "row"
    if strides[0] == 1:
        return "col"
    return "strided"


def tma_ready(strides: tuple[int, int], ptr: int, elem_bytes: int) -> bool:
    """A row- or column-major operand a TMA descriptor can address: 16-byte aligned base and major stride."""
    kind = layout(strides)
    if kind == "strided":
        return False
    major = strides[0] if kind == "row" else strides[1]
    return ptr % 16 == 0 and (major * elem_bytes) % 16 == 0


@dataclass(frozen=True)
class Problem:
    """One GEMM as a launch sees it: ``C[M, N] = A[M, K] @ B[K, N]``, C fresh and row-major."""

    M: int
    N: int
    K: int
    a_strides: tuple[int, int]
    b_strides: tuple[int, int]
    dtype: Any  # torch dtype
    device: Any  # torch.device
    num_sms: int

    @property
    def a_col(self) -> bool:
        return layout(self.a_strides) == "col"

    @property
    def b_col(self) -> bool:
        return layout(self.b_strides) == "col"

    @staticmethod
    def of(a: Any, b: Any, num_sms: int) -> Problem:
        return Problem(a.shape[0], b.shape[1], a.shape[1], tuple(a.stride()), tuple(b.stride()), a.dtype, a.device,
                       num_sms)


def _current_device_fn() -> Callable[[], int]:
    import torch

    return getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)


class GemmLaunch:
    """``launch(a, b, c)`` computes ``c = a @ b``; ``launch.matmul(a, b, pa, pb)`` allocates ``c`` too.

    The first call goes through the JIT (compiling or finding the kernel for this specialization) and
    keeps a :class:`DirectLaunch`; later calls use it. ``matmul`` is replaced by a closure over
    everything fixed once the kernel is compiled. Callers pass tensors of this launch's problem only
    (``utlx.matmul`` keys launches by shapes, strides, dtype, device and pointer alignment).
    """

    #: Runtime parameters after M, N, K that this launch adds per call (see :class:`SplitKLaunch`).
    EXTRA_ARGS = 0

    def __init__(self, jit_fn: Any, constexprs: dict[str, Any], num_warps: int, grid: tuple[int, ...],
                 problem: Problem, blocks: tuple[list, list, list] | None = None, pdl: bool | None = None,
                 cluster_ctas: int = 1) -> None:
        self.jit_fn = jit_fn
        # > 1: the kernel runs in clusters of that many CTAs, which only the C launcher forms (DirectLaunch);
        # Triton's own launch would run it without a peer and hang, so it is compiled, never JIT-launched
        self.cluster_ctas = cluster_ctas
        # programmatic dependent launch when the kernel supports it (pdl None: UTLX_PDL decides)
        pdl_constexprs, pdl_options = grid_dependency.launch_options(jit_fn, pdl)
        self.constexprs = dict(constexprs, **pdl_constexprs)
        self.kwargs = dict(self.constexprs, num_warps=num_warps, **pdl_options)
        self.grid = grid
        self.problem = problem
        self.blocks = blocks  # TMA boxes of A, B, C (None: a pointer kernel)
        n_runtime = (6 if blocks is not None else 12) + self.EXTRA_ARGS
        defaults = constexpr_defaults(jit_fn)
        missing = [n for n in jit_fn.arg_names[n_runtime:] if n not in self.constexprs and n not in defaults]
        if missing:
            raise ValueError(f"utlx.gemm_launch: {jit_fn.__name__} needs constexprs {missing}")
        # every parameter in declaration order, as the C launcher takes them: defaults where not given
        self.tail = tuple(self.constexprs.get(n, defaults.get(n)) for n in jit_fn.arg_names[n_runtime:])
        self.device_index = problem.device.index
        self.direct: DirectLaunch | None = None
        self.caches: tuple[DescriptorCache, DescriptorCache, DescriptorCache] | None = None
        self.matmul: Callable[[Any, Any, int, int], Any] = self._matmul_generic

    # ---------------------------------------------------------------- the general path

    def _operands(self, a: Any, b: Any) -> tuple[Any, Any]:
        """The tensors the A/B descriptors address: a column-major operand's transpose (row-major)."""
        return (a.T if self.problem.a_col else a), (b.T if self.problem.b_col else b)

    def args(self, a: Any, b: Any, c: Any) -> tuple:
        """The runtime arguments as the JIT takes them (tensors, host ``TensorDescriptor``s, ints)."""
        p = self.problem
        if self.blocks is None:
            return (a, b, c, p.M, p.N, p.K, *a.stride(), *b.stride(), *c.stride())
        from triton.tools.tensor_descriptor import TensorDescriptor

        a_src, b_src = self._operands(a, b)
        blk_a, blk_b, blk_c = self.blocks
        return (TensorDescriptor.from_tensor(a_src, blk_a), TensorDescriptor.from_tensor(b_src, blk_b),
                TensorDescriptor.from_tensor(c, blk_c), p.M, p.N, p.K)

    def compile(self, a: Any, b: Any, c: Any) -> None:
        """Compile this launch's kernel for tensors like these without launching it (``warmup``): lets a
        caller fill Triton's cache in parallel processes before anything is timed."""
        self.jit_fn.run(*self.args(a, b, c), grid=self.grid, warmup=True, **self.kwargs)

    def _jit(self, a: Any, b: Any, c: Any) -> None:
        if self.cluster_ctas > 1:
            self._jit_cluster(a, b, c)
            return
        compiled = self.jit_fn[self.grid](*self.args(a, b, c), **self.kwargs)
        if compiled is None or self.direct is not None:  # interpreter; or a c of another alignment
            return
        self._keep(compiled)

    def _jit_cluster(self, a: Any, b: Any, c: Any) -> None:
        """Compile (no launch), keep the direct launch with clusters, and run through it. Later calls take
        the direct launch too: its ``hooks_idle`` is always true and ``call`` exists, or this raised."""
        name = getattr(self.jit_fn, "__name__", "kernel")
        if compat.interpreting():
            raise RuntimeError(f"utlx.gemm_launch: {name} runs in clusters of {self.cluster_ctas} CTAs, which the "
                               "interpreter (one CTA at a time) cannot run")
        if c.data_ptr() % 16:
            raise ValueError(f"utlx.gemm_launch: {name} needs a 16-byte aligned C")
        if self.direct is None:
            compiled = self.jit_fn.run(*self.args(a, b, c), grid=self.grid, warmup=True, **self.kwargs)
            self._keep(compiled)
        d = self.direct
        if d is None or d.call is None or self.caches is None:
            raise RuntimeError(f"utlx.gemm_launch: {name} needs Triton's CUDA launcher to form clusters of "
                               f"{self.cluster_ctas} CTAs, and this kernel cannot use it")
        d.call(d.stream(self.device_index), self._expanded(a, b, c, a.data_ptr(), b.data_ptr(), c.data_ptr()))

    def _keep(self, compiled: Any) -> None:
        """The compiled kernel's direct launch, descriptor caches and per-call closure."""
        self.direct = DirectLaunch(compiled, self.grid, self.cluster_ctas)
        metas = self.direct.descriptor_metas
        if self.blocks is not None and metas is not None and len(metas) == 3:
            cols = (self.problem.a_col, self.problem.b_col, False)
            self.caches = tuple(DescriptorCache(blk, meta, DESCRIPTOR_CACHE_CAPACITY, transpose=col)
                                for blk, meta, col in zip(self.blocks, metas, cols, strict=True))  # type: ignore[assignment]
        self.matmul = self._fast_matmul()

    def __call__(self, a: Any, b: Any, c: Any) -> None:
        d = self.direct
        if d is None or c.data_ptr() % 16:  # the kernel was specialized for a 16-byte aligned C
            self._jit(a, b, c)
            return
        if d.call is not None and d.hooks_idle() and (self.blocks is None or self.caches is not None):
            d.call(d.stream(self.device_index), self._expanded(a, b, c, a.data_ptr(), b.data_ptr(), c.data_ptr()))
            return
        d.runner(*self.args(a, b, c), *self.tail)

    def _expanded(self, a: Any, b: Any, c: Any, pa: int, pb: int, pc: int) -> tuple:
        """Every kernel parameter as Triton's C launcher takes it (descriptors expanded, pointers as ints)."""
        p = self.problem
        if self.caches is None:
            return (pa, pb, pc, p.M, p.N, p.K, *p.a_strides, *p.b_strides, p.N, 1, *self.tail)
        ca, cb, cc = self.caches
        return ca.get(a, pa) + cb.get(b, pb) + cc.get(c, pc) + (p.M, p.N, p.K, *self.tail)

    def run_on_device(self, a: Any, b: Any, c: Any) -> Any:
        """``self(a, b, c)`` with this launch's device current (a device guard when another one is)."""
        import torch

        if _current_device_fn()() != self.device_index:
            with torch.cuda.device(self.device_index):
                self(a, b, c)
        else:
            self(a, b, c)
        return c

    def _matmul_generic(self, a: Any, b: Any, pa: int = 0, pb: int = 0) -> Any:
        """Allocate C and run through :meth:`__call__` (before the first compile, or without a direct launch)."""
        import torch

        p = self.problem
        return self.run_on_device(a, b, torch.empty(p.M, p.N, dtype=p.dtype, device=p.device))

    # ---------------------------------------------------------------- the hot path

    def _fast_matmul(self) -> Callable[[Any, Any, int, int], Any]:
        """The per-call closure: allocate C, look up descriptors, one C-launcher call."""
        import torch

        d = self.direct
        assert d is not None
        call, stream, idle = d.call, d.stream, d.hooks_idle
        if call is None or (self.blocks is not None and self.caches is None):
            return self._matmul_generic
        p = self.problem
        M, N, dtype, device, dev = p.M, p.N, p.dtype, p.device, self.device_index
        empty, current_device = torch.empty, _current_device_fn()

        slow = self.run_on_device
        if self.caches is None:  # pointer kernel
            tail = (p.M, p.N, p.K, *p.a_strides, *p.b_strides, p.N, 1, *self.tail)

            def pointer_matmul(a: Any, b: Any, pa: int, pb: int) -> Any:
                c = empty(M, N, dtype=dtype, device=device)
                pc = c.data_ptr()
                if pc & 15 or not idle() or current_device() != dev:
                    return slow(a, b, c)
                call(stream(dev), (pa, pb, pc, *tail))
                return c

            return pointer_matmul

        a_get, b_get, c_get = (cache.get for cache in self.caches)
        dtail = (p.M, p.N, p.K, *self.tail)

        def descriptor_matmul(a: Any, b: Any, pa: int, pb: int) -> Any:
            c = empty(M, N, dtype=dtype, device=device)
            pc = c.data_ptr()
            if pc & 15 or not idle() or current_device() != dev:
                return slow(a, b, c)
            call(stream(dev), a_get(a, pa) + b_get(b, pb) + c_get(c, pc) + dtail)
            return c

        return descriptor_matmul


class SplitKLaunch(GemmLaunch):
    """A :class:`GemmLaunch` of the split-K or the stream-K kernel: the same descriptors and caches, plus an
    all-zero fp32 workspace (partial sums and per-tile arrival counters) passed after M, N, K.

    Direct launches (the hot path and ``launch(a, b, c)`` once compiled) use the workspace ``pool`` keeps
    for the current (device, stream): the kernel leaves it zeroed, and stream order puts every launch after
    the previous one's clean-up; two streams never share one. While the current stream captures a CUDA
    graph, and on Triton's own launch path (the first call through the JIT, launch hooks set, ``compile``),
    a fresh zeroed workspace is allocated per call instead (kept alive until the launch is enqueued, then
    freed to PyTorch's stream-ordered caching allocator), so a graph never holds a pooled workspace.
    """

    EXTRA_ARGS = 1

    def __init__(self, jit_fn: Any, constexprs: dict[str, Any], num_warps: int, grid: tuple[int, ...],
                 problem: Problem, blocks: tuple[list, list, list], workspace_numel: int,
                 pool: WorkspacePool = WORKSPACES, pdl: bool | None = None) -> None:
        super().__init__(jit_fn, constexprs, num_warps, grid, problem, blocks, pdl)
        self.workspace_numel = workspace_numel
        self.pool = pool
        self.capturing = capturing_fn()

    def workspace(self) -> Any:
        """A fresh zeroed workspace (Triton's launch path and CUDA-graph capture)."""
        import torch

        return torch.zeros(self.workspace_numel, dtype=torch.float32, device=self.problem.device)

    def args(self, a: Any, b: Any, c: Any) -> tuple:
        return (*super().args(a, b, c), self.workspace())

    def __call__(self, a: Any, b: Any, c: Any) -> None:
        d = self.direct
        if d is None or c.data_ptr() % 16:
            self._jit(a, b, c)
            return
        if d.call is not None and d.hooks_idle() and self.caches is not None:
            stream = d.stream(self.device_index)
            if self.capturing():
                ws = self.workspace()  # alive until the launch is enqueued (the graph captures its memset)
                pw = ws.data_ptr()
            else:
                pw = self.pool.get(self.problem.device, stream, self.workspace_numel)[0]
            d.call(stream, self._expanded(a, b, c, a.data_ptr(), b.data_ptr(), c.data_ptr(), pw))
            return
        d.runner(*self.args(a, b, c), *self.tail)

    def _expanded(self, a: Any, b: Any, c: Any, pa: int, pb: int, pc: int, pw: int) -> tuple:  # type: ignore[override]
        """The C launcher's arguments; ``pw``: the address of an all-zero workspace the caller keeps alive."""
        assert self.caches is not None
        ca, cb, cc = self.caches
        p = self.problem
        return ca.get(a, pa) + cb.get(b, pb) + cc.get(c, pc) + (p.M, p.N, p.K, pw, *self.tail)

    def _fast_matmul(self) -> Callable[[Any, Any, int, int], Any]:
        """Allocate C, look up the stream's workspace and the descriptors, one C-launcher call."""
        import torch

        d = self.direct
        assert d is not None
        call, stream, idle = d.call, d.stream, d.hooks_idle
        if call is None or self.caches is None:
            return self._matmul_generic
        p = self.problem
        M, N, dtype, device, dev = p.M, p.N, p.dtype, p.device, self.device_index
        empty, numel, current_device = torch.empty, self.workspace_numel, _current_device_fn()
        capturing, fresh, table, grow = self.capturing, self.workspace, self.pool.table(dev), self.pool.grow
        slow = self.run_on_device
        a_get, b_get, c_get = (cache.get for cache in self.caches)
        dims, tail = (p.M, p.N, p.K), self.tail

        def splitk_matmul(a: Any, b: Any, pa: int, pb: int) -> Any:
            c = empty(M, N, dtype=dtype, device=device)
            pc = c.data_ptr()
            if pc & 15 or not idle() or current_device() != dev:
                return slow(a, b, c)
            s = stream(dev)
            if capturing():
                ws = fresh()  # alive until the launch is enqueued (the graph captures its memset)
                pw = ws.data_ptr()
            else:
                entry = table.get(s)
                if entry is None or entry[1] < numel:
                    entry = grow(table, s, numel, device)
                pw = entry[0]
            call(s, a_get(a, pa) + b_get(b, pb) + c_get(c, pc) + dims + (pw, *tail))
            return c

        return splitk_matmul


def _check_layout(family: str, const: dict[str, Any], problem: Problem) -> None:
    """Pop the candidate's ``A_COL``/``B_COL`` from ``const``; they must be the problem's operand layouts."""
    declared = (bool(const.pop("A_COL", False)), bool(const.pop("B_COL", False)))
    if declared != (problem.a_col, problem.b_col):
        raise ValueError(f"utlx.gemm_launch: a {family} candidate for A_COL={declared[0]}, B_COL={declared[1]} "
                         f"cannot run a problem with a_col={problem.a_col}, b_col={problem.b_col}")


def bind(family: str, constexprs: dict[str, int], num_warps: int, grid_mode: str, problem: Problem,
         pdl: bool | None = None) -> GemmLaunch:
    """A :class:`GemmLaunch` of one candidate (``utlx.matmul.Candidate``) for ``problem``; ``pdl``: programmatic
    dependent launch for the kernels that support it (None: ``UTLX_PDL`` decides)."""
    M, N = problem.M, problem.N
    const = dict(constexprs)
    bm, bn, bk = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]
    if family == "tma_splitk":
        _check_layout(family, const, problem)
        fn, cols = splitk.kernel_for(problem.a_col, problem.b_col)
        blocks = splitk.descriptor_blocks(bm, bn, bk, problem.a_col, problem.b_col)
        return SplitKLaunch(fn, dict(const, **cols), num_warps, (splitk.programs(M, N, const),), problem, blocks,
                            splitk.workspace_numel(M, N, const), pdl=pdl)
    if family == "tma_streamk":
        _check_layout(family, const, problem)
        fn, cols = streamk.kernel_for(problem.a_col, problem.b_col)
        blocks = streamk.descriptor_blocks(bm, bn, bk, problem.a_col, problem.b_col, streamk.epilogue_subtile(const))
        P = problem.num_sms
        return SplitKLaunch(fn, dict(const, NUM_SMS=P, REG_REDUCE=not compat.interpreting(), **cols), num_warps,
                            (P,), problem, blocks, streamk.workspace_numel(M, N, const, P), pdl=pdl)
    if family == "ws_cluster":
        _check_layout(family, const, problem)
        fn, cols = ws_cluster.kernel_for(problem.a_col, problem.b_col)
        blocks = ws_cluster.descriptor_blocks(bm, bn, bk, problem.a_col, problem.b_col, tma.epilogue_subtile(const),
                                              bool(const.get("SHARE_B")))
        ctas = ws_cluster.programs(M, N, const, problem.num_sms)
        return GemmLaunch(fn, dict(const, NUM_SMS=ctas, **cols), num_warps, (ctas,), problem, blocks, pdl,
                          cluster_ctas=ws_cluster.CLUSTER.value)
    if family in DESCRIPTOR_FAMILIES:
        mod = {"tma_persistent": tma, "ws_persistent": ws, "ws_pingpong": pingpong}[family]
        _check_layout(family, const, problem)
        fn, cols = mod.kernel_for(problem.a_col, problem.b_col)
        blocks = mod.descriptor_blocks(bm, bn, bk, problem.a_col, problem.b_col, tma.epilogue_subtile(const))
        if family == "tma_persistent":
            programs, stride = tma.grid_for(M, N, const, problem.num_sms, grid_mode)
        else:
            programs = stride = min(problem.num_sms, triton.cdiv(M, bm) * triton.cdiv(N, bn))
        return GemmLaunch(fn, dict(const, NUM_SMS=stride, **cols), num_warps, (programs,), problem, blocks, pdl)
    if family not in POINTER_KERNELS:
        raise ValueError(f"utlx.gemm_launch: unknown kernel family {family!r}")
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    return GemmLaunch(POINTER_KERNELS[family], const, num_warps, grid, problem, pdl=pdl)
