"""``with tlx.warp_pipeline_stage(label, priority=p):`` -- one stage of an AMD warp pipeline (TLX's name).

A loop body split into stages lets the two halves of a CTA's waves run one stage apart (AMD's
"ping-pong"): the compiler puts conditional barriers between stages and ``s_setprio`` for each stage's
``priority`` (0-3). It is a schedule, not a semantics: the values a kernel computes are the same without it.

Why a class and not an op: Triton's code generator lowers ``with f(...):`` by calling ``f(*args,
_semantic=..., **kwargs)`` and then ``__enter__``/``__exit__`` on the result; the stage border goes after the
body, so the work happens in ``__exit__``, through the compiler body registered as ``warp_pipeline_stage``.
Under ``TRITON_INTERPRET=1`` the class is constructed without a semantic and does nothing (the CPU runs
one stage after the other, which is what the schedule computes).
"""

from __future__ import annotations

from typing import Any

from triton.language import core as tl

from utlx.compat import is_interpreter_semantic
from utlx.language._dispatch import dispatch


class warp_pipeline_stage:
    """Mark the body of a ``with`` statement as one warp-pipeline stage (AMD only)."""

    __slots__ = ("_semantic", "label", "priority")

    def __init__(self, label=None, *, priority=None, _semantic: Any = None):
        label = tl._unwrap_if_constexpr(label)
        priority = tl._unwrap_if_constexpr(priority)
        if label is not None and not isinstance(label, str):
            raise ValueError(f"warp_pipeline_stage: label must be a string or None, got {type(label).__name__}")
        if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)
                                     or not 0 <= priority <= 3):
            raise ValueError(f"warp_pipeline_stage: priority must be 0-3, got {priority!r}")
        self.label = label
        self.priority = priority
        self._semantic = None if _semantic is None or is_interpreter_semantic(_semantic) else _semantic
        if self._semantic is not None:
            dispatch("warp_pipeline_stage", self._semantic, self, "enter")

    def __enter__(self) -> warp_pipeline_stage:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is None and self._semantic is not None:
            dispatch("warp_pipeline_stage", self._semantic, self, "exit")
        return False


warp_pipeline_stage.__module__ = "triton.language.extra.tlx.warp_pipeline"

__all__ = ["warp_pipeline_stage"]
