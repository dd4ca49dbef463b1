"""Check ``tritonx compile``'s ``--signature`` types and ``-o`` options before anything compiles.

Why up front: Triton reports a bad argument type as a bare ``KeyError: 'fp99'`` and a bad option as
an ``AssertionError`` deep in its backend, and silently drops an option name it does not know.
Asking Triton's own parsers here (``triton.language.str_to_ty`` for types; for options the check
``compile_for`` runs too, :func:`tritonx.integration.options.check_compile_options`, built on the target
backend's options dataclass) gives one line that names the argument, says what is valid, and never
disagrees with what the installed Triton accepts.
"""

from __future__ import annotations

from typing import Any

from ._common import UserError

#: Written in front of a scalar type to make a pointer (``*fp32``) or a const pointer (``*kfp32``).
POINTER_PREFIXES = ("*", "*k")


def scalar_types() -> list[str]:
    """The canonical scalar type names the installed Triton accepts in a signature (``i32``, ``fp16``...)."""
    from triton._utils import type_canonicalisation_dict

    return sorted({v for v in type_canonicalisation_dict.values() if v != "void"}, key=_type_order)


def _type_order(name: str) -> tuple[int, int, str]:
    kind = 0 if name[0] in "iu" else 1 if name.startswith("fp8") else 2
    digits = "".join(ch for ch in name if ch.isdigit())
    return kind, int(digits) if digits and kind != 1 else 0, name


def check_signature_types(signature: dict[str, str]) -> None:
    """Every ``NAME=TYPE`` of ``--signature`` is a type Triton parses; else one line listing the valid ones."""
    import triton.language as tl

    for name, ty in signature.items():
        try:
            tl.str_to_ty(ty, None)
        except Exception:
            raise UserError(
                f"--signature {name}={ty}: unknown type {ty!r}; scalar types: {', '.join(scalar_types())}; "
                f"'*' before one makes a pointer (*fp32), '*k' a const pointer, or 'constexpr'"
            ) from None


def option_names(target: Any) -> list[str]:
    """The compile options the target's backend knows (its options dataclass's fields), sorted."""
    from ..integration.options import option_fields

    return sorted(option_fields(target))


def check_options(target: Any, options: dict[str, Any]) -> None:
    """Reject ``-o`` names the backend does not know and values out of range, naming the option.

    The check itself is :func:`tritonx.integration.options.check_compile_options`, the one
    ``compile_for`` runs; only the wording (``-o``) is the CLI's.
    """
    from ..errors import CompileOptionError
    from ..integration.options import check_compile_options

    try:
        check_compile_options(target, options)
    except CompileOptionError as exc:
        if exc.unknown:
            raise UserError(
                f"unknown -o option(s) {', '.join(exc.unknown)} for {target}; options: {', '.join(exc.known)}"
            ) from None
        if exc.option is not None:
            raise UserError(f"-o {exc.option}={options[exc.option]!r}: {exc.problem}") from None
        given = ", ".join(f"{k}={v!r}" for k, v in options.items())
        raise UserError(f"-o {given}: {exc.problem}") from None
