"""tools/release: package resolution, version/tag rules, changelog state and artifact checks."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def make_pkg(tmp_path: Path, version: str = "0.2.0", changelog: str | None = "## 0.2.0 (2026-12-01)\n") -> Path:
    pkg = tmp_path / "packages" / "demo"
    (pkg / "src/demo").mkdir(parents=True)
    (pkg / "src/demo/__about__.py").write_text(f'__version__ = "{version}"\n')
    (pkg / "pyproject.toml").write_text(
        '[project]\nname = "demo-core"\ndynamic = ["version"]\n[tool.hatch.version]\npath = "src/demo/__about__.py"\n')
    if changelog is not None:
        (pkg / "CHANGELOG.md").write_text(f"# Changelog\n\n{changelog}- things\n")
    return pkg


def test_aliases_resolve_to_the_real_packages_and_read_their_versions(versioning_mod):
    core = versioning_mod.resolve_package("core")
    assert core == ROOT / "packages/core"
    assert versioning_mod.resolve_package("tritonx-core") == core
    meta = versioning_mod.read_meta(core)
    assert meta.name == "tritonx-core"
    assert meta.tag == f"tritonx-core-v{meta.version}"
    assert versioning_mod.read_meta(versioning_mod.resolve_package("packages/utlx")).tag.startswith("utlx-v")
    with pytest.raises(versioning_mod.ReleaseError, match=r"package 'nope': no pyproject\.toml"):
        versioning_mod.resolve_package("nope")


def test_version_order_and_format(versioning_mod):
    v = versioning_mod.parse_version
    assert v("0.1.0a1") < v("0.1.0b2") < v("0.1.0rc1") < v("0.1.0") < v("0.1.0.post1") < v("0.1.1") < v("0.10.0")
    with pytest.raises(versioning_mod.ReleaseError, match=r"version '0\.1' is not X\.Y\.Z"):
        v("0.1")


def test_tag_must_be_free_and_newer_than_the_same_package_s_tags(versioning_mod, tmp_path):
    meta = versioning_mod.read_meta(make_pkg(tmp_path))
    assert meta.tag == "demo-core-v0.2.0"
    tags = ["demo-core-v0.1.0", "demo-core-v0.1.5", "other-v9.0.0", "demo-core-vbroken"]
    assert versioning_mod.existing_versions("demo-core", tags) == ["0.1.0", "0.1.5"]
    versioning_mod.check_new_version(meta, tags)  # 0.2.0 > 0.1.5; other packages' tags do not count
    with pytest.raises(versioning_mod.ReleaseError, match=r"0\.2\.0 is already tagged \(demo-core-v0\.2\.0\)"):
        versioning_mod.check_new_version(meta, [*tags, "demo-core-v0.2.0"])
    with pytest.raises(versioning_mod.ReleaseError, match=r"not newer than the last release 0\.3\.0"):
        versioning_mod.check_new_version(meta, [*tags, "demo-core-v0.3.0"])


def test_changelog_states(versioning_mod, tmp_path):
    assert versioning_mod.changelog_state(make_pkg(tmp_path / "a"), "0.2.0") == "ready"
    assert versioning_mod.changelog_state(make_pkg(tmp_path / "b", changelog="## 0.2.0 (unreleased)\n"), "0.2.0") \
        == "unreleased"
    assert versioning_mod.changelog_state(make_pkg(tmp_path / "c", changelog="## [0.2.0] - 2026-12-01\n"), "0.2.0") \
        == "ready"
    assert versioning_mod.changelog_state(make_pkg(tmp_path / "d", changelog="## 0.1.0\n"), "0.2.0") == "missing"
    assert versioning_mod.changelog_state(make_pkg(tmp_path / "e", changelog=None), "0.2.0") == "missing"


def write_artifacts(out: Path, wheel_version: str, meta_version: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    whl = out / f"demo_core-{wheel_version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr(f"demo_core-{wheel_version}.dist-info/METADATA",
                    f"Metadata-Version: 2.4\nName: demo-core\nVersion: {meta_version}\n\n")
    sdist_dir = out / "sd" / f"demo_core-{wheel_version}"
    sdist_dir.mkdir(parents=True)
    (sdist_dir / "pyproject.toml").write_text("[project]\n")
    sdist = out / f"demo_core-{wheel_version}.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        tf.add(sdist_dir, arcname=sdist_dir.name)
    return [whl, sdist]


def test_artifact_checks_catch_a_wrong_version(release_mod, versioning_mod, tmp_path):
    meta = versioning_mod.read_meta(make_pkg(tmp_path))
    assert release_mod.check_artifacts(meta, write_artifacts(tmp_path / "ok", "0.2.0", "0.2.0")) == []
    problems = release_mod.check_artifacts(meta, write_artifacts(tmp_path / "bad", "0.2.0", "0.1.9"))
    assert problems == ["wheel demo_core-0.2.0-py3-none-any.whl: METADATA does not say Version: 0.2.0"]
    problems = release_mod.check_artifacts(meta, write_artifacts(tmp_path / "old", "0.1.0", "0.1.0"))
    assert "wheel demo_core-0.1.0-py3-none-any.whl does not carry demo_core-0.2.0" in problems
    assert release_mod.check_artifacts(meta, []) == ["expected one wheel and one sdist, got []"]


def test_cli_checks_only_and_refuses_unknown_packages(release_mod, capsys):
    assert release_mod.main(["utlx", "--skip-build"]) == 0
    out = capsys.readouterr().out
    assert "tag to create: utlx-v" in out and "nothing uploaded" in out
    assert release_mod.main(["no-such-package", "--skip-build"]) == 1
    assert "release: error: package 'no-such-package'" in capsys.readouterr().err
