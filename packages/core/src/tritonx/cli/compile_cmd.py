"""``tritonx compile FILE.py:KERNEL``: compile on the CPU for a GPU target and show a stage's IR.

Three views: one stage's output; ``--dump-after PASS`` (the module right after a pass, through a
temporary pipeline whose inserted Python pass prints it: the engine validates the name, so an
unknown pass gets its close-name suggestions); ``--diff`` (stock against plugins, per text stage).
"""

from __future__ import annotations

import contextlib
import difflib
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer

from . import _common
from ._common import (
    JsonFlag,
    UserError,
    command,
    compiler_output,
    describe_error,
    emit_json,
    is_triton_compile_error,
    parse_constexprs,
    parse_signature,
    plugins_enabled,
    split_names,
)
from .compile_args import check_options, check_signature_types
from .kernel_file import check_arguments, divisibility_attrs, load_kernel
from .targets import check_target

DUMP_PIPELINE = "tritonx-cli-dump"


@contextlib.contextmanager
def fresh_compiles() -> Iterator[None]:
    """Bypass Triton's cache: the passes must really run (a dump, or the second compile of a diff)."""
    import triton

    with triton.knobs.compilation.scope():
        triton.knobs.compilation.always_compile = True
        yield


@contextlib.contextmanager
def stock_state() -> Iterator[None]:
    """No plugin enabled and no pipeline active inside; the previous state is restored on exit."""
    from ..runtime import current

    rt = current()
    plugins = [p.name for p in rt.plugins.list() if rt.plugins.is_enabled(p.name)]
    if plugins:
        rt.plugins.disable(plugins)
    others = list(rt.active())
    if others:
        rt.deactivate(*others)
    try:
        yield
    finally:
        if others:
            rt.activate(*others)
        if plugins:
            rt.plugins.enable(plugins)


def stdout_is_terminal() -> bool:
    """Is stdout a terminal (where a binary stage is described, not written)?"""
    return sys.stdout.isatty()


def is_text(value: Any) -> bool:
    return isinstance(value, str)


def stage_diff(stage: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"{stage} (stock)", tofile=f"{stage} (plugins)"))


def _with_constexpr_hint(exc: Exception, consts: dict[str, Any]) -> Exception:
    """A kernel compilation error, with the ``--constexpr`` values that are no numbers named (the likely cause)."""
    odd = {k: v for k, v in consts.items() if not isinstance(v, (bool, int, float))}
    if _common.DEBUG or not odd or not is_triton_compile_error(exc):
        return exc
    named = ", ".join(f"{k}={v!r} is a {type(v).__name__}" for k, v in odd.items())
    return UserError(f"{describe_error(exc, 'compile')} (--constexpr {named})")


def _pick_stage(asm: dict[str, Any], stage: str) -> Any:
    if stage not in asm:
        raise UserError(f"stage {stage!r} was not produced for this target; stages: {', '.join(asm)}")
    return asm[stage]


def register(app: typer.Typer) -> None:
    @command(app, "compile")
    def compile_(
        kernel_spec: Annotated[str, typer.Argument(metavar="FILE.py:KERNEL", help="The @triton.jit kernel.")],
        signature: Annotated[str, typer.Option("--signature", help="Argument types: 'x_ptr=*fp32,n=i32'.")],
        target: Annotated[str, typer.Option("--target", "-t", help="cuda:90, hip:gfx942...")] = "cuda:90",
        constexpr: Annotated[list[str] | None, typer.Option("--constexpr", "-c", help="NAME=VALUE (repeat).")] = None,
        option: Annotated[list[str] | None, typer.Option("--option", "-o",
                                                         help="Compile option NAME=VALUE, e.g. num_warps=8.")] = None,
        divisible: Annotated[list[str] | None, typer.Option(
            "--divisible", help="Mark these arguments 16-divisible: names (a,b or repeat), or 'all' pointers and "
                                "integers.")] = None,
        plugins: Annotated[str | None, typer.Option("--plugins", "-p", help="Enable these plugins (a,b).")] = None,
        dump_after: Annotated[str | None, typer.Option("--dump-after", help="Print the module after PASS.")] = None,
        diff: Annotated[bool, typer.Option("--diff", help="Unified diff, stock vs plugins, per stage.")] = False,
        stage: Annotated[str | None, typer.Option("--stage", "-s", help="Stage to print (default ttgir).")] = None,
        as_json: JsonFlag = False,
    ) -> None:
        """Compile a kernel on the CPU through tritonx and print a stage's IR, a pass dump or a diff."""
        import tritonx

        from ..model.target import Target

        if diff and dump_after:
            raise UserError("--diff and --dump-after do not combine; use one")
        tgt = Target.parse(target)
        check_target(tgt)
        sig = parse_signature(signature)
        check_signature_types(sig)
        consts = parse_constexprs(constexpr)
        options = parse_constexprs(option, flag="-o", bare_words=True) or None
        check_options(tgt, options or {})
        kernel = load_kernel(kernel_spec)
        check_arguments(kernel, sig, consts)
        attrs = divisibility_attrs(kernel, sig, divisible)
        names = split_names(plugins)
        what = f"{kernel_spec.rpartition(':')[2]} for {tgt}"

        def build() -> Any:
            with compiler_output(what):  # ptxas banners and MLIR diagnostics go to stderr, never into stdout
                try:
                    return tritonx.compile_for(tgt, kernel, sig, consts, options, attrs)
                except Exception as exc:
                    raise _with_constexpr_hint(exc, consts) from exc

        head = {"target": str(tgt), "kernel": kernel_spec, "plugins": names}
        if diff:
            _run_diff(build, names, stage, head, as_json)
        elif dump_after:
            _run_dump(build, names, dump_after, head, as_json)
        else:
            with plugins_enabled(names), fresh_compiles():
                compiled = build()
            chosen = stage or "ttgir"
            text = _pick_stage(compiled.asm, chosen)
            if as_json:
                emit_json({**head, "stage": chosen, "ir": text if is_text(text) else None,
                           "bytes": len(text), "stages": list(compiled.asm)})
            elif is_text(text):
                typer.echo(text, nl=not text.endswith("\n"))
            elif not stdout_is_terminal():  # data on stdout: `--stage cubin > add.cubin` saves the binary
                typer.echo(bytes(text), nl=False)
            else:  # a message, so stderr; binary bytes would garble the terminal
                typer.echo(f"stage {chosen} is binary ({len(text)} bytes): redirect stdout to save it "
                           f"(... --stage {chosen} > kernel.{chosen}), or pick a text stage: "
                           f"{', '.join(s for s, v in compiled.asm.items() if is_text(v))}", err=True)


def _run_diff(build: Any, names: list[str], stage: str | None, head: dict[str, Any], as_json: bool) -> None:
    with stock_state(), fresh_compiles():
        stock = build().asm
    with plugins_enabled(names), fresh_compiles():
        edited = build().asm
    if stage is not None:
        _pick_stage(stock, stage)
        if not is_text(stock[stage]):
            raise UserError(f"stage {stage!r} is binary; --diff compares text stages")
    # "source" is the kernel's Python text: identical on both sides, never worth a line
    stages = [stage] if stage else [s for s in stock if s != "source" and is_text(stock[s]) and s in edited]
    diffs = {s: stage_diff(s, stock[s], edited[s]) for s in stages}
    if as_json:
        emit_json({**head, "stages": {s: {"changed": bool(d), "diff": d} for s, d in diffs.items()}})
        return
    changed = [s for s, d in diffs.items() if d]
    if not changed:  # messages go to stderr: stdout holds only the diffs (empty here, as diff(1) prints)
        typer.echo(f"no difference in {', '.join(stages)} with plugins {', '.join(names) or '(none given)'}", err=True)
        return
    for s in changed:
        typer.echo(diffs[s], nl=False)
    unchanged = ", ".join(s for s in stages if s not in changed) or "none"
    typer.echo(f"changed: {', '.join(changed)}; unchanged: {unchanged}", err=True)


def _run_dump(build: Any, names: list[str], pass_name: str, head: dict[str, Any], as_json: bool) -> None:
    import tritonx

    dumps: list[dict[str, Any]] = []

    def dump(module: Any, ctx: Any) -> None:
        dumps.append({"stage": ctx.stage, "occurrence": len(dumps), "ir": str(module)})

    probe = tritonx.Pipeline(DUMP_PIPELINE).insert_after(pass_name, dump, pass_name=f"dump-after-{pass_name}")
    with plugins_enabled(names), tritonx.activate(probe), fresh_compiles():
        build()
    if not dumps:
        raise UserError(f"pass {pass_name!r} did not run for this kernel and target")
    if as_json:
        emit_json({**head, "pass": pass_name, "dumps": dumps})
        return
    for d in dumps:
        where = f"stage {d['stage']}, occurrence {d['occurrence']}"
        typer.echo(f"// -----// IR dump after {pass_name} ({where}) //----- //")
        typer.echo(d["ir"], nl=not d["ir"].endswith("\n"))
