"""Load the tool scripts by path: ci/, tools/device/ and tools/release/ are folders of scripts, not packages."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_script(rel: str, name: str) -> ModuleType:
    """Import ROOT/rel as module `name` (cached in sys.modules, so siblings it imports resolve once)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    assert spec and spec.loader, rel
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def matrix_mod() -> ModuleType:
    return load_script("ci/matrix.py", "tritonx_ci_matrix")


@pytest.fixture(scope="session")
def spec_mod() -> ModuleType:
    return load_script("tools/device/bundle_spec.py", "bundle_spec")


@pytest.fixture(scope="session")
def bundle_mod(spec_mod: ModuleType) -> ModuleType:
    return load_script("tools/device/build_bundle.py", "tritonx_build_bundle")


@pytest.fixture(scope="session")
def devinstall_mod() -> ModuleType:
    return load_script("tools/device/devinstall.py", "tritonx_devinstall")


@pytest.fixture(scope="session")
def versioning_mod() -> ModuleType:
    return load_script("tools/release/versioning.py", "versioning")


@pytest.fixture(scope="session")
def release_mod(versioning_mod: ModuleType) -> ModuleType:
    return load_script("tools/release/release.py", "tritonx_release")


@pytest.fixture(scope="session")
def gemm_mod() -> ModuleType:
    return load_script("tools/bench/gemm.py", "tritonx_bench_gemm")


@pytest.fixture(scope="session")
def tlx_tutorials_mod() -> ModuleType:
    return load_script("tools/device/tlx_tutorial_tests.py", "tlx_tutorial_tests")


@pytest.fixture(scope="session")
def attention_bench_mod() -> ModuleType:
    return load_script("tools/bench/attention.py", "tritonx_bench_attention")


@pytest.fixture(scope="session")
def tutorial_sass_mod() -> ModuleType:
    return load_script("tools/bench/tutorial_sass.py", "tritonx_bench_tutorial_sass")


@pytest.fixture(scope="session")
def skinny_sweep_mod() -> ModuleType:
    return load_script("tools/device/skinny_sweep.py", "tritonx_skinny_sweep")


@pytest.fixture(scope="session")
def resolve_mod() -> ModuleType:
    return load_script("ci/resolve_env.py", "tritonx_ci_resolve_env")


@pytest.fixture(scope="session")
def inductor_block_mod() -> ModuleType:
    return load_script("tools/bench/inductor_block.py", "tritonx_inductor_block")
