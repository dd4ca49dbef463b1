"""``override_pipeline`` failures name the pipeline (issue 28, item 11).

Today a stage removed by the override surfaces from Triton as ``ValueError: 'ttir' is not in list``, and a
stage added after the binary one that returns bytes as a ``UnicodeDecodeError`` when Triton reads it back.
"""

from __future__ import annotations

import pytest
import tritonx
from tritonx.errors import PassFailedError, PipelineError


def _compile_with(pipeline: tritonx.Pipeline, target: str = "cuda:90"):
    with tritonx.activate(pipeline):
        return tritonx.compile_for(target)


def test_a_removed_stage_names_the_pipeline():
    def drop_ttir(stages, ctx):
        del stages["ttir"]

    with pytest.raises(PipelineError) as info:
        _compile_with(tritonx.Pipeline("dropper").override_pipeline(drop_ttir))
    message = str(info.value)
    assert "override_pipeline of pipeline 'dropper' (override_pipeline(" in message
    assert "removed stage(s) 'ttir'" in message and "cuda:90" in message
    assert "\n" not in message


def test_a_stage_that_is_not_callable_names_the_pipeline():
    def break_llir(stages, ctx):
        stages["llir"] = "not a function"

    with pytest.raises(PipelineError, match=r"pipeline 'typo'.*set stage 'llir' to str, not a callable"):
        _compile_with(tritonx.Pipeline("typo").override_pipeline(break_llir), "hip:gfx942")


def test_an_added_stage_that_raises_names_the_pipeline_and_the_stage():
    def add_broken(stages, ctx):
        def broken(src, metadata):
            raise KeyError("missing")

        stages["stats"] = broken

    with pytest.raises(PassFailedError, match=r"pipeline 'extra'.*raised in stage 'stats'.*KeyError"):
        _compile_with(tritonx.Pipeline("extra").override_pipeline(add_broken))


def test_an_added_stage_returning_bytes_after_the_binary_names_the_pipeline():
    def add_bytes(stages, ctx):
        stages["bogus"] = lambda src, metadata: src  # the cubin's bytes, under a name Triton reads as text

    with pytest.raises(PassFailedError) as info:
        _compile_with(tritonx.Pipeline("adder").override_pipeline(add_bytes))
    assert "pipeline 'adder': stage 'bogus' added by override_pipeline(" in str(info.value)
    assert "returned bytes" in str(info.value) and "'cubin'" in str(info.value)


def test_an_added_text_stage_still_works():
    def add_text(stages, ctx):
        stages["lines"] = lambda src, metadata: f"{len(src)} bytes of cubin\n"

    kernel = _compile_with(tritonx.Pipeline("lines").override_pipeline(add_text))
    assert kernel.asm["lines"] == f"{len(kernel.asm['cubin'])} bytes of cubin\n"
