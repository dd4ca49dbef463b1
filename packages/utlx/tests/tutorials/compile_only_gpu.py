"""A compile-only stand-in for an H200, MI300X or MI355X: Triton compiles for cuda:90, gfx942 or gfx950 on a
machine without a GPU.

Why: the acceptance tests of issue 10 drive Meta's TLX tutorials *through their own host functions*
(``matmul(a, b)``, ``attention(q, k, v, sm_scale)``), unchanged. Those functions do GPU-only things at
import and call time: ``triton.runtime.driver.active.get_active_torch_device()`` (no active driver exists
on a CPU machine: Triton raises "0 active drivers"), ``torch.cuda.get_device_properties(...)
.multi_processor_count`` for persistent grids, ``torch.cuda.get_device_capability()`` in ``skipif``
decorators, autotuning (which times configs on the device), and finally the launch. Calling
``triton.compile`` directly would skip exactly the host code under test (descriptor block shapes set by
``pre_hook``, grids, autotune pruning, constexpr plumbing).

:func:`compile_only_gpu` installs, for the duration of a ``with`` block:

* :class:`CompileOnlyDriver` as Triton's active driver: target ``cuda:90`` (warp 32), torch device
  ``cpu`` (so the tutorials allocate CPU tensors), binaries "loaded" as no-ops and every launch
  *recorded, not run* (a :class:`Launch` per kernel launch, with its grid and compiled artifacts);
* ``torch.cuda.get_device_properties`` / ``get_device_capability`` answering like an H200 (132 SMs,
  sm_90), because the tutorials size persistent grids from them;
* an autotuner that keeps only the **first surviving config** (after the kernel's own
  ``early_config_prune``/``perf_model``) and never times anything: there is no device to time on, and the
  acceptance criterion is "compiled with its first surviving autotune config".

For an AMD target (``GPUTarget("hip", "gfx942" | "gfx950", 64)``, issue 17's corpus of Meta's AMD tutorials)
the driver answers like an MI300X (gfx942: 304 CUs, 64 KiB of LDS) or an MI355X (gfx950: 256 CUs, 160 KiB),
maps argument types with the AMD backend's table, and, for the duration of the block, makes tensors report
``is_cuda`` (a ROCm build of torch says True for GPU tensors, and the AMD tutorials assert it) and makes
``triton.testing.do_bench`` run the function once and report a constant time (a tutorial that picks its
fastest path by timing then compiles every candidate and keeps the first).

Everything is restored on exit (also on error), so the rest of the test session sees stock Triton.
Under ``TRITON_INTERPRET=1`` the same context makes the tutorials importable on the CPU (their
``DEVICE = ...`` line and ``NUM_SMS`` queries); interpreted kernels never reach the driver's launcher.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

#: What an H200 reports (torch.cuda.get_device_properties / Triton's CUDA utils) for the fields used.
H200 = {
    "name": "NVIDIA H200 (compile-only stand-in)",
    "major": 9,
    "minor": 0,
    "multi_processor_count": 132,
    "max_shared_mem": 232448,  # bytes of shared memory per block (opt-in), sm_90
    "total_memory": 150_754_820_096,
    "warp_size": 32,
    "max_threads_per_block": 1024,
    "mem_clock_rate": 3_201_000,  # kHz
    "mem_bus_width": 6144,
}


#: What a B200 (sm_100, Blackwell) reports: no Blackwell GPU is available, so its Blackwell kernels are compile-
#: and interpreter-verified only.
B200 = dict(H200, name="NVIDIA B200 (compile-only stand-in)", major=10, minor=0, multi_processor_count=148,
            total_memory=191_523_176_448, mem_clock_rate=3_996_000, mem_bus_width=8192)

#: What an MI300X (gfx942, CDNA3) reports for the fields the AMD tutorials and Triton's HIP path read.
MI300X = {
    "name": "AMD Instinct MI300X (compile-only stand-in)",
    "gcnArchName": "gfx942:sramecc+:xnack-",
    "multi_processor_count": 304,
    "max_shared_mem": 65536,
    "total_memory": 205_822_885_888,
    "warp_size": 64,
    "max_threads_per_block": 1024,
    "mem_clock_rate": 1_300_000,
    "mem_bus_width": 8192,
    "major": 9,
    "minor": 4,
}

#: What an MI355X (gfx950, CDNA4) reports.
MI355X = dict(MI300X, name="AMD Instinct MI355X (compile-only stand-in)", gcnArchName="gfx950:sramecc+:xnack-",
              multi_processor_count=256, max_shared_mem=163840, total_memory=309_237_645_312, minor=5)

#: Device properties per target.
PROPERTIES = {"cuda:90": H200, "cuda:100": B200, "hip:gfx942": MI300X, "hip:gfx950": MI355X}


def default_properties(target: GPUTarget) -> dict[str, Any]:
    """The stand-in device's properties for ``target`` (an H200 for any other NVIDIA target)."""
    key = f"{target.backend}:{target.arch}"
    if key not in PROPERTIES and target.backend == "hip":
        raise ValueError(f"compile-only driver: no stand-in device for {key} (known: {sorted(PROPERTIES)})")
    return PROPERTIES.get(key, H200)


class NoDeviceError(RuntimeError):
    """Something asked the compile-only driver for a real GPU (timing, memory, a device interface)."""


@dataclass
class Launch:
    """One recorded launch: the kernel Triton compiled and the grid/arguments it would have run with."""

    name: str
    grid: tuple[int, int, int]
    metadata: Any
    src: Any
    args: tuple[Any, ...]
    _asm: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def num_warps(self) -> int:
        return int(self.metadata.num_warps)

    @property
    def shared(self) -> int:
        return int(self.metadata.shared)

    @property
    def constants(self) -> dict[Any, Any]:
        """The constexpr values the kernel was specialised with (name or path -> value)."""
        consts = getattr(self.src, "constants", None) or getattr(self.src, "constexprs", None) or {}
        names = list(getattr(self.src.fn, "arg_names", []))
        return {(names[k[0]] if isinstance(k, tuple) and len(k) == 1 and k[0] < len(names) else k): v
                for k, v in consts.items()}

    def asm(self, ext: str) -> str:
        """Text of a compiled artifact (``"ptx"``, ``"ttgir"``, ``"ttir"``, ``"llir"``), from Triton's cache.

        Why the cache: the launcher only receives ``(src, metadata)``; ``metadata.hash`` is the key under
        which ``triton.compile`` stored every stage of this kernel.
        """
        if ext not in self._asm:
            from triton.runtime.cache import get_cache_manager

            path = get_cache_manager(self.metadata.hash).get_file(f"{self.name}.{ext}")
            if path is None:
                raise KeyError(f"no {ext!r} artifact of kernel {self.name} (hash {self.metadata.hash}) "
                               "in Triton's cache")
            with open(path, encoding="utf-8") as f:
                self._asm[ext] = f.read()
        return self._asm[ext]


class _Utils:
    """The part of ``driver.utils`` the JIT touches: properties, (un)loading binaries."""

    def __init__(self, props: dict[str, Any]) -> None:
        self.props = props
        self.loaded: list[str] = []

    def get_device_properties(self, device: int) -> dict[str, Any]:
        return dict(self.props)

    def load_binary(self, name: str, kernel: bytes, shared: int, device: int) -> tuple[Any, Any, int, int, int]:
        """No-op load: (module, function, n_regs, n_spills, n_max_threads). The cubin is not executed."""
        self.loaded.append(name)
        return (f"module:{name}", f"function:{name}", 0, 0, self.props["max_threads_per_block"])

    def unload_module(self, module: Any) -> None:
        """Nothing was loaded."""


class CompileOnlyDriver(DriverBase):
    """Triton's active driver on a machine without a GPU: compiles for ``target``, runs nothing.

    ``is_active()`` is False so Triton never picks it by itself; :func:`compile_only_gpu` installs it.
    """

    def __init__(self, target: GPUTarget | None = None, props: dict[str, Any] | None = None,
                 torch_device: str = "cpu") -> None:
        super().__init__()
        self.target = target or GPUTarget("cuda", 90, 32)
        self.utils = _Utils(dict(default_properties(self.target), **(props or {})))
        self.torch_device = torch_device
        self.launches: list[Launch] = []
        driver = self

        class _Launcher:
            """Created per compiled kernel by ``CompiledKernel._init_handles``; a call records a launch."""

            def __init__(self, src: Any, metadata: Any) -> None:
                self.src, self.metadata = src, metadata

            def __call__(self, grid_x: int, grid_y: int, grid_z: int, stream: Any, function: Any, *rest: Any) -> None:
                # Triton 3.8 passes (packed_metadata, launch_metadata, enter_hook, exit_hook, *kernel_args);
                # the kernel arguments are the tail either way, so keep everything after `function`.
                driver.launches.append(Launch(self.metadata.name, (grid_x, grid_y, grid_z), self.metadata, self.src,
                                              tuple(rest)))

        self.launcher_cls = _Launcher

    @classmethod
    def is_active(cls) -> bool:
        return False

    def get_current_target(self) -> GPUTarget:
        return self.target

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device(self.torch_device)

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        if device != 0:
            raise NoDeviceError(f"compile-only driver: device {device} does not exist (only device 0)")

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_device_capability(self, device: int | None = None) -> tuple[int, int]:
        arch = self.target.arch
        return (arch // 10, arch % 10) if isinstance(arch, int) else (0, 0)

    def map_python_to_cpp_type(self, ty: str) -> str:
        if self.target.backend == "hip":
            from triton.backends.amd.driver import ty_to_cpp
        else:
            from triton.backends.nvidia.driver import ty_to_cpp

        return ty_to_cpp(ty)

    def _no_device(self, what: str) -> NoDeviceError:
        return NoDeviceError(f"compile-only driver: {what} needs a real GPU; kernels are compiled for "
                             f"{self.target.backend}:{self.target.arch} and launches are recorded, not run")

    def get_benchmarker(self) -> Any:
        raise self._no_device("benchmarking")

    def get_empty_cache_for_benchmark(self) -> Any:
        raise self._no_device("benchmarking")

    def clear_cache(self, cache: Any) -> None:
        raise self._no_device("benchmarking")

    def get_device_interface(self) -> Any:
        raise self._no_device("a device interface (torch.cuda)")


def _fake_torch_cuda(driver: CompileOnlyDriver) -> dict[str, Any]:
    """Replacements for the ``torch.cuda`` queries the tutorials make on the host."""
    props = driver.utils.props

    def get_device_properties(device: Any = None) -> SimpleNamespace:
        return SimpleNamespace(**props)

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        return driver.get_device_capability()

    def current_device() -> int:
        return driver.get_current_device()

    return {"get_device_properties": get_device_properties, "get_device_capability": get_device_capability,
            "current_device": current_device}


def _first_surviving_config(original: Any) -> Any:
    def prune_configs(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return list(original(self, *args, **kwargs))[:1]

    prune_configs.__doc__ = "Autotuner.prune_configs, then only the first surviving config (compile-only driver)."
    return prune_configs


def _untimed_bench(self: Any, *args: Any, config: Any, **kwargs: Any) -> list[float]:
    """Triton 3.6 times even a single surviving config; with one config the timing decides nothing."""
    return [0.0, 0.0, 0.0]


def _run_once(fn: Any, *args: Any, **kwargs: Any) -> float:
    """``triton.testing.do_bench`` stand-in: one call (its launches are compiled and recorded), a constant time."""
    fn()
    return 1.0


@contextlib.contextmanager
def _amd_host(torch: Any) -> Iterator[None]:
    """``Tensor.is_cuda`` True and ``triton.testing.do_bench`` untimed, for an AMD target (see the module doc)."""
    import triton.testing

    own = "is_cuda" in vars(torch.Tensor)
    saved_is_cuda = vars(torch.Tensor).get("is_cuda")
    saved_bench = triton.testing.do_bench
    torch.Tensor.is_cuda = property(lambda self: True)
    triton.testing.do_bench = _run_once
    try:
        yield
    finally:
        triton.testing.do_bench = saved_bench
        if own:
            torch.Tensor.is_cuda = saved_is_cuda
        else:
            del torch.Tensor.is_cuda


@contextlib.contextmanager
def compile_only_gpu(target: GPUTarget | None = None,
                     props: dict[str, Any] | None = None) -> Iterator[CompileOnlyDriver]:
    """Install :class:`CompileOnlyDriver`, the device's ``torch.cuda`` answers and first-config autotuning.

    Yields the driver (its ``launches`` list fills as kernels are launched); restores everything on exit.
    """
    from triton.compiler import compiler
    from triton.runtime import autotuner
    from triton.runtime.driver import driver as config

    fake = CompileOnlyDriver(target, props)
    # Triton caches each device's shared-memory limit (``compiler.max_shared_mem``, an lru_cache keyed by device
    # index): forget it on entry and exit, so this device's limit is what launches check here and never what
    # another stand-in (an H200's, a test's own fake driver) checks later.
    compiler.max_shared_mem.cache_clear()
    saved_active = config._active  # may be None: on a CPU machine no default driver can be created
    torch = sys.modules.get("torch")
    if torch is None:
        import torch
    fakes = _fake_torch_cuda(fake)
    saved_cuda = {name: getattr(torch.cuda, name) for name in fakes}
    saved_prune, saved_bench = autotuner.Autotuner.prune_configs, autotuner.Autotuner._bench
    config.set_active(fake)
    for name, fn in fakes.items():
        setattr(torch.cuda, name, fn)
    autotuner.Autotuner.prune_configs = _first_surviving_config(saved_prune)
    autotuner.Autotuner._bench = _untimed_bench
    try:
        with _amd_host(torch) if fake.target.backend == "hip" else contextlib.nullcontext():
            yield fake
    finally:
        compiler.max_shared_mem.cache_clear()
        config._active = saved_active
        for name, fn in saved_cuda.items():
            setattr(torch.cuda, name, fn)
        autotuner.Autotuner.prune_configs = saved_prune
        autotuner.Autotuner._bench = saved_bench
