"""The cache-key protocol for Python passes and stage functions.

Triton caches binaries by key, and tritonx puts the active pipelines in that key. For a Python callable
(a pass, an ``override_stage``/``transform_stage``/``override_pipeline`` function) tritonx derives the
key from the code it can reach: its bytecode, defaults and immutable closure values, and, followed through,
the functions, methods, classes and modules it uses, up to library boundaries (keyed by version and
content). State it cannot see (a dict or list captured or read as a global, an object's mutable
attributes) or code it cannot follow (``exec``, ``importlib.import_module``) would let a change reuse a
binary built before it, so tritonx warns once per pass (:class:`~tritonx.errors.UnkeyedStateWarning`)
and the pass should say its key itself.

The protocol, modelled on torch inductor's ``CustomGraphPass.uuid()``: a callable with a
``cache_key()`` method returning

* a ``str``: that string replaces everything tritonx would derive (it must change whenever the pass
  would transform a kernel differently);
* ``None``: the pass opts out of caching across processes: its key carries a token unique to this
  process, so no other process (and no later run) ever reuses a binary it produced.

Subclass :class:`CustomPass`, or decorate a function with :func:`cache_key`. ``Pipeline(cache_key=...)``
and ``Plugin(cache_key=...)`` add a key for a whole pipeline or plugin on top.

:func:`callable_key` is the key of any Python callable (declared, or derived from the code it reaches:
:mod:`tritonx.model.code_reach`); :func:`unseen_state` lists what could change a callable's behaviour without
changing its key. The same protocol holds for ``Pipeline(cache_key=...)`` and ``Plugin(cache_key=...)``
(:func:`check_declared`, :func:`declared_part`): a ``str``, or ``None`` for "never shared with another process";
anything else is a ``TypeError`` naming the owner.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from .code_reach import Reach, immutable

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
    if not _declares_key(fn):
        return False, None
    return True, check_declared(fn.cache_key(), f"cache_key() of {callable_name(fn)}")


def check_declared(value: Any, owner: str) -> str | None:
    """A declared key as the protocol allows it (a ``str``, or ``None``), else a TypeError naming ``owner``."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{owner} must return a str or None, got {type(value).__name__}: {value!r}")
    return value


def declared_part(value: str | None, owner: object) -> str:
    """The key text of a declared key: the string itself, or (None) a token no other process can produce.

    ``owner`` tells apart two opted-out owners of one process (a pass, a pipeline, a plugin name).
    """
    return f"declared:{value}" if value is not None else f"uncached:{PROCESS_TOKEN}:{owner}"


def callable_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


#: Keys of callables that opt out of caching carry this: no other process can produce it.
PROCESS_TOKEN = uuid.uuid4().hex


def value_key(value: Any) -> str:
    """The key of a pass argument or setting: plain values by repr, callables by what they run."""
    if immutable(value):
        return repr(value)
    return callable_key(value) if callable(value) and not isinstance(value, type) else Reach().key(value)


def _declared_in_walk(fn: Any) -> str | None:
    """For the walk: the key text of a reached callable that declares its key (None when it does not)."""
    declared, key = declared_key(fn)
    return declared_part(key, id(fn)) if declared else None


def callable_key(fn: Any) -> str:
    """A stable key for a Python callable: its declared key, else a digest of the code it can reach
    (:mod:`tritonx.model.code_reach`): its own code, the helpers and methods it calls, the modules it reads."""
    declared, key = declared_key(fn)
    if declared:
        return declared_part(key, id(fn))
    return Reach(declared=_declared_in_walk).key(fn)


def unseen_state(fn: Any) -> list[str]:
    """What could change a callable's behaviour without changing its key: mutable state it reads (closure
    values, globals, attributes, here or in the code it calls) and code the walk cannot follow."""
    if _declares_key(fn):
        return []
    r = Reach(declared=_declared_in_walk)
    r.key(fn)
    found = list(dict.fromkeys(r.unseen))
    found += [f"code the key cannot follow: {what}" for what in dict.fromkeys(r.opaque)]
    return found


def _declares_key(fn: Any) -> bool:
    method = getattr(fn, "cache_key", None)
    return method is not None and callable(method) and not isinstance(fn, type)
