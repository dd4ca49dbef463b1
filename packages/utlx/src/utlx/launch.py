"""Kernel launches with the least host work: ``FastLaunch``, ``DirectLaunch`` and ``DescriptorCache``.

Why: a 2048^3 GEMM takes ~28 us on an H200, and Triton's ``kernel[grid](...)`` costs about as much on
the host (argument binding, specialization key, cache lookup; then ``CompiledKernel[grid]``'s runner:
current device and stream, launch metadata, two hook-chain calls, scratch allocation, and for TMA
kernels a ``TensorDescriptor`` validation plus a CUtensorMap encoding per descriptor per call).

* :class:`FastLaunch`: the JIT once per specialization, then ``CompiledKernel[grid]`` (the generic
  path the shipped kernels' ``launch``/``make_launcher`` use).
* :class:`DirectLaunch`: one compiled kernel on a fixed grid, called through Triton's C launcher with
  the function handle, packed metadata and grid cached (what ``utlx.matmul``'s hot path uses). Launch
  hooks, per-launch scratch memory and other backends fall back to ``CompiledKernel[grid]``.
* :class:`DescriptorCache`: encoded TMA descriptors by data pointer, bounded. A host descriptor is
  passed to the kernel by value (a ``__grid_constant__`` parameter), so reusing one that encodes the
  same address, shape, strides and box is exact, also under CUDA-graph capture (the graph keeps a
  copy of the parameter bytes). Device-side descriptors were the alternative: they need a global
  scratch allocation per launch (Triton's allocator, a ``torch.empty`` each time) and an in-kernel
  ``tensormap`` write + fence, so a cached host descriptor (one dict lookup) is cheaper on both sides.

Every Triton-version difference of the C launcher lives in :mod:`utlx.compat`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from utlx import compat


@cache
def _pipelines_key_fn() -> Callable[[], str]:
    from tritonx import active_key

    return active_key


def active_pipelines_key() -> str:
    """tritonx's O(1) key of the globally active pipelines: a compiled kernel is only valid under the
    pipelines it was compiled with, so every launch cache keys by it."""
    return _pipelines_key_fn()()


def pad_grid(grid: tuple[int, ...]) -> tuple[int, int, int]:
    """A 3-D grid (CompiledKernel's runner and the C launcher index grid[0..2])."""
    g = tuple(int(x) for x in grid)
    if not 1 <= len(g) <= 3:
        raise ValueError(f"utlx.launch: a grid has 1 to 3 dimensions, got {grid!r}")
    return g + (1,) * (3 - len(g))  # type: ignore[return-value]


def constexpr_defaults(jit_fn: Any) -> dict[str, Any]:
    """The defaults of a JIT function's parameters (e.g. ``EPILOGUE_SUBTILE=1``), which the JIT binds itself
    and the C launcher needs passed explicitly (none for an object that wraps no Python function)."""
    import inspect

    fn = getattr(jit_fn, "fn", None)
    if fn is None:
        return {}
    return {name: p.default for name, p in inspect.signature(fn).parameters.items() if p.default is not p.empty}


class FastLaunch:
    """Launch a JIT kernel on a fixed grid, skipping Triton's per-call argument binding after the first.

    The first call per *specialization* (pointer alignment, integer divisibility, the active tritonx
    pipelines) goes through the JIT and keeps the returned ``CompiledKernel``; later calls use
    ``CompiledKernel[grid]`` (same API in Triton 3.6-3.9), passing every parameter in declaration order.
    ``options`` are compile options for the JIT (``launch_pdl``: :mod:`utlx.kernels.grid_dependency`).
    """

    def __init__(self, jit_fn: Any, grid: tuple[int, ...], constexprs: dict[str, Any], num_warps: int,
                 options: dict[str, Any] | None = None) -> None:
        self.jit_fn = jit_fn
        self.grid = grid
        self.kwargs = dict(constexprs, num_warps=num_warps, **(options or {}))  # options: e.g. launch_pdl
        self.constexprs = constexprs
        self._runners: dict[tuple, Any] = {}
        self._tail: tuple | None = None

    @staticmethod
    def _spec(arg: Any) -> Any:
        if isinstance(arg, int):
            return (arg % 16 == 0, arg == 1)
        ptr = getattr(arg, "data_ptr", None)
        if ptr is None:
            base = getattr(arg, "base", None)  # host-side TensorDescriptor
            ptr = getattr(base, "data_ptr", None)
        return ptr() % 16 == 0 if ptr is not None else type(arg)

    def __call__(self, *args: Any) -> None:
        key = (active_pipelines_key(), *map(self._spec, args))
        runner = self._runners.get(key)
        if runner is None:
            compiled = self.jit_fn[self.grid](*args, **self.kwargs)
            if compiled is None:  # the interpreter (TRITON_INTERPRET=1) runs kernels without compiling them
                return
            if self._tail is None:
                names = self.jit_fn.arg_names[len(args):]
                defaults = constexpr_defaults(self.jit_fn)  # parameters the caller left at their default
                self._tail = tuple(self.constexprs[n] if n in self.constexprs else defaults[n] for n in names)
            self._runners[key] = compiled[pad_grid(self.grid)]
            return
        runner(*args, *self._tail)


def _always() -> bool:
    return True


class DirectLaunch:
    """One compiled kernel on a fixed grid, launched through Triton's C launcher directly.

    ``call(stream, args)`` is None when only Triton's own path can launch the kernel (see
    :func:`utlx.compat.direct_launch`); ``runner(*args)`` is that path (``CompiledKernel[grid]``: launch
    hooks, launch metadata, scratch memory), which callers use whenever ``hooks_idle()`` is False.
    ``descriptor_metas`` holds, per tensor-descriptor parameter, the TMA encoding the compiler chose
    (None: the kernel takes no descriptors, or they were not lowered to TMA: then use ``runner``).
    """

    def __init__(self, compiled: Any, grid: tuple[int, ...], cluster_ctas: int = 1) -> None:
        self.grid = pad_grid(grid)
        self.compiled = compiled
        self.runner = compiled[self.grid]
        self.cluster_ctas = cluster_ctas  # > 1: only ``call`` launches the clusters the kernel needs
        self.call = compat.direct_launch(compiled, self.grid, cluster_ctas=cluster_ctas)
        self.descriptor_metas = compat.tensordesc_metas(compiled)
        self.stream = compat.current_stream_fn()
        # clusters: ``call`` is the only launch that forms them, so launch hooks never divert it to ``runner``
        self.hooks_idle = compat.launch_hooks_idle_fn() if cluster_ctas == 1 else _always


class DescriptorCache:
    """Triton's launcher arguments for one host tensor descriptor, by data pointer (bounded, FIFO).

    One cache serves one (shape, strides, dtype, block) and one compiled kernel's TMA encoding
    (``meta``); only the address varies between calls, so it is the key. ``capacity`` bounds memory
    and staleness: an entry only encodes an address, never keeps a tensor alive. A freed address that
    is reused by a new tensor of the same shape and strides encodes the same descriptor, so a hit is
    always exact.
    """

    def __init__(self, block: list[int], meta: dict, capacity: int = 8, transpose: bool = False) -> None:
        if capacity < 1:
            raise ValueError(f"utlx.launch.DescriptorCache: capacity must be >= 1, got {capacity}")
        self.transpose = transpose  # the descriptor addresses tensor.T (a column-major operand)
        self.block = list(block)
        self.meta = meta
        self.capacity = capacity
        self.entries: dict[int, tuple] = {}
        self.misses = 0

    def get(self, tensor: Any, ptr: int) -> tuple:
        """The expanded launcher arguments for ``tensor`` (whose ``data_ptr()`` is ``ptr``)."""
        hit = self.entries.get(ptr)
        if hit is not None:
            return hit
        return self._encode(tensor, ptr)

    def _encode(self, tensor: Any, ptr: int) -> tuple:
        from triton.tools.tensor_descriptor import TensorDescriptor

        self.misses += 1
        source = tensor.T if self.transpose else tensor
        args = tuple(compat.tensordesc_expander()(TensorDescriptor.from_tensor(source, self.block), self.meta))
        if len(self.entries) >= self.capacity:
            del self.entries[next(iter(self.entries))]  # the oldest
        self.entries[ptr] = args
        return args
