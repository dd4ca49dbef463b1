"""``tritonx plugins``: what is installed, what is enabled, and what each plugin contributes."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from ._common import console, emit_json, user_errors


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
    from ..plugins import registry

    return {
        "name": plugin.name,
        "version": plugin.version,
        "distribution": plugin.distribution or "(registered in code)",
        "description": plugin.description,
        "enabled": registry.is_enabled(plugin.name),
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
        lines.append(f"[bold]pipeline {p['name']}[/bold]")
        lines.extend(f"  {edit}" for edit in p["edits"] or ["(no edits)"])
    for lib in info["native_libraries"]:
        verdict = "[green]ok[/green]" if lib["ok"] else f"[red]refused ({lib['failed_check']})[/red]: {lib['detail']}"
        lines.append(f"[bold]native[/bold] {lib['path']}: {verdict}")
    return "\n".join(lines) or "(nothing)"


def register(app: typer.Typer) -> None:
    @app.command("plugins")
    @user_errors("plugins")
    def plugins(
        as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    ) -> None:
        """List installed plugins: version, distribution, enabled or not, pipelines, native libraries."""
        from ..plugins import registry

        infos = [describe_plugin(p) for p in registry.list_plugins()]
        broken = {name: str(err) for name, err in registry.broken_plugins().items()}
        if as_json:
            emit_json({"plugins": infos, "broken": broken})
            return
        for name, err in sorted(broken.items()):
            console().print(f"[red]broken plugin {name!r}[/red]: {err}")
        if not infos:
            console().print("No tritonx plugins installed (entry-point group 'tritonx.plugins').")
            return
        table = Table(title="tritonx plugins", show_lines=True)
        for col in ("plugin", "version", "distribution", "enabled"):
            table.add_column(col)
        table.add_column("contributes", overflow="fold")
        for info in infos:
            name = info["name"] + (f"\n[dim]{info['description']}[/dim]" if info["description"] else "")
            enabled = "[green]yes[/green]" if info["enabled"] else "no"
            table.add_row(name, info["version"], info["distribution"], enabled, _contributions(info))
        console().print(table)
