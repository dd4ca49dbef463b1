"""A copy of a module in the same MLIR context, for lowerings measured on a clone before the real one.

Why a file round trip: ``ir.parse_mlir_module`` reads a file, not a string (Triton 3.6-3.9). NVIDIA probes cp.async
widths on a clone (``nvidia.copy_width``), AMD the layouts of its copies into LDS (``amd.copy_probe``).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any


def clone(module: Any, text: str) -> Any:
    """A copy of ``module`` in the same context (``parse_mlir_module`` reads a file, not a string)."""
    from triton._C.libtriton import ir

    with tempfile.TemporaryDirectory(prefix="utlx-probe-") as tmp:
        path = os.path.join(tmp, "module.mlir")
        with open(path, "w") as f:
            f.write(text)
        copy = ir.parse_mlir_module(path, module.context)
    copy.context = module.context  # Triton sets this Python attribute on the modules it makes; passes read it
    return copy
