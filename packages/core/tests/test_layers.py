"""The project's modules import one way (issue 14), read the environment in one place, parse versions once.

Walks the imports of both packages (``tritonx`` and ``utlx``): no import circles anywhere, and tritonx-core's
layers point down: ``model -> engine -> integration -> plugins/native/dsl -> runtime -> public -> cli``;
``compat``, ``seams`` (every change to Triton itself), ``settings`` and ``errors`` sit below everything.
Every import counts: inside functions (how
layers used to point back up) and under ``if TYPE_CHECKING:`` too. Calls count too (issue 30): only the
public front (``tritonx/__init__``, ``public``, the CLI) and ``runtime`` itself know which runtime is
current; the layers below are handed the runtime part they act on, so no upward dependency hides in a
call to an ambient runtime.
"""

from __future__ import annotations

import ast
import re

import pytest
from import_graph import ROOT, ambient_uses, in_front
from import_graph import cycles as _cycles
from import_graph import files as _files
from import_graph import graph as _graph

LAYER = {"compat": 0, "seams": 0, "errors": 0, "settings": 0, "__about__": 0, "data": 0, "model": 1, "engine": 2,
         "integration": 3, "plugins": 4, "native": 4, "dsl": 4, "_startup": 4, "runtime": 5, "public": 6, "__init__": 7,
         "cli": 8}
#: The only modules that may read the environment: the settings modules, and the start-up shim that runs
#: before any package can be imported.
ENV_READERS = {"tritonx.settings", "utlx.settings", "tritonx._startup"}


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


@pytest.mark.parametrize("module", sorted(m for m in _files() if m.startswith("tritonx") and not in_front(m)))
def test_no_call_through_the_ambient_runtime_below_the_front(module):
    """Below the public front nothing asks for the current runtime: it is handed what it needs, typed."""
    assert ambient_uses(module, _files()[module]) == []


def test_ambient_runtime_check_finds_planted_uses(tmp_path):
    pkg = tmp_path / "tritonx" / "engine"
    pkg.mkdir(parents=True)
    sample = pkg / "sample.py"
    sample.write_text("from .. import _current\nfrom ..runtime import current\nimport importlib\n"
                      "import tritonx.public\ncurrent = 1  # a local name is fine\n"
                      "def f():\n    _current.runtime().names\n    tritonx.runtime.current()\n"
                      "    importlib.import_module('tritonx.runtime')\n")
    uses = ambient_uses("tritonx.engine.sample", sample)
    assert sorted(int(u.split(": ", 1)[0].rsplit(":", 1)[1]) for u in uses) == [1, 2, 4, 7, 8, 9], uses
    assert not in_front("tritonx.engine.sample") and in_front("tritonx") and in_front("tritonx.cli.app")


def test_the_front_still_reaches_the_current_runtime():
    """The check above can fail: the front's own uses are seen (else it would pass for a broken walk)."""
    files = _files()
    assert ambient_uses("tritonx.public", files["tritonx.public"])
    assert ambient_uses("tritonx.cli.doctor_cmd", files["tritonx.cli.doctor_cmd"])


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
_SCRIPTS = {"run_tutorial.py", "run_amd_case.py", "run_blackwell_case.py", "dsl_native_case.py", "dsl_interp_cases.py"}


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
