"""What every utlx Inductor template asks before it offers a choice: is the device an sm_90 GPU, is a size static.

One place for both so FlexAttention and the GEMM templates agree on what "Hopper" means (a CUDA device whose
capability torch reports as 9.x; a ROCm build, no driver or a CPU-only torch is not one).
"""

from __future__ import annotations

from typing import Any


def static_int(expr: Any) -> int | None:
    """``expr`` as an int, or None where it is symbolic (a dynamic shape)."""
    try:
        return int(expr)
    except TypeError:
        return None


def is_hopper(device: Any) -> bool:
    """An NVIDIA sm_90 device (asked of ``torch.cuda.get_device_capability``: no driver, no device, not sm_90)."""
    import torch

    if device is None or device.type != "cuda" or getattr(torch.version, "hip", None):
        return False
    try:
        return torch.cuda.get_device_capability(device.index if device.index is not None else None)[0] == 9
    except (RuntimeError, AssertionError):  # no driver / a CPU-only torch
        return False
