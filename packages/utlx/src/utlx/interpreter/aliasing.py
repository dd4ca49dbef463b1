"""``storage_alias_spec`` under the interpreter: the allocations that share a spec, and the checks of
``set_buffer_overlap``.

Why each allocation keeps its own storage: a reuse group only *permits* overlap (``shared`` members may
occupy the same bytes at one buffer index; ``distinct`` members must not); placing every member apart is
one valid placement, so a kernel that is correct for the compiler's placement computes the same on the
CPU. What the interpreter does check is what the compiler would reject: members not allocated from the
spec, a member listed twice, storage kinds that differ, buffer counts a group cannot line up, and a sized
spec too small for the layout the tree asks for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from triton.language import core as tl

from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where
from utlx.interpreter.memory import Allocation, BufferView
from utlx.language.types import reuse_group, reuse_group_type, storage_alias_spec, storage_kind


class AliasSpec(storage_alias_spec):
    """What ``storage_alias_spec(...)`` returns on the CPU: the spec and the allocations made from it."""

    def __init__(self, storage: storage_kind, buffer_size_bytes: int | None) -> None:
        super().__init__(None, storage, buffer_size_bytes)
        self.users: list[Allocation] = []
        self.overlap: reuse_group | None = None

    def add_user(self, alloc: Allocation) -> None:
        """``local_alloc(..., reuse=self)`` made ``alloc``: same storage kind, and it must fit a sized spec."""
        loc = alloc.location
        if alloc.storage != self.storage.value:
            raise UtlxInterpreterError(f"local_alloc(reuse={self!r}): {alloc.name} is in {alloc.storage} but the spec "
                                       f"is {self.storage.value}{where(loc)}")
        if self.buffer_size_bytes is not None and alloc.data.nbytes > self.buffer_size_bytes:
            raise UtlxInterpreterError(f"local_alloc(reuse={self!r}): {alloc.name} needs {alloc.data.nbytes} bytes, "
                                       f"more than the spec's {self.buffer_size_bytes}{where(loc)}")
        self.users.append(alloc)

    def set_buffer_overlap(self, overlap_def: Any, _semantic: Any = None) -> None:
        """Check the reuse tree against the spec's allocations (see the module docstring)."""
        loc = kernel_location()
        group = tl._unwrap_if_constexpr(overlap_def)
        if not isinstance(group, reuse_group):
            raise UtlxInterpreterError(f"set_buffer_overlap: expected a tlx.reuse_group, got "
                                       f"{type(group).__name__}{where(loc)}")
        if self.overlap is not None:
            raise UtlxInterpreterError(f"set_buffer_overlap: {self!r} already has an overlap scheme{where(loc)}")
        seen: set[int] = set()
        for leaf in group.leaves():
            if not isinstance(leaf, BufferView) or leaf.index is not None:
                raise UtlxInterpreterError(f"set_buffer_overlap: reuse_group members must be whole local_alloc "
                                           f"results, got {leaf!r}{where(loc)}")
            if not any(leaf.alloc is user for user in self.users):
                raise UtlxInterpreterError(f"set_buffer_overlap: {leaf.name} was not allocated with "
                                           f"reuse={self!r}{where(loc)}")
            if id(leaf.alloc) in seen:
                raise UtlxInterpreterError(f"set_buffer_overlap: {leaf.name} appears twice in the reuse "
                                           f"tree{where(loc)}")
            seen.add(id(leaf.alloc))
        count, per_index = _layout(group, loc)
        if self.buffer_size_bytes is not None and count * per_index > self.buffer_size_bytes:
            raise UtlxInterpreterError(f"set_buffer_overlap: the reuse tree needs {count} x {per_index} bytes, more "
                                       f"than {self!r} holds{where(loc)}")
        self.overlap = group


def _layout(node: Any, loc: Any) -> tuple[int, int]:
    """(logical buffer count, bytes per logical buffer) of a reuse tree node.

    A leaf has its ``num`` buffers of its own size. A group divides its members' common count by
    ``group_size`` (that many consecutive buffers form one logical buffer); a ``shared`` group needs the
    largest member's bytes per logical buffer, a ``distinct`` group the sum.
    """
    if isinstance(node, BufferView):
        alloc = node.alloc
        return alloc.num, int(np.prod(alloc.shape)) * alloc.data.itemsize
    members = [_layout(m, loc) for m in node.args]
    counts = {c for c, _ in members}
    if len(counts) != 1:
        raise UtlxInterpreterError(f"set_buffer_overlap: the members of {node!r} have different buffer counts "
                                   f"{sorted(counts)}; a group lines up buffer i of every member{where(loc)}")
    count = counts.pop()
    if count % node.group_size:
        raise UtlxInterpreterError(f"set_buffer_overlap: group_size={node.group_size} does not divide the "
                                   f"{count} buffers of the members of {node!r}{where(loc)}")
    sizes = [b for _, b in members]
    per_index = sum(sizes) if node.group_type == reuse_group_type.distinct else max(sizes)
    return count // node.group_size, per_index * node.group_size
