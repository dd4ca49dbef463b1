"""The ``tritonx`` command line: inspect pipelines and plugins, compile kernels on the CPU, diagnose.

Each command lives in its own module with a ``register(app)`` function; this module only assembles
them. ``tritonx new`` comes from :mod:`tritonx.cli.new` and is imported guarded: scaffolding needs
cookiecutter and a template, and a problem there must not take the inspection commands down with it.
"""

from __future__ import annotations

import typer

from ..settings import SettingsError
from . import compile_cmd, doctor_cmd, native_cmd, pipeline_cmd, pipes, plugins_cmd
from ._common import DEBUG_ENV, fail, set_debug

app = typer.Typer(
    name="tritonx",
    help="Extend the official Triton wheel at run time: inspect pipelines and plugins, compile, diagnose.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

for _module in (plugins_cmd, pipeline_cmd, compile_cmd, doctor_cmd, native_cmd):
    _module.register(app)

#: Why ``tritonx new`` is missing, when it is (shown by ``tritonx new`` itself).
NEW_UNAVAILABLE: str | None = None

try:
    from . import new as _new

    _new.register(app)
except Exception as _exc:  # any failure there must leave the other commands usable
    NEW_UNAVAILABLE = f"{type(_exc).__name__}: {_exc}"

    @app.command("new", help="Scaffold a plugin package (unavailable in this install).",
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def new_unavailable() -> None:
        typer.echo(f"tritonx new: error: scaffolding is unavailable: {NEW_UNAVAILABLE}", err=True)
        raise typer.Exit(1)


def _print_version(value: bool) -> None:
    if value:
        import tritonx

        from ..compat import TRITON_VERSION_STR

        typer.echo(f"tritonx {tritonx.__version__} (Triton {TRITON_VERSION_STR})")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print tritonx and Triton versions and exit."),
    debug: bool = typer.Option(False, "--debug",
                               help=f"Show tracebacks and the compiler's raw output on errors (also {DEBUG_ENV}=1)."),
) -> None:
    """tritonx: pass-level pipeline edits and plugins for the official Triton wheel."""
    try:
        set_debug(debug)
    except SettingsError as exc:  # a bad TRITONX_DEBUG is the user's to fix: one line, never a traceback
        fail("", str(exc))


def main() -> None:
    """Console-script entry point (``tritonx = "tritonx.cli.app:main"``); a closed stdout pipe is no failure."""
    pipes.run(app)


if __name__ == "__main__":
    main()
