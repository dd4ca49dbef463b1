"""``tl.map_elementwise`` under the interpreter (stock Triton's interpreter has no body for it, Triton 3.6-3.9).

Why: Meta's Blackwell attention kernels apply their causal mask with ``tl.map_elementwise``; the compiled
op builds a region the interpreter's builder cannot (``InterpreterBuilder`` has no ``new_block``).

Semantics: the arguments are broadcast to one shape and ``scalar_fn`` maps each element (``pack`` consecutive
elements of the last dimension per call). A branch-free body (``tl.where``, arithmetic) is called once on whole
tensors, which is exact; a body with Python control flow (``if``, ``while``, ``a if c else b``, ``and``/``or``,
which would ask a block tensor for one truth value) runs element by element, as the compiled op does.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat


def _has_control_flow(scalar_fn: Any) -> bool:
    """Does the body branch in Python (so it must see one element at a time)?"""
    src = getattr(scalar_fn, "src", None)  # a JITFunction; under the interpreter an InterpretedFunction wraps .fn
    if not isinstance(src, str):
        try:
            src = inspect.getsource(getattr(scalar_fn, "fn", scalar_fn))
        except (OSError, TypeError):
            return True
    tree = ast.parse(textwrap.dedent(src))
    return any(isinstance(n, ast.If | ast.IfExp | ast.While | ast.BoolOp) for n in ast.walk(tree))


def _call(scalar_fn: Callable[..., Any], values: list[np.ndarray], dtypes: list[Any]) -> list[tuple[np.ndarray, Any]]:
    out = scalar_fn(*(_compat.make_tensor(v, d) for v, d in zip(values, dtypes, strict=True)))
    results = (out,) if isinstance(out, tl.tensor) else tuple(out)
    return [(np.asarray(_compat.tensor_data(r)), r.dtype) for r in results]


def _columns(data: np.ndarray, pack: int) -> list[np.ndarray]:
    """``pack`` interleaved columns of the last dimension (element ``k * pack + j`` goes to column ``j``)."""
    return [np.ascontiguousarray(data[..., j::pack]) for j in range(pack)]


def map_elementwise(scalar_fn: Callable[..., Any], *args: Any, pack: Any = 1, _semantic: Any = None,
                    _generator: Any = None) -> Any:
    """Interpreter body of ``tl.map_elementwise`` (signature of Triton's builtin)."""
    pack = int(tl._unwrap_if_constexpr(pack))
    if pack < 1:
        raise ValueError(f"map_elementwise: pack must be >= 1, got {pack}")
    semantic = _semantic or _compat.interpreter_semantic()
    tensors = [a if isinstance(a, tl.tensor) else semantic.to_tensor(a) for a in args]
    datas = np.broadcast_arrays(*(np.asarray(_compat.tensor_data(t)) for t in tensors))
    dtypes = [t.dtype for t in tensors]
    shape = datas[0].shape
    if pack > 1 and (not shape or shape[-1] % pack):
        raise ValueError(f"map_elementwise: pack={pack} does not divide the last dimension of shape {list(shape)}")
    values: list[np.ndarray] = []
    arg_types: list[Any] = []
    for d, ty in zip(datas, dtypes, strict=True):
        cols = _columns(d, pack) if pack > 1 else [np.ascontiguousarray(d)]
        values += cols
        arg_types += [ty] * len(cols)
    if _has_control_flow(scalar_fn):
        results = _per_element(scalar_fn, values, arg_types)
    else:
        results = _call(scalar_fn, values, arg_types)
    outs = []
    n_out = len(results) // pack
    for r in range(n_out):
        dtype = results[r * pack][1]
        parts = [np.broadcast_to(results[r * pack + j][0], values[0].shape) for j in range(pack)]
        if pack > 1:
            data = np.empty(shape, dtype=parts[0].dtype)
            for j, part in enumerate(parts):
                data[..., j::pack] = part
        else:
            data = np.array(parts[0])
        outs.append(_compat.make_tensor(data, dtype))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _per_element(scalar_fn: Callable[..., Any], values: list[np.ndarray],
                 dtypes: list[Any]) -> list[tuple[np.ndarray, Any]]:
    """Run ``scalar_fn`` once per element (for bodies that branch on their values)."""
    shape = values[0].shape
    columns: list[np.ndarray] | None = None
    kinds: list[Any] = []
    for idx in np.ndindex(*shape):
        got = _call(scalar_fn, [np.asarray(v[idx]) for v in values], dtypes)
        if columns is None:
            columns = [np.empty(shape, dtype=g.dtype) for g, _ in got]
            kinds = [k for _, k in got]
        for col, (g, _) in zip(columns, got, strict=True):
            col[idx] = g.reshape(())
    return list(zip(columns or [], kinds, strict=True))
