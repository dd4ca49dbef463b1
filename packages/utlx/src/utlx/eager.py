"""The eager functions behind utlx's torch custom ops (:mod:`utlx.torch_ops`), registered by their modules.

Why a registry: a custom op's implementation calls the eager function, and the eager function, while
``torch.compile`` traces it, calls the custom op. So that modules import one way only, the module that
defines an eager function registers it here when it is imported (``utlx``'s ``__init__`` imports it
before anything can import ``utlx.torch_ops``), and the op looks it up here instead of importing it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_FUNCTIONS: dict[str, Callable[..., Any]] = {}


def register(name: str, fn: Callable[..., Any]) -> None:
    """Record the eager function ``name`` (``"matmul"``)."""
    _FUNCTIONS[name] = fn


def get(name: str) -> Callable[..., Any]:
    """The eager function ``name``; a clear error if the module defining it was never imported."""
    try:
        return _FUNCTIONS[name]
    except KeyError:
        raise LookupError(f"utlx: no eager function {name!r} registered (import utlx first)") from None
