"""What an op's arguments must be: the specs written as annotations of its signature, and their checks.

Why annotations: the signature a kernel author reads (``help(mp.rotate_left)``) is the one that is
checked, so the two cannot drift. Each spec checks one argument while the kernel is traced (or
interpreted) and converts it to what implementations receive:

* :class:`Tensor`: a ``tl.tensor`` (a Python number becomes a scalar tensor), optionally restricted to
  dtypes, a rank, or the shape/dtype of another argument;
* :class:`Constexpr`: a compile-time Python value (``tl.constexpr`` unwrapped), optionally of a type,
  one of ``choices`` or passing ``check``;
* no annotation (or :data:`ANY`): passed through untouched, for ops that check their own arguments.

A failed check raises :class:`~tritonx.errors.DslError` naming the op, the argument and what was
expected; while tracing, Triton adds the kernel's source line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import DslError

_CONSTEXPR_HINT = "declare the kernel parameter as tl.constexpr (or pass a literal)"


def _tl() -> Any:
    from triton.language import core

    return core


def unwrap(value: Any) -> Any:
    """A ``tl.constexpr``'s value (tuples element-wise); anything else unchanged."""
    core = _tl()
    value = core._unwrap_if_constexpr(value)
    if isinstance(value, tuple | list):
        return type(value)(unwrap(v) for v in value)
    if isinstance(value, core.tuple):
        return tuple(unwrap(v) for v in value.values)
    return value


def describe_value(value: Any) -> str:
    """How an argument reads in an error message (a runtime tensor has no useful repr)."""
    core = _tl()
    value = core._unwrap_if_constexpr(value)
    if isinstance(value, core.tensor):
        if value.type.is_block():
            return f"a {value.dtype} tensor of shape {shape_of(value)}"
        return f"a runtime {value.dtype} scalar"
    return repr(value)


def shape_of(t: Any) -> list[int]:
    """``t.shape`` as plain ints ([] for a scalar)."""
    if not t.type.is_block():
        return []
    return [int(unwrap(s)) for s in t.shape]


def dtype_name(dtype: Any) -> str:
    return str(dtype)


class ArgSpec:
    """Base of the argument specs. ``convert`` checks one argument and returns what implementations get."""

    def convert(self, where: str, name: str, value: Any, semantic: Any, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.describe()

    @staticmethod
    def fail(where: str, name: str, problem: str, hint: str | None = None) -> DslError:
        text = f"{where}: argument '{name}' {problem}"
        if hint:
            text += f"; {hint}"
        return DslError(text, op=where, argument=name)


@dataclass(frozen=True, repr=False)
class _Any(ArgSpec):
    def convert(self, where: str, name: str, value: Any, semantic: Any, args: Mapping[str, Any]) -> Any:
        return value

    def describe(self) -> str:
        return "any"


#: Pass the argument through unchecked (the same as no annotation).
ANY = _Any()


def _dtype_matches(dtype: Any, wanted: str | Any) -> bool:
    if isinstance(wanted, str):
        if wanted == "int":
            return dtype.is_int()
        if wanted == "float":
            return dtype.is_floating()
        return str(dtype) == wanted or dtype == _tl().dtype(wanted)
    return dtype == wanted


@dataclass(frozen=True, repr=False)
class Tensor(ArgSpec):
    """A tensor argument (a ``tl.tensor``; a Python number becomes a scalar tensor).

    Attributes:
        dtypes: allowed element types: ``tl`` dtypes or their names (``"fp32"``, ``"int32"``), or the
            classes ``"int"`` and ``"float"``; empty means any.
        rank: required rank (0: a scalar; ``None``: any).
        same_shape_as / same_dtype_as: the name of another (earlier) tensor argument to match.
    """

    dtypes: tuple[Any, ...] = ()
    rank: int | None = None
    same_shape_as: str | None = None
    same_dtype_as: str | None = None

    def __init__(self, dtypes: Iterable[Any] | str | None = None, *, rank: int | None = None,
                 same_shape_as: str | None = None, same_dtype_as: str | None = None) -> None:
        if isinstance(dtypes, str) or not isinstance(dtypes, Iterable):
            dtypes = () if dtypes is None else (dtypes,)
        object.__setattr__(self, "dtypes", tuple(dtypes))
        object.__setattr__(self, "rank", rank)
        object.__setattr__(self, "same_shape_as", same_shape_as)
        object.__setattr__(self, "same_dtype_as", same_dtype_as)

    def convert(self, where: str, name: str, value: Any, semantic: Any, args: Mapping[str, Any]) -> Any:
        core = _tl()
        raw = core._unwrap_if_constexpr(value)
        if isinstance(raw, bool | int | float) and semantic is not None:
            raw = semantic.to_tensor(raw)
        if not isinstance(raw, core.tensor):
            raise self.fail(where, name, f"must be a tensor, got {describe_value(value)}")
        if self.dtypes and not any(_dtype_matches(raw.dtype, d) for d in self.dtypes):
            allowed = ", ".join(str(d) for d in self.dtypes)
            raise self.fail(where, name, f"must have dtype {allowed}, got {describe_value(raw)}")
        shape = shape_of(raw)
        if self.rank is not None and len(shape) != self.rank:
            what = "a scalar" if self.rank == 0 else f"a tensor of rank {self.rank}"
            raise self.fail(where, name, f"must be {what}, got {describe_value(raw)}")
        for other, what in ((self.same_shape_as, "shape"), (self.same_dtype_as, "dtype")):
            if other is None:
                continue
            ref = args.get(other)
            if not isinstance(ref, core.tensor):
                continue
            mine, theirs = (shape, shape_of(ref)) if what == "shape" else (raw.dtype, ref.dtype)
            if mine != theirs:
                raise self.fail(where, name, f"must have the {what} of '{other}' ({theirs}), got {mine}")
        return raw

    def describe(self) -> str:
        parts = []
        if self.dtypes:
            parts.append("|".join(str(d) for d in self.dtypes))
        if self.rank is not None:
            parts.append(f"rank {self.rank}")
        if self.same_shape_as:
            parts.append(f"shape of {self.same_shape_as}")
        if self.same_dtype_as:
            parts.append(f"dtype of {self.same_dtype_as}")
        return f"Tensor({', '.join(parts)})"


@dataclass(frozen=True, repr=False)
class Constexpr(ArgSpec):
    """A compile-time argument: a literal, a ``tl.constexpr`` kernel parameter or a Python value.

    Attributes:
        type: required Python type (``int`` refuses ``bool``); ``None``: any.
        choices: allowed values.
        check: ``check(value)`` returning True/None when fine, or False/an error text when not.
        expect: how the allowed values read in an error (``"0 <= n < 32"``).
    """

    type: type | tuple[type, ...] | None = None
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], Any] | None = field(default=None, compare=False)
    expect: str | None = None

    def convert(self, where: str, name: str, value: Any, semantic: Any, args: Mapping[str, Any]) -> Any:
        core = _tl()
        raw = unwrap(value)
        if isinstance(raw, core.tensor):
            raise self.fail(where, name, f"must be a compile-time value, got {describe_value(raw)}", _CONSTEXPR_HINT)
        if self.type is not None:
            wanted = self.type if isinstance(self.type, tuple) else (self.type,)
            bad_bool = isinstance(raw, bool) and bool not in wanted
            if bad_bool or not isinstance(raw, wanted):
                names = " or ".join(t.__name__ for t in wanted)
                raise self.fail(where, name, f"must be a compile-time {names}, got {raw!r}", self._hint())
        if self.choices is not None and raw not in self.choices:
            raise self.fail(where, name, f"must be one of {list(self.choices)}, got {raw!r}")
        if self.check is not None:
            verdict = self.check(raw)
            if verdict is False or isinstance(verdict, str):
                problem = verdict if isinstance(verdict, str) else f"must satisfy {self.expect or 'its check'}"
                raise self.fail(where, name, f"{problem}, got {raw!r}")
        return raw

    def _hint(self) -> str | None:
        return f"expected {self.expect}" if self.expect else None

    def describe(self) -> str:
        parts = []
        if self.type is not None:
            wanted = self.type if isinstance(self.type, tuple) else (self.type,)
            parts.append("|".join(t.__name__ for t in wanted))
        if self.choices is not None:
            parts.append(f"one of {list(self.choices)}")
        if self.expect:
            parts.append(self.expect)
        return f"Constexpr({', '.join(parts)})"
