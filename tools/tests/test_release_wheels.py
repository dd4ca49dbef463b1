"""The user's path from built artifacts: sdists build, wheels build from them, and the wheels work on their own.

Both packages are built the release way (sdist, then a wheel from the unpacked sdist), installed with
``pip install --no-index --find-links WHEELHOUSE tritonx-core utlx`` next to Triton into a fresh venv
(the wheelhouse holds only what the wheels declare, so a missing dependency fails), and used from a
directory outside the repository (``tools/release/smoke.py``). The default run leaves torch out; the
slow run is issue 12's acceptance: CPU torch 2.13.0 from a local wheel, then ``tritonx new``, ``pip
install ./my-plugin[test]`` (numpy unchanged), the plugin's tests and one ``ci/matrix.py`` cell.
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def release_tools(release_mod):
    """(artifacts, smoke): the sibling modules release.py itself uses."""
    return release_mod.artifacts, release_mod.smoke


@pytest.fixture(scope="module")
def built(release_tools, tmp_path_factory):
    """name -> [sdist, wheel-built-from-that-sdist] for tritonx-core and utlx."""
    artifacts, _ = release_tools
    out = tmp_path_factory.mktemp("dist")
    return {pkg: artifacts.build_package(ROOT / "packages" / pkg, out / pkg) for pkg in ("core", "utlx")}


def _wheel(files: list[Path]) -> Path:
    return next(f for f in files if f.suffix == ".whl")


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()


def test_core_sdist_carries_the_template_and_its_wheel_has_it(built):
    sdist = next(f for f in built["core"] if f.name.endswith(".tar.gz"))
    wheel = _wheel(built["core"])
    with tarfile.open(sdist) as tf:
        names = tf.getnames()
    assert any(n.endswith("src/tritonx/_template/cookiecutter.json") for n in names)
    assert not any("__pycache__" in n for n in names)
    with zipfile.ZipFile(wheel) as zf:
        wheel_names = zf.namelist()
    assert "tritonx/_template/cookiecutter.json" in wheel_names and "tritonx-native.pth" in wheel_names
    assert "tritonx/_template/{{cookiecutter.package_name}}/ci/matrix.py" in wheel_names


def test_dependency_metadata(built):
    """utlx declares numpy; neither package requires torch (an extra only: never a multi-GB CUDA pull)."""
    for pkg in ("core", "utlx"):
        requires = re.findall(r"^Requires-Dist: (.+)$", _metadata(_wheel(built[pkg])), re.MULTILINE)
        torch_reqs = [r for r in requires if r.startswith("torch")]
        assert torch_reqs and all("extra ==" in r for r in torch_reqs), requires
        assert any(r.startswith("triton") and "<3.10" in r for r in requires), requires
    utlx_requires = _metadata(_wheel(built["utlx"]))
    assert re.search(r"^Requires-Dist: numpy<2.4,>=1.26$", utlx_requires, re.MULTILINE)  # Triton 3.6's interpreter
    core_requires = re.findall(r"^Requires-Dist: (.+)$", _metadata(_wheel(built["core"])), re.MULTILINE)
    cookiecutter = [r for r in core_requires if r.startswith("cookiecutter")]
    assert cookiecutter and all("extra == 'new'" in r or 'extra == "new"' in r for r in cookiecutter), core_requires


def _smoke(release_tools, built, workdir: Path, **kw):
    _, smoke = release_tools
    result = smoke.run_smoke([_wheel(built["core"]), _wheel(built["utlx"])], workdir, log=lambda m: None, **kw)
    report = "\n".join(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}" for c in result.checks)
    assert not result.failed, report
    return result, report


def test_wheels_work_from_outside_the_repo(release_tools, built, tmp_path):
    result, report = _smoke(release_tools, built, tmp_path, torch=None)
    names = {c.name for c in result.checks}
    for check in ("tritonx plugins shows utlx ok", "tritonx doctor exits 0",
                  "import triton.language.extra.tlx without import utlx",
                  "tritonx pipeline --target cuda:90 | grep tritongpu-pipeline",
                  "TLX kernel via triton.compile(ASTSource, target=GPUTarget('cuda', 90, 32))"):
        assert check in names, report
    assert str(ROOT) not in result.checks[0].detail  # tritonx and utlx came from the venv's site-packages


@pytest.mark.slow
def test_issue12_acceptance_with_cpu_torch_and_a_scaffolded_plugin(release_tools, built, tmp_path):
    _, smoke = release_tools
    result, report = _smoke(release_tools, built, tmp_path, torch=smoke.DEFAULT_TORCH, template=True)
    if result.torch is None:
        pytest.skip(f"no local CPU torch {smoke.DEFAULT_TORCH} wheel in pip's find-links (never taken from an index)")
    names = [c.name for c in result.checks]
    assert "torch.ops.utlx.matmul (fake tensors)" in names
    assert any(n.startswith("numpy unchanged") for n in names) and "my-plugin's own tests" in names
    assert any("ci/matrix.py" in n for n in names), report
