"""Cluster launch control (CLC) under the interpreter: ``try_cancel`` as a queue of the programs not yet run.

What the hardware does: ``clusterlaunchcontrol.try_cancel`` cancels a cluster of the grid that has not been
launched yet and hands its first CTA id to the caller (asynchronously: a 16-byte response in shared memory,
completed on an mbarrier), or answers that none is left. A persistent kernel loops over the tiles it steals
this way, so every program id is worked on exactly once: by its own program, or by the thief.

The model: the interpreter runs programs one after another in grid order (x outermost, as Triton's grid loop
does). Each ``try_cancel`` takes the next program id in that order that has not run and was not taken yet,
marks it cancelled and writes it into the response (delivering its 16 bytes to the barrier); past the last
one it answers "no more". A cancelled program is skipped when the grid loop reaches it: every function the
interpreter runs starts with a check (:func:`guard_cancelled`, added by the interpreter's AST rewrite) that
returns at once when the running program was cancelled (only a kernel entry can be; a helper always runs in
a program that was not). The queue lives for one launch.

The hazard checker (``UTLX_HAZARD_CHECKS``) refuses what the PTX ISA leaves undefined: a ``try_cancel``
issued after the program observed a failed one, and a query of a response no ``try_cancel`` wrote.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter import cluster as _cluster
from utlx.interpreter import state as _state
from utlx.interpreter.errors import UtlxHazardError, UtlxInterpreterError, kernel_location, where
from utlx.interpreter.ops_mem import _barrier
from utlx.interpreter.tasks import yield_now
from utlx.language import types as _types
from utlx.language._dispatch import dispatch
from utlx.language._dispatch import register_interpreter_impl as impl

#: Bytes a CLC response delivers to its mbarrier (``.b128``).
RESPONSE_BYTES = 16

_unwrap = tl._unwrap_if_constexpr

# ------------------------------------------------------------------------------------------ the tile queue


@dataclass
class _Queue:
    """Programs of one launch taken by ``try_cancel`` (linear ids in grid order) and what each program saw."""

    launch: int
    cancelled: set[int] = field(default_factory=set)
    next: int = 0  # the lowest linear id try_cancel may still hand out
    failed_seen: set[tuple[int, int, int]] = field(default_factory=set)  # programs that observed "no more"


_queue: list[_Queue] = []


def _current_queue() -> _Queue:
    launch = _state.launch_id()
    if not _queue or _queue[0].launch != launch:
        _queue[:] = [_Queue(launch)]
    return _queue[0]


def _grid() -> tuple[int, int, int]:
    return tuple(_compat.interpreter_builder().grid_dim)


def _linear(idx: tuple[int, int, int], grid: tuple[int, int, int]) -> int:
    x, y, z = idx
    return (x * grid[1] + y) * grid[2] + z


def _program(linear: int, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    yz = grid[1] * grid[2]
    return linear // yz, (linear % yz) // grid[2], linear % grid[2]


def try_cancel() -> tuple[int, int, int] | None:
    """Cancel the next program that has not run (its id), or None when every program has run or been taken."""
    queue = _current_queue()
    grid = _grid()
    nxt = max(queue.next, _linear(_compat.grid_idx(), grid) + 1)
    if nxt >= grid[0] * grid[1] * grid[2]:
        queue.next = nxt
        return None
    queue.cancelled.add(nxt)
    queue.next = nxt + 1
    return _program(nxt, grid)


def program_cancelled() -> bool:
    """Was the program the interpreter is about to run taken by another program's ``try_cancel``?"""
    if not _state.launch_active() or not _queue or _queue[0].launch != _state.launch_id():
        return False
    return _linear(_compat.grid_idx(), _grid()) in _queue[0].cancelled


def guard_cancelled(tree: ast.AST) -> ast.AST:
    """Start every function of ``tree`` (the source the interpreter re-parses) with a return taken when the running
    program was cancelled: how the grid loop skips the programs ``try_cancel`` took."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            # ``skip_program`` also runs a cluster launch's CTAs together (utlx.interpreter.cluster); at the entry,
            # ``locals()`` are the kernel's arguments
            check = ast.parse("if __import__('utlx.interpreter.entry', fromlist=['_']).skip_program(locals()):\n"
                              "    return\n").body[0]
            ast.copy_location(check, node)
            for child in ast.walk(check):
                ast.copy_location(child, node)
            node.body.insert(0, check)
            break  # the kernel (or helper) itself; nested task functions run inside a running program
    return tree


# ------------------------------------------------------------------------------------------ responses


class ClcResponse:
    """One 16-byte response buffer: what the last ``try_cancel`` into it answered."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.written = False
        self.program: tuple[int, int, int] | None = None  # the cancelled program, None: the request failed

    def write(self, program: tuple[int, int, int] | None) -> None:
        self.written = True
        self.program = program

    def __repr__(self) -> str:
        state = "never written" if not self.written else f"program {self.program}" if self.program else "no more"
        return f"<utlx CLC response {self.name}: {state}>"


class ClcResponseArray:
    """What ``_alloc_clc_responses`` returns: index it with ``local_view``."""

    def __init__(self, name: str, num: int) -> None:
        if num < 1:
            raise UtlxInterpreterError(f"_alloc_clc_responses: num_responses must be >= 1, got {num}")
        self.name = name
        self.num = num
        self.responses = [ClcResponse(f"{name}[{i}]") for i in range(num)]

    def __len__(self) -> int:
        return self.num

    def view(self, idx: Any, op: str) -> ClcResponse:
        i = _compat.to_int(idx, f"{op} response index")
        if not 0 <= i < self.num:
            raise UtlxInterpreterError(f"{op}: index {i} out of range for {self.name} ({self.num} CLC responses)"
                                       f"{where(kernel_location())}")
        return self.responses[i]

    def __getitem__(self, idx: Any) -> ClcResponse:
        return self.view(idx, "local_view (responses[i])")

    def __repr__(self) -> str:
        return f"<utlx CLC responses {self.name} x{self.num}>"


_types.register_value_class(_types.clc_response, ClcResponse)
_types.register_value_class(_types.clc_response, ClcResponseArray)


def _response(value: Any, op: str) -> ClcResponse:
    value = _unwrap(value)
    if isinstance(value, ClcResponseArray) and value.num == 1:
        return value.responses[0]
    if not isinstance(value, ClcResponse):
        raise UtlxInterpreterError(f"{op}: argument 'clc_response_addr' must be one CLC response (local_view of "
                                   f"_alloc_clc_responses), got {value!r}{where(kernel_location(1))}")
    return value


def _context(value: Any, op: str) -> _types.CLCPipelineContext:
    value = _unwrap(value)
    if not isinstance(value, _types.CLCPipelineContext):
        raise UtlxInterpreterError(f"{op}: 'context' must be the result of clc_create_context, got {value!r}"
                                   f"{where(kernel_location(1))}")
    return value


# ------------------------------------------------------------------------------------------ the ops


@impl("_alloc_clc_responses")
def _alloc_clc_responses(_semantic: Any, num_responses: Any) -> ClcResponseArray:
    loc = kernel_location()
    name = (loc.assigned_name() if loc else None) or "clc_responses"
    return ClcResponseArray(name, _compat.to_int(num_responses, "_alloc_clc_responses num_responses"))


@impl("_clc_issue")
def _clc_issue(_semantic: Any, clc_response_addr: Any, barrier: Any) -> None:
    op = "_clc_issue"
    loc = kernel_location()
    response = _response(clc_response_addr, op)
    bar = _barrier(barrier, op, "barrier")
    if _cluster.size() > 1:  # try_cancel then cancels whole clusters, multicast to the cluster's CTAs
        raise UtlxInterpreterError(f"{op}: cluster launch control in a launch with clusters of {_cluster.size()} "
                                   f"CTAs (ctas_per_cga={_cluster.launch_shape()}) is not modelled by the interpreter "
                                   f"yet (it is for clusters of one){where(loc)}")
    queue = _current_queue()
    if _state.checks_enabled() and _compat.grid_idx() in queue.failed_seen:
        raise UtlxHazardError(f"{op}: try_cancel issued{where(loc)} after this program observed a failed one (a "
                              f"response saying no program is left); the PTX ISA leaves that undefined: stop "
                              f"issuing once a query returns -1")
    response.write(try_cancel())
    bar.deliver(RESPONSE_BYTES)
    yield_now()


@impl("_clc_query")
def _clc_query(_semantic: Any, clc_response_addr: Any) -> tl.tensor:
    op = "_clc_query"
    response = _response(clc_response_addr, op)
    if not response.written:
        raise UtlxHazardError(f"{op}: reads {response.name}{where(kernel_location())}, which no try_cancel "
                              f"(clc_producer / _clc_issue) has written")
    if response.program is None:
        _current_queue().failed_seen.add(_compat.grid_idx())
        return _compat.scalar(-1)
    rank = _compat.to_int(dispatch("cluster_cta_rank", _semantic), "cluster_cta_rank")
    return _compat.scalar(response.program[0] + rank)


@impl("clc_create_context")
def clc_create_context(_semantic: Any, num_consumers: Any, num_stages: Any = 1) -> _types.CLCPipelineContext:
    stages = _compat.to_int(num_stages, "clc_create_context num_stages")
    consumers = _compat.to_int(num_consumers, "clc_create_context num_consumers")
    return _types.CLCPipelineContext(
        clc_mbars_empty=dispatch("alloc_barriers", _semantic, num_barriers=stages, arrive_count=consumers),
        clc_mbars_full=dispatch("alloc_barriers", _semantic, num_barriers=stages),
        clc_responses=dispatch("_alloc_clc_responses", _semantic, num_responses=stages),
    )


def _stage(_semantic: Any, ctx: _types.CLCPipelineContext, k: Any) -> tuple[Any, Any, Any]:
    return (dispatch("local_view", _semantic, ctx._clc_mbars_empty, k),
            dispatch("local_view", _semantic, ctx._clc_mbars_full, k),
            dispatch("local_view", _semantic, ctx._clc_responses, k))


def _phase_stage(_semantic: Any, context: Any, phase: Any, op: str, barrier: str, k: Any) -> tuple[Any, Any, Any]:
    """Stage ``k``'s (empty, full, response) of ``context`` for ``op``, which must be given the phase of the stage's
    ``barrier`` to wait for (``p_producer`` / ``p_consumer``)."""
    ctx = _context(context, op)
    if phase is None:
        name = "p_producer" if op == "clc_producer" else "p_consumer"
        raise UtlxInterpreterError(f"{op}: '{name}' (the phase of the stage's {barrier} barrier to wait for) is "
                                   f"required{where(kernel_location())}")
    return _stage(_semantic, ctx, k)


@impl("clc_producer")
def clc_producer(_semantic: Any, context: Any, p_producer: Any = None, multi_ctas: Any = False, k: Any = 0) -> None:
    empty, full, response = _phase_stage(_semantic, context, p_producer, "clc_producer", "empty", k)
    pred = None
    if bool(_unwrap(multi_ctas)):  # only cluster CTA 0 waits for the stage to be free
        pred = _compat.to_int(dispatch("cluster_cta_rank", _semantic), "cluster_cta_rank") == 0
    dispatch("barrier_wait", _semantic, empty, p_producer, pred)
    dispatch("barrier_expect_bytes", _semantic, full, RESPONSE_BYTES)
    dispatch("_clc_issue", _semantic, response, full)


@impl("clc_consumer")
def clc_consumer(_semantic: Any, context: Any, p_consumer: Any = None, multi_ctas: Any = False, k: Any = 0) -> Any:
    empty, full, response = _phase_stage(_semantic, context, p_consumer, "clc_consumer", "full", k)
    dispatch("barrier_wait", _semantic, full, p_consumer)
    tile = dispatch("_clc_query", _semantic, response)
    dispatch("fence", _semantic, "async_shared")
    has_tile = _compat.to_int(tile, "clc_consumer tile id") >= 0
    remote = 0 if bool(_unwrap(multi_ctas)) else None  # every CTA hands the stage back to cluster CTA 0
    dispatch("barrier_arrive", _semantic, empty, 1, remote, pred=has_tile)
    return tile
