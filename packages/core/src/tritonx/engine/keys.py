"""Cache identity of pipelines: what enters Triton's cache key while a pipeline is active.

Two pipelines that would compile differently must never share a key, and the same pipeline must get
the same key in every process (so the on-disk cache hits after a restart). Python passes are keyed
by their code (bytecode, constants, names, defaults and simple closure values), not by ``id()``.
"""

from __future__ import annotations

import functools
import hashlib
import types
from collections.abc import Iterable
from typing import Any

from ..model.pipeline import Edit, NamedPass, Pipeline, PythonPass

_SIMPLE = (int, float, str, bool, bytes, type(None))


def _code_key(code: types.CodeType) -> str:
    consts = []
    for c in code.co_consts:
        consts.append(_code_key(c) if isinstance(c, types.CodeType) else repr(c) if isinstance(c, _SIMPLE) else
                      type(c).__qualname__)
    return "|".join((code.co_code.hex(), repr(code.co_names), repr(code.co_varnames), ";".join(consts)))


def _value_key(value: Any, depth: int = 0) -> str:
    if isinstance(value, _SIMPLE):
        return repr(value)
    if isinstance(value, tuple) and depth < 3:  # immutable: its contents are settings; lists are state
        return "[" + ",".join(_value_key(v, depth + 1) for v in value) + "]"
    if callable(value) and depth < 3:
        return callable_key(value, depth + 1)
    return type(value).__module__ + "." + type(value).__qualname__


def callable_key(fn: Any, depth: int = 0) -> str:
    """A stable key for a Python callable: changes when its code or captured settings change."""
    custom = getattr(fn, "__tritonx_key__", None)
    if callable(custom):
        return str(custom())
    if isinstance(fn, functools.partial):
        return "partial(" + ",".join([callable_key(fn.func, depth + 1), _value_key(fn.args, depth),
                                      _value_key(tuple(sorted(fn.keywords.items())), depth)]) + ")"
    target = fn
    if not isinstance(fn, types.FunctionType | types.MethodType) and callable(type(fn)):
        target = type(fn).__call__
        state = getattr(fn, "__dict__", {})
        extra = _value_key(tuple(sorted((k, v) for k, v in state.items() if isinstance(v, _SIMPLE))), depth)
    else:
        extra = ""
    func = getattr(target, "__func__", target)
    code = getattr(func, "__code__", None)
    parts = [getattr(func, "__module__", "") or "", getattr(func, "__qualname__", type(fn).__qualname__), extra]
    if code is not None:
        parts.append(hashlib.sha256(_code_key(code).encode()).hexdigest())
        parts.append(_value_key(getattr(func, "__defaults__", None) or (), depth))
        cells = getattr(func, "__closure__", None) or ()
        vals = []
        for cell in cells:
            try:
                vals.append(_value_key(cell.cell_contents, depth))
            except ValueError:  # empty cell
                vals.append("<empty>")
        parts.append(",".join(vals))
    return ":".join(parts)


def _spec_key(spec: Any) -> str:
    if isinstance(spec, PythonPass):
        return f"py:{spec.name}:{callable_key(spec.fn)}"
    if isinstance(spec, NamedPass):
        return f"named:{spec.name}:{_value_key(spec.args)}"
    return ""


def edit_key(edit: Edit) -> str:
    sel = edit.selector
    fields = [
        edit.kind,
        "" if sel is None else f"{sel.name}#{sel.occurrence}@{sel.stage}",
        _spec_key(edit.new),
        edit.stage or "",
        callable_key(edit.fn) if edit.fn is not None else "",
        str(edit.required),
    ]
    return "/".join(fields)


def pipeline_key(pipeline: Pipeline) -> str:
    """Digest of a pipeline's name and edits (and its own ``cache_key()`` if it has one)."""
    text = "\n".join([pipeline.name, *(edit_key(e) for e in pipeline.edits)])
    if pipeline.extra_cache_key is not None:
        text += "\nextra:" + str(pipeline.extra_cache_key())
    return hashlib.sha256(text.encode()).hexdigest()


def combined_key(parts: Iterable[str]) -> str:
    """One digest for an ordered collection of keys ('' when empty, so stock keys stay stock)."""
    items = list(parts)
    if not items:
        return ""
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:32]
