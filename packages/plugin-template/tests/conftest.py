"""Fixtures for the plugin template's own tests: where the template is, and rendering it to a temp dir."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

TEMPLATE_DIR = Path(__file__).resolve().parents[1]


def load_validation() -> ModuleType:
    """The template's pre-generation hook, as a module (it holds the answer rules)."""
    spec = importlib.util.spec_from_file_location("template_validation", TEMPLATE_DIR / "hooks" / "pre_gen_project.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def validation() -> ModuleType:
    return load_validation()


@pytest.fixture
def render(tmp_path: Path) -> Callable[..., Path]:
    """``render(name, native=False, **answers)``: ``tritonx new`` into a fresh temp directory."""
    pytest.importorskip("cookiecutter")
    from tritonx.cli.new import scaffold

    def run(name: str, *, native: bool = False, **answers: str) -> Path:
        return scaffold(name, native=native, output_dir=tmp_path, answers=answers)

    return run


def run_python(args: list[str], *, cwd: Path, timeout: float = 600, env: dict[str, str] | None = None):
    """Run this interpreter with ``args``; output captured as text (shown by pytest on failure)."""
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env, check=False)


@pytest.fixture
def python_runner() -> Callable[..., subprocess.CompletedProcess]:
    return run_python
