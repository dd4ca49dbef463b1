"""Capturing stage pass lists as data."""

from __future__ import annotations

import threading

import pytest
import triton
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


def _blocking_pipeline(on_stage):
    """A pipeline whose llir transform calls ``on_stage()`` while the compile (and so the capture) runs."""

    def hold(text, ctx):
        on_stage()
        return text

    return tritonx.Pipeline("hold-capture").transform_stage("llir", tritonx.cache_key("hold-capture-v1")(hold))


def _run_threads(*targets, timeout=300):
    errors = []

    def wrap(fn):
        def body():
            try:
                fn()
            except BaseException as exc:  # reported below, with the thread's name
                errors.append(f"{threading.current_thread().name}: {type(exc).__name__}: {exc}")
        return body

    threads = [threading.Thread(target=wrap(fn), name=fn.__name__) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not [t.name for t in threads if t.is_alive()], "a thread hung"
    assert errors == []


def test_other_threads_do_not_see_always_compile_while_a_capture_runs():
    """Issue 28 item 4: capture used to set ``always_compile`` for the whole process while it compiled."""
    inside, checked = threading.Event(), threading.Event()
    seen = {}

    def on_stage():
        inside.set()
        assert checked.wait(60)

    def capturer():
        with tritonx.activate(_blocking_pipeline(on_stage)):
            tritonx.capture("cuda:90")

    def observer():
        assert inside.wait(120)
        seen["always_compile"] = triton.knobs.compilation.always_compile
        checked.set()

    _run_threads(capturer, observer)
    assert seen == {"always_compile": False}
    assert triton.knobs.compilation.always_compile is False


def test_overlapping_captures_leave_no_knob_set():
    """Two captures inside their compiles at once, the first ending first: ``always_compile`` was left True
    (the second's ``scope()`` restored what it saw on entry: the first's override)."""
    both_inside = threading.Barrier(2, timeout=120)
    first_done = threading.Event()

    def on_stage():
        both_inside.wait()
        if threading.current_thread().name == "second":
            assert first_done.wait(120)

    def first():
        tritonx.capture("cuda:90")
        first_done.set()

    def second():
        tritonx.capture("cuda:90")

    with tritonx.activate(_blocking_pipeline(on_stage)):
        _run_threads(first, second)
    assert triton.knobs.compilation.always_compile is False
    hits = []
    triton.knobs.compilation.listener = lambda *, cache_hit, **_: hits.append(cache_hit)
    try:
        tritonx.compile_for("cuda:90")
        tritonx.compile_for("cuda:90")
    finally:
        triton.knobs.compilation.listener = None
    assert hits == [False, True]  # the cache works again for everyone


def test_capture_runs_the_stages_of_a_cached_kernel_and_stores_nothing(fresh_cache):
    """Its compile really runs (a kernel already in the cache is captured in full) in a scratch cache: the
    process's cache files are left as they were (the old capture rewrote them), and another thread's compile
    of the cached kernel still hits while the capture runs (it used to miss: ``always_compile`` was global)."""
    inside, checked = threading.Event(), threading.Event()
    hits = []

    def on_stage():
        if threading.current_thread().name == "capturer":
            inside.set()
            assert checked.wait(120)

    def capturer():
        cap = tritonx.capture("cuda:90")
        assert len(cap["ttgir"]) > 10 and "tritongpu-pipeline" in cap.names("ttgir")

    def other():
        assert inside.wait(120)
        triton.knobs.compilation.listener = lambda *, cache_hit, **_: hits.append(cache_hit)
        try:
            tritonx.compile_for("cuda:90")
        finally:
            triton.knobs.compilation.listener = None
            checked.set()

    with tritonx.activate(_blocking_pipeline(on_stage)):
        tritonx.compile_for("cuda:90")  # into the cache, with the pipeline (its transform passes on this thread)
        files = {p: p.stat().st_ino for p in fresh_cache.rglob("*") if p.is_file()}
        _run_threads(capturer, other)
    assert hits == [True]
    assert {p: p.stat().st_ino for p in fresh_cache.rglob("*") if p.is_file()} == files
