"""``tritonx new NAME [--native]``: scaffold a plugin package from the bundled cookiecutter template.

Why a template and not a wizard: the generated package is an ordinary project (pyproject, tests, CI
matrix) that the user owns; the template is also usable without tritonx (``cookiecutter
packages/plugin-template``). The template ships inside the tritonx-core wheel as ``tritonx/_template``;
in a checkout it is ``packages/plugin-template``.

Nothing is half-written: the answers are validated first (by the template's own pre-generation hook
module, so both entry points apply the same rules), the project is rendered into a temporary
directory next to the destination, and only a complete render is moved into place.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer

from ..errors import TritonxError
from ._common import command

#: Where the template lives inside an installed wheel (``force-include`` in tritonx-core's pyproject).
WHEEL_TEMPLATE = Path(__file__).resolve().parents[1] / "_template"
#: Where it lives in a checkout, relative to ``packages/core/src/tritonx/cli/new.py``.
CHECKOUT_TEMPLATE = Path(__file__).resolve().parents[4] / "plugin-template"
#: Answers a caller may set (the template's prompts); anything else is a mistake worth reporting.
ANSWER_KEYS = (
    "module_name",
    "plugin_name",
    "description",
    "author",
    "author_email",
    "license",
    "triton_range",
    "backends",
    "version",
    "tritonx_core_range",
)


class ScaffoldError(TritonxError, ValueError):
    """``tritonx new`` refused its input; the message names the argument at fault. Nothing was written."""


#: What to run when cookiecutter is missing (it is tritonx-core's ``new`` extra, not a dependency).
INSTALL_HINT = "pip install 'tritonx-core[new]'"


def _cookiecutter(module: str) -> ModuleType:
    """``cookiecutter.<module>``, or one line saying how to get it (only ``tritonx new`` needs cookiecutter)."""
    try:
        return importlib.import_module(f"cookiecutter.{module}")
    except ImportError:
        raise ScaffoldError(f"scaffolding needs cookiecutter, which is not installed: {INSTALL_HINT}") from None


@contextlib.contextmanager
def _temp_files_in(folder: Path) -> Iterator[None]:
    """Point ``tempfile`` at ``folder`` for the render: cookiecutter writes each hook it runs to a
    ``tmp*.py`` there and never deletes it (two per call); ``folder`` is removed with the staging dir."""
    saved = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved


def template_dir() -> Path:
    """The plugin template: bundled in the wheel, else the checkout's ``packages/plugin-template``."""
    for candidate in (WHEEL_TEMPLATE, CHECKOUT_TEMPLATE):
        if (candidate / "cookiecutter.json").is_file():
            return candidate
    raise ScaffoldError(
        f"the plugin template is missing: looked in {WHEEL_TEMPLATE} (installed wheel) and {CHECKOUT_TEMPLATE} "
        "(checkout); reinstall tritonx-core"
    )


def _validation(template: Path) -> ModuleType:
    """The template's pre-generation hook, imported as a module: the one definition of valid answers."""
    path = template / "hooks" / "pre_gen_project.py"
    spec = importlib.util.spec_from_file_location("tritonx_template_validation", path)
    if spec is None or spec.loader is None:  # pragma: no cover - the file is part of the template
        raise ScaffoldError(f"cannot load the template's validation hook {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _context(template: Path, extra: dict[str, str]) -> dict[str, Any]:
    """Cookiecutter's context for ``extra`` (defaults rendered, no prompting), as ``cookiecutter()`` builds it."""
    generate_context = _cookiecutter("generate").generate_context
    prompt_for_config = _cookiecutter("prompt").prompt_for_config

    context = generate_context(context_file=str(template / "cookiecutter.json"), extra_context=extra)
    context["cookiecutter"] = prompt_for_config(context, no_input=True)
    context["cookiecutter"]["_template"] = str(template)
    context["cookiecutter"]["_repo_dir"] = str(template)
    context["_cookiecutter"] = {k: v for k, v in context["cookiecutter"].items() if not k.startswith("_")}
    return context


def resolve_answers(name: str, *, native: bool, answers: Mapping[str, str] | None = None,
                    template: Path | None = None) -> dict[str, Any]:
    """Every template variable for ``name`` (defaults filled in), or :class:`ScaffoldError` listing each problem."""
    template = template or template_dir()
    given = {k: v for k, v in (answers or {}).items() if v is not None}
    unknown = sorted(set(given) - set(ANSWER_KEYS))
    if unknown:
        raise ScaffoldError(f"unknown answer(s) {', '.join(unknown)}; known: {', '.join(ANSWER_KEYS)}")
    bad_types = [k for k, v in given.items() if not isinstance(v, str)]
    if bad_types:
        raise ScaffoldError(f"answer(s) {', '.join(sorted(bad_types))} must be strings")
    validation = _validation(template)
    # Check the name alone first: deriving the module name from a bad one would only add noise.
    name_errors = [e for e in validation.validate_answers({"package_name": name}) if e.startswith("package_name")]
    if name_errors:
        raise ScaffoldError(f"invalid package name NAME: {name_errors[0].split(': ', 1)[1]}")
    extra = {**given, "package_name": name, "variant": "native" if native else "python"}
    try:
        context = _context(template, extra)
    except Exception as exc:  # a Jinja error in a default (for example from a strange name)
        raise ScaffoldError(f"cannot fill in the template's answers for {name!r}: {exc}") from exc
    values = context["cookiecutter"]
    errors = validation.validate_answers({k: str(v) for k, v in values.items() if not k.startswith("_")})
    if errors:
        raise ScaffoldError("invalid answers:\n  - " + "\n  - ".join(errors))
    return context


def scaffold(name: str, *, native: bool = False, output_dir: Path | str = Path("."),
             answers: Mapping[str, str] | None = None) -> Path:
    """Create ``output_dir/name``, a plugin package ready to install and test; return its path.

    ``answers`` overrides template answers (``plugin_name``, ``author``, ``license``, ``triton_range``,
    ``backends``...; see :data:`ANSWER_KEYS`). Raises :class:`ScaffoldError` for an existing
    destination, an invalid name or answer, or a Triton range tritonx does not support; then nothing
    is left on disk.
    """
    generate_files = _cookiecutter("generate").generate_files

    output_dir = Path(output_dir).expanduser().resolve()
    template = template_dir()
    # The answers first: an invalid NAME ('', '.', 'a/b') names an existing folder or one outside output_dir,
    # and was reported as "destination ... already exists".
    context = resolve_answers(name, native=native, answers=answers, template=template)
    destination = output_dir / name
    if os.path.lexists(destination):
        raise ScaffoldError(f"destination {destination} already exists; choose another NAME or --output-dir")
    if not output_dir.is_dir():
        raise ScaffoldError(f"--output-dir {output_dir} is not an existing directory")
    staging = Path(tempfile.mkdtemp(prefix=f".tritonx-new-{name}-", dir=output_dir))
    try:
        hooks_tmp = staging / ".hooks-tmp"
        hooks_tmp.mkdir()
        try:
            with _temp_files_in(hooks_tmp):
                rendered = Path(generate_files(repo_dir=str(template), context=context, output_dir=str(staging)))
        except Exception as exc:
            raise ScaffoldError(f"rendering the plugin template failed: {type(exc).__name__}: {exc}") from exc
        if os.path.lexists(destination):  # appeared while rendering
            raise ScaffoldError(f"destination {destination} already exists; choose another NAME or --output-dir")
        os.replace(rendered, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination


def next_steps(path: Path, *, native: bool, plugin_name: str) -> str:
    """What to type after scaffolding (printed by the CLI)."""
    install = "pip install -e '.[test]'" if not native else (
        "pip install -r requirements-build.txt && pip install --no-build-isolation '.[test]'"
    )
    return "\n".join([
        f"Created {path}",
        "Next:",
        f"  cd {path}",
        f"  {install}",
        "  pytest",
        f"  tritonx pipeline --target cuda:90 --stage {'ttir' if native else 'ttgir'} --plugins {plugin_name}",
    ])


def triton_range_of(project: Path) -> str | None:
    """The ``triton`` requirement's specifier in a generated project's pyproject (``==3.7.1``), if any."""
    match = re.search(r'^\s*"triton([<>=!~][^"]*)"', (project / "pyproject.toml").read_text(), re.MULTILINE)
    return match.group(1) if match else None


def environment_warning(project: Path, *, native: bool, template: Path | None = None) -> str | None:
    """A warning when the installed Triton is outside the generated plugin's Triton range, else None.

    Why: a native plugin is compiled against the LLVM/MLIR headers of one Triton release (3.7.1 by
    default) and only loads into that release; scaffolding it in a venv with another Triton gives a
    project that cannot be built or tested there, and nothing would say so until the build stops.
    """
    spec = triton_range_of(project)
    try:
        installed = importlib.metadata.version("triton").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return None
    if spec is None or _validation(template or template_dir()).admits(spec, installed):
        return None
    head = f"warning: this environment has Triton {installed}, but {project.name} is for triton{spec}"
    if native:
        return (f"{head}: its native library builds against that Triton's LLVM/MLIR headers and loads only there. "
                f"Build and test it in a venv with that Triton (pip install 'triton{spec}'), or set "
                "TRITONX_LLVM_DIR to headers from your Triton's LLVM commit (see its README).")
    return f"{head}: install a Triton in that range to test it, or pass --triton with a range that admits {installed}."


def register(app: typer.Typer) -> None:
    """Add the ``new`` command to the tritonx typer app."""

    @command(app, "new")
    def new(
        name: Annotated[str, typer.Argument(help="Distribution and directory name, e.g. tritonx-myplugin.")],
        native: Annotated[bool, typer.Option("--native", help="C++ MLIR plugin (dialect + passes).")] = False,
        output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="Where to create NAME/.")] = Path("."),
        plugin_name: Annotated[str | None, typer.Option(help="Plugin name (default: the module name).")] = None,
        module_name: Annotated[str | None, typer.Option(help="Python import name (default: from NAME).")] = None,
        author: Annotated[str | None, typer.Option()] = None,
        author_email: Annotated[str | None, typer.Option()] = None,
        license_: Annotated[str | None, typer.Option("--license", help="MIT, Apache-2.0 or BSD-3-Clause.")] = None,
        triton: Annotated[str | None, typer.Option(help="Supported Triton range, within >=3.6,<3.10.")] = None,
        backends: Annotated[str | None, typer.Option(help="Test backends: cuda,hip (default), cuda or hip.")] = None,
        description: Annotated[str | None, typer.Option()] = None,
    ) -> None:
        """Create a tritonx plugin package whose tests pass as generated."""
        answers = {
            "plugin_name": plugin_name, "module_name": module_name, "author": author, "author_email": author_email,
            "license": license_, "triton_range": triton, "backends": backends, "description": description,
        }
        try:
            path = scaffold(name, native=native, output_dir=output_dir, answers=answers)
        except ScaffoldError as exc:
            typer.echo(f"tritonx new: error: {exc}", err=True)
            raise typer.Exit(2) from None
        chosen = resolve_plugin_name(path)
        typer.echo(next_steps(path, native=native, plugin_name=chosen))
        warning = environment_warning(path, native=native)
        if warning:
            typer.echo(warning, err=True)


def resolve_plugin_name(project: Path) -> str:
    """The plugin name written into a generated project: the name of its ``tritonx.plugins`` entry point."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        return project.name
    data = tomllib.loads((project / "pyproject.toml").read_text())
    names = list(data.get("project", {}).get("entry-points", {}).get("tritonx.plugins", {}))
    return names[0] if names else project.name
