"""Every Triton-version difference that kernel-callable DSL ops (:mod:`tritonx.dsl`) touch, in one place.

Measured on the PyPI wheels 3.6.0, 3.7.1, 3.8.0 and 3.9.0:

* A builtin is any callable carrying ``__triton_builtin__ = True`` (``triton.language.core.TRITON_BUILTIN``);
  the code generator then passes ``_semantic=`` (every version).
* Under ``TRITON_INTERPRET=1`` a kernel runs as plain Python and only ``triton.language`` builtins get the
  interpreter's numpy semantic (``_patch_lang``); any other builtin is called without ``_semantic``.
  ``triton.knobs.runtime.interpret`` says whether the interpreter is on (every version).
* ``GluonOpBuilder(context)`` on 3.6/3.7, ``GluonOpBuilder(context, arch)`` on 3.8+.
* ``ir.builder.create_inline_asm(asm, constraints, operands, result_types, pure, pack)``: same on every version.
* Custom ops of native plugins (plugin ABI, 3.7+) become ``ir.builder`` methods named like the op:
  on 3.7/3.8 when libtriton loads ``TRITON_PLUGIN_PATHS`` at import, on 3.9 after
  ``ir.builder.extend_with(path)``. The callback gets ``(builder, operands)`` and writes its result into
  ``operands[0]``; 3.8 and 3.9 return that value to Python, 3.7.1 returns ``None`` (the value is lost),
  which is why tritonx appends a stand-in value to the operands and asks the callback to take over its
  uses (see :func:`tritonx.dsl.lowering.materialize_native`). The plugins the wheels ship read their
  input from ``operands[1]`` on 3.7.1 and from ``operands[0]`` on 3.8.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import TRITON_VERSION

#: Attribute that makes a callable a Triton builtin (``triton.language.core.TRITON_BUILTIN``).
BUILTIN_ATTR = "__triton_builtin__"


def mark_builtin(fn: Any) -> Any:
    """Make ``fn`` a Triton builtin: the code generator calls it with ``_semantic=``."""
    from triton.language import core

    setattr(fn, getattr(core, "TRITON_BUILTIN", BUILTIN_ATTR), True)
    return fn


def interpreting() -> bool:
    """Is Triton's CPU interpreter on (``TRITON_INTERPRET=1``)?"""
    import triton

    return bool(triton.knobs.runtime.interpret)


def interpreter() -> Any:
    """``triton.runtime.interpreter`` (imported on demand: compiling kernels never needs it)."""
    return importlib.import_module("triton.runtime.interpreter")


def interpreter_semantic() -> Any:
    """The numpy-backed semantic the interpreter passes to ``triton.language`` builtins."""
    return interpreter().interpreter_semantic


def is_interpreter_semantic(semantic: Any) -> bool:
    """True for the interpreter's semantic. By builder class name: 3.6 builds a semantic per patched builtin."""
    builder = getattr(semantic, "builder", None)
    return builder is not None and type(builder).__name__ == "InterpreterBuilder"


def patch_lang_slot() -> tuple[Any, str]:
    """Where the interpreter looks up ``_patch_lang(fn)`` on every launch (a module global, 3.6-3.9): called
    once per launch (the grid executor restores the scope it returns at the end) and again, never
    restored, for each device function the kernel calls."""
    return interpreter(), "_patch_lang"


def grid_index() -> tuple[int, int, int]:
    """The program id the interpreter is running."""
    return tuple(interpreter().interpreter_builder.grid_idx)


def grid_size() -> tuple[int, int, int]:
    """The grid the interpreter is running."""
    return tuple(interpreter().interpreter_builder.grid_dim)


def np_dtype(dtype: Any) -> Any:
    """The numpy dtype the interpreter stores ``dtype`` in (bf16 as uint16, fp8 as uint8)."""
    return interpreter()._get_np_dtype(dtype)


def interpreter_tensor(data: Any, dtype: Any) -> Any:
    """Wrap a numpy array (already in ``np_dtype(dtype)``) as an interpreter ``tl.tensor``.

    Scalars follow the interpreter's convention: a one-element array typed with the scalar dtype.
    """
    import numpy as np
    from triton.language import core as tl

    handle_cls = interpreter().TensorHandle
    if np.ndim(data) == 0:
        return tl.tensor(handle_cls(np.asarray(data, dtype=np_dtype(dtype)).reshape(1), dtype), dtype)
    data = np.ascontiguousarray(data, dtype=np_dtype(dtype))
    return tl.tensor(handle_cls(data, dtype), tl.block_type(dtype, list(data.shape)))


def gluon_builder(context: Any, arch: str | None = None) -> Any:
    """A ``GluonOpBuilder`` (the TTGIR op builder) on ``context``; 3.6 and 3.7 take no ``arch``."""
    from triton._C.libtriton import gluon_ir

    if TRITON_VERSION[:2] >= (3, 8):
        return gluon_ir.GluonOpBuilder(context, arch or "")
    return gluon_ir.GluonOpBuilder(context)


def create_inline_asm(builder: Any, asm: str, constraints: str, operands: list[Any], result_types: list[Any],
                      pure: bool, pack: int) -> Any:
    """``tt.elementwise_inline_asm`` (the same call on every supported version); returns the op."""
    return builder.create_inline_asm(asm, constraints, operands, result_types, pure, pack)


def set_builder_loc(builder: Any, value: Any) -> None:
    """Give ``builder`` the source location of ``value`` (best effort: some builds cannot)."""
    try:
        builder.set_loc(value.get_loc())
    except Exception:  # older bindings: keep the builder's location
        pass


def run_canonicalizer(module: Any, label: str) -> None:
    """One canonicalizer run (removes ops marked pure whose results are unused)."""
    from triton._C.libtriton import ir, passes

    pm = ir.pass_manager(module.context)
    passes.common.add_canonicalizer(pm)
    pm.run(module, label)


# ------------------------------------------------------------------------------ native custom ops


def custom_op_method(name: str) -> Any | None:
    """The ``ir.builder`` method of native custom op ``name``, or None when no loaded plugin declares it."""
    from triton._C.libtriton import ir

    return getattr(ir.builder, name, None)


def extend_builder_with(path: str) -> None:
    """Create builder methods for the custom ops of the library at ``path`` (3.9; 3.7/3.8 did it at import)."""
    from triton._C.libtriton import ir

    extend = getattr(ir.builder, "extend_with", None)
    if extend is not None:
        extend(path)


#: Does a custom op's builder method return the value its callback wrote into ``operands[0]``?
CUSTOM_OP_RETURNS_VALUE: bool = TRITON_VERSION[:2] >= (3, 8)
