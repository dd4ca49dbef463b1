"""tools/device/devinstall.py and run_gpu_tests.sh, emulated here: no GPU, so every gpu test skips.

The script is run for real (bash, pip --no-index, pytest) against a tiny fake bundle whose "Triton" is a
stub package: that proves the bundle's Triton is found before the installed one, and that the logs land
in $OUT, without the ~1 GB a real Triton wheel would cost.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools/device/run_gpu_tests.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("xz") is None,
                                reason="needs bash and xz")

FAKE_TESTS = '''
import os
import pytest

@pytest.mark.gpu
def test_sees_the_bundle_triton():
    import triton
    assert triton.__version__ == "9.9.9"
    import importlib.metadata as md
    assert md.version("tritonx-core")  # dist-info written by devinstall or the wheel

@pytest.mark.gpu
def test_needs_a_gpu():
    pytest.skip("no CUDA device")

def test_not_gpu_is_deselected():
    raise AssertionError("-m gpu must deselect this")
'''


def test_devinstall_writes_dist_info_entry_points_and_root_pth(devinstall_mod, tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "src/demo").mkdir(parents=True)
    (pkg / "src/demo/__about__.py").write_text('__version__ = "1.2.3"\n')
    (pkg / "src/demo/boot.pth").write_text("import os\n")
    (pkg / "pyproject.toml").write_text('''
[project]
name = "demo-pkg"
dynamic = ["version"]
dependencies = ["triton>=3.6"]
[project.scripts]
demo = "demo.cli:main"
[project.entry-points."tritonx.plugins"]
demo = "demo.plugin:plugin"
[tool.hatch.version]
path = "src/demo/__about__.py"
[tool.hatch.build.targets.wheel]
packages = ["src/demo"]
[tool.hatch.build.targets.wheel.force-include]
"src/demo/boot.pth" = "demo-boot.pth"
''')
    target = tmp_path / "site"
    folder, roots = devinstall_mod.dist_info(pkg, target)
    assert folder.name == "demo_pkg-1.2.3.dist-info"
    assert roots == [(pkg / "src").resolve()]
    assert (target / "demo-boot.pth").read_text() == "import os\n"
    dist = next(d for d in md.distributions(path=[str(target)]) if d.metadata["Name"] == "demo-pkg")
    assert dist.version == "1.2.3"
    eps = {(ep.group, ep.name): ep.value for ep in dist.entry_points}
    assert eps == {("tritonx.plugins", "demo"): "demo.plugin:plugin", ("console_scripts", "demo"): "demo.cli:main"}

    (pkg / "src/demo/__about__.py").write_text("VERSION = 1\n")
    with pytest.raises(devinstall_mod.DevInstallError, match="no __version__"):
        devinstall_mod.dist_info(pkg, target)


def test_devinstall_on_the_real_packages(devinstall_mod, tmp_path, capsys):
    pkgs = [str(ROOT / "packages/core"), str(ROOT / "packages/utlx")]
    assert devinstall_mod.main(["--target", str(tmp_path), *pkgs]) == 0
    roots = capsys.readouterr().out.split()
    assert roots == [str(ROOT / "packages/core/src"), str(ROOT / "packages/utlx/src")]
    names = {d.metadata["Name"] for d in md.distributions(path=[str(tmp_path)])}
    assert names == {"tritonx-core", "utlx"}


def make_fake_bundle(tmp_path: Path, bundle_mod, wheels: dict[str, dict[str, str]] | None = None,
                     extra: dict[str, dict[str, str]] | None = None) -> Path:
    """A bundle like build_bundle.py's, but with a stub Triton 9.9.9 and hand-made wheels (``extra``: the
    --extra-wheel folder)."""
    import zipfile

    top = tmp_path / "staging" / "triton-9.9.9"
    (top / "site/triton").mkdir(parents=True)
    (top / "site/triton/__init__.py").write_text('__version__ = "9.9.9"\n')
    for folder, content in (("wheels", wheels), ("extra", extra)):
        (top / folder).mkdir(exist_ok=folder == "wheels" or content is not None)
        for name, files in (content or {}).items():
            with zipfile.ZipFile(top / folder / name, "w") as zf:
                for path, text in files.items():
                    zf.writestr(path, text)
    (top / "MANIFEST.json").write_text(json.dumps({"name": "triton-9.9.9", "repo_wheels": []}))
    out = tmp_path / "triton-9.9.9.tar.xz"
    bundle_mod.pack(tmp_path / "staging", "triton-9.9.9", out, level=0)
    return out


def run_script(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path / "out"),
                "TRITONX_DEVICE_WORK": str(tmp_path / "work"), **(env or {})}
    full_env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=tmp_path, env=full_env,
                          capture_output=True, text=True, timeout=240)


def test_run_script_with_a_bundle_puts_its_triton_first_and_logs_to_out(tmp_path, bundle_mod):
    tests = tmp_path / "fake_tests"
    tests.mkdir()
    (tests / "test_fake_gpu.py").write_text(FAKE_TESTS)
    # A dependency wheel whose .pth sets a variable: proves .pth files run from the plain install folder.
    pth_wheel = {"pthdemo-1.0-py3-none-any.whl": {
        "pthdemo.pth": "import os; os.environ.setdefault('TRITON_PLUGIN_PATHS', '/from/pth.so')\n",
        "pthdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: pthdemo\nVersion: 1.0\n",
        "pthdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "pthdemo-1.0.dist-info/RECORD": "",
    }}
    bundle = make_fake_bundle(tmp_path, bundle_mod, pth_wheel)
    res = run_script(tmp_path, "--bundle", str(bundle), "--", str(tests))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    versions = (tmp_path / "out/versions.txt").read_text()
    assert f"triton  9.9.9 ({tmp_path}/work/triton-9.9.9/site/triton)" in versions
    assert "TRITON_PLUGIN_PATHS=/from/pth.so" in versions
    assert "tritonx-core" in versions
    log = (tmp_path / "out/gpu-tests.log").read_text()
    assert "1 passed, 1 skipped, 1 deselected" in log
    assert (tmp_path / "out/gpu-tests.xml").read_text().count("<testcase") == 2


EXTRA_TESTS = '''
import importlib.util, os
import pytest

@pytest.mark.gpu
def test_comparison_wheel_is_carried_not_installed():
    folder = os.environ["UTLX_META_WHEEL_DIR"]
    assert folder == os.environ["TRITONX_EXTRA_WHEELS"] and folder.endswith("/extra")
    assert sorted(os.listdir(folder)) == ["triton_utlx-3.8.0.post16-py3-none-any.whl"]
    assert importlib.util.find_spec("tlx") is None  # the wheel's packages are not importable
    here = os.path.join(os.getcwd(), "packages", "utlx", "src")  # the script runs from the repo root
    assert importlib.util.find_spec("utlx").origin.startswith(here)
'''


def test_run_script_carries_extra_wheels_without_installing_them(tmp_path, bundle_mod):
    tests = tmp_path / "fake_tests"
    tests.mkdir()
    (tests / "test_extra.py").write_text(EXTRA_TESTS)
    meta = {"triton_utlx-3.8.0.post16-py3-none-any.whl": {
        "tlx/__init__.py": "", "utlx/__init__.py": "raise ImportError('the comparison build was installed')\n",
        "utlx_plugin.pth": "import os; os.environ['TRITON_PLUGIN_PATHS'] = '/meta/libutlx.so'\n"}}
    bundle = make_fake_bundle(tmp_path, bundle_mod, extra=meta)
    res = run_script(tmp_path, "--bundle", str(bundle), "--", str(tests))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "carried, not installed: triton_utlx-3.8.0.post16-py3-none-any.whl" in out
    assert "TRITON_PLUGIN_PATHS=\n" in (tmp_path / "out/versions.txt").read_text()  # its .pth never ran
    assert "1 passed" in (tmp_path / "out/gpu-tests.log").read_text()


def test_run_script_without_bundle_uses_the_installed_triton(tmp_path):
    import triton

    tests = tmp_path / "fake_tests"
    tests.mkdir()
    skip_test = "import pytest\n\n@pytest.mark.gpu\ndef test_gpu():\n    pytest.skip('no GPU')\n"
    (tests / "test_skip.py").write_text(skip_test)
    res = run_script(tmp_path, "--plugin-path", "/x/libp.so", "--", str(tests))
    assert res.returncode == 3 and "--plugin-path '/x/libp.so' is not a file" in res.stderr

    # Triton >= 3.7 ships a test plugin: a real .so that libtriton loads at import.
    plugin = Path(triton.__file__).parent / "plugins" / "libTritonPluginsTestLib.so"
    args = ["--plugin-path", str(plugin)] if plugin.is_file() else []
    res = run_script(tmp_path, *args, "--", str(tests))
    assert res.returncode == 0, res.stdout + res.stderr
    versions = (tmp_path / "out/versions.txt").read_text()
    assert f"triton  {triton.__version__} ({os.path.dirname(triton.__file__)})" in versions
    assert f"TRITON_PLUGIN_PATHS={plugin if args else ''}\n" in versions
    assert "1 skipped" in (tmp_path / "out/gpu-tests.log").read_text()


def test_run_script_bench_and_bad_options(tmp_path):
    res = run_script(tmp_path, "--no-tests", "--bench",
                     env={"BENCH_CMD": "echo ran > $TRITONX_BENCH_OUT/bench.json; exit 4"})
    assert res.returncode == 4, res.stdout + res.stderr
    assert (tmp_path / "out/bench.json").read_text() == "ran\n"
    assert not (tmp_path / "out/gpu-tests.log").exists()

    res = run_script(tmp_path, "--frobnicate")
    assert res.returncode == 3 and "unknown option '--frobnicate'" in res.stderr
    res = run_script(tmp_path, "--bundle", str(tmp_path / "missing.tar.xz"))
    assert res.returncode == 3 and "bundle '" in res.stderr and "not found" in res.stderr
