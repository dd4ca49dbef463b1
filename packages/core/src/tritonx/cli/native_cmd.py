"""``tritonx check-native PATH``: the native plugin safety checks alone, one verdict per check."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ._common import JsonFlag, command, emit_json
from .output import Grid, console, print_grid


def register(app: typer.Typer) -> None:
    @command(app, "check-native")
    def check_native(
        path: Annotated[Path, typer.Argument(help="The native plugin library (.so).")],
        as_json: JsonFlag = False,
    ) -> None:
        """Run every safety check on a native plugin library without loading it here; exit 1 if refused."""
        from ..native.check import CHECKS, diagnose_native

        diagnosis = diagnose_native(path)
        ran = {c.name for c in diagnosis.checks}
        info = diagnosis.info
        if as_json:
            emit_json({
                "path": diagnosis.path,
                "ok": diagnosis.ok,
                "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in diagnosis.checks],
                "not_run": [c for c in CHECKS if c not in ran],
                "error": str(diagnosis.error) if diagnosis.error else None,
                "plugin": info.to_dict() if info else None,
            })
        else:
            table = Grid(["check", "verdict", "detail"], title=f"native plugin checks: {diagnosis.path}",
                         fold=("detail",))
            for c in diagnosis.checks:
                table.add_row(c.name, "[green]ok[/green]" if c.ok else "[red]FAILED[/red]", escape(c.detail))
            for name in CHECKS:
                if name not in ran:
                    table.add_row(name, "[dim]not run[/dim]", "")
            print_grid(table)
            if info is not None:
                passes = ", ".join(info.pass_names) or "none"
                console().print(f"plugin {info.plugin_name} {info.plugin_version} (Triton {info.triton_version}); "
                              f"passes: {passes}; dialects: {len(info.dialects)}; ops: {len(info.ops)}")
        if diagnosis.error is not None:
            typer.echo(f"tritonx check-native: refused: {diagnosis.error}", err=True)
            raise typer.Exit(1)
