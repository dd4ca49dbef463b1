"""Warp specialization under the interpreter: ``async_tasks``/``async_task`` as cooperative threads.

Why threads: a producer task that waits on an "empty" barrier only a consumer task arrives on cannot run
to completion before the consumer starts, so running task bodies one after another deadlocks on correct
kernels. Each task (and each replica) therefore runs in its own thread, but only one thread runs at a time:
a task runs until it blocks in ``barrier_wait`` (or finishes), then the scheduler resumes the next task whose
wait can now pass, round-robin. That is deterministic, makes every correct producer/consumer protocol
progress, and turns "every task is blocked" into a deadlock error instead of a hang.

Why an AST rewrite: the body of ``with tlx.async_task(...):`` must become a function the scheduler can run
later in its thread. The interpreter already re-parses each kernel (``FunctionRewriter``); we add a step that
turns each such ``with`` body into a nested function (names it assigns start from the enclosing values) and
registers it with the enclosing ``async_tasks`` region, which runs all tasks when it exits.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from typing import Any

from triton.language import core as tl

from utlx.interpreter import cluster as _cluster
from utlx.interpreter import state as _state
from utlx.interpreter.coop import CoopScheduler, Fiber
from utlx.interpreter.errors import SourceLocation, UtlxDeadlockError, UtlxInterpreterError, kernel_location, where
from utlx.language._dispatch import register_interpreter_impl

# ---------------------------------------------------------------------------------------------- the ops

#: Keyword arguments of TLX's ``async_task``.
_TASK_KWARGS = frozenset({"num_warps", "registers", "num_regs", "replicate", "warp_group_start_id"})


class TaskSpec:
    """What ``async_task(...)`` returns under the interpreter (TLX's argument conventions)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.is_default = False
        self.task_ids: list[int] | None = None
        self.location: SourceLocation | None = kernel_location(2)
        unwrap = tl._unwrap_if_constexpr
        unknown = sorted(set(kwargs) - _TASK_KWARGS)
        if unknown:
            raise UtlxInterpreterError(f"async_task: unknown argument(s) {', '.join(unknown)} (TLX takes "
                                       f"{', '.join(sorted(_TASK_KWARGS))}){where(self.location)}")
        if args:
            if len(args) != 1:
                raise UtlxInterpreterError(f"async_task: expected at most one positional argument, got "
                                           f"{len(args)}{where(self.location)}")
            first = unwrap(args[0])
            if first == "default":
                self.is_default = True
            else:
                self.task_ids = sorted({int(unwrap(t)) for t in first})
        self.num_warps = unwrap(kwargs.get("num_warps"))
        if "num_regs" in kwargs and "registers" in kwargs:
            raise UtlxInterpreterError(f"async_task: give registers= or num_regs=, not both{where(self.location)}")
        # registers per thread of every replica (setmaxnreg): the interpreter has no register file, but a
        # count the hardware cannot set is an error on the GPU, so it is one here too
        self.registers = unwrap(kwargs.get("num_regs", kwargs.get("registers")))
        if self.registers is not None and (
                isinstance(self.registers, bool) or not isinstance(self.registers, int)
                or not 24 <= self.registers <= 256 or self.registers % 8):
            raise UtlxInterpreterError(f"async_task: registers={self.registers!r} must be a multiple of 8 in "
                                       f"[24, 256] (setmaxnreg){where(self.location)}")
        replicate = unwrap(kwargs.get("replicate", 1))
        self.replicate = 1 if replicate is None else replicate
        if isinstance(self.replicate, bool) or not isinstance(self.replicate, int) or self.replicate < 1:
            raise UtlxInterpreterError(f"async_task: replicate must be an integer >= 1, got "
                                       f"{self.replicate!r}{where(self.location)}")
        self.warp_group_start_id = unwrap(kwargs.get("warp_group_start_id"))

    def label(self, index: int) -> str:
        kind = "default" if self.is_default else f"num_warps={self.num_warps}"
        return f"task {index} ({kind})"

    # Fallback when the body was not rewritten (kernel source unavailable): the body runs inline, once.
    def __enter__(self) -> TaskSpec:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False


class TaskRegion:
    """What ``async_tasks()`` returns: collects the tasks of its body and runs them when it exits."""

    def __init__(self) -> None:
        self.tasks: list[tuple[TaskSpec, Callable[[dict[str, Any]], Any], dict[str, Any]]] = []
        self.location = kernel_location()

    def __enter__(self) -> TaskRegion:
        st = _state.current()
        if st.regions or isinstance(_state.current_task_key(), TaskThread):
            raise UtlxInterpreterError(
                f"async_tasks: nested async_tasks regions are not supported{where(self.location)}"
            )
        st.regions.append(self)
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        _state.current().regions.remove(self)
        if exc_type is None and self.tasks:
            Scheduler(self.tasks).run()
        return False


#: Keyword arguments of Meta's fork's ``async_tasks``: scheduling attributes with no effect on results.
_REGION_KWARGS = frozenset({"exclusive", "no_ending_cluster_sync", "mbarrier_try_wait_suspend_ns"})


@register_interpreter_impl("async_tasks")
def _async_tasks(_semantic: Any, *args: Any, **kwargs: Any) -> TaskRegion:
    unknown = sorted(set(kwargs) - _REGION_KWARGS)
    if args or unknown:
        raise UtlxInterpreterError(f"async_tasks: takes only the keyword arguments {sorted(_REGION_KWARGS)}, got "
                                   f"{len(args)} positional and {unknown}{where(kernel_location(1))}")
    return TaskRegion()


@register_interpreter_impl("async_task")
def _async_task(_semantic: Any, *args: Any, **kwargs: Any) -> TaskSpec:
    return TaskSpec(*args, **kwargs)


def register_task(ctx: Any, body: Callable[[dict[str, Any]], Any], env: dict[str, Any]) -> None:
    """Called by rewritten kernels in place of an ``async_task`` body."""
    regions = _state.current().regions
    if not isinstance(ctx, TaskSpec) or not regions:
        body(env)  # not a utlx task, or used outside async_tasks: run in place
        return
    regions[-1].tasks.append((ctx, body, env))


def replica_id() -> int:
    """Replica index of the running task; TLX defines it only inside an ``async_task``."""
    task = _state.current_task_key()
    if not isinstance(task, TaskThread):
        raise UtlxInterpreterError(f"async_task_replica_id: called outside an async_task body (it numbers the "
                                   f"replicas of async_task(..., replicate=n)){where(kernel_location(1))}")
    return task.replica


# ------------------------------------------------------------------------------------------ scheduler


class TaskThread(Fiber):
    """One task replica running in its own (cooperatively scheduled) thread."""

    def __init__(self, sched: Scheduler, spec: TaskSpec, body: Callable[..., Any], env: dict[str, Any], index: int,
                 replica: int) -> None:
        super().__init__(sched, spec.label(index) + (f" replica {replica}" if spec.replicate > 1 else ""))
        self.spec = spec
        self.body = body
        self.env = env
        self.replica = replica

    def main(self) -> None:
        _state.set_current_task(self)
        self.body(self.env)


class Scheduler(CoopScheduler):
    """Runs the tasks of one ``async_tasks`` region, one thread at a time, switching at blocked waits."""

    def __init__(self, tasks: list[tuple[TaskSpec, Callable[..., Any], dict[str, Any]]]) -> None:
        super().__init__()
        self.threads = [
            TaskThread(self, spec, body, env, i, r)
            for i, (spec, body, env) in enumerate(tasks)
            for r in range(spec.replicate)
        ]

    def stuck(self, alive: list[Fiber]) -> bool:
        waits = [t for t in alive if t.blocked]
        if _cluster.block_cta(lambda: any(t.runnable() for t in alive),
                              lambda: "every task waits: " + "; ".join(f"{t.name}: {t.blocked[1]()}" for t in alive
                                                                      if t.blocked)):
            return True  # another CTA of the cluster ran and unblocked a task
        lines = "\n".join(f"  {t.name}: {t.blocked[1]()}" for t in waits)
        raise UtlxDeadlockError(
            "deadlock in warp-specialized region: every unfinished task waits on a barrier that can never "
            f"complete:\n{lines}"
        )


def wait_until(ready: Callable[[], bool], describe: Callable[[], str], op: str, loc: SourceLocation | None) -> None:
    """Block the running task until ``ready()``; outside warp specialization nothing else could make it
    ready, so a wait that cannot pass now is a deadlock."""
    if ready():
        return
    task = _state.current_task_key()
    if not isinstance(task, TaskThread) and _cluster.block_cta(ready, describe):
        return  # another CTA of the cluster made it ready
    if not isinstance(task, TaskThread):
        raise UtlxDeadlockError(
            f"{describe()}: it can never complete, because no other task runs that could arrive on it or deliver "
            f"its bytes"
        )
    task.sched.block(task, ready, describe)


def yield_now() -> None:
    """Let the other tasks run (a running task offers this after each arrival, so a task the arrival
    unblocked runs at once, as it would on hardware; this exposes races such as arriving on an "empty"
    barrier while an async_dot still reads the buffer). A no-op outside warp specialization."""
    task = _state.current_task_key()
    if isinstance(task, TaskThread):
        task.sched.block(task, lambda: True, lambda: "yielded")


# ------------------------------------------------------------------------------------------ AST rewrite

_ENV = "__utlx_env"


def _is_async_task_call(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    return (isinstance(func, ast.Name) and func.id == "async_task") or (
        isinstance(func, ast.Attribute) and func.attr == "async_task"
    )


class _AssignedNames(ast.NodeVisitor):
    """Names a block binds, not counting nested function/class/lambda/comprehension scopes."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.names.add(node.id)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.names.add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.names.add(node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        pass

    def _skip(self, node: ast.AST) -> None:
        pass

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _skip  # type: ignore[assignment]


class TaskBodyRewriter(ast.NodeTransformer):
    """``with X.async_task(a): BODY`` -> ``with X.async_task(a) as c: def f(env): ...BODY; register_task(c, f,
    locals())``."""

    def __init__(self) -> None:
        self.counter = 0
        self.kernel = "kernel"

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if self.counter == 0 and self.kernel == "kernel":
            self.kernel = node.name  # the outermost def is the kernel: name task bodies after it
        return self.generic_visit(node)

    def visit_With(self, node: ast.With) -> ast.AST:
        self.generic_visit(node)
        if len(node.items) != 1 or not _is_async_task_call(node.items[0].context_expr):
            return node
        n = self.counter
        self.counter += 1
        ctx_name, fn_name = f"__utlx_task_ctx_{n}", f"{self.kernel}__async_task_{n}"
        finder = _AssignedNames()
        for stmt in node.body:
            finder.visit(stmt)
        prologue: list[ast.stmt] = [
            ast.If(
                test=ast.Compare(left=ast.Constant(name), ops=[ast.In()], comparators=[ast.Name(_ENV, ast.Load())]),
                body=[
                    ast.Assign(
                        targets=[ast.Name(name, ast.Store())],
                        value=ast.Subscript(ast.Name(_ENV, ast.Load()), ast.Constant(name), ast.Load()),
                    )
                ],
                orelse=[],
            )
            for name in sorted(finder.names)
        ]
        user_target = node.items[0].optional_vars
        if user_target is not None:
            prologue.insert(0, ast.Assign(targets=[user_target], value=ast.Name(ctx_name, ast.Load())))
        extra = {"type_params": []} if sys.version_info >= (3, 12) else {}
        fdef = ast.FunctionDef(
            name=fn_name,
            args=ast.arguments(posonlyargs=[], args=[ast.arg(_ENV)], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=prologue + list(node.body),
            decorator_list=[],
            returns=None,
            **extra,
        )
        importer = ast.Call(
            func=ast.Name("__import__", ast.Load()),
            args=[ast.Constant(__name__)],
            keywords=[ast.keyword("fromlist", ast.List([ast.Constant("register_task")], ast.Load()))],
        )
        call = ast.Expr(
            ast.Call(
                func=ast.Attribute(importer, "register_task", ast.Load()),
                args=[
                    ast.Name(ctx_name, ast.Load()),
                    ast.Name(fn_name, ast.Load()),
                    ast.Call(ast.Name("locals", ast.Load()), [], []),
                ],
                keywords=[],
            )
        )
        item = ast.withitem(context_expr=node.items[0].context_expr, optional_vars=ast.Name(ctx_name, ast.Store()))
        new = ast.With(items=[item], body=[fdef, call])
        for sub in ast.walk(new):
            if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                ast.copy_location(sub, node)
        return ast.copy_location(new, node)


def rewrite_tasks(tree: ast.AST) -> ast.AST:
    """Apply :class:`TaskBodyRewriter` (a no-op for kernels without ``async_task``)."""
    return TaskBodyRewriter().visit(tree)
