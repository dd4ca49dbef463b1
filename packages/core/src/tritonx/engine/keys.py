"""Cache identity of pipelines: what enters Triton's cache key while a pipeline is active.

Two pipelines that would compile differently must never share a key, and the same pipeline must get
the same key in every process (so the on-disk cache hits after a restart). Python callables are keyed
by what can be seen of them (bytecode, constants, names, defaults, immutable closure values and the
immutable globals their code reads), or by their own ``cache_key()`` (:mod:`tritonx.model.keyed`).
:func:`unseen_state` lists what could change a pass's behaviour without changing its key.
"""

from __future__ import annotations

import dis
import functools
import hashlib
import types
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import PipelineError
from ..model.keyed import declared_key
from ..model.pipeline import Edit, NamedPass, Pipeline, PythonPass

_SIMPLE = (int, float, str, bool, bytes, type(None))
#: Keys of callables that opt out of caching carry this: no other process can produce it.
PROCESS_TOKEN = uuid.uuid4().hex


def _code_key(code: types.CodeType) -> str:
    consts = []
    for c in code.co_consts:
        consts.append(_code_key(c) if isinstance(c, types.CodeType) else repr(c) if isinstance(c, _SIMPLE) else
                      type(c).__qualname__)
    return "|".join((code.co_code.hex(), repr(code.co_names), repr(code.co_varnames), ";".join(consts)))


def _immutable(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _SIMPLE):
        return True
    return isinstance(value, tuple | frozenset) and depth < 3 and all(_immutable(v, depth + 1) for v in value)


def _invisible(value: Any) -> bool:
    """Values whose identity is their meaning (modules, classes, functions): nothing hidden to key."""
    return isinstance(value, types.ModuleType | type | types.BuiltinFunctionType) or callable(value)


def _value_key(value: Any, depth: int = 0) -> str:
    if isinstance(value, _SIMPLE):
        return repr(value)
    if isinstance(value, tuple | frozenset) and depth < 3:  # immutable: its contents are settings
        items = sorted(value, key=repr) if isinstance(value, frozenset) else value
        return "[" + ",".join(_value_key(v, depth + 1) for v in items) + "]"
    if callable(value) and not isinstance(value, type) and depth < 3:
        return callable_key(value, depth + 1)
    return type(value).__module__ + "." + type(value).__qualname__


def _global_names(code: types.CodeType) -> Iterator[str]:
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            yield str(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _target(fn: Any) -> tuple[Any, dict[str, Any]]:
    """The function whose code runs when ``fn`` is called, and instance state it reads (for objects)."""
    if isinstance(fn, types.FunctionType | types.MethodType):
        return getattr(fn, "__func__", fn), {}
    call = type(fn).__dict__.get("__call__") or getattr(type(fn), "__call__", None)  # noqa: B004
    return getattr(call, "__func__", call), dict(getattr(fn, "__dict__", {}) or {})


def callable_key(fn: Any, depth: int = 0) -> str:
    """A stable key for a Python callable: changes when its code or the settings it can see change."""
    declared, key = declared_key(fn)
    if declared:
        return f"declared:{key}" if key is not None else f"uncached:{PROCESS_TOKEN}:{id(fn)}"
    if isinstance(fn, functools.partial):
        return "partial(" + ",".join([callable_key(fn.func, depth + 1), _value_key(fn.args, depth),
                                      _value_key(tuple(sorted(fn.keywords.items())), depth)]) + ")"
    func, state = _target(fn)
    extra = _value_key(tuple(sorted((k, v) for k, v in state.items() if _immutable(v))), depth) if state else ""
    code = getattr(func, "__code__", None)
    parts = [getattr(func, "__module__", "") or "", getattr(func, "__qualname__", type(fn).__qualname__), extra]
    if code is not None:
        parts.append(hashlib.sha256(_code_key(code).encode()).hexdigest())
        parts.append(_value_key(getattr(func, "__defaults__", None) or (), depth))
        vals = []
        for cell in getattr(func, "__closure__", None) or ():
            try:
                vals.append(_value_key(cell.cell_contents, depth))
            except ValueError:  # empty cell
                vals.append("<empty>")
        parts.append(",".join(vals))
        g = getattr(func, "__globals__", {})
        parts.append(",".join(f"{n}={g[n]!r}" for n in sorted(set(_global_names(code))) if n in g and _immutable(g[n])))
    return ":".join(parts)


def unseen_state(fn: Any, depth: int = 0) -> list[str]:
    """What a callable reads that its key cannot see: mutable closure values, globals and attributes."""
    if depth > 3 or _declares_key(fn) or isinstance(fn, functools.partial):
        return []
    func, state = _target(fn)
    found = [f"attribute {k!r} ({type(v).__name__})" for k, v in state.items() if not _immutable(v)
             and not _invisible(v)]
    code = getattr(func, "__code__", None)
    if code is None:
        return found
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or (), strict=False):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if callable(value) and not isinstance(value, type):
            found.extend(unseen_state(value, depth + 1))
        elif not _immutable(value) and not _invisible(value):
            found.append(f"closure variable {name!r} ({type(value).__name__})")
    g = getattr(func, "__globals__", {})
    for name in sorted(set(_global_names(code))):
        if name in g and not _immutable(g[name]) and not _invisible(g[name]):
            found.append(f"global {name!r} ({type(g[name]).__name__})")
    return found


def _declares_key(fn: Any) -> bool:
    method = getattr(fn, "cache_key", None)
    return method is not None and callable(method) and not isinstance(fn, type)


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


def edit_callables(edit: Edit) -> Iterator[tuple[str, Any]]:
    """The Python callables of an edit, with the name errors and warnings use for each."""
    if isinstance(edit.new, PythonPass):
        yield f"Python pass {edit.new.name!r}", edit.new.fn
    if edit.fn is not None:
        yield edit.describe(), edit.fn


def pipeline_key(pipeline: Pipeline) -> str:
    """Digest of a pipeline's name and edits (and its own ``cache_key()`` if it has one).

    Raises :class:`PipelineError` naming the pipeline (and the pass) when a key function raises.
    """
    parts = [pipeline.name]
    for e in pipeline.edits:
        try:
            parts.append(edit_key(e))
        except Exception as exc:
            raise PipelineError(
                f"pipeline {pipeline.name!r}: the cache key of {e.describe()} could not be computed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    if pipeline.extra_cache_key is not None:
        try:
            extra = pipeline.extra_cache_key()
        except Exception as exc:
            raise PipelineError(
                f"pipeline {pipeline.name!r}: its cache_key() raised {type(exc).__name__}: {exc}; nothing was "
                f"activated"
            ) from exc
        parts.append("extra:" + str(extra))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def combined_key(parts: Iterable[str]) -> str:
    """One digest for an ordered collection of keys ('' when empty, so stock keys stay stock)."""
    items = list(parts)
    if not items:
        return ""
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:32]
