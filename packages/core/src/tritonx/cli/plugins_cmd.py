"""``tritonx plugins``: what is installed, what is enabled, and what each plugin contributes."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from ._common import JsonFlag, command, emit_json
from .output import Grid, console, print_grid
from .pipes import planned_exit


def native_verdict(path: str) -> dict[str, Any]:
    """Run the native safety checks on one library; never raises (a refusal is data here)."""
    from ..native.check import diagnose_native

    diagnosis = diagnose_native(path)
    failed = next((c for c in diagnosis.checks if not c.ok), None)
    return {
        "path": diagnosis.path,
        "ok": diagnosis.ok,
        "failed_check": failed.name if failed else None,
        "detail": failed.detail if failed else "all checks passed",
        "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in diagnosis.checks],
    }


def describe_plugin(plugin: Any, *, check_natives: bool = True) -> dict[str, Any]:
    """A plugin as plain data: identity, state, its pipelines' edits and its native libraries' verdicts."""
    from ..runtime import current

    return {
        "name": plugin.name,
        "version": plugin.version,
        "distribution": plugin.distribution or "(registered in code)",
        "description": plugin.description,
        "enabled": current().plugins.is_enabled(plugin.name),
        "default_enabled": plugin.default_enabled,
        "pipelines": [
            {"name": p.name, "edits": [e.describe() for e in p.edits]} for p in plugin.pipelines
        ],
        "native_libraries": [
            native_verdict(path) if check_natives else {"path": path} for path in plugin.native_libraries
        ],
    }


def _contributions(info: dict[str, Any]) -> str:
    lines = []
    for p in info["pipelines"]:
        lines.append(f"[bold]pipeline {escape(p['name'])}[/bold]")
        lines.extend(f"  {escape(edit)}" for edit in p["edits"] or ["(no edits)"])
    for lib in info["native_libraries"]:
        verdict = ("[green]ok[/green]" if lib["ok"] else
                   f"[red]refused ({lib['failed_check']})[/red]: {escape(lib['detail'])}")
        lines.append(f"[bold]native[/bold] {escape(lib['path'])}: {verdict}")
    return "\n".join(lines) or "(nothing)"


def broken_entries() -> dict[str, str]:
    """Installed plugins whose entry point failed to load: name -> the reason (names the distribution)."""
    from ..runtime import current

    return {name: str(err) for name, err in sorted(current().plugins.broken().items())}


def register(app: typer.Typer) -> None:
    @command(app, "plugins")
    def plugins(
        as_json: JsonFlag = False,
    ) -> None:
        """List installed plugins: status, version, distribution, enabled or not, what each contributes.

        Exits 1 when an installed plugin is broken (its entry point failed to load); the reason is shown.
        """
        from ..runtime import current

        broken = broken_entries()
        infos = [describe_plugin(p) for p in current().plugins.list()]
        planned_exit(1 if broken else 0)
        if as_json:
            emit_json({"plugins": [{**i, "status": "ok"} for i in infos], "broken": broken})
        elif not infos and not broken:
            console().print("No tritonx plugins installed (entry-point group 'tritonx.plugins').")
        else:
            table = Grid(["plugin", "status", "version", "distribution", "enabled", "contributes"],
                         title="tritonx plugins", show_lines=True, fold=("contributes",))
            for name, reason in broken.items():
                table.add_row(escape(name), "[red]broken[/red]", "", "", "no", f"[red]{escape(reason)}[/red]")
            for info in infos:
                about = f"[dim]{escape(info['description'])}[/dim]\n" if info["description"] else ""
                enabled = "[green]yes[/green]" if info["enabled"] else "no"
                table.add_row(escape(info["name"]), "[green]ok[/green]", info["version"],
                              escape(info["distribution"]), enabled, about + _contributions(info))
            print_grid(table)
        if broken:
            typer.echo(f"tritonx plugins: error: broken plugin(s): {', '.join(broken)} (the reason is listed)",
                       err=True)
            raise typer.Exit(1)
