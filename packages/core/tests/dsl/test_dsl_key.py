"""A language's cache key: derived from the sources of its ops (an edit is a new key), or stated."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from tritonx import dsl

LANGUAGE = '''
from tritonx import dsl
{imports}
lang = dsl.Language("{name}")


@lang.op
def {op}(x: dsl.Tensor()):
    """{doc}"""


@{op}.emit("*")
def _(ctx, x):
    return {result}
'''


def _language(name: str, op: str = "ident", doc: str = "Identity.", result: str = "x", imports: str = "") -> str:
    """The source of a one-op language module (every test's language differs only in these)."""
    return LANGUAGE.format(name=name, op=op, doc=doc, result=result, imports=imports)


def _load(tmp_path, n: int, extra: str = ""):
    path = tmp_path / f"keyed_{n}.py"
    path.write_text(_language(f"keyed_{n}", result="x" + extra))
    spec = importlib.util.spec_from_file_location(f"keyed_{n}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.lang


def test_an_edited_implementation_is_a_new_key(tmp_path):
    first = _load(tmp_path, 1).cache_key()
    assert first == _load(tmp_path, 1).cache_key()  # same sources, same key (in every process)
    assert _load(tmp_path, 1, extra="  # an edit").cache_key() != first


def test_registering_an_implementation_changes_the_key(tmp_path):
    lang = _load(tmp_path, 2)
    before = lang.cache_key()
    lang.get("ident").interpret(lambda ctx, x: x)
    assert lang.cache_key() != before


def test_a_helper_module_counts_once_added(tmp_path):
    lang = _load(tmp_path, 3)
    helper = tmp_path / "helper.py"
    helper.write_text("FACTOR = 2\n")
    lang.add_source(helper)
    before = lang.cache_key()
    helper.write_text("FACTOR = 3\n")
    lang.changed()
    assert lang.cache_key() != before


def test_a_stated_key_wins():
    assert dsl.Language("stated", cache_key="v2").cache_key() == "stated:v2"
    assert dsl.Language("called", cache_key=lambda: "v3").cache_key() == "called:v3"


def test_the_language_pass_carries_the_key_into_copies():
    lang = dsl.Language("copied", cache_key="v1")
    pipeline = lang.pipeline().copy("renamed")
    (edit,) = pipeline.edits
    assert edit.new.fn.cache_key() == "copied-lower:copied:v1"
    assert lang.active_in([pipeline])
    with pytest.raises(Exception, match="add passes before the language's pipeline is built"):
        lang.insert_after("tritongpu-coalesce", lambda module, ctx: None)


def test_a_helper_the_implementation_calls_is_in_the_key_without_add_source(tmp_path, monkeypatch):
    """Issue 28 item 1 for level 3: an op implementation calling a helper in another module is keyed by it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "dsl_key_helper.py").write_text("def scale(ctx, x):\n    return x * 2\n")
    (tmp_path / "helped_4.py").write_text(_language("helped_4", op="scaled", doc="x times the helper's factor.",
                                                     result="dsl_key_helper.scale(ctx, x)",
                                                     imports="import dsl_key_helper\n"))

    def key() -> str:
        for name in ("dsl_key_helper", "helped_4"):
            sys.modules.pop(name, None)
        importlib.invalidate_caches()
        return importlib.import_module("helped_4").lang.cache_key()

    first = key()
    assert key() == first
    (tmp_path / "dsl_key_helper.py").write_text("def scale(ctx, x):\n    return x * 3  # another factor\n")
    assert key() != first  # the helper's source is in no file the op's functions were defined in
