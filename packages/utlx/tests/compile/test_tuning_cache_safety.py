"""``utlx.matmul``'s disk tuning cache never fails a matmul and never trusts a file it should not.

Issue 11, item 7: a deeply nested JSON escaped as ``RecursionError``; a file owned by another user (or
writable by others) in a shared directory was trusted; the temp name was predictable and a symbolic
link planted there was followed.
"""

from __future__ import annotations

import importlib
import json
import os
import stat
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

m = importlib.import_module("utlx.matmul")  # ``utlx.matmul`` the attribute is the function
KEY = m.TuningCache.key("NVIDIA H200", "float16", True, 4096, 4096, 4096)


def test_deeply_nested_json_reads_as_empty(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    assert m.TuningCache(path).get(KEY) is None  # no RecursionError
    m.TuningCache(path).put(KEY, "winner")
    assert m.TuningCache(path).get(KEY) == "winner"


def test_file_writable_by_others_is_ignored(tmp_path):
    path = tmp_path / "t.json"
    m.TuningCache(path).put(KEY, "mine")
    assert m.TuningCache(path).get(KEY) == "mine"
    os.chmod(path, 0o666)  # anyone could have planted a choice in it
    assert m.TuningCache(path).get(KEY) is None


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="changing a file's owner needs root")
def test_file_owned_by_another_user_is_ignored(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({KEY: {"candidate": "planted"}}))
    os.chmod(path, 0o644)
    assert m.TuningCache(path).get(KEY) == "planted"  # ours: trusted
    os.chown(path, 12345, 12345)
    assert m.TuningCache(path).get(KEY) is None


def test_symlinks_are_not_followed_and_temp_names_are_not_predictable(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path = tmp_path / "cache" / "t.json"
    path.parent.mkdir()
    os.symlink(victim, path.parent / f"{path.name}.{os.getpid()}.tmp")  # the old predictable temp name
    m.TuningCache(path).put(KEY, "winner")
    assert victim.read_text() == "precious\n"
    assert m.TuningCache(path).get(KEY) == "winner"
    os.unlink(path)
    os.symlink(victim, path)  # the cache file itself a link to another file: not read through
    victim.write_text(json.dumps({KEY: {"candidate": "via-link"}}))
    assert m.TuningCache(path).get(KEY) is None
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()] == []


# --------------------------------------------------------------------------------------------------
# Issue 28, items 7, 9, 10 and 12: FIFOs, concurrent writers, partial tunings, budgets, the size limit

UTLX_SRC = Path(__file__).resolve().parents[2] / "src"
CORE_SRC = Path(__file__).resolve().parents[3] / "core" / "src"


def _python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A fresh interpreter running ``code`` with this checkout first on the path (a hang fails, not waits)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(UTLX_SRC), str(CORE_SRC)]), UTLX_DISABLE="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)


def test_a_fifo_at_the_cache_path_never_hangs(tmp_path):
    path = tmp_path / "t.json"
    os.mkfifo(path, 0o600)  # planted: open() for reading would wait for a writer forever
    done = _python(f"""
        from pathlib import Path
        from utlx.matmul import TuningCache
        cache = TuningCache(Path({str(path)!r}))
        print(cache.get("k"))
        cache.put("k", "winner")
        print(cache.get("k"))
        """, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["None", "winner"]  # the FIFO was ignored, then replaced by a real file
    assert stat.S_ISREG(os.lstat(path).st_mode)


WRITER = """
    import os, sys, time
    from pathlib import Path
    from utlx.matmul import TuningCache
    path, me, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    while not go.exists():
        time.sleep(0.001)
    for i in range(25):
        TuningCache(path).put(f"{me}-{i}", f"cand-{me}-{i}")
    """


def test_concurrent_writers_lose_no_entry(tmp_path):
    path = tmp_path / "t.json"
    go = tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(UTLX_SRC), str(CORE_SRC)]), UTLX_DISABLE="1")
    writers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(path), f"w{n}", str(go)],
                                env=env, stderr=subprocess.PIPE, text=True) for n in range(4)]
    time.sleep(3.0)  # every writer imported utlx and waits
    go.write_text("go")
    for w in writers:
        assert w.wait(timeout=300) == 0, w.stderr.read()[-2000:]
    data = json.loads(path.read_text())
    assert len(data) == 100
    assert all(data[f"w{n}-{i}"]["candidate"] == f"cand-w{n}-{i}" for n in range(4) for i in range(25))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _big_cache(path: Path, with_key: str) -> bytes:
    """A valid cache just over the size limit that holds ``with_key``."""
    data = {with_key: {"candidate": "old-winner"}}
    filler = "x" * 1000
    i = 0
    while len(json.dumps(data)) <= m.TuningCache.MAX_BYTES:
        data[f"filler-{i}"] = {"candidate": filler}
        i += 1
    text = json.dumps(data).encode()
    path.write_bytes(text)
    os.chmod(path, 0o600)
    return text


def test_a_cache_over_the_size_limit_is_not_reset_silently(tmp_path):
    path = tmp_path / "t.json"
    before = _big_cache(path, KEY)
    cache = m.TuningCache(path)
    with pytest.warns(m.TuningCacheWarning, match=r"over its 4194304-byte limit: it is neither read nor overwritten"):
        assert cache.get(KEY) is None
    cache.put("new", "winner")  # warned once already for this file
    assert path.read_bytes() == before  # not replaced by a one-entry file


def test_a_write_that_would_pass_the_size_limit_is_refused_with_a_warning(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    monkeypatch.setattr(m.TuningCache, "MAX_BYTES", 200)
    cache = m.TuningCache(path)
    cache.put("a", "first")
    before = path.read_bytes()
    with pytest.warns(m.TuningCacheWarning, match="would grow past its 200-byte limit"):
        cache.put("b", "x" * 300)
    assert path.read_bytes() == before and cache.get("a") == "first"


def test_a_partial_tuning_is_not_final(tmp_path):
    path = tmp_path / "t.json"
    cache = m.TuningCache(path)
    cache.put(KEY, "hasty", partial=True)
    assert cache.get(KEY) is None  # a later process tunes again
    assert cache.entry(KEY) == {"candidate": "hasty", "partial": True}
    cache.put(KEY, "thorough")
    assert cache.get(KEY) == "thorough"
    cache.put(KEY, "hasty-again", partial=True)  # never replaces a complete tuning
    assert cache.get(KEY) == "thorough"


def _clocked(step: float = 1.0):
    now = [0.0]

    def clock():
        now[0] += step  # every question costs a second
        return now[0]

    return clock


def test_select_best_reports_a_budget_cut_as_partial():
    cands = [types.SimpleNamespace(id=f"c{i}") for i in range(5)]
    check, timer = (lambda c: None), (lambda c, rep_ms: 1.0)
    cut = m.select_best(cands, check, timer, budget_s=2.5, clock=_clocked())
    assert cut.winner is not None and cut.partial and cut.to_dict()["partial"] is True
    full = m.select_best(cands, check, timer, budget_s=None, clock=_clocked())
    assert not full.partial


@pytest.mark.parametrize("budget", [-1.0, float("nan"), "10", True])
def test_bad_budgets_are_refused_by_name(budget):
    cands = [types.SimpleNamespace(id="c")]
    with pytest.raises(ValueError, match=r"budget_s must be a number of seconds >= 0"):
        m.select_best(cands, lambda c: None, lambda c, rep_ms: 1.0, budget_s=budget)


@pytest.mark.parametrize("var", ["UTLX_MATMUL_TUNE_BUDGET_S", "UTLX_ATTENTION_TUNE_BUDGET_S"])
@pytest.mark.parametrize(("text", "why"), [("-1", "must be >= 0"), ("nan", r"is not a number \(NaN\)")])
def test_budget_settings_refuse_negative_and_nan(monkeypatch, var, text, why):
    from tritonx.settings import SettingsError
    from utlx.settings import UtlxSettings

    monkeypatch.setenv(var, text)
    settings = UtlxSettings()
    field = var.removeprefix("UTLX_").lower()
    with pytest.raises(SettingsError, match=rf"^{var}='{text}' {why}$"):
        getattr(settings, field)
    with pytest.raises(SettingsError, match=var):
        setattr(settings, field, float("nan"))
    monkeypatch.setenv(var, "0")
    assert getattr(settings, field) == 0.0
