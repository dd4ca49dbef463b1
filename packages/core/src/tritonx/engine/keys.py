"""Cache identity of pipelines: what enters Triton's cache key while a pipeline is active.

Two pipelines that would compile differently must never share a key, and the same pipeline must get
the same key in every process (so the on-disk cache hits after a restart). A pipeline's key is its name,
each edit's own :meth:`~tritonx.model.edits.Edit.key` (Python callables are keyed by the code they reach,
or by their own ``cache_key()``: :mod:`tritonx.model.keyed`), and its ``cache_key`` if it has one (the same
protocol: a ``str``, or ``None`` to keep its binaries out of every other process).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from ..errors import PipelineError
from ..model.keyed import check_declared, declared_part
from ..model.pipeline import Pipeline


def pipeline_key(pipeline: Pipeline) -> str:
    """Digest of a pipeline's name and edits (and its own ``cache_key()`` if it has one).

    Raises :class:`PipelineError` naming the pipeline (and the pass) when a key function raises.
    """
    parts = [pipeline.name]
    for e in pipeline.edits:
        try:
            parts.append(e.key())
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
        try:
            stated = check_declared(extra, "its cache_key()")
        except TypeError as exc:
            raise PipelineError(f"pipeline {pipeline.name!r}: {exc}; nothing was activated") from exc
        parts.append("extra:" + declared_part(stated, f"pipeline:{pipeline.name}"))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def combined_key(parts: Iterable[str]) -> str:
    """One digest for an ordered collection of keys ('' when empty, so stock keys stay stock)."""
    items = list(parts)
    if not items:
        return ""
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:32]
