"""Compile-path bodies of ``async_tasks()`` / ``async_task(...)``: trace each task into its own region.

Why this shape: a ``ttg.warp_specialize`` cannot be created while tracing (TTGIR ops break the TTIR ->
TTGIR conversion, and ``ir.builder`` has no such op), and ops cannot be moved one by one afterwards. Blocks,
however, can be moved. So while tracing, each task body goes into the then-block of an ``scf.if`` whose
condition is an opaque placeholder (``utlx|async_task|...``): no TTIR pass can fold it, the conversion
converts its body like any other code, and the lowering (:mod:`utlx.compiler.nvidia.warp_specialize`) then moves
each then-block whole into a partition of a real ``ttg.warp_specialize``. An ``async_tasks`` placeholder
after the last task marks where that op goes and lists the group's tasks.

Replicas: ``async_task(..., replicate=N)`` is traced N times, once per replica, each into its own
``scf.if`` (so each becomes its own partition), with ``async_task_replica_id()`` a compile-time constant of
that trace. Tracing a ``with`` body more than once needs the code generator's cooperation: utlx routes
``CodeGenerator.visit_With`` through :func:`trace_with` (hook in ``utlx.compat``), which handles
``async_tasks``/``async_task`` statements and declines every other ``with``. Each task body is traced with
its own name scope, as Meta's TLX does (names bound in a task do not leak into the next replica or task).

Limits (reported with the op's name): tasks cannot yield values to the code after ``async_tasks``; every
task but the default one must name ``num_warps``.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import Any

import triton.language as tl

from utlx import compat
from utlx.compiler.common import placeholders as placeholder
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import register_compiler_impl

from .targets import SM90_PLUS

_groups = itertools.count()
#: Attribute on the builder: the stack of open ``async_tasks`` regions while a kernel is traced.
_STACK_ATTR = "_utlx_ws_stack"


def _c(x: Any) -> Any:
    return tl.core._unwrap_if_constexpr(x)


def _stack(_semantic: Any) -> list:
    b = _semantic.builder
    st = getattr(b, _STACK_ATTR, None)
    if st is None:
        st = []
        setattr(b, _STACK_ATTR, st)
    return st


@dataclass
class TaskSpec:
    """Static description of one ``async_task`` (what the lowering needs to build its partition)."""

    default: bool
    num_warps: int | None
    registers: int | None
    replicate: int = 1

    @classmethod
    def parse(cls, args: tuple, kwargs: dict) -> TaskSpec:
        op = "async_task"
        default = False
        if args:
            first = _c(args[0])
            if first != "default" or len(args) > 1:
                raise UtlxCompileError(op, f"positional arguments must be just 'default', got {[_c(a) for a in args]}")
            default = True
        unknown = set(kwargs) - {"num_warps", "registers", "num_regs", "replicate", "warp_group_start_id"}
        if unknown:
            raise UtlxCompileError(op, f"unknown keyword arguments {sorted(unknown)}")
        if _c(kwargs.get("warp_group_start_id")) is not None:
            raise UtlxCompileError(op, "warp_group_start_id (explicit warp placement) is not available: stock "
                                   "ttg.warp_specialize assigns each partition's warps itself",
                                   hint="leave warp_group_start_id out")
        replicate = _c(kwargs.get("replicate", 1))
        replicate = 1 if replicate is None else replicate
        if not isinstance(replicate, int) or isinstance(replicate, bool) or replicate < 1:
            raise UtlxCompileError(op, f"replicate must be a compile-time int >= 1, got {replicate!r}")
        nw = _c(kwargs.get("num_warps"))
        regs = _c(kwargs.get("registers", kwargs.get("num_regs")))
        if default and nw is not None:
            raise UtlxCompileError(op, "the default task runs on the kernel's own warps; set num_warps on the "
                                   "launch instead of on async_task('default')")
        if not default:
            if not isinstance(nw, int) or nw < 1 or nw & (nw - 1):
                raise UtlxCompileError(op, f"num_warps must be a power-of-two compile-time int, got {nw!r}")
        if regs is not None and (not isinstance(regs, int) or regs % 8 or not 24 <= regs <= 256):
            raise UtlxCompileError(op, f"registers must be a multiple of 8 in [24, 256] (setmaxnreg), got {regs!r}")
        return cls(default=default, num_warps=nw, registers=regs, replicate=replicate)


@dataclass
class TasksRegion:
    """Context manager of ``async_tasks()``: collects its tasks, then marks where the op will be built."""

    sem: Any
    group: int = field(default_factory=lambda: next(_groups))
    tasks: list[int] = field(default_factory=list)  # placeholder uids of the task markers
    specs: list[TaskSpec | None] = field(default_factory=list)  # one per traced replica (None: replica > 0)
    open_task: bool = False
    current: Any = None  # the Task being traced

    def __enter__(self) -> TasksRegion:
        st = _stack(self.sem)
        if st:
            raise UtlxCompileError("async_tasks", "cannot be nested inside another async_tasks region")
        st.append(self)
        return self

    def __exit__(self, *exc: Any) -> bool:
        _stack(self.sem).pop()
        if exc and exc[0] is not None:
            return False
        defaults = sum(s.default for s in self.specs if s is not None)
        if defaults != 1:
            raise UtlxCompileError("async_tasks", f"needs exactly one async_task('default'), found {defaults}")
        if len(self.tasks) < 2:
            raise UtlxCompileError("async_tasks", "needs at least one task besides the default one")
        placeholder.emit(self.sem, "async_tasks", {"group": self.group, "tasks": self.tasks})
        return False


@dataclass
class Task:
    """Context manager of ``async_task(...)``: traces its body inside ``scf.if <opaque>``."""

    sem: Any
    region: TasksRegion
    spec: TaskSpec
    saved: Any = None
    replica: int = 0  # which replica the next __enter__ traces (see trace_with)

    def __enter__(self) -> Task:
        if self.region.open_task:
            raise UtlxCompileError("async_task", "cannot be nested inside another async_task")
        b = self.sem.builder
        kernel_warps = from_semantic(self.sem).num_warps
        # Replica 0 of the default task runs on the kernel's warps; its other replicas are partitions
        # on as many warps (TLX's rule).
        default = self.spec.default and self.replica == 0
        attrs = {"group": self.region.group, "default": default,
                 "num_warps": kernel_warps if self.spec.default else self.spec.num_warps,
                 "kernel_warps": kernel_warps, "registers": self.spec.registers, "replica": self.replica}
        # An i1 result: the condition of the scf.if that holds the body (opaque, so never folded away).
        uid = placeholder.next_uid()
        cond = placeholder.emit(self.sem, "async_task", attrs, result=tl.int1, uid=uid)
        self.region.tasks.append(uid)
        self.region.specs.append(self.spec if self.replica == 0 else None)
        if_op = b.create_if_op([], cond, False)
        self.saved = b.get_insertion_point()
        # Inserting at the start of the then-block puts the body before its scf.yield, in program order.
        b.set_insertion_point_to_start(if_op.get_then_block())
        self.region.open_task = True
        self.region.current = self
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.region.open_task = False
        self.region.current = None
        self.sem.builder.restore_insertion_point(self.saved)
        return False


#: Keyword arguments of Meta's fork's ``async_tasks``: attributes of its warp-specialize op that stock Triton
#: has no use for (checked, then ignored).
FORK_REGION_OPTIONS = ("exclusive", "no_ending_cluster_sync", "mbarrier_try_wait_suspend_ns")


@register_compiler_impl("async_tasks", *SM90_PLUS)
def async_tasks(_semantic: Any, *args: Any, **kwargs: Any) -> TasksRegion:
    """Open a warp-specialized region (compiled to ``ttg.warp_specialize``)."""
    op = "async_tasks"
    unknown = sorted(set(kwargs) - set(FORK_REGION_OPTIONS))
    if args or unknown:
        raise UtlxCompileError(op, f"takes only the keyword arguments {list(FORK_REGION_OPTIONS)}, got "
                               f"{len(args)} positional and {unknown}")
    for name in ("exclusive", "no_ending_cluster_sync"):
        if not isinstance(_c(kwargs.get(name, False)), bool):
            raise UtlxCompileError(op, f"'{name}' must be a compile-time bool, got {_c(kwargs[name])!r}")
    suspend = _c(kwargs.get("mbarrier_try_wait_suspend_ns"))
    if suspend is not None and (isinstance(suspend, bool) or not isinstance(suspend, int) or suspend < 0):
        raise UtlxCompileError(op, f"'mbarrier_try_wait_suspend_ns' must be a non-negative int, got {suspend!r}")
    return TasksRegion(_semantic)


@register_compiler_impl("async_task", *SM90_PLUS)
def async_task(_semantic: Any, *args: Any, **kwargs: Any) -> Task:
    """One partition of the enclosing ``async_tasks`` region."""
    st = _stack(_semantic)
    if not st:
        raise UtlxCompileError("async_task", "must be used directly inside 'with tlx.async_tasks():'")
    return Task(_semantic, st[-1], TaskSpec.parse(args, kwargs))


@register_compiler_impl("async_task_replica_id")
def async_task_replica_id(_semantic: Any) -> Any:
    """The replica being traced, as a ``tl.constexpr`` (0 .. replicate-1; 0 for a task without replicas)."""
    st = _stack(_semantic)
    task = st[-1].current if st else None
    if task is None:
        raise UtlxCompileError("async_task_replica_id", "must be called inside a 'with tlx.async_task(...):' body")
    return tl.constexpr(task.replica)


def current_num_warps(_semantic: Any) -> int:
    """Warps of the task being traced (the kernel's own outside tasks and in the default task)."""
    st = _stack(_semantic)
    task = st[-1].current if st else None
    if task is None or task.spec.default:
        return from_semantic(_semantic).num_warps
    return int(task.spec.num_warps)


# ---------------------------------------------------------------- tracing ``with`` statements

_OPS = ("async_tasks", "async_task")


def trace_with(generator: Any, node: ast.With) -> bool:
    """``CodeGenerator.visit_With`` hook: trace utlx's own ``with`` statements; False for any other.

    ``with tlx.async_task(..., replicate=N):`` is traced N times, replica by replica; every task body and
    the ``async_tasks`` body get a name scope of their own.
    """
    if len(node.items) != 1 or node.items[0].optional_vars is not None:
        return False
    call = node.items[0].context_expr
    if not isinstance(call, ast.Call):
        return False
    try:
        fn = compat.codegen_callee(generator, call)
    except Exception:  # not resolvable as a plain lookup: leave the statement to Triton
        return False
    name = getattr(fn, "__utlx_op__", None)
    if name not in _OPS:
        return False
    cm = compat.codegen_call(generator, call, fn)
    if not isinstance(cm, (Task, TasksRegion)):  # e.g. the interpreter's own objects: trace like stock
        return _trace_once(generator, node, cm)
    if isinstance(cm, TasksRegion):
        with cm:
            compat.codegen_visit_scoped(generator, node.body)
        return True
    for replica in range(cm.spec.replicate):
        cm.replica = replica
        with cm:
            compat.codegen_visit_scoped(generator, node.body)
    return True


def _trace_once(generator: Any, node: ast.With, cm: Any) -> bool:
    cm.__enter__()
    generator.visit_compound_statement(node.body)
    cm.__exit__(None, None, None)
    return True
