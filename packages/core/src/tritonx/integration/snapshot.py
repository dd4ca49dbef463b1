"""Immutable views of which pipelines apply: globally (:class:`Snapshot`) and to one compile.

A compile must be keyed and edited by the same pipelines whatever other threads activate meanwhile,
so the compile-time key provider freezes a :class:`CompileSnapshot` (the global snapshot plus the
kernel's bound pipelines) and the stages hook of that same compile edits with exactly it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..engine.keys import combined_key
from ..model.pipeline import Pipeline

#: Marker of tritonx's part of a Triton cache key: ``-tritonx-<32 hex digits>``.
MARKER = "-tritonx-"
_MARKED = re.compile(re.escape(MARKER) + r"([0-9a-f]{32})")


def suffix(digest: str) -> str:
    """What tritonx appends to a key for a digest ('' for none, so stock keys stay stock)."""
    return f"{MARKER}{digest}" if digest else ""


def digest_in(key_text: str) -> str:
    """The last tritonx digest in a key text ('' when the text carries none)."""
    found = _MARKED.findall(key_text)
    return found[-1] if found else ""


@dataclass(frozen=True)
class Snapshot:
    """The globally active pipelines, their digest, and what the hook's no-argument call returns."""

    pipelines: tuple[Pipeline, ...]
    digest: str
    #: (suffix for the on-disk key, hash for the in-memory key); tritonx puts its on-disk part in
    #: through ``get_cache_key`` (see :mod:`tritonx.compat.cache`), so the first element is ''.
    pair: tuple[str, str]

    @classmethod
    def of(cls, pipelines: tuple[Pipeline, ...], digest: str) -> Snapshot:
        return cls(pipelines, digest, ("", suffix(digest)))


EMPTY = Snapshot.of((), "")


@dataclass(frozen=True)
class Binding:
    """Pipelines bound to one kernel, with their digest (stored on the JIT function, replaced whole)."""

    pipelines: tuple[Pipeline, ...]
    digest: str


@dataclass(frozen=True)
class CompileSnapshot:
    """What one compile is keyed by and edited with."""

    active: Snapshot
    bound: Binding | None = None
    kernel: str | None = None
    #: the compile source it was made for (identity is what matters)
    src: Any = field(default=None, compare=False, repr=False)

    @property
    def pipelines(self) -> tuple[Pipeline, ...]:
        return self.active.pipelines + (self.bound.pipelines if self.bound is not None else ())

    @property
    def digest(self) -> str:
        bound = self.bound.digest if self.bound is not None else ""
        if not self.active.digest and not bound:
            return ""
        return combined_key([self.active.digest, bound])

    @property
    def suffix(self) -> str:
        return suffix(self.digest)


STOCK = CompileSnapshot(EMPTY)
