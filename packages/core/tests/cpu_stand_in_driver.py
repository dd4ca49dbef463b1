"""A CPU stand-in for Triton's CUDA driver: enough for ``kernel.warmup`` (key, hook call, cache lookup, compile).

Why shared: the launch-path test (``test_launch_path.py``) and the CPU proxy of the launch benchmark
(``tools/bench/overhead.py --jit-path``) both drive Triton's JIT host path without a GPU; one stand-in keeps
them measuring the same thing.
"""

from __future__ import annotations

from typing import Any

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase


class CpuStandInDriver(DriverBase):
    """A Hopper target, device 0, no stream, CPU tensors."""

    @classmethod
    def is_active(cls) -> bool:
        return True

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def get_benchmarker(self) -> Any:
        raise NotImplementedError("no GPU here")

    def map_python_to_cpp_type(self, ty: str) -> str:
        return "void*"
