"""The one validation of compile options, shared by :func:`tritonx.compile_for` and ``tritonx compile -o``.

Why here and not left to Triton: Triton's backends keep only the names of their options dataclass and
silently drop any other (``num_wraps=4`` compiles with 4 warps by default), assert on a bad value with a
bare ``AssertionError: num_warps must be a power of 2``, and accept values that cannot run
(``num_warps=1048576``) or mean nothing (``num_stages=-1``). Names and types come from the target
backend's own options dataclass (its field defaults), so the check never disagrees with the installed
Triton about which options exist; the ranges below are what the hardware and Triton's layouts allow.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import CompileOptionError
from ..model.target import Target

#: Threads one CTA may have on every supported GPU (CUDA and AMD: 1024).
MAX_THREADS_PER_CTA = 1024
#: The largest thread-block cluster (Hopper/Blackwell allow 16 non-portably; Triton's CTA layouts need
#: a power of two).
MAX_NUM_CTAS = 16


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _num_warps(value: Any, limits: dict[str, int]) -> str | None:
    top = limits["max_warps"]
    if not _is_int(value) or not _power_of_two(value) or value > top:
        return f"must be a power of 2 from 1 to {top} ({MAX_THREADS_PER_CTA} threads of {limits['warp_size']})"
    return None


def _num_ctas(value: Any, limits: dict[str, int]) -> str | None:
    if not _is_int(value) or not _power_of_two(value) or value > MAX_NUM_CTAS:
        return f"must be a power of 2 from 1 to {MAX_NUM_CTAS}"
    return None


def _num_stages(value: Any, limits: dict[str, int]) -> str | None:
    # Measured on Triton 3.8: 0 is a setting of its own (cuda:90 PTX differs from 1), any negative value
    # compiles exactly as 0, so a negative one is a mistake.
    if not _is_int(value) or value < 0:
        return "must be an int >= 0 (0 and 1: no software pipelining of loops)"
    return None


def _maxnreg(value: Any, limits: dict[str, int]) -> str | None:
    if not _is_int(value) or not 1 <= value <= 255:
        return "must be an int from 1 to 255 (registers per thread), or None"
    return None


#: Range checks of the options whose type alone says too little.
RANGES: dict[str, Callable[[Any, dict[str, int]], str | None]] = {
    "num_warps": _num_warps,
    "num_ctas": _num_ctas,
    "num_stages": _num_stages,
    "maxnreg": _maxnreg,
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_problem(value: Any, default: Any) -> str | None:
    """The field's default tells its type: a bool option takes a bool (or 0/1), an int one an int, a str one
    a str. Other fields (tuples, dicts, None defaults) are left to Triton."""
    if isinstance(default, bool):
        if isinstance(value, bool) or (_is_int(value) and value in (0, 1)):
            return None
        return "must be a bool (True/False)"
    if _is_int(default):
        return None if _is_int(value) else "must be an int"
    if isinstance(default, float):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return None if number and math.isfinite(value) else "must be a finite number"
    if isinstance(default, str):
        return None if isinstance(value, str) else "must be a str"
    return None


def _backend(target: Target) -> Any:
    from triton.compiler.compiler import make_backend

    return make_backend(target.to_triton())


def _defaults(target: Target) -> Any:
    return _backend(target).parse_options({})


def option_fields(target: Target | str) -> dict[str, Any]:
    """The target backend's compile options and their defaults (its options dataclass), by name."""
    defaults = _defaults(Target.parse(target))
    return {f.name: getattr(defaults, f.name) for f in dataclasses.fields(type(defaults))}


def check_compile_options(target: Target | str, options: Mapping[str, Any] | None) -> None:
    """Refuse unknown option names and out-of-range values for ``target``, naming the option.

    Raises :class:`~tritonx.errors.CompileOptionError` (one line: the option, its value, what is valid);
    a combination Triton's own ``parse_options`` refuses (``num_ctas > 1`` before Hopper) is reported with
    Triton's reason.
    """
    if not options:
        return
    tgt = Target.parse(target)
    if not isinstance(options, Mapping):
        raise CompileOptionError(
            f"compile options for {tgt} must be a dict of NAME: value, got {type(options).__name__}")
    defaults = _defaults(tgt)
    fields = {f.name: getattr(defaults, f.name) for f in dataclasses.fields(type(defaults))}
    known = tuple(sorted(fields))
    unknown = tuple(sorted(str(n) for n in options if n not in fields))
    if unknown:
        raise CompileOptionError(
            f"unknown compile option(s) {', '.join(unknown)} for {tgt}; options: {', '.join(known)}",
            unknown=unknown, known=known)
    warp_size = int(getattr(defaults, "warp_size", None) or tgt.warp_size)  # AMD: 64 on CDNA, 32 on RDNA
    limits = {"warp_size": warp_size, "max_warps": MAX_THREADS_PER_CTA // warp_size}
    for name, value in options.items():
        if value is None:
            continue  # Triton's backends take None as "the default"
        check = RANGES.get(name)
        problem = check(value, limits) if check is not None else _type_problem(value, fields[name])
        if problem is not None:
            raise CompileOptionError(f"compile option {name}={value!r} for {tgt}: {problem}", option=name,
                                     problem=problem, known=known)
    try:
        _backend(tgt).parse_options(dict(options))
    except (AssertionError, ValueError, TypeError) as exc:
        given = ", ".join(f"{k}={v!r}" for k, v in options.items())
        problem = str(exc) or type(exc).__name__
        raise CompileOptionError(f"compile options {given} for {tgt}: {problem}", problem=problem,
                                 known=known) from None
