"""The cache-key protocol for Python passes and stage functions.

Triton caches binaries by key, and tritonx puts the active pipelines in that key. For a Python callable
(a pass, an ``override_stage``/``transform_stage``/``override_pipeline`` function) tritonx derives the
key from what it can see: the bytecode, constants, defaults, immutable closure values and immutable
globals the code reads. State it cannot see (a dict or list captured or read as a global, an object's
attributes) would let a changed value reuse a binary built with the old one, so tritonx warns once per
pass (:class:`~tritonx.errors.UnkeyedStateWarning`) and the pass should say its key itself.

The protocol, modelled on torch inductor's ``CustomGraphPass.uuid()``: a callable with a
``cache_key()`` method returning

* a ``str``: that string replaces everything tritonx would derive (it must change whenever the pass
  would transform a kernel differently);
* ``None``: the pass opts out of caching across processes: its key carries a token unique to this
  process, so no other process (and no later run) ever reuses a binary it produced.

Subclass :class:`CustomPass`, or decorate a function with :func:`cache_key`. ``Pipeline(cache_key=...)``
and ``Plugin(cache_key=...)`` add a key for a whole pipeline or plugin on top.

:func:`callable_key` is the key of any Python callable (declared, or derived from what can be seen of
it); :func:`unseen_state` lists what could change a callable's behaviour without changing its key.
"""

from __future__ import annotations

import dis
import functools
import hashlib
import types
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar, runtime_checkable

F = TypeVar("F", bound=Callable[..., Any])


@runtime_checkable
class CacheKeyed(Protocol):
    """Anything with a ``cache_key()`` method: its own cache identity (``None``: do not cache)."""

    def cache_key(self) -> str | None: ...


class CustomPass(ABC):
    """Base class of a Python pass that states its own cache key.

    ``__call__(module, ctx)`` transforms the ``ir.module`` in place; ``cache_key()`` returns a string
    that changes whenever the transformation would (for example a version plus the settings the
    instance holds), or ``None`` to keep compiles that use the pass out of other processes' caches.
    """

    @abstractmethod
    def __call__(self, module: Any, ctx: Any) -> Any: ...

    @abstractmethod
    def cache_key(self) -> str | None: ...


def cache_key(key: str | Callable[[], str | None] | None) -> Callable[[F], F]:
    """Give a plain function pass its cache key: ``@tritonx.cache_key("v2")``.

    ``key`` is a string, ``None`` (do not cache across processes), or a zero-argument callable read
    when the pipeline is activated or bound (``@tritonx.cache_key(lambda: json.dumps(CONFIG))``).
    """
    if key is not None and not isinstance(key, str) and not callable(key):
        raise TypeError(f"tritonx.cache_key() takes a str, None or a callable, got {type(key).__name__}")

    def read() -> str | None:
        return key() if callable(key) else key

    def decorate(fn: F) -> F:
        if not callable(fn):
            raise TypeError(f"@tritonx.cache_key(...) decorates a callable pass, got {type(fn).__name__}")
        fn.cache_key = read  # type: ignore[attr-defined]
        return fn

    return decorate


def declared_key(fn: Any) -> tuple[bool, str | None]:
    """``(True, key)`` when ``fn`` follows the protocol (``key`` may be None), else ``(False, None)``.

    A ``cache_key`` that is not a method (``JITFunction.cache_key`` is a string property) does not count.
    """
    method = getattr(fn, "cache_key", None)
    if method is None or not callable(method) or isinstance(fn, type):
        return False, None
    value = method()
    if value is not None and not isinstance(value, str):
        raise TypeError(f"cache_key() must return a str or None, got {type(value).__name__}: {value!r}")
    return True, value


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


def value_key(value: Any, depth: int = 0) -> str:
    if isinstance(value, _SIMPLE):
        return repr(value)
    if isinstance(value, tuple | frozenset) and depth < 3:  # immutable: its contents are settings
        items = sorted(value, key=repr) if isinstance(value, frozenset) else value
        return "[" + ",".join(value_key(v, depth + 1) for v in items) + "]"
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
        return "partial(" + ",".join([callable_key(fn.func, depth + 1), value_key(fn.args, depth),
                                      value_key(tuple(sorted(fn.keywords.items())), depth)]) + ")"
    func, state = _target(fn)
    extra = value_key(tuple(sorted((k, v) for k, v in state.items() if _immutable(v))), depth) if state else ""
    code = getattr(func, "__code__", None)
    parts = [getattr(func, "__module__", "") or "", getattr(func, "__qualname__", type(fn).__qualname__), extra]
    if code is not None:
        parts.append(hashlib.sha256(_code_key(code).encode()).hexdigest())
        parts.append(value_key(getattr(func, "__defaults__", None) or (), depth))
        vals = []
        for cell in getattr(func, "__closure__", None) or ():
            try:
                vals.append(value_key(cell.cell_contents, depth))
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
