"""A plugin that fails at import in any way is reported as broken and never takes the process with it
(issue 28, item 8), and a plugin that lists plugins while it is imported is not marked broken (item 12).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import tritonx
from tritonx.errors import PluginError
from tritonx.plugins import registry
from tritonx.public import broken_plugins

SRC = Path(__file__).resolve().parents[1] / "src"
UTLX_SRC = Path(__file__).resolve().parents[2] / "utlx" / "src"


class RaisingEntryPoint:
    """An entry point whose import raises ``exc`` (any BaseException)."""

    def __init__(self, name: str, exc: BaseException, dist: str = "tritonx-bad-dist") -> None:
        self.name, self.value, self._exc = name, f"bad_mod:{name}", exc
        self.dist = types.SimpleNamespace(name=dist)

    def load(self):
        raise self._exc


class GoodEntryPoint:
    def __init__(self, name: str, make) -> None:
        self.name, self.value, self._make = name, f"good_mod:{name}", make
        self.dist = types.SimpleNamespace(name="tritonx-good-dist")

    def load(self):
        return self._make()


def _plugin(name: str, **kw) -> tritonx.Plugin:
    return tritonx.Plugin(name, version="1.0", pipelines=[tritonx.Pipeline(name).disable("tritongpu-pipeline")], **kw)


def _install(monkeypatch, *eps) -> None:
    monkeypatch.setattr(registry.metadata, "entry_points", lambda group: list(eps))


@pytest.mark.parametrize(
    ("exc", "shown"),
    [(SystemExit(3), "SystemExit: 3"), (SystemExit(), "SystemExit"), (GeneratorExit("odd"), "GeneratorExit: odd")],
)
def test_any_base_exception_at_import_is_a_broken_plugin(monkeypatch, exc, shown):
    _install(monkeypatch, RaisingEntryPoint("quits", exc), GoodEntryPoint("fine", lambda: _plugin("fine")))
    assert [p.name for p in tritonx.list_plugins()] == ["fine"]
    error = broken_plugins()["quits"]
    assert f"distribution 'tritonx-bad-dist' failed to import: {shown}" in str(error)
    with pytest.raises(PluginError, match=r"'quits'.*failed to import"):
        tritonx.enable_plugins(["quits"])


def test_a_factory_that_exits_is_a_broken_plugin(monkeypatch):
    def factory():
        raise SystemExit("no GPU here")

    _install(monkeypatch, GoodEntryPoint("factory", lambda: factory))
    assert tritonx.list_plugins() == []
    assert "raised: SystemExit: no GPU here" in str(broken_plugins()["factory"])


def test_keyboard_interrupt_still_stops(monkeypatch):
    _install(monkeypatch, RaisingEntryPoint("ctrl-c", KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        tritonx.list_plugins()


def test_a_plugin_listing_plugins_at_import_is_not_broken(monkeypatch):
    seen = []

    def imported():  # what a plugin module doing `tritonx.list_plugins()` at import amounts to
        seen.append([p.name for p in tritonx.list_plugins()])
        return _plugin("curious")

    _install(monkeypatch, GoodEntryPoint("first", lambda: _plugin("first")), GoodEntryPoint("curious", imported))
    assert [p.name for p in tritonx.list_plugins()] == ["curious", "first"]
    assert broken_plugins() == {}
    assert seen == [[]]  # during discovery: what is registered so far, no second discovery


def _installed_plugin_dir(tmp_path: Path, body: str) -> Path:
    """A real distribution on disk (``.dist-info`` with a ``tritonx.plugins`` entry point) and its module."""
    site = tmp_path / "site"
    (site / "exiting_plugin").mkdir(parents=True)
    (site / "exiting_plugin" / "__init__.py").write_text(textwrap.dedent(body))
    info = site / "exiting_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: exiting-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[tritonx.plugins]\nexiting = exiting_plugin:plugin\n")
    return site


def _python(tmp_path: Path, site: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(UTLX_SRC), str(site)])
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("TRITONX_PLUGINS", None)
    env.update(env_extra)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, env=env, check=False)


def test_import_utlx_and_the_cli_survive_a_plugin_that_exits_at_import(tmp_path):
    site = _installed_plugin_dir(tmp_path, "import sys\nsys.exit(3)\n")
    code = ("import utlx, tritonx; from tritonx.public import broken_plugins; "
            "print('utlx ok', tritonx.is_plugin_enabled('utlx')); print(broken_plugins()['exiting'])")
    done = _python(tmp_path, site, "-c", code)
    assert done.returncode == 0, done.stderr[-2000:]
    ok, broken = done.stdout.strip().splitlines()[-2:]
    assert ok == "utlx ok True"
    assert broken == ("plugin entry point 'exiting' (exiting_plugin:plugin) of distribution 'exiting-plugin' failed "
                      "to import: SystemExit: 3")

    cli = _python(tmp_path, site, "-c", "from tritonx.cli.app import main; main()", "plugins", "--json")
    assert cli.returncode == 1, cli.stderr[-2000:]  # a broken plugin makes `tritonx plugins` fail, after listing
    assert "exiting-plugin" in cli.stdout and "SystemExit: 3" in cli.stdout


def test_a_real_plugin_listing_plugins_at_import_is_enabled(tmp_path):
    site = _installed_plugin_dir(
        tmp_path,
        """
        import tritonx
        SEEN = [p.name for p in tritonx.list_plugins()]
        plugin = tritonx.Plugin("exiting", version="1.0")
        """,
    )
    code = ("import tritonx; from tritonx.public import broken_plugins; tritonx.enable_plugins(['exiting']); "
            "print(sorted(broken_plugins()), tritonx.is_plugin_enabled('exiting'))")
    done = _python(tmp_path, site, "-c", code, TRITONX_PLUGINS="none")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[] True"
