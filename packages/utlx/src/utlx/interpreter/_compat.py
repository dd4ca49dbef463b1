"""Everything the utlx interpreter needs from Triton's interpreter, in one place, for Triton 3.6-3.9.

Why one module: the interpreter is private Triton API. Its shape is the same from 3.6 to 3.9
(``_patch_lang(fn)`` returning a restorable scope, ``FunctionRewriter.ast_transformer``, ``TensorHandle``,
``interpreter_semantic``, ``_get_np_dtype``), but a future version may move any of these; when it does,
only this file changes. (Lead: fold this into ``utlx/compat.py``'s interpreter section.)
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np
import triton
from triton.language import core as tl

#: Triton versions whose interpreter layout this module was checked against.
CHECKED_VERSIONS = ("3.6", "3.7", "3.8", "3.9")


def triton_minor() -> str:
    return ".".join(triton.__version__.split(".")[:2])


def interpreter() -> ModuleType:
    """``triton.runtime.interpreter`` (imported on demand: it is not needed to compile kernels)."""
    return importlib.import_module("triton.runtime.interpreter")


def interpreter_semantic() -> Any:
    """The numpy-backed semantic object the interpreter passes as ``_semantic`` to builtins."""
    return interpreter().interpreter_semantic


def interpreter_builder() -> Any:
    return interpreter().interpreter_builder


def grid_idx() -> tuple[int, int, int]:
    """The program id being interpreted (``InterpreterBuilder.grid_idx``)."""
    return tuple(interpreter_builder().grid_idx)


def np_dtype(dtype: tl.dtype) -> np.dtype:
    """numpy storage dtype the interpreter uses for ``dtype`` (bf16 is stored as uint16, fp8 as uint8)."""
    return interpreter()._get_np_dtype(dtype)


def make_tensor(data: np.ndarray, dtype: tl.dtype) -> tl.tensor:
    """Wrap numpy ``data`` (already in ``np_dtype(dtype)``) as an interpreter ``tl.tensor``.

    Scalars follow the interpreter's convention: a one-element array typed with the scalar dtype.
    """
    handle_cls = interpreter().TensorHandle
    if np.ndim(data) == 0:  # (np.ascontiguousarray would silently make it 1-D)
        return tl.tensor(handle_cls(np.asarray(data).reshape(1), dtype), dtype)
    data = np.ascontiguousarray(data)
    return tl.tensor(handle_cls(data, dtype), tl.block_type(dtype, list(data.shape)))


def scalar(value: int, dtype: tl.dtype = tl.int32) -> tl.tensor:
    """A scalar interpreter tensor (one-element array, scalar type), like ``tl.program_id`` returns."""
    return make_tensor(np.array(value, dtype=np_dtype(dtype)), dtype)


def to_int(value: Any, what: str) -> int:
    """A Python int from an int, constexpr or one-element interpreter tensor.

    Avoids ``int(array)`` on one-element arrays, which numpy >= 2.4 rejects for ndim > 0 (the reason
    Triton 3.6's own interpreter breaks there).
    """
    value = tl._unwrap_if_constexpr(value)
    if isinstance(value, tl.tensor):
        value = value.handle.data
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise TypeError(f"{what}: expected a scalar, got a tensor of shape {list(value.shape)}")
        return int(value.reshape(-1)[0])
    if isinstance(value, (bool, int, np.integer)):
        return int(value)
    raise TypeError(f"{what}: expected an integer, got {type(value).__name__}")


def to_bool(value: Any, what: str) -> bool:
    """Truth value of a predicate (None counts as true: TLX's ``pred=None`` means unpredicated)."""
    if value is None:
        return True
    value = tl._unwrap_if_constexpr(value)
    if isinstance(value, tl.tensor):
        value = value.handle.data
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise TypeError(f"{what}: expected a scalar predicate, got shape {list(value.shape)}")
        return bool(value.reshape(-1)[0])
    return bool(value)


def tensor_data(value: tl.tensor) -> np.ndarray:
    return value.handle.data


def patch_lang_owner() -> tuple[ModuleType, str]:
    """Where the interpreter looks up ``_patch_lang`` on every launch (a module global)."""
    return interpreter(), "_patch_lang"


def function_rewriter() -> type:
    """Class whose ``ast_transformer`` attribute rewrites kernel source before the interpreter runs it."""
    return interpreter().FunctionRewriter
