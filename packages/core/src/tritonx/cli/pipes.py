"""A reader that stops early (``tritonx pipeline | head -1``, ``| grep -q``) is not a failure of the command.

Why at the entry point: the closed pipe surfaces in three places tritonx does not own, each with exit 1
or worse. rich's console redirects stdout to ``/dev/null`` and raises ``SystemExit(1)``; click's main
loop turns an ``EPIPE`` from a command into ``sys.exit(1)``; and output still buffered when the command
returns fails in the interpreter's final flush (``Exception ignored ... BrokenPipeError``, exit 120).
Under ``set -o pipefail`` any of them fails the script although nothing went wrong, so :func:`run`
wraps the whole app once: an exit caused by a closed stdout becomes the command's own status (0, or
the one it decided before printing, see :func:`planned_exit`), and stdout is flushed inside the guard.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

#: The status a command has already decided on (``doctor`` found problems) before it prints its report:
#: kept when the reader leaves halfway, so ``tritonx doctor | grep -q x`` still says whether doctor passed.
_planned_status = 0


def planned_exit(code: int) -> None:
    """Declare the exit status the running command ends with, before it prints (see :data:`_planned_status`)."""
    global _planned_status
    _planned_status = code


def caused_by_closed_pipe(exc: BaseException) -> bool:
    """Was ``exc`` raised while handling a ``BrokenPipeError`` (rich's and click's exits are)?"""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, BrokenPipeError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def discard_stdout() -> None:
    """Point file descriptor 1 at ``/dev/null``: whatever is still buffered is dropped, not an error."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


def run(app: Callable[[], Any]) -> NoReturn:
    """Run the typer ``app`` (which always ends in ``SystemExit``) and exit with its status.

    A closed stdout gives the status the command planned (0 unless it called :func:`planned_exit`).
    """
    planned_exit(0)
    code: Any = 0
    try:
        app()
    except SystemExit as exc:
        if caused_by_closed_pipe(exc):
            discard_stdout()
            sys.exit(_planned_status)
        code = exc.code
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # everything fitted in the buffer, and the reader left before it was written
        discard_stdout()
    sys.exit(code)
