"""Warn, once per pass, when a Python pass reads state that Triton's cache key cannot see."""

from __future__ import annotations

import threading
import warnings

from ..errors import UnkeyedStateWarning
from ..model.keyed import unseen_state
from ..model.pipeline import Pipeline

HOW_TO_KEY = (
    "give it a key: subclass tritonx.CustomPass and return the key from cache_key(), decorate the function "
    "with @tritonx.cache_key(lambda: ...), or pass Pipeline(..., cache_key=...); return None from cache_key() "
    "to keep its binaries out of other processes' caches"
)


class UnkeyedWarnings:
    """Remembers which passes were already warned about (per runtime)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[tuple[str, str, int]] = set()

    def check(self, pipeline: Pipeline) -> None:
        if pipeline.extra_cache_key is not None:  # the pipeline states its key: its author took charge
            return
        for edit in pipeline.edits:
            for what, fn in edit.callables():
                found = unseen_state(fn)
                if not found:
                    continue
                code = getattr(getattr(fn, "__func__", fn), "__code__", None)
                mark = (pipeline.name, what, id(code) if code is not None else id(fn))
                with self._lock:
                    if mark in self._seen:
                        continue
                    self._seen.add(mark)
                warnings.warn(
                    f"pipeline {pipeline.name!r}: {what} reads {', '.join(found)}, which Triton's cache key "
                    f"cannot see: a changed value would reuse a binary built with the old one; {HOW_TO_KEY}",
                    UnkeyedStateWarning,
                    stacklevel=5,
                )
