"""Warp specialization: ``with async_tasks(): with async_task(...): ...`` (TLX names).

Both are builtins returning context managers: Triton's code generator lowers ``with`` by calling the
callee with ``_semantic`` and then ``__enter__``/``__exit__``, and the interpreter patches builtins to
receive its semantic, so one definition serves both paths.
"""

from __future__ import annotations

from utlx.language._op import passthrough_op


@passthrough_op
def async_tasks(*args, exclusive=False, no_ending_cluster_sync=False, mbarrier_try_wait_suspend_ns=None,
                _semantic=None, **kwargs):
    """Open a warp-specialized region; each nested ``async_task`` runs concurrently on its own warps.

    ``exclusive``, ``no_ending_cluster_sync`` and ``mbarrier_try_wait_suspend_ns`` are attributes of Meta's
    fork's warp-specialize op; they are checked and have no effect on stock Triton.
    """


@passthrough_op
def async_task(*args, _semantic=None, **kwargs):
    """One concurrent task of an ``async_tasks`` region.

    ``async_task("default", registers=..., replicate=...)`` is the task on the kernel's own warps;
    ``async_task(num_warps=4, registers=..., replicate=n)`` adds ``n`` replicas of a task on extra warps
    (``async_task_replica_id()`` tells them apart).
    """


__all__ = ["async_task", "async_tasks"]
