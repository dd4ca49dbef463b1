"""What an op and the lowering need of their language, as a protocol.

Why a protocol: :mod:`.language` builds ops (:mod:`.op`) and runs the lowering (:mod:`.lowering`), so those
two cannot import it back without an import circle (``tests/test_layers.py`` forbids one, type-checking
imports included). They depend on this narrow view instead, which :class:`~tritonx.dsl.Language` satisfies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class LanguageView(Protocol):
    """The part of a :class:`~tritonx.dsl.Language` its ops and its lowering use."""

    name: str
    module_lowering: Callable[..., Any] | None

    def get(self, name: str) -> Any:
        """The op called ``name`` (an :class:`~tritonx.dsl.Op`)."""

    def changed(self) -> None:
        """An op gained or lost an implementation: the language's derived key must be recomputed."""

    def require_active(self, op_name: str, target: Any) -> None:
        """Raise unless the language's pipeline is active for this compile."""
