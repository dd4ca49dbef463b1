"""tools/device/tlx_tutorial_tests.py without a GPU: the environments it builds (Meta's build never shares
sys.path with this repo's utlx), pytest runs of tutorial-style test files through its plugin, result parsing,
and the joined table."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_TESTS = '''
import os, sys
from triton.language.extra.tlx.tutorials.helper import VALUE

def test_hopper_gemm_pipelined():
    tlx = sys.modules["triton.language.extra.tlx"]
    assert os.environ["EXPECT_TLX_PATH"] in os.path.realpath(tlx.__file__), tlx.__file__
    assert "utlx" not in sys.modules or os.environ["EXPECT_TLX_PATH"] in os.path.realpath(sys.modules["utlx"].__file__)

def test_hopper_fa_ws():
    assert VALUE == 2, "boom: VALUE is " + str(VALUE)
'''


def _fake_tutorials(root: Path) -> Path:
    tutorials = root / "tlx" / "tutorials"
    (tutorials / "testing").mkdir(parents=True)
    (tutorials / "testing" / "__init__.py").write_text("")
    (tutorials / "testing" / "test_correctness.py").write_text(FAKE_TESTS)
    (tutorials / "helper.py").write_text("import triton.language.extra.tlx as tlx\nVALUE = 1\n")
    (tutorials / "broken-tut.py").write_text("import triton\nraise RuntimeError('0 active drivers')\n\ndef test_op():\n"
                                             "    pass\n")
    return tutorials


def _tests(mod):
    by_name = {t.id: t for t in mod.META_TESTS}
    return [by_name["test_hopper_gemm_pipelined"], by_name["test_hopper_fa_ws"],
            mod.MetaTest("broken::test_op", "broken-tut.py", "test_op", True)]


def test_the_ten_acceptance_tests_and_which_pass_on_metas_build(tlx_tutorials_mod):
    tests = tlx_tutorials_mod.META_TESTS
    assert len(tests) == 10 and sum(t.passes_on_meta for t in tests) == 8
    assert {t.id for t in tests if not t.passes_on_meta} == {"test_hopper_gemm_ws", "test_hopper_gemm_ws_warp_barrier"}


def test_meta_environment_holds_the_wheel_and_triton_but_nothing_of_the_repo(tlx_tutorials_mod, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}/packages/utlx/src{os.pathsep}{ROOT}/packages/core/src")
    monkeypatch.setenv("TRITONX_PTH_DIRS", "/somewhere")
    env = tlx_tutorials_mod.environment("meta", tmp_path / "wheel", tmp_path / "work")
    path = env["PYTHONPATH"].split(os.pathsep)
    assert path == [str(tlx_tutorials_mod.HARNESS), str(tlx_tutorials_mod.triton_site()), str(tmp_path / "wheel")]
    assert env["TRITON_PLUGIN_PATHS"] == str(tmp_path / "wheel/utlx_plugin/libutlx.so")
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "work/meta-triton-cache") and "TRITONX_PTH_DIRS" not in env
    assert env["UTLX_TUTORIALS_IMPL"] == "meta" and env["UTLX_TUTORIALS_DIR"] == str(tmp_path / "wheel/tlx/tutorials")
    utlx_env = tlx_tutorials_mod.environment("utlx", tmp_path / "wheel", tmp_path / "work")
    assert utlx_env["PYTHONPATH"].split(os.pathsep) == [str(tlx_tutorials_mod.HARNESS), *os.environ["PYTHONPATH"]
                                                        .split(os.pathsep)]


def test_runs_tutorial_test_files_as_they_are_on_utlx(tlx_tutorials_mod, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    _fake_tutorials(tmp_path / "wheel")
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))  # this test process's imports
    monkeypatch.setenv("EXPECT_TLX_PATH", str((ROOT / "packages/utlx/src").resolve()))
    got = tlx_tutorials_mod.run_meta_tests("utlx", tmp_path / "wheel", tmp_path / "work", _tests(tlx_tutorials_mod),
                                           timeout=300)
    assert got["test_hopper_gemm_pipelined"]["outcome"] == "passed", got
    failed = got["test_hopper_fa_ws"]
    assert failed["outcome"] == "failed" and "boom: VALUE is 1" in failed["first_error"]
    assert "output_tail" in failed and failed["passes_on_meta"]
    broken = got["broken::test_op"]
    assert broken["outcome"] == "error" and broken["first_error"] == "RuntimeError: 0 active drivers"


def test_runs_them_on_metas_build_in_a_clean_environment(tlx_tutorials_mod, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    triton = pytest.importorskip("triton")
    if not triton.__version__.startswith("3.8."):
        # Meta's build is a Triton 3.8.0 fork; its clean environment keeps this interpreter's other packages,
        # and beside Triton 3.9's it crashed (SIGSEGV at import, 2026-12-01): only 3.8 is a fair host.
        pytest.skip(f"Meta's triton-utlx 3.8.0 wheel runs beside Triton 3.8 only (this is {triton.__version__})")
    meta_wheel = tlx_tutorials_mod.meta_wheel()
    real = meta_wheel.meta_wheel_dir()
    if real is None:
        pytest.skip(meta_wheel.unavailable_reason())
    wheel = tmp_path / "wheel"
    _fake_tutorials(wheel)
    for item in real.iterdir():  # Meta's build, with the fake tutorials in place of its own
        if item.name != "tlx":
            (wheel / item.name).symlink_to(item)
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("EXPECT_TLX_PATH", str(real.resolve() / "utlx_plugin"))
    got = tlx_tutorials_mod.run_meta_tests("meta", wheel, tmp_path / "work", _tests(tlx_tutorials_mod)[:1],
                                           timeout=300)
    cell = got["test_hopper_gemm_pipelined"]
    assert cell["outcome"] == "passed", cell.get("output_tail")


def _report(impl, outcomes, host):
    return {"impl": impl, "meta_tests": {k: {"outcome": o, "first_error": "" if o == "passed" else f"{k} broke",
                                             "passes_on_meta": k != "gemm_ws"} for k, o in outcomes.items()},
            "host_checks": {k: ({"ok": True, "max_abs_error": [0.01]} if ok else {"ok": False, "first_error": "E: x"})
                            for k, ok in host.items()}}


def test_joined_table_and_the_verdict(tlx_tutorials_mod, tmp_path, capsys):
    utlx = _report("utlx", {"fa": "failed", "gemm_ws": "failed"}, {"fa": False})
    meta = _report("meta", {"fa": "passed", "gemm_ws": "failed"}, {"fa": True})
    text = tlx_tutorials_mod.table([utlx, meta])
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["test", "utlx", "meta"]
    assert lines[1].split()[:3] == ["fa", "failed", "passed"] and "fa broke" in lines[1]
    assert lines[3].split()[:4] == ["host:", "fa", "ERROR", "ok"] and "E: x" in lines[3]
    assert not tlx_tutorials_mod.all_good(utlx) and tlx_tutorials_mod.all_good(meta)  # gemm_ws fails on both
    for r in (utlx, meta):
        (tmp_path / f"{r['impl']}.json").write_text(json.dumps(r))
    assert tlx_tutorials_mod.main(["--join", str(tmp_path / "utlx.json"), str(tmp_path / "meta.json")]) == 0
    assert capsys.readouterr().out.strip() == text


def test_junit_and_first_error_parsing(tlx_tutorials_mod, tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text('<testsuites><testsuite><testcase name="a" time="1.26"/>'
                   '<testcase name="b" time="2"><failure message="AssertionError: x&#10;more">tb</failure></testcase>'
                   '<testcase name="c"><skipped message="Requires Hopper GPU"/></testcase></testsuite></testsuites>')
    got = tlx_tutorials_mod._junit_outcomes(xml)
    assert got["a"] == {"outcome": "passed", "seconds": 1.3, "first_error": ""}
    assert got["b"]["outcome"] == "failed" and got["b"]["first_error"] == "AssertionError: x"
    assert got["c"]["outcome"] == "skipped" and got["c"]["first_error"] == "Requires Hopper GPU"
    assert tlx_tutorials_mod.first_error_line("x\nE   TypeError: bad\nE   more\n") == "TypeError: bad"
    assert tlx_tutorials_mod.first_error_line("nothing") == ""
