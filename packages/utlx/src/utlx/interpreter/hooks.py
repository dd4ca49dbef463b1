"""Teach Triton's interpreter about utlx, through the interpreter's own two extension points.

1. ``_patch_lang(fn)``: on every launch the interpreter swaps ``tl`` builtins for versions that receive its
   numpy semantic, and restores them afterwards. It only knows ``triton.language``; we wrap it so the same
   happens to the utlx ops (on the ``utlx`` module, its submodules, and names a kernel imported with
   ``from utlx import ...``), and so each launch gets fresh utlx state.
2. ``FunctionRewriter.ast_transformer``: the interpreter re-parses each kernel before running it; we run
   :func:`utlx.interpreter.tasks.rewrite_tasks` first so ``async_task`` bodies can run as threads, and
   :func:`utlx.interpreter.ops_clc.guard_cancelled` so programs a CLC ``try_cancel`` took are skipped, and
   :func:`utlx.interpreter.minmax.rewrite_minmax` so ``min``/``max`` on tensors mean ``tl.minimum``/``tl.maximum``.

And ``GridExecutor.__call__`` takes a launch's ``ctas_per_cga`` (which the grid loop would drop) for the cluster
model (:mod:`utlx.interpreter.cluster`), whose CTAs the kernel entry's check then runs together.

The patch-lang seam also gives ``tl.map_elementwise`` (:mod:`utlx.interpreter.map_elementwise`) and the portable
libdevice stubs (:mod:`utlx.interpreter.libdevice`) bodies for the launch.

And one fix of the interpreter itself: its ``tl.dot`` multiplies the raw storage of its operands, and bf16 is
stored as uint16 bit patterns, so a bf16 ``tl.dot`` under ``TRITON_INTERPRET=1`` multiplies bit patterns
(relative error ~1e9 on random data, Triton 3.6-3.9). :func:`bf16_dot` computes bf16 operands in float32
(exact: every bf16 is a float32) and rounds a bf16 result to nearest even, as the GPU's MMA does.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tritonx import seams
from tritonx.seams import Seam

from utlx import compat as _compat
from utlx.interpreter import cluster as _cluster
from utlx.interpreter import shifts as _shifts
from utlx.interpreter import state as _state
from utlx.interpreter.fp8 import create_fp_to_fp
from utlx.interpreter.inline_asm import create_inline_asm
from utlx.interpreter.libdevice import INTERPRETED, stubs
from utlx.interpreter.map_elementwise import map_elementwise
from utlx.interpreter.minmax import rewrite_minmax
from utlx.interpreter.ops_clc import guard_cancelled
from utlx.interpreter.tasks import rewrite_tasks
from utlx.language._op import is_utlx_op

_PATCHED_MARK = "__utlx_interpreter_patched__"
# (container, name, original, is_dict) for every utlx patch made during the running launch
_records: list[tuple[Any, str, Any, bool]] = []


def _interpreted(member: Callable[..., Any]) -> Callable[..., Any]:
    semantic = _compat.interpreter_semantic()

    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("_semantic", None)
        return member(*args, _semantic=semantic, **kwargs)

    setattr(call, _PATCHED_MARK, member)
    call.__doc__ = member.__doc__
    call.__name__ = getattr(member, "__name__", "utlx_op")
    return call


def _utlx_modules() -> list[ModuleType]:
    mods = list(sys.modules.items())
    return [m for name, m in mods if m is not None and (name == "utlx" or name.startswith("utlx.language"))]


def _patch_container(container: Any, items: list[tuple[str, Any]], is_dict: bool) -> None:
    for name, member in items:
        if is_utlx_op(member):
            _records.append((container, name, member, is_dict))
            if is_dict:
                container[name] = _interpreted(member)
            else:
                setattr(container, name, _interpreted(member))


def _patch_utlx(fn: Any) -> None:
    for module in _utlx_modules():
        _patch_container(module, list(vars(module).items()), is_dict=False)
    fn_globals = getattr(fn, "__globals__", None)
    if isinstance(fn_globals, dict):
        _patch_container(fn_globals, list(fn_globals.items()), is_dict=True)


def _restore_utlx() -> None:
    while _records:
        container, name, original, is_dict = _records.pop()
        if is_dict:
            container[name] = original
        else:
            setattr(container, name, original)


class _ScopeProxy:
    """Returned in place of the interpreter's patch scope: restoring it also undoes the utlx patches."""

    def __init__(self, scope: Any, outer: bool) -> None:
        self._scope = scope
        self._outer = outer

    def restore(self) -> None:
        if self._outer:
            _restore_utlx()
            _state.end_launch()
        self._scope.restore()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scope, name)


def _patch_map_elementwise(scope: Any) -> None:
    """Give ``tl.map_elementwise`` an interpreter body for this launch (``scope.restore`` undoes it)."""
    import triton.language as tl_pkg
    from triton.language import core as tl_core

    for module in (tl_pkg, tl_core):
        if hasattr(module, "map_elementwise"):
            scope.set_attr(module, "map_elementwise", map_elementwise)


def _patch_libdevice(scope: Any, fn: Any) -> None:
    """Give the portable libdevice stubs numpy bodies for this launch (module and kernel globals)."""
    import triton.language.extra.libdevice as portable

    stub_of = stubs()
    for name in stub_of:
        scope.set_attr(portable, name, INTERPRETED[name])
    fn_globals = getattr(fn, "__globals__", None)
    if isinstance(fn_globals, dict):
        for name, value in list(fn_globals.items()):
            for stub_name, stub in stub_of.items():
                if value is stub:
                    _records.append((fn_globals, name, value, True))
                    fn_globals[name] = INTERPRETED[stub_name]


def _wrap_patch_lang(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def _patch_lang(fn: Any) -> Any:
        scope = original(fn)
        # The grid executor calls this once per launch and restores the scope; nested device-function calls
        # call it again during the launch and never restore: only the outermost call owns the utlx state.
        outer = not _state.launch_active()
        if outer:
            _state.begin_launch()
        _patch_utlx(fn)
        _patch_map_elementwise(scope)
        _patch_libdevice(scope, fn)
        return _ScopeProxy(scope, outer)

    _patch_lang.__wrapped__ = original  # type: ignore[attr-defined]
    return _patch_lang


def _bf16_to_f32(bits: Any) -> Any:
    import numpy as np

    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _f32_to_bf16(values: Any) -> Any:
    """Round float32 to bf16 (nearest even; NaN stays NaN), as uint16 storage."""
    import numpy as np

    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    return np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)


def _scalar_dtype(handle: Any) -> Any:
    return getattr(handle.dtype, "scalar", handle.dtype)


def bf16_dot(original: Callable[..., Any]) -> Callable[..., Any]:
    """``InterpreterBuilder.create_dot`` that reads bf16 operands as numbers (see the module doc)."""
    from triton.language import core as tl

    def create_dot(self: Any, a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any) -> Any:
        if all(_scalar_dtype(h) != tl.bfloat16 for h in (a, b, d)):
            return original(self, a, b, d, input_precision, max_num_imprecise_acc)
        bf16_acc = _scalar_dtype(d) == tl.bfloat16
        a, b, d = (_compat.interpreter_tensor_handle(_bf16_to_f32(h.data), tl.float32)
                   if _scalar_dtype(h) == tl.bfloat16 else h for h in (a, b, d))
        out = original(self, a, b, d, input_precision, max_num_imprecise_acc)
        return _compat.interpreter_tensor_handle(_f32_to_bf16(out.data), tl.bfloat16) if bf16_acc else out

    return create_dot


def cluster_launch(original: Callable[..., Any]) -> Callable[..., Any]:
    """``GridExecutor.__call__`` that takes the launch's ``ctas_per_cga`` (which the interpreter's grid loop
    would drop) so the CTAs of each cluster run together (:mod:`utlx.interpreter.cluster`)."""

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _state.launch_active():
            _cluster.take_launch_kwargs(kwargs)
        else:
            kwargs.pop("ctas_per_cga", None)
        return original(self, *args, **kwargs)

    return __call__


class _TransformerChain:
    """Stands in for ``FunctionRewriter.ast_transformer``: utlx's rewrite, then the interpreter's own."""

    def __init__(self, original: Any) -> None:
        self.original = original

    def visit(self, tree: ast.AST) -> ast.AST:
        return self.original.visit(rewrite_minmax(guard_cancelled(rewrite_tasks(tree))))


#: The interpreter's two extension points and the bf16 fix, as seams of stock Triton (installed by tritonx.seams
#: while utlx is enabled: see utlx.seams).
SEAMS: tuple[Seam, ...] = (
    Seam("utlx.interpreter-patch-lang", where=_compat.patch_lang_owner, make=_wrap_patch_lang,
         reason="under TRITON_INTERPRET=1 utlx ops get the interpreter's numpy semantic on every launch, and each "
                "launch fresh utlx state"),
    Seam("utlx.interpreter-ast-transformer", where=lambda: (_compat.function_rewriter(), "ast_transformer"),
         make=_TransformerChain,
         reason="under TRITON_INTERPRET=1 async_task bodies are rewritten to run as threads before the "
                "interpreter's own rewrite"),
    Seam("utlx.interpreter-cluster-launch", where=lambda: (_compat.grid_executor_class(), "__call__"),
         make=cluster_launch,
         reason="under TRITON_INTERPRET=1 a launch with ctas_per_cga runs the CTAs of each cluster together (the "
                "interpreter alone drops the keyword and runs one program at a time)"),
    Seam("utlx.interpreter-bf16-dot", where=lambda: (_compat.interpreter_builder_class(), "create_dot"),
         make=bf16_dot,
         reason="the interpreter's bf16 tl.dot multiplies uint16 bit patterns (Triton 3.6-3.9); utlx computes it in "
                "float32"),
    *(Seam(f"utlx.interpreter-{op}-width", where=lambda op=op: (_compat.interpreter_builder_class(), f"create_{op}"),
           make=getattr(_shifts, op),
           reason=f"numpy's {op} by >= the bit width is undefined; the GPU (PTX) clamps the count: utlx gives the "
                  f"GPU's result under TRITON_INTERPRET=1")
      for op in ("shl", "lshr", "ashr")),
    Seam("utlx.interpreter-inline-asm", where=lambda: (_compat.interpreter_builder_class(), "create_inline_asm"),
         make=create_inline_asm,
         reason="the interpreter refuses all inline asm; utlx computes the packed fp32 / tanh PTX Meta's Blackwell "
                "kernels inline (and refuses any other asm by name)"),
    Seam("utlx.interpreter-fp8-rounding", where=lambda: (_compat.interpreter_builder_class(), "create_fp_to_fp"),
         make=create_fp_to_fp,
         reason="the interpreter's float->FP8 rounding drops the mantissa carry and ties-to-even (7.9 -> 4.0 in e4m3); "
                "utlx rounds as the GPU's cvt.rn.satfinite does"),
)


def installed() -> bool:
    """Are the interpreter seams installed?"""
    return all(seams.is_installed(s.name) for s in SEAMS)
