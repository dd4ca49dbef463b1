"""utlx's ops as ``tritonx.dsl`` placeholders: traced as ``tt.elementwise_inline_asm``, lowered after the conversion.

Why tritonx's placeholders: utlx is the reference client of ``tritonx.dsl`` (level 3 of tritonx's extension
API), whose placeholders already survive Triton's TTIR pipeline and the TTIR -> TTGIR conversion
(:mod:`tritonx.dsl.placeholder` says how). utlx emits them with its language's name (``utlx|<op>|<uid>|<json>``)
and its own calling convention: scalar *handles* (the i32 results of other placeholders, or plain scalars such as
indices), then *tensors* of one shape; tensors of other shapes travel through a separate ``stash`` placeholder
referenced by uid. Side effects are kept by emitting the op impure; the lowering marks it pure once replaced so
that DCE removes it.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl
from tritonx.dsl import Placeholder, emit_placeholder, next_uid
from tritonx.dsl import collect as dsl_collect

LANGUAGE = "utlx"

__all__ = ["LANGUAGE", "Placeholder", "collect", "dtype_of_name", "emit", "next_uid"]


def emit(sem: Any, op: str, attrs: dict[str, Any] | None = None, handles: list[Any] = (),
         tensors: list[Any] = (), result: Any = None, pure: bool = False, uid: int | None = None) -> Any:
    """Emit placeholder ``op`` of the ``utlx`` language; returns the ``ir.value`` of its single result.

    ``uid`` names the placeholder for an op that refers to it later (take one with :func:`next_uid`).
    """
    return emit_placeholder(sem, LANGUAGE, op, attrs, handles, tensors, result, pure, uid)


def collect(module: Any) -> list[Placeholder]:
    """All utlx placeholders of ``module``, definitions before their uses."""
    return dsl_collect(module, LANGUAGE)


def dtype_of_name(name: str) -> Any:
    """The ``tl`` type a placeholder attribute names (``str(dtype)``: ``fp16``, or ``pointer<fp16>``)."""
    if name.startswith("pointer<") and name.endswith(">"):
        return tl.pointer_type(dtype_of_name(name[len("pointer<"):-1]))
    return tl.dtype(name)
