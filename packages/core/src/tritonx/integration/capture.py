"""``tritonx.capture``: compile once on the CPU and return every stage's passes as data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import triton

from .. import compat
from ..model.passes import Capture
from ..model.target import Target
from ..seams import core as seams_core
from .options import check_compile_options

if TYPE_CHECKING:
    from .hook import HookSlot


def compile_for(target: str | Target, kernel: Any = None, signature: dict[str, str] | None = None,
                constexprs: dict[str, Any] | None = None, options: dict[str, Any] | None = None,
                attrs: dict[Any, Any] | None = None) -> Any:
    """``triton.compile`` of ``kernel`` (default: a small pipelined matmul) for ``target``, on the CPU.

    ``attrs`` are Triton's argument attributes; ``divisible(n)`` marks the first n arguments as
    16-divisible (what a launch with aligned tensors would specialize on). ``options`` are checked by
    :func:`~tritonx.integration.options.check_compile_options` (raises ``CompileOptionError``).
    """
    from .probe_kernels import PROBE_CONSTEXPRS, PROBE_SIGNATURE, probe_matmul

    tgt = Target.parse(target)
    check_compile_options(tgt, options)  # the CLI's -o check too: unknown names and bad values, by name
    if kernel is None:
        kernel, signature, constexprs = probe_matmul, PROBE_SIGNATURE, PROBE_CONSTEXPRS
        attrs = divisible(len(PROBE_SIGNATURE))
    if signature is None:
        raise ValueError("compile_for(kernel=...) needs signature= (e.g. {'x_ptr': '*fp32', 'n': 'i32'})")
    constexprs = with_defaults(kernel, signature, constexprs or {})
    src = compat.source_class(kernel)(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=tgt.to_triton(), options=options)


def with_defaults(kernel: Any, signature: dict[str, str], constexprs: dict[str, Any]) -> dict[str, Any]:
    """``constexprs`` plus the default of every parameter that neither names: a launch binds defaults
    (``def k(x, BLOCK: tl.constexpr = 64)``), an ``ASTSource`` does not, and fails on the missing one with an
    error that names nothing (``'NoneType' object has no attribute '_unflatten_ir'``). A parameter with no
    default that neither names is refused here, by name."""
    import inspect

    fn = getattr(kernel, "fn", None)
    if fn is None:
        return dict(constexprs)
    out = dict(constexprs)
    missing = []
    for name, param in inspect.signature(fn).parameters.items():
        if name in signature or name in out:
            continue
        if param.default is param.empty:
            missing.append(name)
        else:
            out[name] = param.default
    if missing:
        raise ValueError(f"compile_for({getattr(fn, '__name__', kernel)}): no signature entry or constexpr value for "
                         f"{', '.join(missing)} (and no default)")
    return out


def divisible(n: int, by: int = 16) -> dict[Any, Any]:
    """Argument attributes marking the first ``n`` arguments divisible by ``by`` (pointers aligned)."""
    return {(i,): [["tt.divisibility", by]] for i in range(n)}


def capture(target: str | Target = "cuda:90", kernel: Any = None, signature: dict[str, str] | None = None,
            constexprs: dict[str, Any] | None = None, options: dict[str, Any] | None = None, *,
            slot: HookSlot) -> Capture:
    """Every stage's pass list for ``target`` (stock, or with the active pipelines' edits marked).

    Compiles ``kernel`` (default: a small pipelined matmul) into a scratch cache of this thread's own
    (:func:`tritonx.compat.private_cache`), so the stages really run and no process-wide knob changes:
    other threads keep their cache hits, and the process's caches get nothing from a capture. Pass lists
    depend on the target, the options and sometimes the kernel. ``slot`` is the hook slot of the runtime
    whose pipelines apply (``tritonx.capture`` passes the current one's).
    """
    tgt = Target.parse(target)
    seams_core.install_private_cache()
    with slot.capturing() as sink, compat.private_cache():
        compile_for(tgt, kernel, signature, constexprs, options)
    return Capture(target=str(tgt), triton_version=compat.TRITON_VERSION_STR, stages=sink.stages,
                   stage_order=list(sink.order))
