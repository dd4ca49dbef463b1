"""tritonx-core's modules import one way: no import circles, and the layers point down (issue 14).

``model -> engine -> integration -> plugins/native/dsl -> runtime -> cli``; ``compat`` and ``_current`` sit
below everything (lower layers reach the current runtime through ``_current``). Imports inside
functions count too (they are how layers used to point back up); ``if TYPE_CHECKING:`` imports do not.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tritonx"
LAYER = {"_current": 0, "compat": 0, "errors": 0, "__about__": 0, "data": 0, "model": 1, "engine": 2,
         "integration": 3, "plugins": 4, "native": 4, "dsl": 4, "runtime": 5, "public": 6, "__init__": 7, "cli": 8,
         "_startup": 4}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rsplit(".", 1)[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.ImportFrom | ast.Import):
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("tritonx"))
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if not target.startswith("tritonx"):
            continue
        for alias in node.names:
            candidate = f"{target}.{alias.name}"
            found.add(candidate if _exists(candidate) else target)
    return found


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (SRC / rel).with_suffix(".py").exists() or (SRC / rel / "__init__.py").exists()


@functools.cache
def _graph() -> dict[str, set[str]]:
    mods = {_module_name(p): p for p in SRC.rglob("*.py")}
    return {m: {i for i in _imports(p) if i in mods and i != m} for m, p in mods.items()}


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    return LAYER[top]


def test_no_import_circles():
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue  # a package and its own submodules
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


@pytest.mark.parametrize("module", sorted(m for m in _graph() if not m.startswith("tritonx.cli")))
def test_imports_point_down(module):
    up = [i for i in _graph()[module] if _layer(i) > _layer(module) and not i.startswith(module + ".")]
    assert up == [], f"{module} (layer {_layer(module)}) imports higher layers: {up}"
