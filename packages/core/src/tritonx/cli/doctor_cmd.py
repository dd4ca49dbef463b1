"""``tritonx doctor``: the facts to paste into a bug report, and whether each plugin fits this install."""

from __future__ import annotations

import os
import platform
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from ._common import console, emit_json, user_errors
from .plugins_cmd import describe_plugin


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
    return {
        "name": plugin.name,
        "version": plugin.version,
        "enabled": info["enabled"],
        "native_ok": natives_ok,
        "native_libraries": info["native_libraries"],
        "unknown_passes": unknown,
        "compatible": natives_ok and not unknown,
    }


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
        plugins = [_plugin_health(p) for p in registry.list_plugins()]
        plugin_error = None
    except Exception as exc:  # one bad entry point must not hide the rest of the report
        plugins, plugin_error = [], str(exc)
    env = settings.raw()
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
        **_gpu(),
    }


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    @user_errors("doctor")
    def doctor(
        as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    ) -> None:
        """Report Triton, backends, tritonx, Python, the stages hook, plugins, cache dir and GPU."""
        report = collect()
        if as_json:
            emit_json(report)
            return
        hook = report["hook"]
        hook_text = ("installed (tritonx owns the stages hook)" if hook["installed"]
                     else f"not installed yet (slot: {hook['slot']}); tritonx installs it on first activation")
        if hook.get("chained"):
            hook_text += f"; chains {hook['chained']}"
        env = Table(title="tritonx doctor", show_header=False)
        env.add_column("item", style="bold")
        env.add_column("value")
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
            env.add_row(item, str(value))
        console().print(env)
        if report["plugin_error"]:
            console().print(f"[red]plugin discovery failed:[/red] {report['plugin_error']}")
        if not report["plugins"]:
            console().print("plugins: none installed")
            return
        table = Table(title="plugins")
        for col in ("plugin", "version", "enabled", "native checks", "pass names", "verdict"):
            table.add_column(col)
        for p in report["plugins"]:
            natives = ("n/a" if not p["native_libraries"] else
                       "ok" if p["native_ok"] else
                       "; ".join(f"{lib['path']}: {lib['failed_check']}" for lib in p["native_libraries"]
                                 if not lib["ok"]))
            passes = "ok" if not p["unknown_passes"] else "unknown: " + ", ".join(p["unknown_passes"])
            verdict = "[green]compatible[/green]" if p["compatible"] else "[red]incompatible[/red]"
            table.add_row(p["name"], p["version"], "yes" if p["enabled"] else "no", natives, passes, verdict)
        console().print(table)
