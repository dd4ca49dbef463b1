"""Plugins: entry-point discovery, enabling by name or TRITONX_PLUGINS, and clear errors."""

from __future__ import annotations

import types

import pytest
import tritonx
from tritonx.errors import PluginError
from tritonx.plugins import registry


class FakeEntryPoint:
    """What importlib.metadata gives for one ``tritonx.plugins`` entry point."""

    def __init__(self, name, target, dist="tritonx-fake-dist"):
        self.name, self.value, self._target = name, f"fake_mod:{name}", target
        self.dist = types.SimpleNamespace(name=dist)

    def load(self):
        if isinstance(self._target, Exception):
            raise self._target
        return self._target


@pytest.fixture
def installed(monkeypatch):
    """Pretend these entry points are installed (and forget real ones)."""

    calls = []

    def install(*eps):
        def entry_points(group):
            calls.append(group)
            return list(eps)

        monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
        return calls

    return install


def _plugin(name, **kw):
    return tritonx.Plugin(name, version="1.0", pipelines=[tritonx.Pipeline(name).disable("tritongpu-pipeline")], **kw)


def test_discovery_is_lazy_and_names_the_distribution(installed):
    good = _plugin("good")
    calls = installed(FakeEntryPoint("good", good), FakeEntryPoint("factory", lambda: _plugin("factory")))
    assert calls == []  # nothing looked up until plugins are asked for
    names = [p.name for p in tritonx.list_plugins()]
    assert names == ["factory", "good"]
    assert tritonx.get_plugin("good").distribution == "tritonx-fake-dist"


def test_enable_activates_the_plugins_pipelines(installed):
    plugin = _plugin("on-off")
    installed(FakeEntryPoint("on-off", plugin))
    tritonx.enable_plugins(["on-off"])
    assert plugin.pipelines[0] in tritonx.active()
    assert tritonx.is_plugin_enabled("on-off")
    tritonx.disable_plugins(["on-off"])
    assert plugin.pipelines[0] not in tritonx.active()


def test_environment_variable(installed, monkeypatch):
    installed(FakeEntryPoint("a", _plugin("a")), FakeEntryPoint("b", _plugin("b", default_enabled=True)),
              FakeEntryPoint("c", _plugin("c")))
    assert [p.name for p in tritonx.apply_environment("")] == ["b"]  # unset/empty: defaults
    tritonx.disable_plugins("all")
    assert [p.name for p in tritonx.apply_environment("a, c")] == ["a", "c"]
    tritonx.disable_plugins("all")
    assert tritonx.apply_environment("none") == []
    assert sorted(p.name for p in tritonx.apply_environment("all")) == ["a", "b", "c"]
    tritonx.disable_plugins("all")
    monkeypatch.setenv("TRITONX_PLUGINS", "c")
    assert [p.name for p in tritonx.apply_environment()] == ["c"]


def test_unknown_names_are_listed(installed):
    installed(FakeEntryPoint("real", _plugin("real")))
    with pytest.raises(PluginError, match=r"unknown plugin\(s\) 'nope'.*known: real"):
        tritonx.enable_plugins(["nope"])
    with pytest.raises(PluginError, match="unknown plugin 'nope'"):
        tritonx.get_plugin("nope")


def test_broken_entry_point_is_reported_and_does_not_hide_others(installed, runtime):
    installed(FakeEntryPoint("broken", ImportError("No module named 'missing_dep'"), dist="tritonx-broken"),
              FakeEntryPoint("fine", _plugin("fine", default_enabled=True)))
    assert [p.name for p in tritonx.list_plugins()] == ["fine"]
    errs = runtime.plugins.broken()
    assert "tritonx-broken" in str(errs["broken"]) and "missing_dep" in str(errs["broken"])
    with pytest.raises(PluginError, match="distribution 'tritonx-broken' failed to import"):
        tritonx.enable_plugins(["broken"])
    with pytest.warns(registry.PluginWarning, match="'broken' skipped"):
        assert [p.name for p in tritonx.apply_environment("")] == ["fine"]


def test_entry_point_of_the_wrong_type(installed):
    installed(FakeEntryPoint("odd", 42, dist="tritonx-odd"))
    with pytest.raises(PluginError, match=r"tritonx-odd.*not a tritonx.Plugin"):
        tritonx.enable_plugins(["odd"])


def test_duplicate_names_leave_only_that_name_out(installed):
    """Two distributions declaring one name: that plugin is refused by name, the others still work
    (this used to raise from every discovery, so ``import utlx`` failed over an unrelated plugin)."""
    installed(FakeEntryPoint("dup", _plugin("dup"), dist="one"), FakeEntryPoint("dup2", _plugin("dup"), dist="two"),
              FakeEntryPoint("utlx-like", _plugin("utlx-like", default_enabled=True)))
    assert [p.name for p in tritonx.list_plugins()] == ["utlx-like"]
    assert tritonx.enable_plugins(["utlx-like"])[0].name == "utlx-like"  # what `import utlx` does
    with pytest.raises(PluginError, match=r"duplicate plugin name 'dup'.*'one', 'two'.*uninstall one"):
        tritonx.enable_plugins(["dup"])
    with pytest.raises(PluginError, match=r"duplicate plugin name 'dup'"):
        tritonx.get_plugin("dup")
    tritonx.disable_plugins("all")
    with pytest.warns(registry.PluginWarning, match="'dup' skipped"):
        assert [p.name for p in tritonx.apply_environment("")] == ["utlx-like"]


def test_code_registration_settles_a_duplicate_name(installed):
    chosen = _plugin("dup")
    installed(FakeEntryPoint("dup", chosen, dist="one"), FakeEntryPoint("dup2", _plugin("dup"), dist="two"))
    assert tritonx.list_plugins() == []
    tritonx.register_plugin(chosen)
    assert tritonx.enable_plugins(["dup"]) == [chosen]


def test_plugin_whose_cache_key_raises_is_not_enabled_and_leaves_nothing(installed):
    def broken_key():
        return str(1 / 0)

    installed(FakeEntryPoint("bad-key", tritonx.Plugin("bad-key", cache_key=broken_key,
                                                       pipelines=[tritonx.Pipeline("pk").disable("tritongpu-pipeline")])))
    with pytest.raises(PluginError, match=r"plugin 'bad-key' not enabled.*plugin:bad-key.*ZeroDivisionError"):
        tritonx.enable_plugins(["bad-key"])
    assert not tritonx.is_plugin_enabled("bad-key") and tritonx.active() == () and tritonx.active_key() == ""
    p = tritonx.Pipeline("later").disable("tritongpu-pipeline")
    with tritonx.activate(p):  # later activations are not poisoned by the failed key
        assert tritonx.active() == (p,)
    with pytest.raises(PluginError, match="plugin 'bad-key' is not enabled"):
        tritonx.disable_plugins(["bad-key"])


def test_register_plugin_from_code(installed):
    installed()
    p = tritonx.register_plugin(_plugin("coded"))
    assert tritonx.get_plugin("coded") is p
    with pytest.raises(PluginError, match="duplicate plugin name 'coded'"):
        tritonx.register_plugin(_plugin("coded"))
    with pytest.raises(PluginError, match=r"takes a tritonx\.Plugin"):
        tritonx.register_plugin("coded")


def test_plugin_cache_key_enters_the_global_key(installed, runtime):
    state = {"v": "1"}
    installed(FakeEntryPoint("keyed", tritonx.Plugin("keyed", cache_key=lambda: state["v"])))
    before = tritonx.active_key()
    tritonx.enable_plugins(["keyed"])
    first = tritonx.active_key()
    state["v"] = "2"
    runtime.refresh()
    assert before != first != tritonx.active_key()


def test_cli_lists_broken_plugins(installed):
    from tritonx.cli.app import app
    from typer.testing import CliRunner

    installed(FakeEntryPoint("broken", ImportError("no module named 'gone'"), dist="tritonx-broken"))
    result = CliRunner().invoke(app, ["plugins", "--json"])
    assert result.exit_code == 1  # a broken plugin makes `tritonx plugins` fail (after listing it)
    assert "tritonx-broken" in result.stdout and "gone" in result.stdout
