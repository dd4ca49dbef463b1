"""``utlx.matmul``'s disk tuning cache never fails a matmul and never trusts a file it should not.

Issue 11, item 7: a deeply nested JSON escaped as ``RecursionError``; a file owned by another user (or
writable by others) in a shared directory was trusted; the temp name was predictable and a symbolic
link planted there was followed.
"""

from __future__ import annotations

import importlib
import json
import os

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
