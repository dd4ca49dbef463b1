"""Errors raised by the utlx interpreter, and how they point at the kernel's source line.

Why stack inspection: Triton's interpreter re-compiles the kernel's own source (same file name, same line
numbers), so the innermost frame outside utlx and Triton is the kernel line that called the op. Naming
that line is what makes a hazard report actionable.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from dataclasses import dataclass

import triton
import tritonx.dsl

_UTLX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRITON_DIR = os.path.dirname(os.path.abspath(triton.__file__))
# utlx's own machinery (not ``utlx/kernels``, which holds kernels whose lines we want to name), the
# tritonx.dsl ops utlx's ops are, and Triton
_SKIP_PREFIXES = (
    *(os.path.join(_UTLX_DIR, sub) + os.sep for sub in ("language", "interpreter")),
    os.path.dirname(os.path.abspath(tritonx.dsl.__file__)) + os.sep,
    _TRITON_DIR + os.sep,
)
_ASSIGN_RE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]")


class UtlxInterpreterError(RuntimeError):
    """Base class: a utlx op misused under the interpreter (bad argument, unsupported combination)."""


class UtlxHazardError(UtlxInterpreterError):
    """A race the hardware would turn into wrong results: reading data still in flight, overwriting a
    buffer an async op still reads, or a synchronisation mistake."""


class UtlxDeadlockError(UtlxHazardError):
    """A barrier wait that can never complete (every task is blocked, or no other task exists)."""


@dataclass(frozen=True)
class SourceLocation:
    """Where in the kernel's source an op was called."""

    filename: str
    lineno: int
    function: str

    @property
    def text(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        text = self.text
        return f"{os.path.basename(self.filename)}:{self.lineno} in {self.function}" + (f": `{text}`" if text else "")

    def assigned_name(self) -> str | None:
        """``buffers_A`` for a line ``buffers_A = tlx.local_alloc(...)``: used to name buffers in errors."""
        match = _ASSIGN_RE.match(linecache.getline(self.filename, self.lineno))
        return match.group(1) if match else None


def kernel_location(extra_skip: int = 0) -> SourceLocation | None:
    """The innermost calling frame that belongs to neither utlx nor Triton (the kernel line)."""
    frame = sys._getframe(1 + extra_skip)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_SKIP_PREFIXES) and not filename.startswith("<"):
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


def where(loc: SourceLocation | None) -> str:
    """``" at file.py:12 in kernel: `code`"`` or an empty string when unknown."""
    return f" at {loc}" if loc is not None else ""
