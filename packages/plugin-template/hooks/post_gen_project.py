"""Finish the generated project: pick the variant's pyproject, drop the other variant's files and any
bytecode, write the CI version list.

Why pruning: one template serves both variants (python and native), so the shared files (README,
plugin.py, tests) exist once; each variant's own files are listed here and the unused ones removed.
Each variant has its own ``pyproject.<variant>.toml``, renamed to ``pyproject.toml`` here: a Jinja
``pyproject.toml`` in the repository would be read (and rejected) by tools that look for one, ruff
first. Why drop bytecode: pip compiles every ``.py`` of the installed template (inside the
tritonx-core wheel) to ``__pycache__``, and cookiecutter copies those folders like any file, so a generated
project would start with stale ``.pyc`` of the template's sources. Why the version list:
ci/matrix.py runs the Triton releases the plugin's range admits, and the range logic lives in
pre_gen_project.py (loaded from the template directory, not duplicated). Runs inside the generated
project directory, after rendering.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

MODULE = "{{ cookiecutter.module_name }}"
VARIANT = "{{ cookiecutter.variant }}"
TRITON_RANGE = json.loads(r'{{ cookiecutter.triton_range | tojson }}')
TEMPLATE_DIR = json.loads(r'{{ cookiecutter._repo_dir | default("") | tojson }}')
VERSIONS_FILE = "ci/triton-versions.txt"
PYPROJECT = "pyproject.{variant}.toml"

#: Paths (relative to the generated project) that belong to one variant only.
ONLY_IN = {
    "python": [
        "pyproject.python.toml",
        f"src/{MODULE}/passes.py",
        "tests/test_python_pass.py",
    ],
    "native": [
        "pyproject.native.toml",
        "CMakeLists.txt",
        "cmake",
        "native",
        "requirements-build.txt",
        f"src/{MODULE}/native.py",
        "tests/test_native_plugin.py",
        "tests/test_build_gate.py",
    ],
}


def prune(project: Path, variant: str) -> list[Path]:
    """Keep ``variant``'s pyproject and remove every path owned by another variant; returns what was removed."""
    removed = []
    (project / PYPROJECT.format(variant=variant)).rename(project / "pyproject.toml")
    for other, paths in ONLY_IN.items():
        if other == variant:
            continue
        for rel in paths:
            path = project / rel
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
            else:
                continue
            removed.append(path)
    return removed


def remove_bytecode(project: Path) -> list[Path]:
    """Delete every ``__pycache__`` folder and stray ``.pyc``/``.pyo`` under ``project``; returns them."""
    removed = sorted(project.rglob("__pycache__"))
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    strays = [p for p in project.rglob("*.py[co]") if p.is_file()]
    for stray in strays:
        stray.unlink()
    return removed + strays


def _validation_module(template_dir: Path):
    path = template_dir / "hooks" / "pre_gen_project.py"
    spec = importlib.util.spec_from_file_location("tritonx_template_validation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_versions(project: Path, template_dir: Path, triton_range: str) -> list[str]:
    """Write the Triton releases that ``triton_range`` admits, for ci/matrix.py; returns them."""
    validation = _validation_module(template_dir)
    versions = [v for v in validation.KNOWN_TRITON_RELEASES if validation.admits(triton_range, v)]
    lines = [
        f"# Triton releases ci/matrix.py tests; generated from the range {triton_range!r}.",
        "# One version per line; add new Triton releases here as they come out.",
        *versions,
    ]
    (project / VERSIONS_FILE).write_text("\n".join(lines) + "\n")
    return versions


if __name__ == "__main__":
    if VARIANT not in ONLY_IN:
        print(f"tritonx plugin template: unknown variant {VARIANT!r}", file=sys.stderr)
        sys.exit(1)
    if not TEMPLATE_DIR:
        print("tritonx plugin template: the context has no _repo_dir (template directory)", file=sys.stderr)
        sys.exit(1)
    prune(Path.cwd(), VARIANT)
    remove_bytecode(Path.cwd())
    write_versions(Path.cwd(), Path(TEMPLATE_DIR), TRITON_RANGE)
