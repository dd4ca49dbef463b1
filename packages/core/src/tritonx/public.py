"""The public pipeline functions (``tritonx.activate``...): each delegates to the current runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _current
from .errors import PipelineError
from .integration.activation import Activation, check_pipeline
from .model.pipeline import Pipeline
from .runtime import current


def activate(*pipelines: Pipeline) -> Activation:
    """Switch pipelines on for every kernel compiled from now on (until deactivated).

    Usable as ``with tritonx.activate(p): ...``. Pipelines apply in activation order. Atomic: if one
    pipeline cannot be keyed (its ``cache_key`` raises), none is activated and the error names it.
    """
    return current().activate(*pipelines)


def deactivate(*pipelines: Pipeline) -> None:
    """Switch pipelines off (each call undoes one :func:`activate`)."""
    current().deactivate(*pipelines)


def active() -> tuple[Pipeline, ...]:
    """The globally active pipelines, in activation order."""
    return current().active()


def active_key() -> str:
    """Digest of the globally active pipelines ('' when none): O(1), for callers that cache launches
    (utlx's fast launch path calls it per launch: a few attribute reads, no lock)."""
    return _current.runtime().activations.snapshot.digest


def pipeline(*pipelines: Pipeline) -> Callable[[Any], Any]:
    """Decorator: ``@tritonx.pipeline(p)`` above ``@triton.jit`` compiles that kernel with ``p``."""
    if not pipelines:
        raise PipelineError("tritonx.pipeline() needs at least one Pipeline")
    for p in pipelines:
        check_pipeline(p)

    def decorate(kernel: Any) -> Any:
        return current().bind(kernel, pipelines)

    return decorate
