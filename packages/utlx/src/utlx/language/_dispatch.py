"""Register the two bodies of each utlx op: the compile path's and the CPU interpreter's.

Why a registry of bodies: every utlx op is one builtin with one public signature (``_op``), but it has
two very different bodies. Under ``TRITON_INTERPRET=1`` the op runs on numpy arrays
(``utlx.interpreter``); when a kernel is compiled it emits IR (``utlx.compiler``). Each side registers
its bodies here, so neither imports the other; both end up as the op's implementations in the public
``tritonx.dsl`` API (``op.emit("*")`` and ``op.interpret(raw=True)``).

Contract (the compile path's side: ``docs/utlx.md``, "How it compiles"):

* ``@register_compiler_impl("local_alloc")`` registers ``impl(_semantic, **params)``: it gets the code
  generator's semantic object and EVERY parameter of the op's public signature (``utlx/language/*.py``)
  as a keyword argument with TLX's parameter name, defaults filled in (``constexpr`` wrappers are NOT
  unwrapped). The variadic ``async_task(*args, **kwargs)``/``async_tasks()`` pass the call through as is.
  ``@register_compiler_impl("async_dot", "cuda:90")`` registers it for some targets only (``tritonx.dsl``
  target patterns: ``"cuda"``, ``"cuda:100"``, ``"hip"``, ``"*"``; the most specific match serves a kernel):
  that is how a vendor's body is chosen, ``utlx.compiler.nvidia`` registering for ``cuda`` targets and
  ``utlx.compiler.amd`` for ``hip`` ones.
* ``@register_interpreter_impl("local_alloc")`` registers the CPU body with the same calling convention,
  receiving and returning the interpreter's own values.
* Registering again replaces the earlier body (``utility.py`` registers target-independent defaults for
  ``dtype_of``/``size_of`` on both paths; the compiler may override them).
* A name that is no op of the surface (``set_buffer_overlap``, a method of ``storage_alias_spec``) gets an
  internal variadic op of the language; :func:`dispatch` calls an op by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tritonx import dsl
from tritonx.errors import DslNotImplementedError

from utlx.language._op import LANGUAGE

F = TypeVar("F", bound=Callable[..., Any])

#: Raised when an op has no body for the path (interpreter or the compile target); names op and target.
UtlxDispatchError = DslNotImplementedError


def _op_named(op_name: str) -> dsl.Op:
    op = LANGUAGE.ops.get(op_name)
    if op is not None:
        return op

    def stub(*args: Any, **kwargs: Any) -> Any:
        """An op reached through :func:`dispatch` only (not part of the TLX surface)."""

    stub.__name__ = op_name
    return LANGUAGE.op(stub, name=op_name, variadic=True)


def _with_semantic(body: Callable[..., Any]) -> Callable[..., Any]:
    """The dsl calling convention (``ctx`` first) for a utlx body (``_semantic`` first)."""

    def implementation(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        return body(ctx.semantic, *args, **kwargs)

    implementation.__wrapped__ = body  # type: ignore[attr-defined]
    implementation.__name__ = getattr(body, "__name__", "utlx_body")
    return implementation


def register_compiler_impl(op_name: str, *targets: str) -> Callable[[F], F]:
    """Register ``impl(_semantic, *args, **kwargs)`` as the compile-path body of utlx op ``op_name``, for the
    target patterns ``targets`` (every target when none is given)."""

    def deco(fn: F) -> F:
        op = _op_named(op_name)
        for target in targets or ("*",):
            op.emit(target)(_with_semantic(fn))
        return fn

    return deco


def register_interpreter_impl(op_name: str) -> Callable[[F], F]:
    """Register ``impl(_semantic, *args, **kwargs)`` as the CPU-interpreter body of utlx op ``op_name``."""

    def deco(fn: F) -> F:
        _op_named(op_name).interpret(raw=True)(_with_semantic(fn))
        return fn

    return deco


def compiler_impl(op_name: str, target: str = "*") -> Callable[..., Any]:
    """The compile-path body of ``op_name`` registered for the pattern ``target`` (``impl(_semantic, **params)``);
    :data:`UtlxDispatchError` if none."""
    found = LANGUAGE.get(op_name).registered("emit", target)
    if found is None:
        raise UtlxDispatchError(f"utlx.{op_name}: has no compile-path implementation", op=f"utlx.{op_name}")
    return getattr(found, "__wrapped__", found)


def dispatch(op_name: str, _semantic: Any, *args: Any, **kwargs: Any) -> Any:
    """Call utlx op ``op_name`` (its interpreter or compile-path body, as ``_semantic`` says)."""
    return LANGUAGE.get(op_name)(*args, _semantic=_semantic, **kwargs)


def registered_ops() -> dict[str, tuple[bool, bool]]:
    """``{op: (has_compiler_impl, has_interpreter_impl)}`` for every op with a body, for tests and docs."""
    out = {}
    for name, op in sorted(LANGUAGE.ops.items()):
        kinds = op.implementations()
        if kinds:
            out[name] = ("emit" in kinds, "interpret" in kinds)
    return out
