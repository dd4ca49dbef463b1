"""Capturing stage pass lists as data."""

from __future__ import annotations

import pytest
import tritonx
from tritonx import compat


@pytest.mark.smoke
@pytest.mark.parametrize("target", ["cuda:80", "cuda:90", "cuda:100", "hip:gfx942", "hip:gfx950"])
def test_capture_lists_every_pass_stage(target):
    cap = tritonx.capture(target)
    assert {"ttir", "ttgir", "llir"} <= set(cap)
    ttgir = cap["ttgir"]
    assert ttgir[0].name == "convert-triton-to-tritongpu"
    assert [p.index for p in ttgir] == list(range(len(ttgir)))
    # occurrences count repeated passes within the stage
    canon = [p for p in ttgir if p.name == "canonicalize"]
    assert [p.occurrence for p in canon] == list(range(len(canon)))
    assert all(p.adder.startswith(("passes.", "nvidia.", "amd.")) for s in cap for p in cap[s])


@pytest.mark.smoke
def test_capture_cuda90_matches_measured_counts():
    cap = tritonx.capture("cuda:90")
    expected_ttir = {(3, 6): 8, (3, 7): 8, (3, 8): 7, (3, 9): 7}[compat.TRITON_VERSION[:2]]
    assert len(cap["ttir"]) == expected_ttir
    names = cap.names("ttgir")
    assert "tritongpu-pipeline" in names and "tritongpu-accelerate-matmul" in names
    pipe = next(p for p in cap["ttgir"] if p.name == "tritongpu-pipeline")
    assert pipe.adder == "passes.ttgpuir.add_pipeline"
    assert pipe.args[0] == 3  # num_stages default


def test_capture_marks_active_edits():
    p = tritonx.Pipeline("marks").disable("tritongpu-pipeline").insert_after(
        "tritongpu-coalesce", lambda m, c: None, pass_name="noop")
    with tritonx.activate(p):
        cap = tritonx.capture("cuda:90")
    ttgir = cap["ttgir"]
    disabled = [x for x in ttgir if x.mark == "disabled"]
    assert [x.name for x in disabled] == ["tritongpu-pipeline"]
    i = next(i for i, x in enumerate(ttgir) if x.name == "tritongpu-coalesce")
    assert ttgir[i + 1].mark == "inserted" and ttgir[i + 1].name == "python:noop"


def test_capture_rejects_bad_target():
    with pytest.raises(ValueError, match="cuda:90"):
        tritonx.capture("nvidia90")
