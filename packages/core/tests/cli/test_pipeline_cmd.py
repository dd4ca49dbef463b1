"""``tritonx pipeline``: stock pass lists per stage, plugin edits marked, errors."""

from __future__ import annotations

import tritonx


def test_lists_stock_ttgir_passes_in_order(cli):
    result = cli("pipeline", "--target", "cuda:90", "--stage", "ttgir")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "tritongpu-pipeline" in out and "passes.ttgpuir.add_pipeline" in out
    assert out.index("tritongpu-coalesce") < out.index("tritongpu-pipeline")
    assert "none (stock)" in out
    assert "stage ttir" not in out  # --stage keeps one stage


def test_json_has_every_stage_with_indices(cli):
    data = cli.json("pipeline", "--target", "cuda:90")
    assert set(data["stages"]) >= {"ttir", "ttgir", "llir"}
    ttgir = data["stages"]["ttgir"]
    assert [p["index"] for p in ttgir] == list(range(len(ttgir)))
    pipe = next(p for p in ttgir if p["name"] == "tritongpu-pipeline")
    assert pipe["adder"].endswith("add_pipeline") and pipe["mark"] is None
    assert data["active_pipelines"] == []


def test_plugin_edits_are_marked_with_their_pipeline(cli, no_pipelining_plugin):
    data = cli.json("pipeline", "--target", "cuda:90", "--stage", "ttgir", "--plugins", "cli-test")
    ttgir = data["stages"]["ttgir"]
    assert list(data["stages"]) == ["ttgir"]
    disabled = next(p for p in ttgir if p["name"] == "tritongpu-pipeline")
    assert (disabled["mark"], disabled["edit"]) == ("disabled", "cli-no-pipelining")
    names = [p["name"] for p in ttgir]
    inserted = ttgir[names.index("tritongpu-coalesce") + 1]
    assert inserted["mark"] == "inserted" and inserted["edit"] == "cli-no-pipelining"
    assert data["active_pipelines"] == ["cli-no-pipelining"]
    # the command leaves the process as it found it
    assert not tritonx.is_plugin_enabled("cli-test")

    text = cli("pipeline", "--stage", "ttgir", "--plugins", "cli-test").stdout
    assert "disabled by cli-no-pipelining" in text and "inserted by cli-no-pipelining" in text


def test_hip_target(cli):
    data = cli.json("pipeline", "--target", "hip:gfx942", "--stage", "ttgir")
    assert any(p["name"].startswith("tritonamdgpu-") for p in data["stages"]["ttgir"])


def test_unknown_plugin_is_named(cli):
    result = cli("pipeline", "--plugins", "no-such-plugin")
    assert result.exit_code == 1
    assert "tritonx pipeline: error: unknown plugin(s) 'no-such-plugin'" in result.output
    assert "Traceback" not in result.output


def test_bad_target(cli):
    result = cli("pipeline", "--target", "cuda:hopper")
    assert result.exit_code == 1
    assert "compute capability" in result.output and "cuda:hopper" in result.output
    result = cli("pipeline", "--target", "metal:1")
    assert result.exit_code == 1 and "unknown backend 'metal'" in result.output


def test_unknown_stage(cli):
    result = cli("pipeline", "--stage", "ptx")
    assert result.exit_code == 1
    assert "stage 'ptx' runs no passes" in result.output and "ttgir" in result.output
