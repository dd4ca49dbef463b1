"""A language's own passes around and in place of stock passes (``insert_after``/``insert_before``/``replace``),
each shown in the compiled kernel."""

from __future__ import annotations

import pytest
import tritonx
from tritonx import dsl
from tritonx.errors import DslError
from tritonx_testutil import ptx_counts


def test_a_language_replaces_a_stock_pass(compile_probe):
    calls: list[str] = []
    lang = dsl.Language("swapper", cache_key="v1")
    lang.replace("tritongpu-pipeline", lambda module, ctx: calls.append(ctx.stage), stage="ttgir",
                 pass_name="swapper-no-pipeline")
    stock = compile_probe()
    with tritonx.activate(lang.pipeline()):
        edited = compile_probe()
        assert calls == ["ttgir"]
        cap = tritonx.capture("cuda:90")
    assert ptx_counts(stock)["cp.async"] > 0
    assert ptx_counts(edited)["cp.async"] == 0  # the software pipeliner did not run
    marks = [(x.name, x.mark) for x in cap["ttgir"] if x.mark in ("replaced", "replacement")]
    assert marks == [("tritongpu-pipeline", "replaced"), ("python:swapper-no-pipeline", "replacement")]


def test_a_replacement_comes_before_the_pipeline_is_built():
    lang = dsl.Language("late", cache_key="v1")
    lang.pipeline()
    with pytest.raises(DslError, match="add passes before the language's pipeline is built"):
        lang.replace("tritongpu-pipeline", lambda module, ctx: None)
