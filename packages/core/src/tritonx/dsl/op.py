"""One kernel-callable op: its signature and checks, its implementations per target, its interpreter body.

An :class:`Op` is itself the Triton builtin a kernel calls (``mp.rotate_left(x, 8)``). A call binds the
arguments to the declared signature, checks each against its spec (:mod:`tritonx.dsl.params`), then
runs one implementation:

* ``@op.emit(target)``: builds TTIR while the kernel is traced (:class:`~tritonx.dsl.trace.TraceContext`);
* ``@op.lower(target)``: traced as a placeholder, built with Gluon's TTGIR builder right after
  ``convert-triton-to-tritongpu`` (:class:`~tritonx.dsl.lowering.LowerContext`);
* ``op.native(target, "custom_op")``: traced as a placeholder, becomes a native plugin's dialect op at the
  start of TTIR (:mod:`tritonx.dsl.lowering`);
* ``@op.interpret``: the op's meaning under ``TRITON_INTERPRET=1``.

Implementations are keyed by target pattern (``"cuda"``, ``"hip:gfx942"``, ``"*"``); the most specific
match wins. A target without one is a :class:`~tritonx.errors.DslError` naming op and target.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from ..compat import dsl as compat
from ..errors import DslError, DslNotImplementedError, DslSignatureError
from . import interpret as interp
from . import placeholder
from .lowering import HANDLE_NAMES, STAGE_KEY, STATIC_ARGS, TENSOR_NAMES, TYPES
from .params import ANY, ArgSpec, describe_value, shape_of
from .protocols import LanguageView
from .targets import KernelTarget, best_match, check_pattern
from .trace import TraceContext

F = TypeVar("F", bound=Callable[..., Any])

#: How an op is implemented for a target: emitted while tracing, lowered in TTGIR, or a native op.
KINDS = ("emit", "lower", "native")


class Result:
    """The result type of an op lowered later (``lower``/``native``): computed from the checked arguments.

    ``like("x")`` has the type of argument ``x``; ``like("x", dtype=tl.float32)`` its shape with another
    element type. Ops implemented by ``emit`` only may leave it out (the emitted value is the result).
    """

    def __init__(self, rule: Callable[[dict[str, Any]], Any], text: str) -> None:
        self.rule = rule
        self.text = text

    def __call__(self, args: dict[str, Any]) -> Any:
        return self.rule(args)

    def __repr__(self) -> str:
        return self.text


def like(name: str, dtype: Any = None) -> Result:
    """The result has the type of argument ``name`` (with element type ``dtype`` when given)."""

    def rule(args: dict[str, Any]) -> Any:
        ty = args[name].type
        if dtype is None:
            return ty
        from triton.language import core as tl

        want = tl.dtype(dtype) if isinstance(dtype, str) else dtype
        return ty.with_element_ty(want) if ty.is_block() else want

    return Result(rule, f"like({name!r}" + (f", dtype={dtype}" if dtype is not None else "") + ")")


class Op:
    """A kernel-callable op of a :class:`~tritonx.dsl.Language` (create it with ``@language.op``)."""

    def __init__(self, language: LanguageView, stub: Callable[..., Any], *, name: str | None = None,
                 result: Result | Callable[[dict[str, Any]], Any] | None = None,
                 check: Callable[[dict[str, Any]], str | None] | None = None, variadic: bool = False) -> None:
        self.language = language
        self.stub = stub
        self.name = name or stub.__name__
        self.full_name = f"{language.name}.{self.name}"
        self.result = result
        self.check = check
        self.variadic = variadic
        sig = inspect.signature(stub)
        self.specs, annotations = self._specs(stub, [p for p in sig.parameters if p != "_semantic"])
        #: the op's own signature (what a kernel writes), annotations evaluated (they are the checks)
        self.op_signature = sig.replace(parameters=[
            p.replace(annotation=annotations.get(p.name, p.empty)) for p in sig.parameters.values()
            if p.name != "_semantic"], return_annotation=sig.empty)
        #: what Triton's code generator reads to decide that it passes ``_semantic=`` (as for its builtins)
        params = list(self.op_signature.parameters.values())
        at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter("_semantic", inspect.Parameter.KEYWORD_ONLY, default=None))
        self.signature = self.op_signature.replace(parameters=params)
        self.__signature__ = self.signature  # what inspect.signature (Triton 3.6's code generator) reads
        self._impls: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        self._interpret: tuple[Callable[..., Any], bool] | None = None
        self.__doc__ = stub.__doc__
        self.__name__ = self.name
        self.__qualname__ = self.name
        self.__module__ = getattr(stub, "__module__", __name__)
        self.__wrapped__ = stub
        # What makes the code generator call it with ``_semantic=``.
        compat.mark_builtin(self)
        interp.track_launches()

    def error(self, message: str, *, cls: type[DslError] = DslError, **parts: Any) -> DslError:
        """A :class:`DslError` (or ``cls``) whose message starts with the op's full name."""
        return cls(f"{self.full_name}: {message}", op=self.full_name, **parts)

    def _specs(self, stub: Callable[..., Any], names: list[str]) -> tuple[dict[str, ArgSpec], dict[str, Any]]:
        try:
            annotations = inspect.get_annotations(stub, eval_str=True)
        except Exception as exc:
            raise self.error(f"its annotations could not be evaluated: {exc}") from exc
        specs: dict[str, ArgSpec] = {}
        for pname in names:
            spec = annotations.get(pname, ANY)
            if isinstance(spec, type) and issubclass(spec, ArgSpec):
                spec = spec()
            if not isinstance(spec, ArgSpec):
                spec = ANY  # a plain type hint documents, it does not check
            specs[pname] = spec
        return specs, annotations

    # -- registering implementations -----------------------------------------------------------------

    def emit(self, target: str = "*") -> Callable[[F], F]:
        """Register ``fn(ctx: TraceContext, **arguments)`` building TTIR for ``target`` while tracing."""
        return self._register("emit", target)

    def lower(self, target: str = "*") -> Callable[[F], F]:
        """Register ``fn(ctx: LowerContext, **arguments)`` building TTGIR for ``target`` after the conversion.

        Tensor arguments arrive as converted ``ir.value``s, the others as their static values; it returns the
        result's ``ir.value`` (of ``ctx.result_type``) or None for an op without result.
        """
        return self._register("lower", target)

    def native(self, target: str, custom_op: str) -> Op:
        """Implement the op on ``target`` by the native custom op ``custom_op`` (a plugin library's ABI op).

        The library's callback receives ``[*tensor_arguments, stand_in]``: it builds its dialect op from the
        leading operands, writes it into ``operands[0]`` and replaces the uses of ``stand_in`` with it
        (the op must take tensor arguments only: a custom op receives values, not Python constants).
        """
        if not isinstance(custom_op, str) or not custom_op.strip():
            raise self.error(f"native() needs the custom op's name, got {custom_op!r}")
        self._impls["native"][check_pattern(target, self.full_name)] = custom_op.strip()
        self.language.changed()
        return self

    def interpret(self, fn: F | None = None, *, raw: bool = False) -> Any:
        """Register the CPU body (``TRITON_INTERPRET=1``): ``fn(ctx: InterpretContext, **arguments)``.

        Tensors arrive as numpy arrays and a numpy result becomes a tensor; ``raw=True`` passes the
        interpreter's values through both ways.
        """

        def decorate(f: F) -> F:
            if not callable(f):
                raise self.error(f"interpret() takes a callable, got {type(f).__name__}")
            self._interpret = (f, raw)
            self.language.changed()
            return f

        return decorate(fn) if fn is not None else decorate

    def _register(self, kind: str, target: str) -> Callable[[F], F]:
        pattern = check_pattern(target, self.full_name)

        def decorate(fn: F) -> F:
            if not callable(fn):
                raise self.error(f"{kind}() decorates a callable, got {type(fn).__name__}")
            self._impls[kind][pattern] = fn
            self.language.changed()
            return fn

        return decorate

    # -- what serves a target ---------------------------------------------------------------------------

    def kind_for(self, target: KernelTarget) -> tuple[str, Any] | None:
        """``(kind, implementation)`` serving ``target``: the most specific pattern over all kinds."""
        best: tuple[int, str, Any] | None = None
        for kind in KINDS:
            found = best_match(self._impls[kind], target)
            if found is None:
                continue
            from .targets import specificity

            rank = specificity(found[0], target)
            if best is None or rank > best[0]:
                best = (rank, kind, found[1])
        return None if best is None else (best[1], best[2])

    def implementation(self, kind: str, target: KernelTarget, where: str = "") -> Any:
        """The ``kind`` implementation for ``target``, or a :class:`DslError` naming op and target."""
        found = best_match(self._impls[kind], target)
        if found is None:
            where = f" ({where})" if where else ""
            raise self.error(f"has no {kind} implementation for target {target.name}{where}", target=target.name,
                             cls=DslNotImplementedError)
        return found[1]

    def registered(self, kind: str, target: str = "*") -> Any | None:
        """The ``kind`` implementation registered for exactly the pattern ``target`` (or None)."""
        if kind == "interpret":
            return None if self._interpret is None else self._interpret[0]
        return self._impls[kind].get(target)

    def implementations(self) -> dict[str, list[str]]:
        """``{kind: [target patterns]}`` registered so far (plus ``interpret`` when it has a CPU body)."""
        out = {kind: sorted(v) for kind, v in self._impls.items() if v}
        if self._interpret is not None:
            out["interpret"] = ["cpu"]
        return out

    def implementation_functions(self) -> list[Callable[..., Any]]:
        """Every Python function behind the op (stub, checks, implementations): what its cache key reads."""
        fns = [self.stub]
        for impls in self._impls.values():
            fns += [f for f in impls.values() if callable(f)]
        if self._interpret is not None:
            fns.append(self._interpret[0])
        for extra in (self.check, getattr(self.result, "rule", self.result)):
            if callable(extra):
                fns.append(extra)
        return fns

    # -- calling ------------------------------------------------------------------------------------------

    def __call__(self, *args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
        semantic = _semantic
        if semantic is None:
            if not (compat.interpreting() and interp.launch_running()):
                raise DslError(f"{self.full_name} can only be called inside a @triton.jit kernel", op=self.full_name)
            semantic = compat.interpreter_semantic()
        if compat.is_interpreter_semantic(semantic):
            return self._run_interpreted(semantic, args, kwargs)
        return self._trace(semantic, args, kwargs)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any], semantic: Any) -> dict[str, Any]:
        """Bind a call to the signature and check every argument; returns ``{name: converted value}``."""
        if self.variadic:
            return {"args": args, "kwargs": kwargs}
        try:
            bound = self.op_signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise DslSignatureError(f"{self.full_name}{self.op_signature}: {exc}", op=self.full_name) from None
        bound.apply_defaults()
        out: dict[str, Any] = {}
        for pname, value in bound.arguments.items():
            out[pname] = self.specs[pname].convert(self.full_name, pname, value, semantic, out)
        if self.check is not None:
            problem = self.check(out)
            if problem:
                raise self.error(str(problem))
        return out

    def _call_impl(self, fn: Callable[..., Any], ctx: Any, args: dict[str, Any]) -> Any:
        if self.variadic:
            return fn(ctx, *args["args"], **args["kwargs"])
        return fn(ctx, **args)

    def _run_interpreted(self, semantic: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            bound = self.bind(args, kwargs, semantic)
            if self._interpret is None:
                raise self.error("has no interpreter implementation (TRITON_INTERPRET=1); register one with "
                                 "@op.interpret", cls=DslNotImplementedError)
            fn, raw = self._interpret
            ctx = interp.InterpretContext(self.full_name, semantic)
            if raw:
                return self._call_impl(fn, ctx, bound)
            plain = {k: interp.to_numpy(v) for k, v in bound.items()}
            result = self._call_impl(fn, ctx, plain)
            return interp.from_numpy(result, self._result_dtype(bound))
        except DslError as exc:
            line = interp.kernel_line()
            if line and line not in str(exc):
                exc.args = (f"{exc.args[0]} (at {line})", *exc.args[1:])
            raise

    def _result_dtype(self, bound: dict[str, Any]) -> Any:
        if self.result is None:
            return None
        ty = self.result(bound)
        if ty is None:
            return None
        return ty.element_ty if ty.is_block() else ty

    def _trace(self, semantic: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        target = KernelTarget.from_semantic(semantic)
        bound = self.bind(args, kwargs, semantic)
        chosen = self.kind_for(target)
        if chosen is None:
            raise self.error(f"has no implementation for target {target.name} (it has {self._describe_impls()})",
                             target=target.name, cls=DslNotImplementedError)
        self.language.require_active(self.full_name, target)
        kind, impl = chosen
        if kind == "emit":
            ctx = TraceContext(self.full_name, semantic, target, self.language.name)
            return self._call_impl(impl, ctx, bound)
        return self._emit_placeholder(semantic, target, kind, bound)

    def _describe_impls(self) -> str:
        parts = [f"{kind} for {', '.join(sorted(v))}" for kind, v in self._impls.items() if v]
        return "; ".join(parts) or "no implementation at all"

    def _emit_placeholder(self, semantic: Any, target: KernelTarget, kind: str, bound: dict[str, Any]) -> Any:
        from triton.language import core as tl

        if self.variadic:
            raise self.error("a variadic op can only be implemented with emit()")
        handles, tensors, static = [], [], {}
        for pname, value in bound.items():
            if isinstance(value, tl.tensor):
                (tensors if value.type.is_block() else handles).append((pname, value))
            else:
                static[pname] = value
        if kind == "native" and static:
            name = next(iter(static))
            raise self.error(f"argument '{name}' ({describe_value(static[name])}) cannot reach a native custom op, "
                             "which receives tensor values only", argument=name)
        result_ty = None
        if self.result is not None:
            result_ty = self.result(bound)
        attrs = {STAGE_KEY: kind, HANDLE_NAMES: [n for n, _ in handles], TENSOR_NAMES: [n for n, _ in tensors],
                 STATIC_ARGS: static, TYPES: {n: [str(v.dtype), shape_of(v)] for n, v in handles + tensors}}
        shapes = {tuple(int(tl._unwrap_if_constexpr(s)) for s in v.shape) for _, v in tensors}
        if result_ty is not None and result_ty.is_block():
            shapes.add(tuple(int(tl._unwrap_if_constexpr(s)) for s in result_ty.shape))
        if len(shapes) > 1:
            raise self.error(f"an op lowered after tracing ({kind}) takes tensor arguments and a result of one "
                             f"shape, got {sorted(shapes)} [target {target.name}]", target=target.name)
        try:
            value = placeholder.emit(semantic, self.language.name, self.name, attrs, [v.handle for _, v in handles],
                                     [v for _, v in tensors], result_ty)
        except TypeError as exc:
            bad = next((n for n, v in static.items() if not _jsonable(v)), "?")
            raise self.error(f"argument '{bad}' ({describe_value(static.get(bad))}) cannot be carried to the {kind} "
                             f"implementation: {exc}", argument=bad) from None
        if result_ty is None:
            return None
        return tl.tensor(value, result_ty)

    def __repr__(self) -> str:
        return f"<tritonx.dsl op {self.full_name}{self.op_signature}>"

    def __get__(self, instance: Any, owner: Any = None) -> Any:  # behave like a plain function in classes
        return self if instance is None else functools.partial(self, instance)


def _jsonable(value: Any) -> bool:
    import json

    try:
        json.dumps(value, default=placeholder._json_default)
        return True
    except TypeError:
        return False
