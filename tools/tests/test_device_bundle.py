"""tools/device: which files of a Triton wheel travel, how they are unpacked, stripped and packed."""

from __future__ import annotations

import importlib
import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

# A fake unpacked wheel: path -> size in bytes. Names follow the real 3.8.0 wheel's layout.
FAKE_WHEEL = {
    "triton/__init__.py": 10,
    "triton/_C/libtriton.so": 5000,
    "triton/_C/libproton.so": 3000,
    "triton/backends/nvidia/bin/ptxas": 900,
    "triton/backends/nvidia/bin/ptxas-blackwell": 900,
    "triton/backends/nvidia/bin/nvdisasm": 500,
    "triton/backends/nvidia/bin/cuobjdump": 70,
    "triton/backends/nvidia/lib/libdevice.10.bc": 400,
    "triton/backends/nvidia/lib/cupti/libcupti.so.12": 700,
    "triton/backends/nvidia/lib/cupti/libcupti_static.a": 800,
    "triton/backends/nvidia/lib/cupti-blackwell/libcupti.so": 600,
    "triton/backends/nvidia/include/cuda.h": 50,
    "triton/backends/nvidia/driver.c": 30,
    "triton/backends/amd/include/hip/hip_runtime.h": 60,
    "triton/backends/amd/lib/ockl.bc": 40,
    "triton/backends/amd/compiler.py": 20,
    "triton/FileCheck": 110,
    "triton/profiler/__init__.py": 5,
    "triton/instrumentation/libGPUInstrumentationTestLib.so": 70,
    "triton/plugins/libTritonPluginsTestLib.so": 65,
    "triton/plugins/libMLIRDialectPlugin.so": 23,
    "triton/plugins/libMLIRDialectPlugin.so.23.0git": 23,
    "triton/language/__pycache__/core.cpython-312.pyc": 9,
    "triton/language/core.py": 9,
    "triton-3.8.0.dist-info/entry_points.txt": 3,
    "triton-3.8.0.dist-info/METADATA": 3,
}


@pytest.fixture
def fake_tree(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    for rel, size in FAKE_WHEEL.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * size)
    return root


def test_selection_keeps_what_sm90_needs_and_drops_the_rest_with_reasons(spec_mod, fake_tree):
    sel = spec_mod.select(fake_tree)
    assert sorted(sel.keep) == sorted([
        "triton/__init__.py",
        "triton/_C/libtriton.so",
        "triton/backends/nvidia/bin/ptxas",
        "triton/backends/nvidia/bin/cuobjdump",
        "triton/backends/nvidia/lib/libdevice.10.bc",
        "triton/backends/nvidia/include/cuda.h",
        "triton/backends/nvidia/driver.c",
        "triton/backends/amd/lib/ockl.bc",
        "triton/backends/amd/compiler.py",
        "triton/plugins/libTritonPluginsTestLib.so",
        "triton/plugins/libMLIRDialectPlugin.so",
        "triton/language/core.py",
        "triton-3.8.0.dist-info/entry_points.txt",
        "triton-3.8.0.dist-info/METADATA",
    ])
    assert sel.drop["triton/backends/nvidia/bin/ptxas-blackwell"].startswith("ptxas for sm_100+")
    assert sel.drop["triton/backends/amd/include/hip/hip_runtime.h"].startswith("HIP/ROCm headers")
    assert sel.drop["triton/_C/libproton.so"] == "proton profiler library"
    assert sel.drop["triton/plugins/libMLIRDialectPlugin.so.23.0git"].startswith("versioned duplicate")
    assert "triton/language/__pycache__/core.cpython-312.pyc" in sel.drop
    assert sel.strip == [
        "triton/_C/libtriton.so",
        "triton/plugins/libMLIRDialectPlugin.so",
        "triton/plugins/libTritonPluginsTestLib.so",
    ]
    assert spec_mod.check_essentials(fake_tree, sel) == []
    grouped = sel.dropped_by_reason()  # the first matching rule gives the reason
    assert grouped["CUPTI: only the proton profiler loads it"] == [
        "triton/backends/nvidia/lib/cupti/libcupti.so.12",
        "triton/backends/nvidia/lib/cupti/libcupti_static.a",
    ]


def test_keep_and_extra_drop_patterns_override_the_rules(spec_mod, fake_tree):
    sel = spec_mod.select(fake_tree, keep_patterns=["triton/backends/nvidia/bin/nvdisasm"],
                          extra_drops=["triton/backends/amd/*"])
    assert "triton/backends/nvidia/bin/nvdisasm" in sel.keep
    assert sel.drop["triton/backends/amd/compiler.py"] == "dropped on request (--drop triton/backends/amd/*)"


def test_a_too_broad_drop_is_caught_before_packing(spec_mod, fake_tree):
    sel = spec_mod.select(fake_tree, extra_drops=["triton/backends/nvidia/bin/*", "*.dist-info/*"])
    missing = spec_mod.check_essentials(fake_tree, sel)
    assert "triton/backends/nvidia/bin/ptxas" in missing
    assert any("entry_points.txt" in m for m in missing)


def test_apply_deletes_dropped_files_and_empty_folders(spec_mod, fake_tree):
    sel = spec_mod.select(fake_tree)
    before = spec_mod.tree_size(fake_tree)
    freed = spec_mod.apply(fake_tree, sel)
    assert freed == sum(FAKE_WHEEL[p] for p in sel.drop)
    assert spec_mod.tree_size(fake_tree) == before - freed
    assert not (fake_tree / "triton/backends/amd/include").exists()
    assert not (fake_tree / "triton/profiler").exists()
    assert (fake_tree / "triton/backends/nvidia/bin/ptxas").is_file()


def test_unpack_wheel_keeps_the_executable_bit(bundle_mod, tmp_path):
    whl = tmp_path / "triton-9.9.9-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        exe = zipfile.ZipInfo("triton/backends/nvidia/bin/ptxas")
        exe.external_attr = (stat.S_IFREG | 0o755) << 16
        zf.writestr(exe, b"#!/bin/sh\n")
        zf.writestr("triton/__init__.py", "__version__ = '9.9.9'\n")
    bundle_mod.unpack_wheel(whl, tmp_path / "out")
    assert os.access(tmp_path / "out/triton/backends/nvidia/bin/ptxas", os.X_OK)
    assert not os.access(tmp_path / "out/triton/__init__.py", os.X_OK)
    assert bundle_mod.find_cached_wheel(tmp_path, "triton", "9.9.9", "3.12") == whl
    assert bundle_mod.find_cached_wheel(tmp_path, "triton", "9.9.9", "3.11") is None


@pytest.mark.skipif(shutil.which("strip") is None, reason="binutils strip not installed")
def test_strip_shrinks_a_real_shared_object(bundle_mod, tmp_path):
    candidates = []
    for name in ("_json", "_ctypes", "_decimal", "select"):  # any C extension of the stdlib is an ELF .so
        path = getattr(importlib.import_module(name), "__file__", None)
        if path and path.endswith(".so"):
            candidates.append(path)
    if not candidates:
        pytest.skip("this Python has its stdlib extensions built in: no .so to strip")
    (tmp_path / "lib").mkdir()
    shutil.copy(candidates[0], tmp_path / "lib" / "x.so")
    sizes = bundle_mod.strip_files(tmp_path, ["lib/x.so"])
    before, after = sizes["lib/x.so"]
    assert after <= before
    assert (tmp_path / "lib/x.so").read_bytes()[:4] == b"\x7fELF"
    (tmp_path / "lib/bad.so").write_text("not an ELF file")
    with pytest.raises(bundle_mod.BundleError, match=r"strip --strip-unneeded lib/bad\.so failed"):
        bundle_mod.strip_files(tmp_path, ["lib/bad.so"])


def test_pack_writes_one_sorted_top_folder_owned_by_root(bundle_mod, tmp_path):
    top = tmp_path / "staging" / "triton-9.9.9"
    for rel in ("wheels/b.whl", "MANIFEST.json", "site/triton/__init__.py"):
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(rel)
    out = tmp_path / "out" / "triton-9.9.9.tar.xz"
    bundle_mod.pack(tmp_path / "staging", "triton-9.9.9", out, level=1)
    with tarfile.open(out) as tf:
        members = tf.getmembers()
    names = [m.name for m in members]
    assert all(n.split("/")[0] == "triton-9.9.9" for n in names)
    assert "triton-9.9.9/site/triton/__init__.py" in names
    assert {m.uid for m in members} == {0}
    assert not out.with_suffix(".xz.part").exists()


def test_two_versions_of_one_wheel_are_refused(bundle_mod, tmp_path):
    (tmp_path / "arrow-1.3.0-py3-none-any.whl").touch()
    (tmp_path / "cookiecutter-2.7.1-py3-none-any.whl").touch()
    bundle_mod._check_one_version_each(tmp_path)
    (tmp_path / "arrow-1.4.0-py3-none-any.whl").touch()
    with pytest.raises(bundle_mod.BundleError, match="two wheels of arrow"):
        bundle_mod._check_one_version_each(tmp_path)


def test_bundle_names_and_the_missing_deps_list(bundle_mod, spec_mod):
    assert bundle_mod.bundle_name("stock") == "stock"
    assert bundle_mod.bundle_name("3.8.0") == "triton-3.8.0"
    # tritonx-core's own runtime deps that the H200 image lacks must be in the list.
    assert {"pyelftools", "cookiecutter"} <= set(spec_mod.GPU_IMAGE_MISSING_DEPS)
    assert spec_mod.SIZE_BUDGET < 64 * spec_mod.MIB
