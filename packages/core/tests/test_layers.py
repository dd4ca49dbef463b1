"""The project's modules import one way (issue 14), read the environment in one place, parse versions once.

Walks the imports of both packages (``tritonx`` and ``utlx``): no import circles anywhere, and tritonx-core's
layers point down: ``model -> engine -> integration -> plugins/native/dsl -> runtime -> cli``; ``compat``,
``settings``, ``errors`` and ``_current`` sit below everything (lower layers reach the current runtime
through ``_current``, typed ``Any`` there so it imports nothing). Every import counts: inside functions
(how layers used to point back up) and under ``if TYPE_CHECKING:`` too.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCES = {"tritonx": ROOT / "packages/core/src/tritonx", "utlx": ROOT / "packages/utlx/src/utlx"}
LAYER = {"_current": 0, "compat": 0, "errors": 0, "settings": 0, "__about__": 0, "data": 0, "model": 1, "engine": 2,
         "integration": 3, "plugins": 4, "native": 4, "dsl": 4, "_startup": 4, "runtime": 5, "public": 6, "__init__": 7,
         "cli": 8}
#: The only modules that may read the environment: the settings modules, and the start-up shim that runs
#: before any package can be imported.
ENV_READERS = {"tritonx.settings", "utlx.settings", "tritonx._startup"}


def _files() -> dict[str, Path]:
    found = {}
    for src in SOURCES.values():
        for path in src.rglob("*.py"):
            rel = path.relative_to(src.parent).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
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
def _graph() -> dict[str, set[str]]:
    modules = _files()
    return {m: _imports(m, p, modules) for m, p in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
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


def test_the_walk_sees_both_packages_and_their_function_local_imports():
    graph = _graph()
    assert "utlx.interpreter.ops_mem" in graph and "tritonx.runtime" in graph
    assert "tritonx.native.load" in graph["tritonx.runtime"]  # imported inside Runtime.load_native


def test_cycle_finder_finds_a_planted_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles_in_the_project():
    assert _cycles(_graph()) == []


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYER[parts[1] if len(parts) > 1 else "__init__"]


@pytest.mark.parametrize("module", sorted(m for m in _graph() if m.startswith("tritonx") and
                                          not m.startswith("tritonx.cli")))
def test_tritonx_imports_point_down(module):
    up = [i for i in _graph()[module] if i.startswith("tritonx") and _layer(i) > _layer(module)
          and not i.startswith(module + ".")]
    assert up == [], f"{module} (layer {_layer(module)}) imports higher layers: {up}"


@pytest.mark.parametrize(("lower", "upper"), [("tritonx.model", "tritonx.engine"), ("tritonx.engine", "tritonx.native"),
                                              ("tritonx.model", "tritonx.integration")])
def test_layer_never_imports_the_one_above(lower, upper):
    bad = {m: sorted(i for i in deps if i.startswith(upper)) for m, deps in _graph().items() if m.startswith(lower)}
    assert {m: v for m, v in bad.items() if v} == {}


def test_kernels_import_the_language_not_the_package():
    for module, deps in _graph().items():
        if module.startswith("utlx.kernels."):
            assert "utlx" not in deps, f"{module} imports utlx itself (utlx/__init__ imports the kernels)"


_ENVIRON = re.compile(r"\bos\.environ\b|\bgetenv\b|\bfrom os import environ\b")


def test_environment_read_only_in_the_settings_modules_and_the_startup_shim():
    readers = sorted(m for m, p in _files().items() if _ENVIRON.search(p.read_text()))
    assert set(readers) <= ENV_READERS, f"read the environment through tritonx.settings / utlx.settings: {readers}"
    assert {"tritonx.settings", "tritonx._startup"} <= set(readers)  # the check sees the readers it allows


def test_one_triton_version_parser():
    files = _files()
    parsers = sorted(m for m, p in files.items() if re.search(r"^def \w*parse_version\w*\(", p.read_text(), re.M))
    assert parsers == ["tritonx.compat.version"]
    readers = sorted(m for m, p in files.items() if "triton.__version__" in p.read_text())
    assert readers == ["tritonx.compat.installed"]


def test_one_target_class():
    classes = sorted(m for m, p in _files().items() if re.search(r"^class Target\b", p.read_text(), re.M))
    assert classes == ["tritonx.model.target"]


#: Scripts the tests run in child processes (no pytest there, so they set their own path).
_SCRIPTS = {"run_tutorial.py", "run_amd_case.py", "dsl_native_case.py", "dsl_interp_cases.py"}


def test_tests_import_their_helpers_one_way():
    """Through the root pyproject's pytest ``pythonpath`` only: no test module or conftest edits sys.path."""
    editors = []
    for folder in ("packages/core/tests", "packages/utlx/tests", "packages/plugin-template/tests", "tools/tests"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name in _SCRIPTS:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.path.insert", "sys.path.append"):
                    editors.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert editors == []
