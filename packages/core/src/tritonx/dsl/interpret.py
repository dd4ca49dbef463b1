"""Running an op under Triton's CPU interpreter (``TRITON_INTERPRET=1``).

The interpreter runs a kernel as Python, one program after another, on numpy arrays. An op's
``@op.interpret`` implementation is its meaning on the CPU: by default it receives every tensor
argument as a numpy array (the interpreter's storage: bf16 as uint16, fp8 as uint8; a scalar as a
one-element array) and returns a numpy array (or None), which becomes a tensor of the op's result
dtype. ``@op.interpret(raw=True)`` receives the interpreter's own values instead (``tl.tensor`` with a
numpy-backed handle), for languages with value classes of their own.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from typing import Any

from .. import seams
from ..compat import dsl as compat

_NUMPY_TO_TL = {
    "float16": "fp16", "float32": "fp32", "float64": "fp64", "int8": "int8", "int16": "int16", "int32": "int32",
    "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "int1",
}


@dataclass
class InterpretContext:
    """Handed to ``@op.interpret`` implementations as their first argument.

    Attributes:
        op: the op's full name, for messages.
        semantic: the interpreter's semantic (for ``raw`` implementations that build ``tl`` values).
    """

    op: str
    semantic: Any

    @property
    def program_id(self) -> tuple[int, int, int]:
        """The program being run (x, y, z)."""
        return compat.grid_index()

    @property
    def num_programs(self) -> tuple[int, int, int]:
        """The grid (x, y, z)."""
        return compat.grid_size()

    @staticmethod
    def np_dtype(dtype: Any) -> Any:
        """The numpy dtype the interpreter stores a ``tl`` dtype in."""
        return compat.np_dtype(dtype)

    @staticmethod
    def tensor(data: Any, dtype: Any) -> Any:
        """An interpreter tensor of ``dtype`` from numpy ``data`` (for ``raw`` implementations)."""
        return compat.interpreter_tensor(data, dtype)


#: Interpreted launches running now (the grid executor runs one at a time; a task thread of a running
#: launch calls ops too, so this is process-wide, not per thread).
_launches = [0]


class _Scope:
    """Stands in for the scope ``_patch_lang`` returns to the grid executor: restoring it ends the launch."""

    def __init__(self, scope: Any) -> None:
        self._scope = scope

    def restore(self) -> None:
        _launches[0] = max(0, _launches[0] - 1)
        self._scope.restore()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scope, name)


def _counting_patch_lang(current: Any) -> Any:
    """The interpreter's ``_patch_lang(fn)`` counting the launches it starts (seam ``tritonx.dsl-launch-count``)."""

    def _patch_lang(fn: Any) -> Any:
        scope = current(fn)
        if launch_running():  # a device function of the running launch: never restored
            return scope
        _launches[0] += 1
        return _Scope(scope)

    return _patch_lang


LAUNCH_COUNT = seams.Seam(
    name="tritonx.dsl-launch-count", where=compat.patch_lang_slot, make=_counting_patch_lang,
    reason="under TRITON_INTERPRET=1 a DSL op called outside a running kernel is refused, as Triton's builtins "
           "are (the interpreter has no 'launch running' flag)")


def track_launches() -> None:
    """Count interpreted launches (wrapping the interpreter's ``_patch_lang``), so an op called outside a
    kernel is refused as Triton's own builtins are. Idempotent; a no-op when not interpreting."""
    if not compat.interpreting():
        return
    seams.install(LAUNCH_COUNT)


def launch_running() -> bool:
    """Is an interpreted kernel running (True when launches are not tracked: nothing to refuse with)?"""
    if _launches[0] > 0:
        return True
    return not seams.in_place(LAUNCH_COUNT.name)


def to_numpy(value: Any) -> Any:
    """A tensor argument as the interpreter's numpy array; other values unchanged."""
    from triton.language import core as tl

    if isinstance(value, tl.tensor):
        return value.handle.data
    return value


def tl_dtype_of(array: Any) -> Any:
    """The ``tl`` dtype of a numpy array the op returned without a declared result dtype."""
    from triton.language import core as tl

    name = _NUMPY_TO_TL.get(str(array.dtype))
    if name is None:
        raise TypeError(f"no Triton dtype for numpy {array.dtype}; declare the op's result dtype")
    return tl.dtype(name)


def from_numpy(value: Any, dtype: Any | None) -> Any:
    """An implementation's numpy result as an interpreter tensor (None stays None)."""
    import numpy as np
    from triton.language import core as tl

    if value is None or isinstance(value, tl.tensor):
        return value
    array = np.asarray(value)
    return compat.interpreter_tensor(array, dtype if dtype is not None else tl_dtype_of(array))


def kernel_line() -> str:
    """``file:line`` of the innermost frame outside tritonx and Triton: the kernel line calling the op."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    triton_dir = os.path.dirname(os.path.abspath(__import__("triton").__file__))
    frame = inspect.currentframe()
    try:
        while frame is not None:
            path = os.path.abspath(frame.f_code.co_filename)
            if not path.startswith((here, triton_dir)) and not frame.f_code.co_filename.startswith("<"):
                return f"{frame.f_code.co_filename}:{frame.f_lineno}"
            frame = frame.f_back
    finally:
        del frame
    return ""
