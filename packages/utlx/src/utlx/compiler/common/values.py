"""Frontend values that the compiler bodies of TLX ops hand back to the kernel being traced.

Why our own value types: a TLX buffer, view, barrier or async token has no Triton-language type. While
tracing, each is just the i32 (or dummy tensor) result of a placeholder op, wrapped here with the static
facts later ops need at trace time (shape, element type, number of buffers) for argument checks. They
are proper ``tlc.base_value``s so the code generator can bind them to names, pass them to ``@jit``
helpers and carry them through loops and branches (``carried.py`` resolves those at lowering; what it cannot
resolve is reported naming the op).
"""

from __future__ import annotations

from typing import Any

import triton.language as tl
from triton.language import core as tlc


class HandleType(tlc.base_type):
    """Type of a placeholder handle: what it denotes (``kind``) plus its static description."""

    def __init__(self, kind: str, shape: tuple[int, ...] = (), dtype: Any = None, num: int = 0,
                 storage: str = "smem", carrier: Any = None, group_warps: int = 0) -> None:
        self.kind = kind
        # Barriers of alloc_warp_barrier: the warps whose threads all arrive (0 for ordinary mbarriers).
        self.group_warps = int(group_warps)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.num = int(num)
        self.storage = storage
        # tl type of the ir handle itself (i32 scalar, or a dummy tensor for async tokens).
        self.carrier = carrier if carrier is not None else tl.int32

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HandleType) and (self.kind, self.shape, str(self.dtype), self.num, self.storage,
                                                  self.group_warps) == (other.kind, other.shape, str(other.dtype),
                                                                        other.num, other.storage, other.group_warps)

    def __hash__(self) -> int:
        return hash((self.kind, self.shape, str(self.dtype), self.num))

    def __repr__(self) -> str:
        return f"utlx.{self.kind}<{'x'.join(map(str, self.shape))}, {self.dtype}, num={self.num}>"

    def mangle(self) -> str:
        shape = "_".join(map(str, self.shape))
        return f"U{self.kind}{shape}{self.dtype}n{self.num}" + (f"w{self.group_warps}" if self.group_warps else "")

    def _flatten_ir_types(self, builder: Any, out: list) -> None:
        out.append(self.carrier.to_ir(builder))

    def _unflatten_ir(self, handles: list, cursor: int):
        return HANDLE_CLASSES.get(self.kind, Handle)(handles[cursor], self), cursor + 1


class Handle(tlc.base_value):
    """A placeholder result standing for a TLX object (buffer, view, barrier, token, ...)."""

    def __init__(self, handle: Any, type: HandleType) -> None:
        self.handle = handle
        self.type = type

    def _flatten_ir(self, handles: list) -> None:
        handles.append(self.handle)

    def _set_name(self, builder: Any, name: str) -> None:
        """Called when the handle is bound to a ``@jit`` helper's parameter; placeholders keep no names."""

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> Any:
        return self.type.dtype

    def __repr__(self) -> str:
        return repr(self.type)


def _index(self: Handle, buffer_idx: Any, _semantic: Any = None) -> Handle:
    """``bufs[i]`` / ``bars[i]``: the same as ``tlx.local_view(bufs, i)`` (TLX allows both spellings).

    The code generator passes ``_semantic`` to methods of Triton values that declare it.
    """
    from utlx.language._dispatch import dispatch

    if _semantic is None:
        raise TypeError(f"{self!r}[...] can only be used inside a @triton.jit kernel")
    return dispatch("local_view", _semantic, self, buffer_idx)  # the body registered for the kernel's target


class SharedBuffers(Handle):
    """``local_alloc`` result: ``num`` buffers of ``shape`` in shared memory (TLX ``buffered_tensor``)."""

    __getitem__ = _index


class SharedView(Handle):
    """One buffer (``local_view``) or a slice of one (``local_slice``)."""


class AsyncToken(Handle):
    """Token of ``async_load`` / ``async_load_commit_group`` (ordering only; the lowering drops it)."""


class Barriers(Handle):
    """``alloc_barriers`` result: ``num`` mbarriers."""

    __getitem__ = _index


class BarrierView(Handle):
    """One mbarrier (``local_view`` of :class:`Barriers`)."""


class ClcResponses(Handle):
    """``_alloc_clc_responses`` result: ``num`` 16-byte cluster-launch-control response buffers (Blackwell)."""

    __getitem__ = _index


class ClcResponseView(Handle):
    """One CLC response buffer (``local_view`` of :class:`ClcResponses`)."""


HANDLE_CLASSES: dict[str, type[Handle]] = {
    "buffers": SharedBuffers,
    "view": SharedView,
    "token": AsyncToken,
    "barriers": Barriers,
    "barrier": BarrierView,
    "clc_responses": ClcResponses,
    "clc_response": ClcResponseView,
}


def make(kind: str, handle: Any, **desc: Any) -> Handle:
    """Wrap placeholder result ``handle`` as the frontend value of ``kind``."""
    ty = HandleType(kind, **desc)
    return HANDLE_CLASSES.get(kind, Handle)(handle, ty)
