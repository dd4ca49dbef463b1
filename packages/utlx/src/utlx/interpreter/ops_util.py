"""CPU bodies of the small utilities: ids, clock, cluster queries (a cluster of one CTA)."""

from __future__ import annotations

import time
from typing import Any

from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter.errors import UtlxInterpreterError
from utlx.interpreter.tasks import replica_id
from utlx.language._dispatch import register_interpreter_impl as impl


@impl("async_task_replica_id")
def async_task_replica_id(_semantic: Any) -> tl.tensor:
    return _compat.scalar(replica_id())


@impl("thread_id")
def thread_id(_semantic: Any, axis: Any) -> tl.tensor:
    axis_i = _compat.to_int(axis, "thread_id axis")
    if axis_i not in (0, 1, 2):
        raise UtlxInterpreterError(f"thread_id: axis must be 0, 1 or 2, got {axis_i}")
    # The interpreter runs a program's threads as one: it is thread 0.
    return _compat.scalar(0)


@impl("clock64")
def clock64(_semantic: Any) -> tl.tensor:
    return _compat.scalar(time.perf_counter_ns(), tl.int64)


@impl("cluster_cta_rank")
def cluster_cta_rank(_semantic: Any) -> tl.tensor:
    return _compat.scalar(0)


@impl("cluster_size_1d")
def cluster_size_1d(_semantic: Any) -> tl.tensor:
    return _compat.scalar(1)
