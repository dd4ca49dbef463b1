"""utlx is built on tritonx's public surface only (issue 16): it imports nothing private from tritonx.

Public means: a name in ``tritonx.__all__``, in ``tritonx.dsl.__all__`` (the API for kernel-callable ops,
on which every utlx op is declared), a public class of ``tritonx.errors``, or a name in
``tritonx.settings.__all__`` (typed environment settings; plugins build theirs on its field types), or a name in
``tritonx.seams.__all__`` (how a plugin declares the changes it needs to stock Triton).
Every ``import``/``from`` of tritonx in utlx's sources (inside functions too) and every attribute read
on a module bound by one is checked, so a private module
(``tritonx.plugins.registry``) or name (``tritonx.compat``) fails this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tritonx
import tritonx.dsl
import tritonx.errors
import tritonx.seams
import tritonx.settings

SRC = Path(__file__).resolve().parents[2] / "src" / "utlx"

PUBLIC: dict[str, set[str]] = {
    "tritonx": set(tritonx.__all__) | {"dsl", "errors", "seams", "settings"},
    "tritonx.seams": set(tritonx.seams.__all__),
    # how a plugin package finds another distribution shipping its top-level package (Meta's triton-utlx)
    "tritonx.plugins.shadowing": {"shadowing"},
    "tritonx.settings": set(tritonx.settings.__all__),
    "tritonx.dsl": set(tritonx.dsl.__all__),
    "tritonx.errors": {n for n, v in vars(tritonx.errors).items() if isinstance(v, type) and not n.startswith("_")},
}


def _uses(path: Path) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` for every tritonx name the file reaches (name '' for a bare module import)."""
    tree = ast.parse(path.read_text())
    found: list[tuple[int, str, str]] = []
    bound: dict[str, str] = {}  # local name -> tritonx module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "tritonx":
                    found.append((node.lineno, alias.name, ""))
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else "tritonx"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tritonx":
            for alias in node.names:
                found.append((node.lineno, node.module, alias.name))
                full = f"{node.module}.{alias.name}"
                if full in PUBLIC:
                    bound[alias.asname or alias.name] = full
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            found.append((node.lineno, bound[node.value.id], node.attr))
    return found


def test_utlx_reaches_only_public_tritonx_names():
    private = []
    checked = 0
    for path in sorted(SRC.rglob("*.py")):
        for line, module, name in _uses(path):
            checked += 1
            if module not in PUBLIC or (name and name not in PUBLIC[module]):
                private.append(f"{path.relative_to(SRC.parent)}:{line}: {module}{'.' + name if name else ''}")
    assert private == []
    assert checked >= 5  # the ops (tritonx.dsl), the plugin (tritonx), the launch key, the errors


def test_the_check_sees_private_names(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import tritonx\nfrom tritonx.plugins import registry\nfrom tritonx.dsl import Language\n"
                      "tritonx.compat.libtriton()\ntritonx.activate\n")
    uses = _uses(sample)
    assert (2, "tritonx.plugins", "registry") in uses and (4, "tritonx", "compat") in uses
    assert [u for u in uses if u[1] not in PUBLIC or (u[2] and u[2] not in PUBLIC[u[1]])] == [
        (2, "tritonx.plugins", "registry"), (4, "tritonx", "compat")]
