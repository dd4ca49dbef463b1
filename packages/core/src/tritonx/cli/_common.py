"""What every ``tritonx`` command shares: output (rich or JSON), user-error reporting, input parsing.

Why one module: every command promises the same contract (``--json`` for scripts, one clear line and
a non-zero exit for bad input, never a traceback for a user's mistake), so the contract lives here
once instead of being re-implemented, slightly differently, in each command.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from ..errors import PluginError, TritonxError
from ..settings import TritonxSettings, settings
from .output import console as console

F = TypeVar("F", bound=Callable[..., Any])

DEBUG_ENV = TritonxSettings.debug.var
#: Set by ``tritonx --debug`` (or ``TRITONX_DEBUG=1``): errors keep their traceback, compiler output is not held back.
DEBUG = False


def set_debug(flag: bool) -> None:
    """Called by the root command for every invocation: ``--debug`` or ``TRITONX_DEBUG`` (not ``0``)."""
    global DEBUG
    DEBUG = flag or settings.debug


class UserError(TritonxError):
    """Bad input to a command (file, kernel, signature, stage...): reported as one line, exit 1."""


class CompilerFailure(TritonxError):
    """Triton's compiler failed below Python (an MLIR pass, LLVM, ptxas): the first error line it printed."""


def fail(command: str, message: str, code: int = 1) -> NoReturn:
    """Print ``tritonx COMMAND: error: MESSAGE`` on stderr (``tritonx: error:`` without one) and exit with ``code``."""
    typer.echo(f"tritonx{' ' + command if command else ''}: error: {message}", err=True)
    raise typer.Exit(code)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _compilation_error_line(exc: BaseException) -> str:
    """A Triton ``CompilationError`` (source excerpt + message, many lines) as one line."""
    node = getattr(exc, "node", None)
    where = f" at line {node.lineno}:{node.col_offset} of the kernel" if hasattr(node, "lineno") else ""
    message = getattr(exc, "error_message", None) or (str(exc.__cause__) if exc.__cause__ else "")
    message = " ".join(message.split()) or type(exc).__name__
    # A Python value (str, None, list) flowing into a Triton op fails inside Triton's code generator as
    # AttributeError("'str' object has no attribute 'type'"): say what it means instead.
    stray = re.search(r"'(\w+)' object has no attribute 'type'", message)
    if stray:
        message = f"a Python {stray.group(1)} is used where Triton needs a number or a tensor"
    return f"Triton could not compile the kernel{where}: {message}"


def _ptxas_error_line(exc: BaseException) -> str:
    """Triton's ``PTXASError`` (a heading, ptxas's stderr, a repro command naming temp files) as ptxas's own words."""
    text = str(exc)
    said = text.split("`ptxas` stderr:", 1)[1].split("Repro command:", 1)[0] if "`ptxas` stderr:" in text else text
    return f"ptxas refused the kernel: {' '.join(said.split()) or _one_line(exc)}"


def user_errors(command: str) -> Callable[[F], F]:
    """Every failure of a command becomes one or two lines on stderr and exit 1; ``--debug`` shows tracebacks.

    tritonx's own errors (unknown plugin, unknown pass with its suggestions, refused native library),
    bad targets (``ValueError``) and Triton's kernel compilation errors are the user's to fix and
    say so in one line. Anything else is a bug (in tritonx, Triton or a plugin): it is named as an
    internal error with a pointer to ``tritonx --debug``, which re-raises it with its traceback.
    """

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except (typer.Exit, typer.Abort, KeyboardInterrupt, BrokenPipeError):
                raise  # a closed stdout is the reader's choice, handled once at the entry point (cli.pipes)
            except Exception as exc:
                if DEBUG:
                    raise
                fail(command, describe_error(exc, command))

        return run  # type: ignore[return-value]

    return wrap


def describe_error(exc: BaseException, command: str) -> str:
    """The one or two lines that stand for ``exc`` in a command's error message."""
    if is_triton_compile_error(exc):
        return _compilation_error_line(exc)
    if type(exc).__name__ == "PTXASError":
        return _ptxas_error_line(exc)
    if isinstance(exc, KeyError) and not isinstance(exc, TritonxError):
        return str(exc.args[0]) if exc.args else "KeyError"
    if isinstance(exc, (TritonxError, ValueError, FileNotFoundError)):
        return _one_line(exc)
    return (f"internal error: {type(exc).__name__}: {_one_line(exc)}\n"
            f"(run `tritonx --debug {command} ...` for the traceback)")


def is_triton_compile_error(exc: BaseException) -> bool:
    try:
        from triton.compiler.errors import CompilationError
    except ImportError:  # pragma: no cover - every supported Triton has it
        return False
    return isinstance(exc, CompilationError)


@contextlib.contextmanager
def compiler_output(what: str) -> Iterator[None]:
    """Hold back what Triton's native code writes to file descriptors 1 and 2 while it compiles ``what``,
    and remove the temp files it leaves (:func:`scratch_dir`).

    Why: MLIR prints diagnostics and whole reproducer modules, and ``ptxas`` its banner, straight to
    the process's stdout/stderr, where they would spoil ``--json`` output and bury the one line that
    matters. On success the held output goes to stderr; when the compile fails below Python (a
    ``RuntimeError`` such as ``PassManager::run failed``), :class:`CompilerFailure` carries the first
    ``error:`` line the compiler printed. ``--debug`` leaves the descriptors alone.
    """
    if DEBUG:
        yield
        return
    with scratch_dir(), _held_output(what):
        yield


@contextlib.contextmanager
def _held_output(what: str) -> Iterator[None]:
    """The file-descriptor half of :func:`compiler_output`."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:  # no real descriptors (embedded interpreter): nothing to hold back
        yield
        return
    # Python-level prints (Triton's ptxas failure report) are held too, also where sys.stdout is no fd 1
    py_held = io.StringIO()
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 1)
        os.dup2(held.fileno(), 2)
        failed: BaseException | None = None
        try:
            with contextlib.redirect_stdout(py_held), contextlib.redirect_stderr(py_held):
                yield
        except BaseException as exc:
            failed = exc
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            held.seek(0)
            text = held.read().decode(errors="replace") + py_held.getvalue()
        if failed is None:
            if text:
                sys.stderr.write(text)
                sys.stderr.flush()
            return
        if isinstance(failed, RuntimeError) and not isinstance(failed, TritonxError):
            # "<file>:<line>:<col>: error: <message>": keep the message (the location is the kernel's def)
            first = next((line.split("error:", 1)[1].strip() for line in text.splitlines() if "error:" in line), None)
            detail = f"{first} ({_one_line(failed)})" if first else _one_line(failed)
            raise CompilerFailure(f"Triton could not compile {what}: {detail}") from failed
        raise failed


@contextlib.contextmanager
def scratch_dir() -> Iterator[None]:
    """Point ``tempfile`` at a private folder while Triton compiles, and remove it afterwards.

    Why: Triton's NVIDIA backend writes the PTX and ``ptxas`` log to ``NamedTemporaryFile(delete=False)``
    files and keeps them when ``ptxas`` fails (for the repro command that the CLI's one-line error does not
    show), so every failed compile left a ``.ptx`` in ``/tmp``. ``--debug`` keeps them: its traceback
    prints that repro command.
    """
    if DEBUG:
        yield
        return
    saved = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="tritonx-cli-") as private:
        tempfile.tempdir = private
        try:
            yield
        finally:
            tempfile.tempdir = saved


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


def parse_constexprs(items: list[str] | None, flag: str = "--constexpr", *, bare_words: bool = False) -> dict[str, Any]:
    """``["BLOCK=128", "FLAG=True", "ACT='relu'"]`` -> ``{"BLOCK": 128, "FLAG": True, "ACT": "relu"}``.

    Values are Python literals. ``flag`` names the option in the error (``--constexpr``, or ``-o`` for
    compile options). With ``bare_words`` (``-o ptx_options=-v``) a value that is no literal is kept as
    its text; without (``--constexpr``) it is refused here: ``BLOCK=abc`` used to reach the kernel as the
    string ``'abc'`` and fail inside Triton with ``'str' object has no attribute 'type'``.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        name, eq, raw = item.partition("=")
        if not eq or not name.strip():
            example = "BLOCK=128" if flag == "--constexpr" else "num_warps=8"
            raise UserError(f"{flag} {item!r} is not NAME=VALUE (e.g. {example})")
        try:
            value: Any = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            if not bare_words:
                raise UserError(f"{flag} {item}: {raw.strip()!r} is not a number, True/False/None or a quoted "
                                f"string (for the string write {name.strip()}=\"'{raw.strip()}'\")") from None
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
    from ..runtime import current

    registry = current().plugins
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
                registry.enable([name])
                newly.append(name)
        yield newly
    finally:
        for name in newly:
            if registry.is_enabled(name):
                registry.disable([name])


#: The ``--json`` flag every reporting command takes (one definition, one help text).
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def command(app: typer.Typer, name: str) -> Callable[[F], F]:
    """Register ``fn`` as the ``name`` command of ``app`` with :func:`user_errors` around it (every command's
    failures are reported the same way)."""

    def register(fn: F) -> F:
        app.command(name)(user_errors(name)(fn))
        return fn

    return register
