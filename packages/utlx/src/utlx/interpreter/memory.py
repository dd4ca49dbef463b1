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
    tmem: tuple[int, int, int, int] | None = None  # tensor memory: lanes [lo, hi) x 32-bit columns [lo, hi)

    def overlaps(self, other: Region) -> bool:
        if self.alloc_id != other.alloc_id:
            return False
        if self.tmem is not None and other.tmem is not None:  # exact: same lanes and columns of one TMEM block
            l0, l1, c0, c1 = self.tmem
            m0, m1, d0, d1 = other.tmem
            return l0 < m1 and m0 < l1 and c0 < d1 and d0 < c1
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
        if self.storage == "tmem":
            self._place_in_tmem(np_dtype)
            return
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

    # -- tensor memory --------------------------------------------------------------------------
    #: 32-bit TMEM columns one buffer of this allocation spans (set for storage == "tmem")
    tmem_columns: int = field(init=False, default=0)
    tmem_lanes: int = field(init=False, default=0)
    tmem_root: np.ndarray | None = field(init=False, default=None)

    def _place_in_tmem(self, np_dtype: np.dtype) -> None:
        """Lay the buffers out as tensor memory does: rows are lanes, and buffer ``i`` takes the next
        ``tmem_columns`` 32-bit columns (16-bit elements two to a column, 8-bit four). ``reuse=`` starts at the
        same column as the allocation it reuses, so ``p_tiles[1]`` of Meta's attention kernels is the upper half
        of ``qk_tiles[0]`` and ``alpha_tiles[k]`` its column ``k``, as on the GPU."""
        if len(self.shape) != 2:
            raise UtlxInterpreterError(f"local_alloc(storage=tmem): {self.name} must be 2-D (lanes x columns), got "
                                       f"shape {list(self.shape)}")
        lanes, cols = self.shape
        per_column = 4 // np_dtype.itemsize if np_dtype.itemsize < 4 else 1
        if np_dtype.itemsize > 4 or cols % per_column:
            raise UtlxInterpreterError(f"local_alloc(storage=tmem): {self.name} of {cols} {self.dtype} columns does "
                                       f"not fill whole 32-bit TMEM columns")
        self.tmem_lanes, self.tmem_columns = lanes, cols // per_column
        total = self.num * self.tmem_columns
        if self.reuse is None:
            self.tmem_root = np.zeros((lanes, total), dtype=np.uint32)
            self.alloc_id = self.layout_id
        else:
            root = self.reuse.tmem_root
            if root is None:
                raise UtlxInterpreterError(f"local_alloc(storage=tmem, reuse={self.reuse.name}): {self.reuse.name} is "
                                           f"not in tensor memory")
            if lanes > root.shape[0] or total > root.shape[1]:
                raise UtlxInterpreterError(
                    f"local_alloc(storage=tmem, reuse={self.reuse.name}): {self.name} needs {lanes} lanes x {total} "
                    f"columns but {self.reuse.name} has {root.shape[0]} x {root.shape[1]}")
            self.tmem_root = root
            self.alloc_id = self.reuse.alloc_id
        root = self.tmem_root
        words = np.lib.stride_tricks.as_strided(
            root, shape=(self.num, lanes, self.tmem_columns),
            strides=(self.tmem_columns * root.strides[1], root.strides[0], root.strides[1]))
        self.data = words.view(np_dtype)

    def tmem_footprint(self, index_lo: int, index_hi: int, ranges: tuple[tuple[int, int], ...]
                       ) -> tuple[int, int, int, int]:
        """Lanes and 32-bit columns that buffers ``[index_lo, index_hi)`` sliced to ``ranges`` occupy."""
        (r0, r1), (e0, e1) = ranges
        per_column = self.shape[1] // self.tmem_columns
        first = index_lo * self.tmem_columns + e0 // per_column
        last = (index_hi - 1) * self.tmem_columns + -(-e1 // per_column)
        return r0, r1, first, last


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
            if self.alloc.tmem_root is not None:
                # TMEM (TLX keeps the shape): the same lanes, the leading 32-bit columns read in the new dtype
                np_dtype = _compat.np_dtype(dtype)
                words = -(-shape[-1] * np_dtype.itemsize // 4)
                return arr.view(np.uint32)[..., :words].view(np_dtype)[..., :shape[-1]]
            if not arr.flags.c_contiguous:
                raise UtlxInterpreterError(f"local_reinterpret: buffer {self.name} is not contiguous")
            arr = arr.view(_compat.np_dtype(dtype)).reshape(shape)
        return arr

    @property
    def region(self) -> Region:
        lo, hi = (0, self.alloc.num) if self.index is None else (self.index, self.index + 1)
        tmem = self.alloc.tmem_footprint(lo, hi, self.slices) if self.alloc.tmem_root is not None else None
        return Region(self.alloc.alloc_id, lo, hi, self.slices, self.alloc.layout_id, tmem)

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)
