"""What every ``tritonx`` command shares: output (rich or JSON), user-error reporting, input parsing.

Why one module: every command promises the same contract (``--json`` for scripts, one clear line and
a non-zero exit for bad input, never a traceback for a user's mistake), so the contract lives here
once instead of being re-implemented, slightly differently, in each command.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console

from ..errors import PluginError, TritonxError

F = TypeVar("F", bound=Callable[..., Any])

def console() -> Console:
    """Rich output on the current stdout (made per call: it reads ``COLUMNS`` and a redirected stdout).

    Errors are plain lines on stderr, so ``--json`` stdout stays parseable.
    """
    return Console(highlight=False)


class UserError(TritonxError):
    """Bad input to a command (file, kernel, signature, stage...): reported as one line, exit 1."""


def fail(command: str, message: str, code: int = 1) -> NoReturn:
    """Print ``tritonx COMMAND: error: MESSAGE`` on stderr and exit with ``code``."""
    typer.echo(f"tritonx {command}: error: {message}", err=True)
    raise typer.Exit(code)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text


def user_errors(command: str) -> Callable[[F], F]:
    """Turn tritonx/Triton errors a user can cause into one error line and exit 1.

    tritonx's own errors (unknown plugin, unknown pass with its suggestions, refused native library),
    bad targets (``ValueError``) and Triton's kernel compilation errors are the user's to fix, so
    they never show a traceback. Anything else is a bug in tritonx and keeps its traceback.
    """

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except typer.Exit:
                raise
            except (TritonxError, ValueError, KeyError, FileNotFoundError) as exc:
                fail(command, _one_line(exc) if not isinstance(exc, KeyError) else str(exc.args[0]))
            except Exception as exc:
                if _is_triton_compile_error(exc):
                    fail(command, f"Triton could not compile the kernel: {type(exc).__name__}: {_one_line(exc)}")
                raise

        return run  # type: ignore[return-value]

    return wrap


def _is_triton_compile_error(exc: BaseException) -> bool:
    try:
        from triton.compiler.errors import CompilationError
    except ImportError:  # pragma: no cover - every supported Triton has it
        return False
    return isinstance(exc, CompilationError) or type(exc).__name__ in ("MLIRError", "PTXASError")


def emit_json(data: Any) -> None:
    """Write ``data`` as JSON on stdout (``default=str`` so tuples, paths and enums never break it)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


def split_names(value: str | None) -> list[str]:
    """``"a,b, c"`` -> ``["a", "b", "c"]`` (``--plugins``)."""
    if not value:
        return []
    return [n.strip() for n in value.split(",") if n.strip()]


def parse_signature(text: str) -> dict[str, str]:
    """``'x_ptr=*fp32,n=i32'`` -> ``{"x_ptr": "*fp32", "n": "i32"}``, naming the malformed entry."""
    sig: dict[str, str] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, eq, ty = entry.partition("=")
        if not eq or not name.strip() or not ty.strip():
            raise UserError(f"--signature entry {entry!r} is not NAME=TYPE (e.g. 'x_ptr=*fp32,n=i32')")
        sig[name.strip()] = ty.strip()
    if not sig:
        raise UserError("--signature is empty; give NAME=TYPE pairs such as 'x_ptr=*fp32,n=i32'")
    return sig


def parse_constexprs(items: list[str] | None) -> dict[str, Any]:
    """``["BLOCK=128", "FLAG=True"]`` -> ``{"BLOCK": 128, "FLAG": True}`` (Python literals, else strings)."""
    out: dict[str, Any] = {}
    for item in items or []:
        name, eq, raw = item.partition("=")
        if not eq or not name.strip():
            raise UserError(f"--constexpr {item!r} is not NAME=VALUE (e.g. BLOCK=128)")
        try:
            value: Any = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            value = raw.strip()
        out[name.strip()] = value
    return out


@contextlib.contextmanager
def plugins_enabled(names: list[str]) -> Iterator[list[str]]:
    """Enable the named plugins for the duration of one command, then disable those it enabled.

    Why undo: a command must leave the process as it found it (the tests run commands in-process,
    and a library caller may embed the app); an unknown name raises the registry's own error, which
    lists the known plugins.
    """
    from ..plugins import registry

    known = registry.discover()
    unknown = [n for n in names if n not in known]
    if unknown:  # every name is checked before any plugin is enabled
        raise PluginError(
            f"unknown plugin(s) {', '.join(map(repr, unknown))} (known: {', '.join(sorted(known)) or 'none installed'})"
        )
    newly: list[str] = []
    try:
        for name in names:
            if not registry.is_enabled(name):
                registry.enable_plugins([name])
                newly.append(name)
        yield newly
    finally:
        for name in newly:
            if registry.is_enabled(name):
                registry.disable_plugins([name])
