"""What the stand-in renderers of utlx's Inductor templates (``flex_render``, ``gemm_render``) share: the strides
of a contiguous tensor, as Inductor writes them into a template, and loading a rendered module from a file (Triton
reads a kernel's source from its file)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any


def contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    """Row-major strides of ``shape`` (the last dimension 1)."""
    out, acc = [], 1
    for s in reversed(shape):
        out.insert(0, acc)
        acc *= s
    return out


def load(src: str, directory: Path, name: str) -> Any:
    """Import the rendered source as module ``name``, written to ``directory``."""
    path = Path(directory) / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
