"""Every Triton-version difference utlx depends on, in one place.

Why one module: utlx lowers TLX ops through ``GluonOpBuilder`` methods whose pybind/nanobind signatures
change between Triton 3.6 and 3.9 (extra CTA arguments, cache policies that became attributes, ...).
Keeping each difference behind one small function here means the compiler modules read the same on
every version and a new Triton release is supported by editing one file.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache
from types import ModuleType
from typing import Any

import tritonx
from triton.language import core as tl
from tritonx import dsl

#: Triton versions utlx is tested against (compile-only on the CPU, all four).
SUPPORTED = ((3, 6), (3, 7), (3, 8), (3, 9))

#: The installed Triton's version, as tritonx's compat parses it (one parser for both packages).
TRITON_VERSION: tuple[int, int, int] = tritonx.TRITON_VERSION
TRITON_VERSION_STR: str = tritonx.TRITON_VERSION_STR


def version_at_least(major: int, minor: int) -> bool:
    """True when the installed Triton is ``major.minor`` or newer."""
    return TRITON_VERSION[:2] >= (major, minor)


@lru_cache(maxsize=1)
def gluon_ir():
    """The ``gluon_ir`` extension module (TTGIR op builder); present in every supported version."""
    from triton._C.libtriton import gluon_ir as mod

    return mod


def make_gluon_builder(context: Any, arch: str | None = None) -> Any:
    """A ``GluonOpBuilder`` on ``context``; 3.6 and 3.7 take no ``arch`` argument."""
    cls = gluon_ir().GluonOpBuilder
    if version_at_least(3, 8):
        return cls(context, arch or "")
    return cls(context)


#: Triton 3.6 inserts no async-proxy fence between cp.async writes and wgmma reads (3.7+ does, in
#: make_llir's proxy-fence-insertion); utlx then emits ``fence.proxy.async`` before each async_dot.
NEEDS_EXPLICIT_WGMMA_FENCE = not version_at_least(3, 7)


def run_passes(pm: Any, module: Any, label: str) -> None:
    """``pass_manager.run`` (takes a label on every supported version)."""
    pm.run(module, label)


def _null_value() -> Any:
    from triton._C.libtriton import ir

    return ir.value()


def _cache_modifier(builder: Any, text: str):
    from triton._C.libtriton import ir

    table = {"": ir.CACHE_MODIFIER.NONE, ".ca": ir.CACHE_MODIFIER.CA, ".cg": ir.CACHE_MODIFIER.CG,
             ".cv": ir.CACHE_MODIFIER.CV, ".wb": ir.CACHE_MODIFIER.WB, ".cs": ir.CACHE_MODIFIER.CS,
             ".wt": ir.CACHE_MODIFIER.WT}
    if text not in table:
        raise ValueError(f"utlx.async_load: unknown cache_modifier {text!r} (expected one of {sorted(table)})")
    return table[text]


def _eviction_policy(text: str):
    from triton._C.libtriton import ir

    table = {"": ir.EVICTION_POLICY.NORMAL, "evict_last": ir.EVICTION_POLICY.EVICT_LAST,
             "evict_first": ir.EVICTION_POLICY.EVICT_FIRST}
    if text not in table:
        raise ValueError(f"utlx.async_load: unknown eviction_policy {text!r} (expected one of {sorted(table)})")
    return table[text]


def create_async_copy(builder: Any, smem: Any, ptr: Any, mask: Any | None, other: Any | None,
                      cache_modifier: str = "", eviction_policy: str = "", volatile: bool = False) -> Any:
    """``ttg.async_copy_global_to_local`` (cp.async); returns its token. 3.9 takes a cache-policy attribute
    instead of two enums."""
    mask = mask if mask is not None else _null_value()
    other = other if other is not None else _null_value()
    if version_at_least(3, 9):
        from triton.experimental.gluon.language._core import _normalize_cache_policy

        policy = _normalize_cache_policy(None, cache_modifier or None, eviction_policy or None)._to_ir(builder)
        return builder.create_async_copy_global_to_local(smem, ptr, mask, other, policy, volatile)
    return builder.create_async_copy_global_to_local(smem, ptr, mask, other, _cache_modifier(builder, cache_modifier),
                                              _eviction_policy(eviction_policy), volatile)


def create_global_load(builder: Any, ptr: Any, mask: Any | None, other: Any | None, cache_modifier: str = "",
                       eviction_policy: str = "", volatile: bool = False) -> Any:
    """``tt.load`` (masked when ``mask`` is given; masked-off lanes are 0 without ``other``).

    Used for the synchronous fallback of too-narrow cp.async copies. 3.9 takes a cache-policy attribute.
    """
    if version_at_least(3, 9):
        from triton.experimental.gluon.language._core import _normalize_cache_policy

        policy = _normalize_cache_policy(None, cache_modifier or None, eviction_policy or None)._to_ir(builder)
        if mask is None:
            return builder.create_load(ptr, policy, volatile)
        return builder.create_masked_load(ptr, mask, other, policy, volatile)
    cache, evict = _cache_modifier(builder, cache_modifier), _eviction_policy(eviction_policy)
    if mask is None:
        return builder.create_load(ptr, cache, evict, volatile)
    return builder.create_masked_load(ptr, mask, other, cache, evict, volatile)


def create_global_store(builder: Any, ptr: Any, value: Any, mask: Any | None) -> None:
    """``tt.store`` (masked when ``mask`` is given). 3.9 takes a cache-policy attribute."""
    if version_at_least(3, 9):
        from triton.experimental.gluon.language._core import _normalize_cache_policy

        policy = _normalize_cache_policy(None, None, None)._to_ir(builder)
        if mask is None:
            builder.create_store(ptr, value, policy)
        else:
            builder.create_masked_store(ptr, value, mask, policy)
        return
    cache, evict = _cache_modifier(builder, ""), _eviction_policy("")
    if mask is None:
        builder.create_store(ptr, value, cache, evict)
    else:
        builder.create_masked_store(ptr, value, mask, cache, evict)


def cache_modifier(text: str) -> Any:
    """``ir.CACHE_MODIFIER`` for TLX's spelling (``""``, ``".ca"``, ``".cg"``, ``".cv"``, ...)."""
    return _cache_modifier(None, text)


def gluon_builder_has(method: str) -> bool:
    """Does this Triton's ``GluonOpBuilder`` have ``method``?

    3.6 lacks ``create_local_gather``/``create_local_scatter``, ``create_warp_pipeline_border`` and
    ``create_extract_slice`` (3.7 has the first three, 3.8 all four); only 3.9 has ``create_amd_sched_barrier``.
    """
    return hasattr(gluon_ir().GluonOpBuilder, method)


#: The attribute ``create_warp_pipeline_border`` puts on the ``rocdl.sched.barrier`` it makes (3.7-3.9).
WARP_PIPELINE_BORDER_ATTR = "triton.warp_pipeline.border"


def amd_pass_adder(name: str) -> Any:
    """``amd.passes.ttgpuir.<name>`` or None (``add_warp_pipeline`` exists from 3.7)."""
    try:
        from triton._C.libtriton import amd
    except ImportError:  # a build without the AMD backend
        return None
    return getattr(amd.passes.ttgpuir, name, None)


#: Triton 3.6 and 3.7 leave a direct-to-LDS copy into a padded shared layout with permuted offset bases
#: unlowered (an ``unrealized_conversion_cast`` reaches LLVM translation); 3.8+ lowers the same IR.
DIRECT_TO_LDS_INTO_PERMUTED_PADDED = version_at_least(3, 8)
#: From 3.8 the AMD backend narrows a direct-to-LDS copy (down to 4 bytes per lane) so that one wave's copy
#: fits between two paddings; 3.6 and 3.7 keep the copy's width (one wave then writes 64 x its lane bytes).
DIRECT_TO_LDS_NARROWS_TO_PADDING = version_at_least(3, 8)


def create_buffer_load_to_local(builder: Any, smem: Any, base: Any, offsets: Any, mask: Any | None,
                                other: Any | None, cache: str = "") -> None:
    """``amdg.buffer_load_to_local`` (same positional call on 3.6-3.9; no stride operand)."""
    null = _null_value()
    builder.create_buffer_load_to_local(smem, base, offsets, null if mask is None else mask,
                                        null if other is None else other, null, _cache_modifier(builder, cache))


def same_layout(builder: Any, a: Any, b: Any, shape: list[int]) -> bool:
    """Do two Gluon layouts place the elements of a tensor of ``shape`` identically (as linear layouts)?"""
    from triton.experimental.gluon import language as ttgl

    def linear(layout: Any) -> Any:
        if isinstance(layout, ttgl.DistributedLinearLayout):
            return layout
        return builder.to_linear_layout(layout._to_ir(builder), list(shape))

    return linear(a) == linear(b)


def create_local_alloc(builder: Any, memdesc_ty: Any) -> Any:
    """An uninitialised ``ttg.local_alloc`` of ``memdesc_ty`` (same call on all versions, overloaded on 3.6-3.8)."""
    return builder.create_local_alloc(memdesc_ty)


def create_mbarrier_arrive(builder: Any, bar: Any, count: int, pred: Any) -> None:
    """``ttng.arrive_barrier``. 3.8 added a CTA-mask argument before ``pred``; 3.9 made it keyword-only."""
    if version_at_least(3, 9):
        builder.create_mbarrier_arrive(bar, count, pred)
    elif version_at_least(3, 8):
        builder.create_mbarrier_arrive(bar, count, 0, pred)
    else:
        builder.create_mbarrier_arrive(bar, count, pred)


def create_mbarrier_expect(builder: Any, bar: Any, nbytes: int, pred: Any) -> None:
    """``ttng.barrier_expect`` (same positional call on all versions)."""
    builder.create_mbarrier_expect(bar, nbytes, pred)


def create_tma_load(builder: Any, desc: Any, coords: list, bar: Any, smem: Any, pred: Any) -> None:
    """``ttng.async_tma_copy_global_to_local``. 3.6 has no multicast flag; 3.8+ add an optional offsets list."""
    if version_at_least(3, 8):
        builder.create_async_tma_copy_global_to_local(desc, coords, bar, smem, pred, False, None)
    elif version_at_least(3, 7):
        builder.create_async_tma_copy_global_to_local(desc, coords, bar, smem, pred, False)
    else:
        builder.create_async_tma_copy_global_to_local(desc, coords, bar, smem, pred)


def create_tma_store(builder: Any, desc: Any, coords: list, smem: Any) -> None:
    """``ttng.async_tma_copy_local_to_global`` (same positional call on all versions)."""
    builder.create_async_tma_copy_local_to_global(desc, coords, smem)


def nvmma_distributed_layout(warps_per_cta: list[int], instr_shape: list[int]):
    """The Hopper wgmma accumulator layout (``#ttg.nvidia_mma`` v3)."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=warps_per_cta, instr_shape=instr_shape)


def descriptor_load(_semantic: Any, desc: Any, offsets: list) -> Any:
    """``tt.descriptor_load`` through the semantic (3.9 takes a cache-policy object instead of two strings)."""
    if version_at_least(3, 9):
        from triton.language.core import _CachePolicy

        return _semantic.descriptor_load(desc, offsets, _CachePolicy())
    return _semantic.descriptor_load(desc, offsets, "", "")


def create_tma_store_wait(builder: Any, pendings: int) -> None:
    """``ttng.async_tma_store_wait``; 3.8 added ``read_only`` (True = wait for the smem reads only, as 3.6)."""
    if version_at_least(3, 8):
        builder.create_async_tma_store_wait(pendings, True)
    else:
        builder.create_async_tma_store_wait(pendings)


# ---------------------------------------------------------------- Blackwell (tensor memory, tcgen05, CLC)
#
# utlx builds Blackwell ops through Gluon's own Python layer (``triton.experimental.gluon.language.nvidia.
# blackwell``), which hides most builder differences; what still differs is below.


@cache
def blackwell() -> ModuleType:
    """Gluon's Blackwell module (present on 3.6-3.9)."""
    from triton.experimental.gluon.language.nvidia import blackwell as bw

    return bw


def gluon_semantic(builder: Any) -> Any:
    """A ``GluonSemantic`` over ``builder``: what Gluon's builtins need to build ops outside a traced kernel."""
    from triton.experimental.gluon.language._semantic import GluonSemantic

    return GluonSemantic(builder)


def tmem_layout(block: tuple[int, int], col_stride: int, two_ctas: bool = False) -> Any:
    """``TensorMemoryLayout``: 3.6/3.7 take ``(block, col_stride, cta_split_num, two_ctas)``, 3.8+ take
    ``(block, col_stride, cga_layout, two_ctas)``."""
    bw = blackwell()
    if version_at_least(3, 8):
        return bw.TensorMemoryLayout(tuple(block), col_stride, [], two_ctas)
    return bw.TensorMemoryLayout(tuple(block), col_stride, None, two_ctas)


def tmem_scales_layout() -> Any:
    """``TensorMemoryScalesLayout`` of one CTA: ``cta_split_num`` on 3.6/3.7, ``cga_layout`` from 3.8."""
    bw = blackwell()
    return bw.TensorMemoryScalesLayout([]) if version_at_least(3, 8) else bw.TensorMemoryScalesLayout(None)


def tmem_reg_layout(dtype: Any, shape: list[int], alloc_shape: list[int], layout: Any, num_warps: int) -> Any:
    """The register layout ``tcgen05.ld``/``st`` of a TMEM descriptor use (its ``32x32b`` form): a function of
    (dtype, shape, layout, warps) on 3.6/3.7, a method of the descriptor type (which also takes the allocation
    shape) on 3.8+."""
    bw = blackwell()
    if version_at_least(3, 8):
        return bw.tensor_memory_descriptor_type(dtype, list(shape), layout, list(alloc_shape)).get_reg_layout(
            num_warps=num_warps)
    return bw.get_tmem_reg_layout(dtype, list(shape), layout, num_warps)


def tmem_reinterpret(desc: Any, dtype: Any, shape: list[int], layout: Any, semantic: Any) -> Any:
    """A TMEM descriptor's columns seen with another type, shape and layout (``_reinterpret`` before 3.9)."""
    method = getattr(desc, "reinterpret", None) or desc._reinterpret
    return method(dtype, list(shape), layout, _semantic=semantic)


#: Cluster launch control (``clusterlaunchcontrol.try_cancel``) has Gluon ops from Triton 3.8.
HAS_CLC = version_at_least(3, 8)

#: TLX's tensor memory and tcgen05 ops compile from Triton 3.7: 3.6's automatic warp specialization
#: (``NVWSInsertTmemAref``) aborts on a module whose loop issues tcgen05 MMAs into a TMEM buffer allocated outside it.
BLACKWELL_TLX = version_at_least(3, 7)


def add_descriptor_encoding_pass(pm: Any) -> None:
    """Add NVIDIA's ``optimize-descriptor-encoding`` (gives tensor descriptors their shared layout)."""
    from triton._C.libtriton import nvidia

    nvidia.passes.ttnvgpuir.add_optimize_descriptor_encoding(pm)


# ---------------------------------------------------------------- kernel launch (utlx.launch)
# What utlx.launch needs to call Triton's C launcher itself, skipping ``CompiledKernel[grid]``'s
# per-call Python (stream lookup, launch metadata, hook chains, scratch allocation, descriptor encoding).
# The C launcher's positional arguments changed in 3.7 (3.6: a generated module per kernel taking the
# kernel arguments flattened; 3.7+: one generic ``utils.launch`` taking them as a sequence plus the
# argument annotations and the packed signature). Host tensor descriptors are expanded by Triton's own
# ``make_tensordesc_arg`` (3.8 added a third parameter), so utlx never re-implements the TMA encoding.


def _hook_idle(hook: Any) -> bool:
    """True when a launch hook slot holds nothing to call (3.6-3.9: an empty ``HookChain``; None also counts)."""
    if hook is None:
        return True
    calls = getattr(hook, "calls", None)
    return isinstance(calls, list) and not calls


def launch_hooks_idle_fn() -> Callable[[], bool]:
    """A cheap ``() -> bool``: no launch enter/exit hook is set (then a direct launch loses nothing).

    Why a factory: the check runs on every ``utlx.matmul`` call, so it compares the slots with the
    chain objects Triton installed at import (identity) and reads their ``calls`` lists; anything else
    in a slot (a replaced chain, a plain callable) counts as set.
    """
    from triton import knobs

    rt = knobs.runtime
    enter0, exit0 = rt.launch_enter_hook, rt.launch_exit_hook
    if not (_hook_idle(enter0) and enter0 is not None and _hook_idle(exit0) and exit0 is not None):
        return lambda: _hook_idle(rt.launch_enter_hook) and _hook_idle(rt.launch_exit_hook)

    def idle() -> bool:
        enter, exit_ = rt.launch_enter_hook, rt.launch_exit_hook
        return enter is enter0 and exit_ is exit0 and not enter0.calls and not exit0.calls

    return idle


def raw_launcher(launch: Callable) -> Callable:
    """The C launcher behind a ``CudaLauncher.launch``: Triton wraps it in a Python closure named ``inner``
    (free variable ``launcher``) when the kernel has tensor-descriptor parameters, on 3.6-3.9."""
    closure = getattr(launch, "__closure__", None)
    code = getattr(launch, "__code__", None)
    if closure and code is not None:
        cells = dict(zip(code.co_freevars, closure, strict=True))
        if "launcher" in cells:
            return cells["launcher"].cell_contents
    return launch


def direct_launch(compiled: Any, grid: tuple[int, int, int], cluster_ctas: int = 1
                  ) -> Callable[[int, tuple], None] | None:
    """``call(stream, kernel_args)`` running ``compiled`` on ``grid`` through Triton's C launcher, or None.

    ``cluster_ctas`` > 1 launches the CTAs in clusters of that many consecutive ones (``grid`` still counts
    CTAs, as TLX's ``ctas_per_cga`` does; ``grid[0]`` must be a multiple). Triton's launcher forms clusters from
    the ``num_ctas`` of the packed metadata (grid ``x * num_ctas``, cluster dimension ``num_ctas``) in 3.6-3.9;
    a kernel compiled with ``num_ctas=1`` keeps its per-CTA layouts and ``%ctaid``, so its CTAs run as
    independent programs that share a cluster (distributed shared memory, multicast). The kernel must have been
    compiled with ``num_ctas=1``.

    ``kernel_args`` are every kernel parameter in declaration order (constexprs included, as
    ``CompiledKernel[grid]`` passes them), with each tensor-descriptor parameter already expanded by
    :func:`tensordesc_expander`; pointers may be plain ints (the C launcher then skips its
    ``data_ptr()`` call and pointer check). No launch hooks, no launch metadata: callers check
    :func:`launch_hooks_idle_fn` first. None when only Triton's own path can launch the kernel: not the
    CUDA launcher, scratch memory to allocate per launch (global or profile scratch), GSan instrumentation.
    """
    run = compiled.run  # loads the binary on first use
    if type(run).__name__ != "CudaLauncher":
        return None
    if getattr(run, "global_scratch_size", 0) or getattr(run, "profile_scratch_size", 0):
        return None
    if getattr(run, "gsan_enabled", False):
        return None
    raw = raw_launcher(run.launch)
    gx, gy, gz = grid
    function, packed = compiled.function, compiled.packed_metadata
    if cluster_ctas != 1:
        if cluster_ctas < 1:
            raise ValueError(f"utlx.compat.direct_launch: cluster_ctas must be >= 1, got {cluster_ctas}")
        if gx % cluster_ctas:
            raise ValueError(f"utlx.compat.direct_launch: grid[0]={gx} is not a multiple of "
                             f"cluster_ctas={cluster_ctas}")
        if getattr(compiled.metadata, "num_ctas", 1) != 1:
            raise ValueError("utlx.compat.direct_launch: cluster_ctas needs a kernel compiled with num_ctas=1, not "
                             f"{compiled.metadata.num_ctas} (Triton's num_ctas splits layouts across the cluster)")
        num_warps, _, *rest = packed  # (num_warps, num_ctas, shared) in 3.6-3.9
        packed = (num_warps, cluster_ctas, *rest)
        gx //= cluster_ctas  # the launcher launches gx * num_ctas CTAs
    coop, pdl = run.launch_cooperative_grid, run.launch_pdl
    if version_at_least(3, 7):
        annotations, signature = run.arg_annotations, run.kernel_signature

        def call(stream: int, args: tuple) -> None:
            raw(gx, gy, gz, stream, function, coop, pdl, packed, None, None, None, None, None, annotations,
                signature, args)

        return call

    def call36(stream: int, args: tuple) -> None:
        raw(gx, gy, gz, stream, function, coop, pdl, None, None, packed, None, None, None, *args)

    return call36


def tensordesc_metas(compiled: Any) -> list[dict] | None:
    """Per tensor-descriptor parameter, the TMA encoding Triton chose (None: not lowered to TMA)."""
    metas = getattr(compiled.metadata, "tensordesc_meta", None)
    if not metas or any(m is None for m in metas):
        return None
    return list(metas)


@cache
def tensordesc_expander() -> Callable[[Any, dict], list]:
    """``expand(desc, meta)``: Triton's launcher arguments for one host ``TensorDescriptor`` (the encoded
    CUtensorMap, then shape and strides). 3.6/3.7 take ``(arg, metadata)``, 3.8+ ``(arg, metadata, base_args)``."""
    import inspect

    from triton.backends.nvidia import driver as nvidia_driver

    fn = nvidia_driver.make_tensordesc_arg
    if len(inspect.signature(fn).parameters) >= 3:
        return lambda desc, meta: fn(desc, meta, ())
    return fn


def current_stream_fn() -> Callable[[int], int]:
    """``stream(device_index)``: the raw current CUDA stream (Triton's driver binds torch's C getter)."""
    from triton.runtime import driver

    return driver.active.get_current_stream


def create_warp_specialize(gb: Any, captures: list[Any], worker_warps: list[int], n: int) -> tuple[Any, Any]:
    """(``ttg.warp_specialize`` op, its partitions op) with an empty default region block.

    3.6 puts the captured values on the outer op; 3.7+ on the partitions op.
    """
    if version_at_least(3, 7):
        ws = gb.create_warp_specialize([], worker_warps)
        gb.create_block_with_parent(ws.get_partition_op_holder(), [])
        return ws, gb.create_warp_specialize_partitions(captures, n)
    ws = gb.create_warp_specialize([], captures, worker_warps)
    gb.create_block_with_parent(ws.get_partition_op_holder(), [])
    return ws, gb.create_warp_specialize_partitions(n)


# ------------------------------------------------ fork-only Triton surface (utlx/fork_surface.py)
# What TLX code touches on Meta's fork that stock Triton lacks, and where utlx adds it. The same classes,
# methods and signatures on 3.6 to 3.9 (``Config.__init__(kwargs, num_warps, num_stages, num_ctas, maxnreg,
# pre_hook, ir_override)``, ``Config.all_kwargs``/``__str__``, ``Autotuner.prune_configs(kwargs)``,
# ``JITFunction._pack_args(backend, kwargs, bound_args, specialization, options)`` on the compile path only,
# the ``GPUTarget`` dataclass); when a version moves one, only this section changes.


def autotune_config_class() -> type:
    """``triton.Config`` (TLX passes ``ctas_per_cga=`` to it)."""
    from triton.runtime.autotuner import Config

    return Config


def autotuner_class() -> type:
    """``triton.runtime.autotuner.Autotuner`` (its ``prune_configs(kwargs)`` picks the configs to run)."""
    from triton.runtime.autotuner import Autotuner

    return Autotuner


#: Triton 3.9's ``Autotuner.__init__`` rejects ``key`` names that are not kernel arguments; the fork (and
#: Triton 3.6-3.8) ignore them when computing the tuning key. ``Autotuner.__init__(self, fn, arg_names, configs,
#: key, ...)`` has the same positional parameters on 3.6-3.9.
AUTOTUNER_REJECTS_UNKNOWN_KEYS = version_at_least(3, 9)


def launch_options_hook() -> tuple[type, str]:
    """Where a launch's keyword options are checked, on the compile (cache-miss) path only:
    ``JITFunction._pack_args(backend, kwargs, ...)`` rejects keywords that are neither parameters nor
    backend options. Launches that hit the kernel cache never get there, so a hook here costs nothing per
    launch."""
    from triton.runtime.jit import JITFunction

    return JITFunction, "_pack_args"


def cuda_options_hook() -> tuple[type, str]:
    """Where the CUDA backend turns option dicts into its frozen ``CUDAOptions`` (3.6-3.9: it keeps only the
    dataclass's fields, so the fork's ``ctas_per_cga`` is added back there: :mod:`utlx.fork_surface`). Called
    once per compile and on the JIT's compile path, never per launch."""
    from triton.backends.nvidia.compiler import CUDABackend

    return CUDABackend, "parse_options"


def load_cache_modifier_hook() -> tuple[type, str] | None:
    """Where ``tl.load``'s ``cache_modifier`` string is parsed, on Triton versions whose loads lack ``".cs"``
    (3.6 and 3.7: only stores take it; 3.8 added it to loads, where AMD kernels use it); None from 3.8 on."""
    if version_at_least(3, 8):
        return None
    from triton.language.semantic import TritonSemantic

    return TritonSemantic, "_str_to_load_cache_modifier"


def aggregate_decorator_hook() -> tuple[Any, str] | None:
    """``triton.language.core._aggregate`` on Triton versions whose aggregates need an explicit ``__init__``
    (3.6 and 3.7; 3.8 generates one from the annotations, and TLX kernels rely on it); None from 3.8 on."""
    if version_at_least(3, 8):
        return None
    from triton.language import core

    return core, "_aggregate"


def gpu_target_class() -> type:
    """``triton.backends.compiler.GPUTarget`` (Meta's fork adds ``is_cuda_backend()``)."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget


#: Options of Meta's fork's ``HIPOptions`` that stock Triton lacks (launch/``triton.Config`` keywords), with the
#: Python types they take. Register-allocation and scheduling controls of the fork's LLVM flags and TTGIR
#: passes; ``llvm_fn_attrs`` is stock from 3.8.
FORK_HIP_OPTIONS: dict[str, tuple[type, ...]] = {
    "reverse_local_assignment": (bool,), "sink_insts_to_avoid_spills": (bool,),
    "regclass_priority_trumps_globalness": (bool,), "disable_unclustered_high_rp_reschedule": (bool,),
    "enable_sched_group_barrier_scheduler": (bool,), "sched_group_barrier_mfma_per_dwordx4": (int,),
    "sched_group_barrier_required_region_count": (int,), "enable_tree_reduction": (bool,),
    "launch_cluster": (bool,), "multicast": (bool,), "llvm_fn_attrs": (str, tuple, list), "schedule_hint": (str,),
}


@cache
def hip_option_fields() -> frozenset[str]:
    """The fields of this Triton's ``HIPOptions`` (empty when the AMD backend is missing)."""
    try:
        from triton.backends.amd.compiler import HIPOptions
    except ImportError:  # a build without the AMD backend
        return frozenset()
    return frozenset(HIPOptions.__dataclass_fields__)


def backend_is_hip(backend: Any) -> bool:
    """Is ``backend`` (what ``JITFunction._pack_args`` receives) Triton's AMD backend?"""
    return getattr(getattr(backend, "target", None), "backend", None) == "hip"


# ---------------------------------------------------------------- interpreter (TRITON_INTERPRET=1)
# The interpreter is private Triton API. Its shape is the same from 3.6 to 3.9 (``_patch_lang(fn)``
# returning a restorable scope, ``FunctionRewriter.ast_transformer``, ``TensorHandle``,
# ``interpreter_semantic``, ``_get_np_dtype``); when a version moves any of these, only this section changes.
# numpy and the interpreter are imported on demand: compiling kernels needs neither.


# The interpreter helpers every language on ``tritonx.dsl`` needs are tritonx's (one copy for both packages).
interpreting = dsl.interpreting
interpreter = dsl.interpreter_module
is_interpreter_semantic = dsl.is_interpreter_semantic
interpreter_semantic = dsl.interpreter_semantic
np_dtype = dsl.interpreter_np_dtype
#: Wrap numpy ``data`` (in ``np_dtype(dtype)`` storage) as an interpreter ``tl.tensor`` (scalars: one-element arrays).
make_tensor = dsl.interpreter_tensor
#: The program id being interpreted.
grid_idx = dsl.interpreter_program_id


def interpreter_builder() -> Any:
    return interpreter().interpreter_builder


def scalar(value: int, dtype: Any = None) -> Any:
    """A scalar interpreter tensor (one-element array, scalar type), like ``tl.program_id`` returns."""
    import numpy as np

    dtype = tl.int32 if dtype is None else dtype

    return make_tensor(np.array(value, dtype=np_dtype(dtype)), dtype)


def _scalar(value: Any, what: str) -> Any:
    """The one value of an interpreter scalar (constexpr, tensor handle or one-element array)."""
    import numpy as np

    value = tl._unwrap_if_constexpr(value)
    if isinstance(value, tl.tensor):
        value = value.handle.data
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise TypeError(f"{what}: expected a scalar, got a tensor of shape {list(value.shape)}")
        return value.reshape(-1)[0]
    return value


def to_int(value: Any, what: str) -> int:
    """A Python int from an int, constexpr or one-element interpreter tensor.

    Avoids ``int(array)`` on one-element arrays, which numpy >= 2.4 rejects for ndim > 0 (the reason
    Triton 3.6's own interpreter breaks there).
    """
    import numpy as np

    value = _scalar(value, what)
    if isinstance(value, (bool, int, np.number)):  # np.number: one-element arrays of any dtype, as before
        return int(value)
    raise TypeError(f"{what}: expected an integer, got {type(value).__name__}")


def to_bool(value: Any, what: str) -> bool:
    """Truth value of a predicate (None counts as true: TLX's ``pred=None`` means unpredicated)."""
    if value is None:
        return True
    return bool(_scalar(value, what))


def tensor_data(value: Any) -> Any:
    return value.handle.data


def interpreted_function_class() -> type:
    """``InterpretedFunction``: its ``rewritten_fn`` maps each kernel to the function the interpreter runs per
    program (same on 3.6-3.9)."""
    return interpreter().InterpretedFunction


def grid_executor_class() -> type:
    """``GridExecutor``: ``__call__(*args, **kwargs)`` runs one launch's grid, dropping keywords that are not
    kernel arguments (same on 3.6-3.9)."""
    return interpreter().GridExecutor


def interpreter_builder_class() -> type:
    """``InterpreterBuilder``: its ``create_dot(a, b, d, input_precision, max_num_imprecise_acc)`` computes
    ``tl.dot`` on the CPU (same method and arguments on 3.6-3.9)."""
    return interpreter().InterpreterBuilder


def interpreter_tensor_handle(data: Any, dtype: Any) -> Any:
    """An interpreter ``TensorHandle`` (numpy ``data`` in ``np_dtype(dtype)`` storage)."""
    return interpreter().TensorHandle(data, dtype)


def patch_lang_owner() -> tuple[ModuleType, str]:
    """Where the interpreter looks up ``_patch_lang`` on every launch (a module global)."""
    return interpreter(), "_patch_lang"


def function_rewriter() -> type:
    """Class whose ``ast_transformer`` attribute rewrites kernel source before the interpreter runs it."""
    return interpreter().FunctionRewriter


# ---------------------------------------------------------------- code generator (tracing)
# utlx traces each replica of ``async_task(replicate=N)`` separately, which Triton's stock
# ``CodeGenerator.visit_With`` cannot do (it visits a ``with`` body once). The seam made below (installed by
# ``tritonx.seams``, declared in ``utlx.compiler``) replaces that method with one that offers every ``with`` to
# utlx first; utlx declines everything that is not one of its own context managers, so other kernels are
# traced by the stock method. The code generator's members used here (``visit``, ``semantic``, ``lscope``,
# ``local_defs``, ``visit_compound_statement``) have the same names on Triton 3.6 to 3.9.

def constant_int(op: Any) -> int | None:
    """The integer an ``arith.constant`` op holds; None for other ops, and on 3.6/3.7 (no attribute getter for
    integers in their bindings)."""
    if op.get_name() != "arith.constant" or not version_at_least(3, 8):
        return None
    try:
        return int(op.get_int_attr("value"))
    except Exception:  # not an integer constant (a float, a dense tensor)
        return None


def code_generator_class() -> type:
    """Triton's ``CodeGenerator`` (``triton.compiler.code_generator`` on 3.6-3.9)."""
    from triton.compiler.code_generator import CodeGenerator

    return CodeGenerator


def with_hook(handler: Callable[[Any, Any], bool]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``make(original)`` of the seam routing ``CodeGenerator.visit_With`` through ``handler(generator, node)``
    first: ``handler`` returns True when it traced the statement itself; False lets the stock method run."""

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def visit_With(self: Any, node: Any) -> Any:
            if handler(self, node):
                return None
            return original(self, node)

        return visit_With

    return make


def listcomp_hook(handler: Callable[[Any, Any], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``make(original)`` of the seam routing ``CodeGenerator.visit_ListComp`` through ``handler(generator, node)``
    first: it returns the comprehension's value, or ``NotImplemented`` to let the stock method (tuple
    comprehensions only) run."""

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def visit_ListComp(self: Any, node: Any) -> Any:
            out = handler(self, node)
            return original(self, node) if out is NotImplemented else out

        return visit_ListComp

    return make


def codegen_comprehension(generator: Any, node: Any, items: list[Any]) -> Any:
    """The tuple ``(elt for target in items)`` of a one-generator comprehension, traced item by item (as the
    stock method does for tuples)."""
    results = []
    comp = node.generators[0]
    for item in items:
        generator.set_value(comp.target.id, item)
        results.append(generator.visit(node.elt))
    return tl.tuple(results)


def codegen_callee(generator: Any, call: Any) -> Any:
    """The object a ``with`` item's call expression calls (a name or attribute lookup: no IR emitted)."""
    return tl._unwrap_if_constexpr(generator.visit(call.func))


def codegen_call(generator: Any, call: Any, fn: Any) -> Any:
    """Call ``fn`` with the visited arguments of ``call`` and the generator's semantic, as stock does."""
    args = [generator.visit(arg) for arg in call.args]
    kws = dict(generator.visit(kw) for kw in call.keywords)
    return fn(*args, _semantic=generator.semantic, **kws)


def codegen_visit_scoped(generator: Any, body: list) -> None:
    """Visit ``body`` with names it binds kept local to it (like a region of its own).

    Why: each replica of a task is traced from the same source, so a name bound by one replica (even a
    ``tl.constexpr`` one, which may not be rebound) must not leak into the next, nor out of the task.
    """
    lscope = dict(generator.lscope)
    local_defs = dict(generator.local_defs)
    try:
        generator.visit_compound_statement(body)
    finally:
        generator.lscope = lscope
        generator.local_defs = local_defs


# --------------------------------------------------------------------------------------------------
# torch Inductor (utlx.inductor): where the flex lowering lives, per torch version

#: torch (major, minor) versions whose Inductor flex lowering utlx.inductor was written and tested against.
INDUCTOR_TORCH_SUPPORTED = ((2, 11), (2, 14))


def torch_version() -> tuple[int, int]:
    """The installed torch's (major, minor)."""
    import torch

    major, minor = torch.__version__.split(".")[:2]
    return int(major), int(minor)


def inductor_flex_module() -> ModuleType:
    """torch's Inductor flex-attention lowering module, checked to have what :mod:`utlx.inductor` wraps.

    torch 2.11 and 2.14 keep it in ``torch._inductor.kernel.flex.flex_attention`` with a module-level
    ``flex_attention_template`` (a ``TritonTemplate``) and ``autotune_select_algorithm``; other versions are
    refused with one line rather than half-patched."""
    version = torch_version()
    if version not in INDUCTOR_TORCH_SUPPORTED:
        known = ", ".join(f"{a}.{b}" for a, b in INDUCTOR_TORCH_SUPPORTED)
        raise RuntimeError(f"utlx.inductor: torch {version[0]}.{version[1]} is not supported (known: {known})")
    from torch._inductor.kernel.flex import flex_attention as module

    for name in ("flex_attention_template", "autotune_select_algorithm"):
        if not hasattr(module, name):
            raise RuntimeError(f"utlx.inductor: torch {version[0]}.{version[1]}'s {module.__name__} has no {name}")
    return module


def inductor_gemm_hooks() -> dict[str, Any]:
    """The Inductor objects :mod:`utlx.inductor.gemm` builds on, checked to exist (one line where one is missing).

    All are Inductor's extension points for template choices: ``InductorChoices`` (its
    ``_finalize_template_configs`` and ``get_ktc``; ``override_best_choice``, which only counts the autotuning
    picks, is used where it exists: torch 2.14 has it, 2.11 does not), the template heuristic registry's
    ``register_template_heuristic`` and ``TemplateConfigHeuristics``, ``AddMMConfigMixin`` (addmm's bias epilogue)
    and the stock ``mm`` / ``bmm`` templates whose presence says Inductor is autotuning Triton GEMMs."""
    version = torch_version()
    if version not in INDUCTOR_TORCH_SUPPORTED:
        known = ", ".join(f"{a}.{b}" for a, b in INDUCTOR_TORCH_SUPPORTED)
        raise RuntimeError(f"utlx.inductor: torch {version[0]}.{version[1]} is not supported (known: {known})")
    import importlib

    where = {
        "InductorChoices": ("torch._inductor.choices", "InductorChoices"),
        "register": ("torch._inductor.template_heuristics.registry", "register_template_heuristic"),
        "TemplateConfigHeuristics": ("torch._inductor.template_heuristics.base", "TemplateConfigHeuristics"),
        "AddMMConfigMixin": ("torch._inductor.template_heuristics.triton_addmm", "AddMMConfigMixin"),
        "mm_template": ("torch._inductor.kernel.mm", "mm_template"),
        "bmm_template": ("torch._inductor.kernel.bmm", "bmm_template"),
    }
    found: dict[str, Any] = {}
    for key, (module, name) in where.items():
        try:
            found[key] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            raise RuntimeError(f"utlx.inductor: torch {version[0]}.{version[1]} has no {module}.{name}") from None
    for method in ("_finalize_template_configs", "get_ktc"):
        if not hasattr(found["InductorChoices"], method):
            raise RuntimeError(f"utlx.inductor: torch {version[0]}.{version[1]}'s InductorChoices has no {method}")
    return found
