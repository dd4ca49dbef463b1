"""tritonx.settings: one parser for booleans and lists, TRITONX_PLUGINS parsed once, overrides and scope()."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from tritonx.settings import FALSE_WORDS, TRUE_WORDS, PluginChoice, SettingsError, parse_bool, parse_list, settings

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("word", [*TRUE_WORDS, "TRUE", " On "])
def test_true_words(word):
    assert parse_bool(word, default=False, var="X") is True


@pytest.mark.parametrize("word", [*FALSE_WORDS, "FALSE", " Off "])
def test_false_words(word):
    assert parse_bool(word, default=True, var="X") is False


@pytest.mark.parametrize("default", [True, False])
def test_empty_or_unset_is_the_default(default):
    assert parse_bool(None, default=default, var="X") is default
    assert parse_bool("  ", default=default, var="X") is default


def test_other_words_are_an_error_naming_the_variable():
    with pytest.raises(SettingsError, match=r"UTLX_DISABLE='maybe' is not a boolean"):
        parse_bool("maybe", default=False, var="UTLX_DISABLE")


@pytest.mark.parametrize(("text", "items"), [(None, ()), ("", ()), (" : :", ()), ("/a.so::/b.so ", ("/a.so", "/b.so")),
                                              (" x ", ("x",))])
def test_list_parser_strips_and_drops_empty_items(text, items):
    assert parse_list(text, sep=":") == items


@pytest.mark.parametrize(("text", "mode", "names"), [
    (None, "default", ()), ("", "default", ()), ("  ", "default", ()), ("none", "none", ()), ("NONE", "none", ()),
    ("all", "all", ()), (" All ", "all", ()), ("utlx", "names", ("utlx",)), ("a, b,,c ", "names", ("a", "b", "c")),
])
def test_plugin_choice(text, mode, names):
    choice = PluginChoice.parse(text)
    assert (choice.mode, choice.names) == (mode, names)


def test_plugin_choice_allows():
    assert PluginChoice.parse(None).allows("utlx", default_enabled=True)
    assert not PluginChoice.parse(None).allows("other", default_enabled=False)
    assert PluginChoice.parse("all").allows("other", default_enabled=False)
    assert not PluginChoice.parse("none").allows("utlx", default_enabled=True)
    assert not PluginChoice.parse("other").allows("utlx", default_enabled=True)
    assert PluginChoice.parse("other,utlx").allows("utlx", default_enabled=False)


def test_fields_read_the_environment_live_and_overrides_win(monkeypatch):
    monkeypatch.setenv("TRITONX_NATIVE_PLUGINS", "/a.so::/b.so ")
    assert settings.native_plugins == ("/a.so", "/b.so")
    monkeypatch.setenv("TRITONX_NATIVE_PLUGINS", "/c.so")
    assert settings.native_plugins == ("/c.so",)
    with settings.scope():
        settings.native_plugins = ("/x.so",)
        assert settings.native_plugins == ("/x.so",)
    assert settings.native_plugins == ("/c.so",)


def test_scope_restores_the_environment(monkeypatch):
    monkeypatch.delenv("TRITON_PLUGIN_PATHS", raising=False)
    with settings.scope():
        assert settings.add_triton_plugin_path("/p/one.so")
        assert not settings.add_triton_plugin_path("/p/one.so")
        assert settings.add_triton_plugin_path("/p/two.so")
        assert os.environ["TRITON_PLUGIN_PATHS"] == "/p/one.so:/p/two.so"
    assert "TRITON_PLUGIN_PATHS" not in os.environ


def test_cache_dir_defaults(monkeypatch):
    monkeypatch.delenv("TRITONX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert settings.cache_dir == "/xdg/tritonx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert settings.cache_dir == os.path.join(os.path.expanduser("~"), ".cache", "tritonx")
    monkeypatch.setenv("TRITONX_CACHE_DIR", "/mine")
    assert settings.cache_dir == "/mine"


def test_apply_environment_reads_the_parsed_choice(monkeypatch, runtime):
    import tritonx

    monkeypatch.setenv("TRITONX_PLUGINS", "none")
    assert tritonx.apply_environment() == []
    with pytest.raises(tritonx.PluginError, match="unknown plugin"):
        tritonx.apply_environment("no-such-plugin")


def _readme_variables() -> list[str]:
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Environment variables"):]
    table = table[: table.index("\n## ", 3)]
    return re.findall(r"^\| `([A-Z_0-9]+)` \|", table, flags=re.M)


def test_readme_table_lists_every_setting_of_both_packages():
    from tritonx.settings import TritonxSettings
    from utlx.settings import UtlxSettings

    declared = [f.var for cls in (TritonxSettings, UtlxSettings) for f in cls.fields().values()]
    assert sorted(_readme_variables()) == sorted(declared)


def test_raw_masks_secret_fields_and_doctor_never_prints_them(monkeypatch):
    from tritonx.cli.doctor_cmd import collect
    from tritonx.settings import SECRET_MASK

    monkeypatch.setenv("TRITONX_REDIS_PASSWORD", "hunter2-pw")
    monkeypatch.setenv("TRITONX_REDIS_SECRET", "hunter2-key")
    monkeypatch.setenv("TRITONX_REDIS_USERNAME", "alice")
    raw = settings.raw()
    assert raw["TRITONX_REDIS_PASSWORD"] == SECRET_MASK and raw["TRITONX_REDIS_SECRET"] == SECRET_MASK
    assert raw["TRITONX_REDIS_USERNAME"] == "alice"  # not a secret: shown as set
    assert settings.redis_password == "hunter2-pw"  # the value itself still reaches the cache client
    assert "hunter2" not in repr(collect())
