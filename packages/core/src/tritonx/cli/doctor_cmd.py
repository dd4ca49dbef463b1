"""``tritonx doctor``: the facts to paste into a bug report, and whether each plugin fits this install.

Exits 1 when a plugin is broken (its entry point fails to import), incompatible (a native library is
refused or a pass it names does not exist in this Triton) or discovery itself failed: a health check
that prints problems but exits 0 would let CI scripts sail past them.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from ._common import emit_json, user_errors
from .output import Grid, console, print_grid
from .plugins_cmd import broken_entries, describe_plugin


def _gpu() -> dict[str, Any]:
    """What torch sees, if torch is installed (it is optional: imported here only, never required)."""
    try:
        import torch
    except Exception as exc:  # not installed, or a broken install: report, never fail
        return {"torch": None, "gpu": None, "note": f"torch not importable ({type(exc).__name__})"}
    info: dict[str, Any] = {"torch": torch.__version__, "gpu": None}
    try:
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["device_count"] = torch.cuda.device_count()
    except Exception as exc:
        info["note"] = f"torch.cuda failed: {exc}"
    return info


def _plugin_health(plugin: Any) -> dict[str, Any]:
    """Enabled? Native checks passed? Do the pipelines' pass names exist in this Triton?"""
    from ..engine import names
    from ..model.edits import NamedPass, PassEdit

    info = describe_plugin(plugin)
    edits = [e for p in plugin.pipelines for e in p.edits if isinstance(e, PassEdit)]
    referenced = {e.selector.name for e in edits}
    referenced |= {e.new.name for e in edits if isinstance(getattr(e, "new", None), NamedPass)}
    unknown = sorted(n for n in referenced if not names.is_known(n))
    natives_ok = all(lib["ok"] for lib in info["native_libraries"])
    compatible = natives_ok and not unknown
    return {
        "name": plugin.name,
        "version": plugin.version,
        "status": "ok" if compatible else "incompatible",
        "reason": None,
        "enabled": info["enabled"],
        "native_ok": natives_ok,
        "native_libraries": info["native_libraries"],
        "unknown_passes": unknown,
        "compatible": compatible,
    }


def _broken_health(name: str, reason: str) -> dict[str, Any]:
    """A plugin whose entry point failed to load, in the same shape as :func:`_plugin_health`."""
    return {"name": name, "version": None, "status": "broken", "reason": reason, "enabled": False,
            "native_ok": None, "native_libraries": [], "unknown_passes": [], "compatible": False}


def collect() -> dict[str, Any]:
    import triton

    import tritonx

    from .. import compat
    from ..integration import hook
    from ..plugins import registry
    from ..settings import settings

    try:
        from triton.backends import backends

        backend_names = sorted(backends)
    except Exception as exc:  # a broken backend install is exactly what doctor should report
        backend_names = [f"error: {exc}"]
    try:
        broken = [_broken_health(name, reason) for name, reason in broken_entries().items()]
        plugins = broken + [_plugin_health(p) for p in registry.list_plugins()]
        plugin_error = None
    except Exception as exc:  # discovery itself failed: the rest of the report still matters
        plugins, plugin_error = [], f"{type(exc).__name__}: {exc}"
    env = settings.raw()
    from ..compat import known_broken
    from ..plugins import shadowing

    return {
        "tritonx": tritonx.__version__,
        "triton": compat.TRITON_VERSION_STR,
        "triton_path": os.path.dirname(triton.__file__),
        "backends": backend_names,
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
        "hook": hook.status(),
        "cache_dir": triton.knobs.cache.dir,
        **{var: env[var] for var in ("TRITON_INTERPRET", "TRITONX_PLUGINS", "TRITONX_NATIVE_PLUGINS")},
        "plugins": plugins,
        "plugin_error": plugin_error,
        "known_broken": known_broken.found(),
        "shadowed": [found.to_dict() for found in shadowing.for_plugins()],
        **_gpu(),
    }


def problems(report: dict[str, Any]) -> list[str]:
    """What makes ``doctor`` exit 1: broken or incompatible plugins, failed discovery."""
    out = [f"plugin discovery failed: {report['plugin_error']}"] if report["plugin_error"] else []
    out += [f"plugin {p['name']!r} is {p['status']}" for p in report["plugins"] if p["status"] != "ok"]
    out += [f"known-broken versions ({k['installed']}): {k['fix']}" for k in report.get("known_broken", ())]
    out += [s["message"] for s in report.get("shadowed", ())]
    return out


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    @user_errors("doctor")
    def doctor(
        as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    ) -> None:
        """Report Triton, backends, tritonx, Python, the stages hook, plugins, cache dir and GPU.

        Exits 1 when a plugin is broken or incompatible with this Triton, when installed versions are a
        known-broken combination, or when another distribution ships a plugin's package (the reason is listed).
        """
        report = collect()
        if as_json:
            emit_json({**report, "problems": problems(report)})
        else:
            _print_report(report)
        found = problems(report)
        if found:
            typer.echo(f"tritonx doctor: error: {'; '.join(found)}", err=True)
            raise typer.Exit(1)


def _print_report(report: dict[str, Any]) -> None:
    hook = report["hook"]
    hook_text = ("installed (tritonx owns the stages hook)" if hook["installed"]
                 else f"not installed yet (slot: {hook['slot']}); tritonx installs it on first activation")
    if hook.get("chained"):
        hook_text += f"; chains {hook['chained']}"
    env = Grid(["item", "value"], title="tritonx doctor", show_header=False, styles={"item": "bold"})
    rows = [
        ("tritonx", report["tritonx"]),
        ("triton", f"{report['triton']} ({report['triton_path']})"),
        ("backends", ", ".join(report["backends"]) or "none"),
        ("python", report["python"]),
        ("platform", report["platform"]),
        ("stages hook", hook_text),
        ("cache dir", str(report["cache_dir"])),
        ("TRITON_INTERPRET", report["TRITON_INTERPRET"] or "not set"),
        ("TRITONX_PLUGINS", report["TRITONX_PLUGINS"] or "not set (default-enabled plugins)"),
        ("TRITONX_NATIVE_PLUGINS", report["TRITONX_NATIVE_PLUGINS"] or "not set"),
        ("torch", report["torch"] or report.get("note", "not installed")),
        ("GPU", report["gpu"] or "none visible (compiling for GPU targets works on the CPU)"),
    ]
    for item, value in rows:
        env.add_row(item, escape(str(value)))
    con = console()
    print_grid(env, con)
    if report["plugin_error"]:
        con.print(f"[red]plugin discovery failed:[/red] {escape(report['plugin_error'])}")
    for k in report.get("known_broken", ()):
        con.print(f"[red]known-broken versions[/red] ({escape(k['installed'])}): {escape(k['effect'])}; "
                  f"fix: {escape(k['fix'])}")
    for s in report.get("shadowed", ()):
        con.print(f"[red]shadowed package[/red]: {escape(s['message'])}")
    if not report["plugins"]:
        con.print("plugins: none installed")
        return
    table = Grid(["plugin", "version", "enabled", "native checks", "pass names", "verdict"], title="plugins",
                 fold=("verdict",))
    for p in report["plugins"]:
        if p["status"] == "broken":
            table.add_row(escape(p["name"]), "", "no", "", "", f"[red]broken[/red]: {escape(p['reason'])}")
            continue
        natives = ("n/a" if not p["native_libraries"] else
                   "ok" if p["native_ok"] else
                   "; ".join(f"{lib['path']}: {lib['failed_check']}" for lib in p["native_libraries"]
                             if not lib["ok"]))
        passes = "ok" if not p["unknown_passes"] else "unknown: " + ", ".join(p["unknown_passes"])
        verdict = "[green]compatible[/green]" if p["compatible"] else "[red]incompatible[/red]"
        table.add_row(escape(p["name"]), p["version"], "yes" if p["enabled"] else "no", escape(natives),
                      escape(passes), verdict)
    print_grid(table, con)
