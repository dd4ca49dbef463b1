"""The project's import graph, read from the sources (shared by the layering tests of both packages).

Every import counts: inside functions (how layers used to point back up) and under ``if TYPE_CHECKING:`` too.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCES = {"tritonx": ROOT / "packages/core/src/tritonx", "utlx": ROOT / "packages/utlx/src/utlx"}


def files() -> dict[str, Path]:
    found = {}
    for src in SOURCES.values():
        for path in src.rglob("*.py"):
            rel = path.relative_to(src.parent).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # ``import utlx.language as tlx`` -> utlx.language
                target = target.rpartition(".")[0]
            if target and target != module:
                found.add(target)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    modules = files()
    return {m: imports(m, p, modules) for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found



#: Modules that know which tritonx runtime is current: the public front and the runtime module itself.
#: Everything else is handed the runtime part it acts on (its pass-name table, registries, hook slot).
AMBIENT_FRONT = ("tritonx.public", "tritonx.runtime", "tritonx.cli")
#: The modules holding the current runtime (``_current`` is where lower layers used to ask it).
AMBIENT_MODULES = ("tritonx.runtime", "tritonx.public", "tritonx._current")


def in_front(module: str) -> bool:
    """``tritonx`` itself, :mod:`tritonx.public`, :mod:`tritonx.runtime` and the CLI."""
    return module == "tritonx" or any(module == f or module.startswith(f + ".") for f in AMBIENT_FRONT)


def ambient_uses(module: str, path: Path) -> list[str]:
    """Where ``module`` reaches the current runtime: imports of the modules holding it (relative ones
    resolved), the holder ``_current`` by name, ``runtime.current``/``runtime.default`` attribute chains, and
    the holders' dotted names as strings (``importlib.import_module("tritonx.runtime")``, ``sys.modules[...]``),
    which the import graph cannot see."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        where = f"{module}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            found += [f"{where}: import {a.name}" for a in node.names if a.name.startswith(AMBIENT_MODULES)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            if any(t.startswith(AMBIENT_MODULES) for t in [base] + [f"{base}.{a.name}" for a in node.names]):
                found.append(f"{where}: from {base} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Name) and node.id == "_current":
            found.append(f"{where}: _current")
        elif isinstance(node, ast.Attribute) and (node.attr == "_current" or (
                node.attr in ("current", "default") and ast.unparse(node.value).endswith("runtime"))):
            found.append(f"{where}: {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(AMBIENT_MODULES):
            found.append(f"{where}: {node.value!r}")
    return found
