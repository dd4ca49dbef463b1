"""``tritonx doctor``: the facts to paste into a bug report, and whether each plugin fits this install.

It also lists the seams of Triton in effect (:mod:`tritonx.seams`: every change tritonx and the enabled
plugins made to stock Triton, with the Triton versions each applies to and why).

Exits 1 when a plugin is broken (its entry point fails to import), incompatible (a native library is
refused or a pass it names does not exist in this Triton), not loaded (its native library needs
``TRITONX_NATIVE_PLUGINS``, and the fix is named), when ``TRITONX_PLUGINS`` names an unknown plugin,
or when discovery itself failed: a health check that prints problems but exits 0 would let CI scripts
sail past them.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

import typer
from rich.markup import escape

from ._common import JsonFlag, command, emit_json
from .doctor_env import broken_native_hint, native_env_hint, unknown_env_plugins, unknown_pass_hint, unloaded_natives
from .output import Grid, console, print_grid
from .pipes import planned_exit
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
    from ..model.edits import NamedPass, PassEdit
    from ..runtime import current

    info = describe_plugin(plugin)
    edits = [e for p in plugin.pipelines for e in p.edits if isinstance(e, PassEdit)]
    referenced = {e.selector.name for e in edits}
    referenced |= {e.new.name for e in edits if isinstance(getattr(e, "new", None), NamedPass)}
    names = current().names
    unknown = sorted(n for n in referenced if not names.is_known(n))
    natives_ok = all(lib["ok"] for lib in info["native_libraries"])
    unloaded = unloaded_natives(plugin)
    compatible = natives_ok and not unknown and not unloaded
    status = "ok" if compatible else "incompatible" if not natives_ok or not unloaded else "not loaded"
    return {
        "name": plugin.name,
        "version": plugin.version,
        "status": status,
        "reason": None,
        "hint": (native_env_hint(unloaded) if unloaded and natives_ok
                 else unknown_pass_hint(plugin.name) if unknown and natives_ok else None),
        "enabled": info["enabled"],
        "native_ok": natives_ok,
        "native_libraries": info["native_libraries"],
        "unknown_passes": unknown,
        "compatible": compatible,
    }


def _broken_health(name: str, error: BaseException) -> dict[str, Any]:
    """A plugin whose entry point failed to load, in the same shape as :func:`_plugin_health`."""
    return {"name": name, "version": None, "status": "broken", "reason": str(error),
            "hint": broken_native_hint(name, error), "enabled": False,
            "native_ok": None, "native_libraries": [], "unknown_passes": [], "compatible": False}


def collect() -> dict[str, Any]:
    import triton

    import tritonx

    from .. import compat, seams
    from ..runtime import current
    from ..settings import settings

    try:
        from triton.backends import backends

        backend_names = sorted(backends)
    except Exception as exc:  # a broken backend install is exactly what doctor should report
        backend_names = [f"error: {exc}"]
    try:
        broken_errors = current().plugins.broken()
        broken = [_broken_health(name, err) for name, err in sorted(broken_errors.items())]
        installed = current().plugins.list()
        plugins = broken + [_plugin_health(p) for p in installed]
        unknown_env = unknown_env_plugins({p.name for p in installed} | set(broken_errors))
        plugin_error = None
    except Exception as exc:  # discovery itself failed: the rest of the report still matters
        plugins, unknown_env, plugin_error = [], [], f"{type(exc).__name__}: {exc}"
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
        "hook": current().hook.status(),
        "seams": seams.report(),
        "cache_dir": triton.knobs.cache.dir,
        **{var: env[var] for var in ("TRITON_INTERPRET", "TRITONX_PLUGINS", "TRITONX_NATIVE_PLUGINS")},
        "plugins": plugins,
        "unknown_env_plugins": unknown_env,
        "plugin_error": plugin_error,
        "known_broken": known_broken.found(),
        "shadowed": [found.to_dict() for found in shadowing.for_plugins()],
        **_gpu(),
    }


def problems(report: dict[str, Any]) -> list[str]:
    """What makes ``doctor`` exit 1: broken or incompatible plugins, failed discovery."""
    out = [f"plugin discovery failed: {report['plugin_error']}"] if report["plugin_error"] else []
    if report["unknown_env_plugins"]:
        known = ", ".join(sorted(p["name"] for p in report["plugins"])) or "none installed"
        out.append(f"TRITONX_PLUGINS names unknown plugin(s) {', '.join(map(repr, report['unknown_env_plugins']))} "
                   f"(known: {known})")
    out += [f"plugin {p['name']!r} is {p['status']}" + (f" ({p['hint']})" if p.get("hint") else "")
            for p in report["plugins"] if p["status"] != "ok"]
    out += [f"known-broken versions ({k['installed']}): {k['fix']}" for k in report.get("known_broken", ())]
    out += [s["message"] for s in report.get("shadowed", ())]
    return out


def register(app: typer.Typer) -> None:
    @command(app, "doctor")
    def doctor(
        as_json: JsonFlag = False,
    ) -> None:
        """Report Triton, backends, tritonx, Python, the stages hook, the seams of Triton in effect, plugins,
        cache dir and GPU.

        Exits 1 when a plugin is broken or incompatible with this Triton, when installed versions are a
        known-broken combination, or when another distribution ships a plugin's package (the reason is listed).
        """
        report = collect()
        found = problems(report)
        planned_exit(1 if found else 0)  # `tritonx doctor | grep -q ...` still says whether doctor passed
        if as_json:
            emit_json({**report, "problems": found})
        else:
            _print_report(report)
        if found:
            typer.echo(f"tritonx doctor: error: {'; '.join(found)}", err=True)
            raise typer.Exit(1)


def _print_seams(active: list[dict[str, Any]], con: Any) -> None:
    """The changes to stock Triton in effect (tritonx.seams): who made each, on which versions, and why."""
    if not active:
        con.print("seams: none active (stock Triton unchanged)")
        return
    table = Grid(["seam", "versions", "changes", "reason"], title="seams of Triton in effect",
                 fold=("changes", "reason"))
    for seam in active:
        where = seam["where"] if seam["in_place"] else f"{seam['where']} (covered by another wrapper since)"
        table.add_row(escape(seam["name"]), seam["versions"], escape(where), escape(seam["reason"]))
    print_grid(table, con)


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
        ("TRITONX_PLUGINS", (report["TRITONX_PLUGINS"] or "not set (default-enabled plugins)")
         + (f" (unknown: {', '.join(report['unknown_env_plugins'])})" if report["unknown_env_plugins"] else "")),
        ("TRITONX_NATIVE_PLUGINS", report["TRITONX_NATIVE_PLUGINS"] or "not set"),
        ("torch", report["torch"] or report.get("note", "not installed")),
        ("GPU", report["gpu"] or "none visible (compiling for GPU targets works on the CPU)"),
    ]
    for item, value in rows:
        env.add_row(item, escape(str(value)))
    con = console()
    print_grid(env, con)
    _print_seams(report["seams"], con)
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
        hint = f"; {escape(p['hint'])}" if p.get("hint") else ""
        if p["status"] == "broken":
            table.add_row(escape(p["name"]), "", "no", "", "", f"[red]broken[/red]: {escape(p['reason'])}{hint}")
            continue
        natives = ("n/a" if not p["native_libraries"] else
                   "not loaded" if p["status"] == "not loaded" else
                   "ok" if p["native_ok"] else
                   "; ".join(f"{lib['path']}: {lib['failed_check']}" for lib in p["native_libraries"]
                             if not lib["ok"]))
        passes = "ok" if not p["unknown_passes"] else "unknown: " + ", ".join(p["unknown_passes"])
        verdict = "[green]compatible[/green]" if p["compatible"] else f"[red]{p['status']}[/red]{hint}"
        table.add_row(escape(p["name"]), p["version"], "yes" if p["enabled"] else "no", escape(natives),
                      escape(passes), verdict)
    print_grid(table, con)
