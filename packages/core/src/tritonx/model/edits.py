"""The edits a pipeline is made of: one small class per kind, each saying how it reads and how it is keyed.

Why classes: what an edit is decides how it is described in errors, what it contributes to Triton's cache
key, which Python callables it runs, and where the engine applies it (to a recorded pass, or to a whole
stage). Each class says that about itself, so no code branches on a kind string.

``insert_before``/``insert_after`` (LLVM PassBuilder's extension points at a named pass), ``disable`` and
``replace`` act on the passes a :class:`PassSelector` picks (:class:`PassEdit`); ``override_stage`` and
``transform_stage`` on one stage (:class:`StageEdit`); ``override_pipeline`` on the dict of stages.
"""

from __future__ import annotations

import dataclasses
import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .keyed import callable_key, callable_name, value_key


@dataclass(frozen=True)
class PassSelector:
    """Which pass(es) an edit applies to.

    ``occurrence`` counts from 0 within a stage (negative counts from the end); ``None`` means every
    occurrence. ``stage`` restricts the search to one stage.
    """

    name: str
    occurrence: int | None = None
    stage: str | None = None

    def describe(self) -> str:
        extra = []
        if self.occurrence is not None:
            extra.append(f"occurrence={self.occurrence}")
        if self.stage is not None:
            extra.append(f"stage={self.stage!r}")
        return repr(self.name) + (f" ({', '.join(extra)})" if extra else "")

    def key(self) -> str:
        return f"{self.name}#{self.occurrence}@{self.stage}"


@dataclass(frozen=True)
class PythonPass:
    """A Python callable run on the live ``ir.module``: ``fn(module, ctx)``."""

    fn: Callable[[Any, Any], Any]
    name: str

    def describe(self) -> str:
        return f"python:{self.name}"

    def key(self) -> str:
        return f"py:{self.name}:{callable_key(self.fn)}"


@dataclass(frozen=True)
class NamedPass:
    """A stock Triton pass or a native plugin pass, by name, with its arguments."""

    name: str
    args: tuple[Any, ...] | None = None

    def describe(self) -> str:
        return self.name if not self.args else f"{self.name}{list(self.args)}"

    def key(self) -> str:
        return f"named:{self.name}:{value_key(self.args)}"


PassSpec = PythonPass | NamedPass

_ids = itertools.count()


@dataclass(frozen=True, kw_only=True)
class Edit(ABC):
    """One edit of a pipeline; ``pipeline`` names the pipeline that wrote it (errors name it)."""

    #: how the edit is spelt in ``Pipeline`` methods, errors and cache keys
    kind: ClassVar[str]

    pipeline: str
    required: bool = True
    uid: int = field(default_factory=lambda: next(_ids), compare=False)

    @abstractmethod
    def describe(self) -> str:
        """How the edit reads in errors and in ``tritonx pipeline``."""

    def key(self) -> str:
        """What the edit contributes to Triton's cache key (stable across processes)."""
        selector, new, stage, fn = self._key_fields()
        return "/".join((self.kind, selector, new, stage, fn, str(self.required)))

    @abstractmethod
    def _key_fields(self) -> tuple[str, str, str, str]:
        """(selector, new pass, stage, function) parts of :meth:`key`; '' where the kind has none."""

    def callables(self) -> Iterator[tuple[str, Any]]:
        """The Python callables the edit runs, with the name errors and warnings use for each."""
        return iter(())

    def renamed(self, pipeline: str) -> Edit:
        """The same edit written by another pipeline (a new edit: its own uid)."""
        return dataclasses.replace(self, pipeline=pipeline, uid=next(_ids))


@dataclass(frozen=True, kw_only=True)
class PassEdit(Edit):
    """An edit of the passes its selector picks in a recorded pass list."""

    selector: PassSelector

    def _key_fields(self) -> tuple[str, str, str, str]:
        new = getattr(self, "new", None)
        return self.selector.key(), new.key() if new is not None else "", "", ""


@dataclass(frozen=True, kw_only=True)
class _Bringing(PassEdit):
    """A pass edit that brings a pass of its own (``new``)."""

    new: PassSpec

    def describe(self) -> str:
        return f"{self.kind}({self.selector.describe()}, {self.new.describe()})"

    def callables(self) -> Iterator[tuple[str, Any]]:
        if isinstance(self.new, PythonPass):
            yield f"Python pass {self.new.name!r}", self.new.fn


@dataclass(frozen=True, kw_only=True)
class InsertBefore(_Bringing):
    kind: ClassVar[str] = "insert_before"


@dataclass(frozen=True, kw_only=True)
class InsertAfter(_Bringing):
    kind: ClassVar[str] = "insert_after"


@dataclass(frozen=True, kw_only=True)
class Replace(_Bringing):
    kind: ClassVar[str] = "replace"


@dataclass(frozen=True, kw_only=True)
class Disable(PassEdit):
    kind: ClassVar[str] = "disable"

    def describe(self) -> str:
        return f"disable({self.selector.describe()})"


@dataclass(frozen=True, kw_only=True)
class _RunsFunction(Edit):
    """An edit that runs a Python function of its own (``fn``) on a stage or on the stages dict."""

    fn: Callable[..., Any]

    def callables(self) -> Iterator[tuple[str, Any]]:
        yield self.describe(), self.fn


@dataclass(frozen=True, kw_only=True)
class StageEdit(_RunsFunction):
    """An edit of one whole stage."""

    stage: str

    def describe(self) -> str:
        return f"{self.kind}({self.stage!r}, {callable_name(self.fn)})"

    def _key_fields(self) -> tuple[str, str, str, str]:
        return "", "", self.stage, callable_key(self.fn)


@dataclass(frozen=True, kw_only=True)
class OverrideStage(StageEdit):
    """Replace a whole stage: ``fn(src, metadata, ctx)`` returns what the stage would have."""

    kind: ClassVar[str] = "override_stage"


@dataclass(frozen=True, kw_only=True)
class TransformStage(StageEdit):
    """Rewrite a text stage's output: ``fn(text, ctx) -> text``."""

    kind: ClassVar[str] = "transform_stage"


@dataclass(frozen=True, kw_only=True)
class OverridePipeline(_RunsFunction):
    """Edit the dict of stages itself: ``fn(stages, ctx)``."""

    kind: ClassVar[str] = "override_pipeline"

    def describe(self) -> str:
        return f"override_pipeline({callable_name(self.fn)})"

    def _key_fields(self) -> tuple[str, str, str, str]:
        return "", "", "", callable_key(self.fn)
