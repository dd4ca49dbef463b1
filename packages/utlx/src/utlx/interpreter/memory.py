"""Shared/tensor memory under the interpreter: allocations, views of them, and the regions they cover.

Why regions: the hazard checker must decide whether an in-flight copy or dot touches the buffer a later
op reads or writes. A view is (allocation, buffer index, rectangular slice), so overlap is exact and
cheap: same allocation, same buffer index, and intersecting ranges in every dimension.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter.errors import SourceLocation, UtlxHazardError, UtlxInterpreterError, kernel_location, where

_ALLOC_IDS = itertools.count()


@dataclass(frozen=True)
class Region:
    """Part of one allocation: buffer indices ``[lo, hi)`` and, per buffer dimension, ``[start, stop)``."""

    alloc_id: int
    index_lo: int
    index_hi: int
    ranges: tuple[tuple[int, int], ...]
    layout_id: int = 0  # differs for allocations aliasing the same storage (``reuse=``): compare conservatively

    def overlaps(self, other: Region) -> bool:
        if self.alloc_id != other.alloc_id:
            return False
        if self.layout_id != other.layout_id:
            return True
        if self.index_hi <= other.index_lo or other.index_hi <= self.index_lo:
            return False
        return all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(self.ranges, other.ranges, strict=False))


@dataclass
class Allocation:
    """``num`` buffers of ``shape`` x ``dtype``, stored as one numpy array of shape ``(num, *shape)``."""

    shape: tuple[int, ...]
    dtype: tl.dtype
    num: int
    storage: str
    name: str
    location: SourceLocation | None
    reuse: Allocation | None = None
    data: np.ndarray = field(init=False)
    alloc_id: int = field(init=False)
    layout_id: int = field(init=False)

    def __post_init__(self) -> None:
        np_dtype = _compat.np_dtype(self.dtype)
        self.layout_id = next(_ALLOC_IDS)
        if self.reuse is None:
            self.data = np.zeros((self.num, *self.shape), dtype=np_dtype)
            self.alloc_id = self.layout_id
            return
        # Alias the bytes of an earlier allocation, as ``local_alloc(..., reuse=buf)`` does in shared memory.
        raw = self.reuse.data.reshape(-1).view(np.uint8)
        needed = int(np.prod((self.num, *self.shape))) * np_dtype.itemsize
        if needed > raw.size:
            raise UtlxInterpreterError(
                f"local_alloc(reuse={self.reuse.name}): needs {needed} bytes but {self.reuse.name} has {raw.size}"
            )
        self.data = raw[:needed].view(np_dtype).reshape((self.num, *self.shape))
        self.alloc_id = self.reuse.alloc_id


class BufferView:
    """What ``local_alloc``/``local_view``/``local_slice``/``local_trans`` return under the interpreter.

    ``index`` is None for the whole multi-buffer. ``slices`` are ``(start, stop)`` per buffer dimension in
    the allocation's coordinates; ``perm`` is a pending transpose; ``reinterpret`` a dtype/shape view.
    """

    def __init__(
        self,
        alloc: Allocation,
        index: int | None = None,
        slices: tuple[tuple[int, int], ...] | None = None,
        perm: tuple[int, ...] | None = None,
        reinterpret: tuple[tl.dtype, tuple[int, ...]] | None = None,
    ) -> None:
        self.alloc = alloc
        self.index = index
        self.slices = slices if slices is not None else tuple((0, s) for s in alloc.shape)
        self.perm = perm
        self.reinterpret = reinterpret

    # -- what the kernel sees -------------------------------------------------------------------
    @property
    def dtype(self) -> tl.dtype:
        return self.reinterpret[0] if self.reinterpret else self.alloc.dtype

    @property
    def shape(self) -> list[int]:
        return list(self.data.shape)

    @property
    def type(self) -> BufferView:  # TLX code reads ``buf.type.shape``/``buf.dtype``; keep both working
        return self

    def __getitem__(self, idx: object) -> BufferView:
        return self.buffer(idx, "local_view (bufs[i])")

    def buffer(self, idx: object, op: str) -> BufferView:
        """One buffer of a multi-buffer allocation (``local_view(bufs, i)``); ``op`` names the op in errors."""
        if self.index is not None:
            raise UtlxInterpreterError(f"{op}: {self.name} is already a single buffer; index the local_alloc result")
        i = _compat.to_int(idx, f"{op} buffer_idx")
        if not 0 <= i < self.alloc.num:
            raise UtlxHazardError(f"{op}: index {i} out of range for {self.name} ({self.alloc.num} buffers)"
                                  f"{where(kernel_location())}")
        return BufferView(self.alloc, i, self.slices, self.perm, self.reinterpret)

    @property
    def name(self) -> str:
        text = self.alloc.name
        if self.index is not None:
            text += f"[{self.index}]"
        full = tuple((0, s) for s in self.alloc.shape)
        if self.slices != full:
            text += "[" + ", ".join(f"{a}:{b}" for a, b in self.slices) + "]"
        if self.perm:
            text += ".T"
        return text

    def __repr__(self) -> str:
        return f"<utlx buffer {self.name}: {self.shape} {self.dtype}>"

    # -- storage ----------------------------------------------------------------------------------
    @property
    def data(self) -> np.ndarray:
        """A numpy VIEW (writes go to the allocation) in the kernel's dtype and shape."""
        arr = self.alloc.data if self.index is None else self.alloc.data[self.index]
        first = 1 if self.index is None else 0
        arr = arr[(slice(None),) * first + tuple(slice(a, b) for a, b in self.slices)]
        if self.perm is not None:
            arr = np.transpose(arr, self.perm)
        if self.reinterpret is not None:
            dtype, shape = self.reinterpret
            if not arr.flags.c_contiguous:
                raise UtlxInterpreterError(f"local_reinterpret: buffer {self.name} is not contiguous")
            arr = arr.view(_compat.np_dtype(dtype)).reshape(shape)
        return arr

    @property
    def region(self) -> Region:
        lo, hi = (0, self.alloc.num) if self.index is None else (self.index, self.index + 1)
        return Region(self.alloc.alloc_id, lo, hi, self.slices, self.alloc.layout_id)

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)
