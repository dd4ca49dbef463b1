"""Route each utlx op to its CPU (interpreter) or compiler implementation.

Why a registry: every utlx op is one Triton builtin with one public signature, but it has two very
different bodies. Under ``TRITON_INTERPRET=1`` the op runs on numpy arrays (``utlx.interpreter``);
when a kernel is compiled, the op must emit IR for the target (``utlx.compiler``, owned by another
module). The op builtins stay thin and call :func:`dispatch`; each side registers its bodies here, so
neither side imports the other.

Contract (the compile path's side: ``docs/utlx.md``, "How it compiles"):

* ``@register_compiler_impl("local_alloc")`` registers ``impl(_semantic, **params)``: it gets the code
  generator's semantic object and EVERY parameter of the op's public signature (``utlx/language/*.py``)
  as a keyword argument with TLX's parameter name, defaults filled in (``constexpr`` wrappers are NOT
  unwrapped). The variadic ``async_task(*args, **kwargs)``/``async_tasks()`` pass the call through as is.
* ``@register_interpreter_impl("local_alloc")`` registers the CPU body with the same calling convention.
* Registering again replaces the earlier body (``utility.py`` registers target-independent defaults for
  ``dtype_of``/``size_of`` on both paths; the compiler may override them).
* ``dispatch(op_name, _semantic, *args, **kwargs)`` picks one of them: the interpreter body when
  ``_semantic`` is the interpreter's (its builder is ``InterpreterBuilder``), else the compiler body.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_COMPILER_IMPLS: dict[str, Callable[..., Any]] = {}
_INTERPRETER_IMPLS: dict[str, Callable[..., Any]] = {}

# Module whose import registers the interpreter bodies; imported lazily so that compiling a kernel
# never pays for (or depends on) the numpy interpreter code.
_INTERPRETER_MODULE = "utlx.interpreter"
# Module whose import registers the compiler bodies (owned by the compiler side).
_COMPILER_MODULE = "utlx.compiler"


class UtlxDispatchError(NotImplementedError):
    """An op was called on a path (interpreter or a compile target) that has no implementation for it."""


def register_compiler_impl(op_name: str) -> Callable[[F], F]:
    """Register ``impl(_semantic, *args, **kwargs)`` as the compile-path body of utlx op ``op_name``."""

    def deco(fn: F) -> F:
        _COMPILER_IMPLS[op_name] = fn
        return fn

    return deco


def register_interpreter_impl(op_name: str) -> Callable[[F], F]:
    """Register ``impl(_semantic, *args, **kwargs)`` as the CPU-interpreter body of utlx op ``op_name``."""

    def deco(fn: F) -> F:
        _INTERPRETER_IMPLS[op_name] = fn
        return fn

    return deco


def is_interpreter_semantic(_semantic: Any) -> bool:
    """True when ``_semantic`` is the numpy-backed semantic Triton's interpreter passes to builtins.

    We test the builder's class name rather than identity with ``interpreter.interpreter_semantic``
    because Triton 3.6 builds a fresh ``TritonSemantic`` per patched builtin.
    """
    builder = getattr(_semantic, "builder", None)
    return builder is not None and type(builder).__name__ == "InterpreterBuilder"


def describe_target(_semantic: Any) -> str:
    """Best-effort name of the compile target, for error messages (e.g. ``cuda:90`` or ``hip:gfx942``)."""
    options = getattr(getattr(_semantic, "builder", None), "options", None)
    if options is None:
        return "unknown target"
    backend = getattr(options, "backend_name", None) or type(options).__name__
    arch = getattr(options, "arch", None)
    return f"{backend}:{arch}" if arch else str(backend)


def _try_import(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as exc:  # only the module itself missing is tolerable
        if exc.name not in (module, *_parents(module)):
            raise


def _parents(module: str) -> tuple[str, ...]:
    parts = module.split(".")
    return tuple(".".join(parts[:i]) for i in range(1, len(parts)))


def interpreter_impl(op_name: str) -> Callable[..., Any]:
    """The CPU body of ``op_name``; raises :class:`UtlxDispatchError` naming the op if none exists."""
    if op_name not in _INTERPRETER_IMPLS:
        _try_import(_INTERPRETER_MODULE)
    try:
        return _INTERPRETER_IMPLS[op_name]
    except KeyError:
        raise UtlxDispatchError(
            f"utlx op '{op_name}' has no CPU implementation for Triton's interpreter (TRITON_INTERPRET=1)"
        ) from None


def compiler_impl(op_name: str, _semantic: Any = None) -> Callable[..., Any]:
    """The compile-path body of ``op_name``; raises :class:`UtlxDispatchError` naming op and target."""
    if op_name not in _COMPILER_IMPLS:
        _try_import(_COMPILER_MODULE)
    try:
        return _COMPILER_IMPLS[op_name]
    except KeyError:
        raise UtlxDispatchError(
            f"utlx op '{op_name}' has no compiler implementation for target {describe_target(_semantic)}"
        ) from None


def dispatch(op_name: str, _semantic: Any, *args: Any, **kwargs: Any) -> Any:
    """Run utlx op ``op_name`` with the body that matches ``_semantic`` (interpreter or compiler)."""
    if is_interpreter_semantic(_semantic):
        return interpreter_impl(op_name)(_semantic, *args, **kwargs)
    return compiler_impl(op_name, _semantic)(_semantic, *args, **kwargs)


def registered_ops() -> dict[str, tuple[bool, bool]]:
    """``{op: (has_compiler_impl, has_interpreter_impl)}`` for every registered op, for tests and docs."""
    names = sorted(set(_COMPILER_IMPLS) | set(_INTERPRETER_IMPLS))
    return {n: (n in _COMPILER_IMPLS, n in _INTERPRETER_IMPLS) for n in names}
