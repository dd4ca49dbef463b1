"""The harness helpers: finding Meta's wheel (``meta_wheel.py``, no network needed here) and importing
tutorial files under ``triton.language.extra.tlx.tutorials`` (``tutorial_package.py``)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import meta_wheel
import pytest
import tutorial_package

WHEEL_NAME = f"triton_utlx-{meta_wheel.VERSION}-py3-none-manylinux_2_28_x86_64.whl"


def _fake_wheel(folder, marker="print('tutorial')\n"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / WHEEL_NAME
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("tlx/tutorials/hopper_x.py", marker)
        zf.writestr("utlx/__init__.py", "")
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(meta_wheel.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.delenv(meta_wheel.ENV_DIR, raising=False)
    return tmp_path / "cache"


def test_env_folder_with_the_wheel_is_unpacked_into_the_cache_once(tmp_path, cache, monkeypatch):
    _fake_wheel(tmp_path / "extra")
    monkeypatch.setenv(meta_wheel.ENV_DIR, str(tmp_path / "extra"))
    root = meta_wheel.meta_wheel_dir()
    assert root == cache / meta_wheel.UNPACKED
    script = root / "tlx" / "tutorials" / "hopper_x.py"
    assert script.read_text() == "print('tutorial')\n"
    script.write_text("kept")  # a second lookup reuses the unpacked folder
    assert meta_wheel.tutorials_dir() == root / "tlx" / "tutorials" and script.read_text() == "kept"


def test_env_may_name_the_wheel_file_or_an_unpacked_folder(tmp_path, cache, monkeypatch):
    wheel = _fake_wheel(tmp_path / "w")
    monkeypatch.setenv(meta_wheel.ENV_DIR, str(wheel))
    unpacked = meta_wheel.meta_wheel_dir()
    assert (unpacked / "tlx" / "tutorials" / "hopper_x.py").is_file()
    monkeypatch.setenv(meta_wheel.ENV_DIR, str(unpacked))
    assert meta_wheel.meta_wheel_dir() == unpacked


def test_a_useless_env_value_gives_none_and_says_why(tmp_path, cache, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(meta_wheel.ENV_DIR, str(tmp_path / "empty"))
    assert meta_wheel.meta_wheel_dir() is None
    reason = meta_wheel.unavailable_reason()
    assert meta_wheel.ENV_DIR in reason and str(tmp_path / "empty") in reason and meta_wheel.SPEC in reason


def test_offline_download_gives_none_and_says_why(cache, monkeypatch):
    calls = []

    def offline(cmd, **kwargs):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: Could not find a version (network unreachable)")

    monkeypatch.setattr(meta_wheel.subprocess, "run", offline)
    assert meta_wheel.meta_wheel_dir() is None
    assert calls and calls[0][1:4] == ["-m", "pip", "download"] and meta_wheel.SPEC in calls[0]
    assert "network unreachable" in meta_wheel.unavailable_reason()


def test_a_downloaded_wheel_is_cached_outside_the_repo(cache, monkeypatch):
    def download(cmd, **kwargs):
        _fake_wheel(Path(cmd[cmd.index("-d") + 1]))  # what pip does: the wheel lands in the -d folder
        return subprocess.CompletedProcess(cmd, 0, "Saved", "")

    monkeypatch.setattr(meta_wheel.subprocess, "run", download)
    root = meta_wheel.meta_wheel_dir()
    assert root == cache / meta_wheel.UNPACKED and (root / "tlx" / "tutorials" / "hopper_x.py").is_file()
    assert [p.name for p in (cache / "wheels").iterdir()] == [WHEEL_NAME]  # no download scratch left behind
    monkeypatch.setattr(meta_wheel.subprocess, "run", None)  # cached now: no second download
    assert meta_wheel.meta_wheel_dir() == root


def test_tutorial_files_import_under_the_tlx_tutorials_package(tmp_path):
    pytest.importorskip("utlx")
    body = "import triton.language.extra.tlx as tlx\nTLX = tlx\n"
    (tmp_path / "plain_tut.py").write_text(body)
    imp = "from triton.language.extra.tlx.tutorials.plain_tut import TLX as T2\n"
    (tmp_path / "dash-tut.py").write_text(body + imp)
    with tutorial_package.tutorials_package(tmp_path) as pkg:
        assert pkg.__name__ == tutorial_package.PACKAGE and pkg.__path__ == [str(tmp_path)]
        plain = tutorial_package.load("plain_tut")
        dash = tutorial_package.load("dash-tut")
        assert dash.__name__ == f"{tutorial_package.PACKAGE}.dash_tut"
        assert plain.TLX is dash.T2 is sys.modules[tutorial_package.PARENT]
        assert callable(plain.TLX.local_alloc)  # the implementation under test, not a stand-in
        assert tutorial_package.load("plain_tut") is plain
    assert not [n for n in sys.modules if n.startswith(tutorial_package.PACKAGE)]


def test_a_tutorial_that_fails_to_import_leaves_nothing_behind(tmp_path):
    pytest.importorskip("utlx")
    (tmp_path / "bad-tut.py").write_text("raise TypeError('at import')\n")
    with tutorial_package.tutorials_package(tmp_path), pytest.raises(TypeError, match="at import"):
        tutorial_package.load("bad-tut")
    assert tutorial_package.module_name("bad-tut") not in sys.modules


def test_the_interpreter_runner_catches_wrong_and_non_finite_results():
    torch = pytest.importorskip("torch")
    import run_tutorial

    ref = torch.randn(64, 64)
    assert run_tutorial.compare([(ref.half(), ref, 1e-2, 0.0)])["ok"]
    wrong = ref.clone()
    wrong[3, 5] += 0.5
    result = run_tutorial.compare([(ref, ref, 0.0, 0.0), (wrong, ref, 1e-2, 1e-2)])
    assert not result["ok"] and result["max_abs_error"][1] == pytest.approx(0.5, abs=1e-6)
    nan = ref.clone()
    nan[0, 0] = float("nan")
    assert not run_tutorial.compare([(nan, ref, 1.0, 1.0)])["ok"]
    assert run_tutorial.first_error(ValueError("bad shape\nmore")) == "ValueError: bad shape"


def test_the_runner_refuses_to_run_outside_the_interpreter(monkeypatch):
    import run_tutorial

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert run_tutorial.main(["hopper_gemm_pipelined"]) == 3
