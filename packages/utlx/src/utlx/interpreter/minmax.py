"""Python's ``min``/``max`` called on tensors inside a kernel, under the interpreter, as compiled Triton means them.

Why: Triton's code generator maps the builtins ``min`` and ``max`` to ``tl.minimum`` / ``tl.maximum``, but the
interpreter runs the kernel as Python, where ``max(t, 0)`` asks ``0 > t`` for a truth value, which the interpreter
answers True for any block tensor: ``max(t, 0)`` silently returns 0 (Triton 3.6-3.9). Meta's Blackwell attention
kernels compute their causal mask with ``max(col_limit - s, 0)``. The AST rewrite below makes each bare
``min(...)``/``max(...)`` call in a kernel call :func:`gpu_min`/:func:`gpu_max`, which keep Python's meaning
for plain numbers and use ``tl.minimum``/``tl.maximum`` once a tensor is involved.
"""

from __future__ import annotations

import ast
import builtins
import functools
from typing import Any

from triton.language import core as tl


def _fold(name: str, python: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if kwargs or len(args) < 2 or not any(isinstance(a, tl.tensor) for a in args):
        return python(*args, **kwargs)
    import triton.language as tl_pkg  # looked up per call: the interpreter patches it for the launch

    fn = getattr(tl_pkg, name)
    return functools.reduce(lambda x, y: fn(x, y), args)


def gpu_min(*args: Any, **kwargs: Any) -> Any:
    """``min`` as a compiled kernel computes it."""
    return _fold("minimum", builtins.min, args, kwargs)


def gpu_max(*args: Any, **kwargs: Any) -> Any:
    """``max`` as a compiled kernel computes it."""
    return _fold("maximum", builtins.max, args, kwargs)


class _MinMax(ast.NodeTransformer):
    def __init__(self, shadowed: set[str]) -> None:
        self.shadowed = shadowed

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and node.func.id not in self.shadowed:
            module = ast.Call(func=ast.Name("__import__", ast.Load()),
                              args=[ast.Constant(__name__)],
                              keywords=[ast.keyword("fromlist", ast.List([ast.Constant("gpu_max")], ast.Load()))])
            node.func = ast.copy_location(ast.Attribute(module, f"gpu_{node.func.id}", ast.Load()), node.func)
        return node


def rewrite_minmax(tree: ast.AST) -> ast.AST:
    """``min(...)``/``max(...)`` -> :func:`gpu_min`/:func:`gpu_max`, unless the kernel binds those names itself."""
    shadowed = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    shadowed |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
                 for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)}
    return ast.fix_missing_locations(_MinMax(shadowed).visit(tree))
