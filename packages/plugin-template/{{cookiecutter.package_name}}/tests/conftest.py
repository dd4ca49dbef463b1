"""Set-up shared by the plugin's tests: a fresh Triton cache{% if cookiecutter.variant == "native" %}, the native library loaded before Triton{% endif %}, no leaks.

Test helpers live in ``kernels.py`` (on the path through ``pythonpath`` in pyproject.toml).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

# A fresh cache for the session, set before Triton reads it: every kernel really compiles here
# (removed when the session ends, by pytest_unconfigure below: caches would pile up in the temp folder).
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="{{ cookiecutter.module_name }}-triton-cache-")
{%- if cookiecutter.variant == "native" %}

# Triton 3.7/3.8 load native plugins only when libtriton is first imported, so the library is handed
# to tritonx before anything imports Triton. Outside tests, declare it before Python starts:
#   TRITONX_NATIVE_PLUGINS=$(python -c "from {{ cookiecutter.module_name }}.native import library_path; print(library_path())")
from {{ cookiecutter.module_name }}.native import preload

try:
    preload()
    NATIVE_MISSING: str | None = None
except FileNotFoundError as exc:  # not built yet: tests that need the library fail, the others run
    NATIVE_MISSING = str(exc)

import tritonx


@pytest.fixture
def native_library() -> None:
    """Fail (not skip: a plugin whose library is missing is broken) when the library was not built."""
    if NATIVE_MISSING:
        pytest.fail(NATIVE_MISSING)
{%- else %}

import tritonx
{%- endif %}


@pytest.fixture(autouse=True)
def _no_plugin_left_enabled():
    """A test that enables plugins must not leak them into the next one."""
    yield
    tritonx.disable_plugins("all")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this session's Triton cache (made above)."""
    shutil.rmtree(os.environ["TRITON_CACHE_DIR"], ignore_errors=True)
