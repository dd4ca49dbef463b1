"""``tritonx pipeline``: every stage's passes for a target, in order, with the active edits marked.

The pass lists are captured by compiling the probe matmul on the CPU (``tritonx.capture``), so they
are exactly what the installed Triton runs for that target, not a hand-kept list.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from ..model.target import Target
from ._common import JsonFlag, UserError, command, compiler_output, emit_json, plugins_enabled, split_names
from .output import Grid, console, print_grid
from .targets import check_target

_MARK_STYLE = {"inserted": "green", "disabled": "red", "replaced": "yellow", "replacement": "green"}


def _args_text(args: tuple[Any, ...]) -> str:
    return ", ".join(repr(a) for a in args)


def stage_table(stage: str, passes: list[Any]) -> Grid:
    """One stage's passes; off a terminal each pass is one line (``| grep tritongpu-pipeline`` finds it)."""
    table = Grid(["#", "pass", "adder", "args", "edit"], title=f"stage {stage}: {len(passes)} passes",
                 fold=("pass", "adder", "args", "edit"), right=("#",))
    for p in passes:
        index = "+" if p.mark in ("inserted", "replacement") else str(p.index)
        name = escape(p.name)
        edit = ""
        if p.mark:
            style = _MARK_STYLE.get(p.mark, "bold")
            edit = f"[{style}]{p.mark}[/{style}] by {escape(str(p.edit))}"
            name = f"[{style}]{name}[/{style}]" if p.mark != "disabled" else f"[strike]{name}[/strike]"
        table.add_row(index, name, escape(p.adder), escape(_args_text(p.args)), edit)
    return table


def register(app: typer.Typer) -> None:
    @command(app, "pipeline")
    def pipeline(
        target: Annotated[str, typer.Option("--target", "-t", help="cuda:90, cuda:100, hip:gfx942...")] = "cuda:90",
        stage: Annotated[str | None, typer.Option("--stage", "-s", help="Only this stage (ttir, ttgir, llir).")] = None,
        plugins: Annotated[str | None, typer.Option("--plugins", "-p", help="Enable these plugins (a,b).")] = None,
        as_json: JsonFlag = False,
    ) -> None:
        """Show each stage's passes (index, name, adder, args) and which active pipeline edits them."""
        check_target(Target.parse(target))  # an arch the backend does not know fails here, listing those it knows
        import tritonx

        with plugins_enabled(split_names(plugins)):
            active = [p.name for p in tritonx.active()]
            with compiler_output(f"the probe kernel for {target}"):
                cap = tritonx.capture(target)
        stages = list(cap.stage_order)
        if stage is not None:
            if stage not in cap.stages:
                raise UserError(f"stage {stage!r} runs no passes for {cap.target}; stages with passes: "
                                f"{', '.join(stages)}")
            stages = [stage]
        if as_json:
            data = cap.as_dict()
            data["stages"] = {s: data["stages"][s] for s in stages}
            data["active_pipelines"] = active
            emit_json(data)
            return
        con = console()
        con.print(f"Triton {cap.triton_version}, target {cap.target}; active pipelines: "
                  f"{', '.join(active) or 'none (stock)'}")
        for s in stages:
            print_grid(stage_table(s, cap[s]), con)
