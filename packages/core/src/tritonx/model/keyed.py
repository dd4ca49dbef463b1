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
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
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
