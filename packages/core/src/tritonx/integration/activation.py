"""Which pipelines are active globally: counted activations published as immutable snapshots.

Every change builds the new state completely (keys included) before anything is replaced, so a
pipeline whose ``cache_key`` raises leaves nothing behind; the published :class:`Snapshot` is swapped
in one assignment, so the no-argument hook call Triton makes on every launch is two attribute reads.
Recent snapshots stay findable by digest: a compile started under a launch finds the snapshot that
launch was keyed with even after another thread changed the active set.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from ..engine.keys import combined_key, pipeline_key
from ..errors import PipelineError
from ..model.keyed import check_declared, declared_part
from ..model.pipeline import Pipeline
from .snapshot import EMPTY, Snapshot
from .unkeyed import UnkeyedWarnings

#: Snapshots kept findable by digest (distinct active sets, not changes: toggling reuses entries).
_REMEMBERED = 1024


class KeyFunctionError(Exception):
    """A registered key function (a plugin's ``cache_key``) raised; ``owner`` names it."""

    def __init__(self, owner: str, error: Exception) -> None:
        super().__init__(f"{owner}: cache_key() raised {type(error).__name__}: {error}")
        self.owner = owner
        self.error = error


def check_pipeline(p: Any) -> Pipeline:
    if not isinstance(p, Pipeline):
        raise PipelineError(f"activate() takes tritonx.Pipeline objects, got {type(p).__name__}: {p!r}")
    return p


class ActivePipelines:
    """Globally active pipelines (in activation order) plus named key functions (plugins' ``cache_key``)."""

    def __init__(self, warnings: UnkeyedWarnings | None = None) -> None:
        self._lock = threading.RLock()
        self._counts: dict[int, int] = {}
        self._order: list[Pipeline] = []
        self._extra: dict[str, Callable[[], str]] = {}
        self._known: OrderedDict[str, Snapshot] = OrderedDict()
        self._warnings = warnings or UnkeyedWarnings()
        #: the published state; read without the lock
        self.snapshot: Snapshot = EMPTY

    # -- building a state ---------------------------------------------------------------------------

    def _build(self, order: list[Pipeline], extra: dict[str, Callable[[], str]]) -> Snapshot:
        if not order and not extra:
            return EMPTY
        parts = [pipeline_key(p) for p in order]
        for name, fn in sorted(extra.items()):
            try:
                stated = check_declared(fn(), "cache_key()")
            except Exception as exc:
                raise KeyFunctionError(name, exc) from exc
            parts.append(f"{name}={declared_part(stated, name)}")
        return Snapshot.of(tuple(order), combined_key(parts))

    def _publish(self, order: list[Pipeline], counts: dict[int, int], extra: dict[str, Callable[[], str]],
                 snap: Snapshot) -> None:
        self._order, self._counts, self._extra = order, counts, extra
        if snap.digest:
            self._known[snap.digest] = snap
            self._known.move_to_end(snap.digest)
            while len(self._known) > _REMEMBERED:
                self._known.popitem(last=False)
        self.snapshot = snap

    # -- changes --------------------------------------------------------------------------------------

    def push(self, pipelines: Iterable[Pipeline]) -> list[Pipeline]:
        """Activate (once more) each pipeline; nothing changes if one of them cannot be keyed."""
        ps = [check_pipeline(p) for p in pipelines]
        with self._lock:
            order, counts = list(self._order), dict(self._counts)
            for p in ps:
                n = counts.get(id(p), 0)
                if n == 0:
                    order.append(p)
                counts[id(p)] = n + 1
            snap = self._build(order, self._extra)
            for p in ps:
                p.freeze("active")
                self._warnings.check(p)
            self._publish(order, counts, self._extra, snap)
        return ps

    def pop(self, pipelines: Iterable[Pipeline]) -> None:
        with self._lock:
            order, counts = list(self._order), dict(self._counts)
            for p in pipelines:
                check_pipeline(p)
                n = counts.get(id(p), 0)
                if n == 0:
                    raise PipelineError(f"pipeline {p.name!r} is not active")
                if n == 1:
                    del counts[id(p)]
                    order.remove(p)
                else:
                    counts[id(p)] = n - 1
            self._publish(order, counts, self._extra, self._build(order, self._extra))

    def clear(self) -> None:
        """Deactivate every pipeline (key functions stay)."""
        with self._lock:
            self._publish([], {}, self._extra, self._build([], self._extra))

    def set_extra_key(self, name: str, fn: Callable[[], str] | None) -> None:
        """Register (or drop, with None) a key function that joins the global key; atomic."""
        with self._lock:
            extra = dict(self._extra)
            if fn is None:
                extra.pop(name, None)
            else:
                extra[name] = fn
            self._publish(self._order, self._counts, extra, self._build(self._order, extra))

    def refresh(self) -> None:
        """Recompute the key (after a pipeline's or plugin's own ``cache_key()`` changed)."""
        with self._lock:
            self._publish(self._order, self._counts, self._extra, self._build(self._order, self._extra))

    # -- reading --------------------------------------------------------------------------------------

    @property
    def pipelines(self) -> tuple[Pipeline, ...]:
        return self.snapshot.pipelines

    def lookup(self, digest: str) -> Snapshot | None:
        """The snapshot published with this digest ('' is the empty one), if still remembered."""
        if not digest:
            return EMPTY
        with self._lock:
            return self._known.get(digest)


class Activation:
    """Returned by ``activate``: already active; as a context manager it deactivates on exit."""

    def __init__(self, owner: ActivePipelines, pipelines: list[Pipeline]) -> None:
        self.pipelines = pipelines
        self._owner = owner
        self._done = False

    def deactivate(self) -> None:
        if not self._done:
            self._done = True
            if self.pipelines:
                self._owner.pop(self.pipelines)

    def __enter__(self) -> Activation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.deactivate()

