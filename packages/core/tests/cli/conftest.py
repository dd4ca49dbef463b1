"""CLI test helpers: run the typer app in-process on a wide terminal, write tiny kernel files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tritonx
from cli_helpers import ADD_KERNEL, MATMUL_FILE
from tritonx.cli.app import app
from typer.testing import CliRunner


class Cli:
    """``cli("pipeline", "--json")`` -> click Result; ``cli.json(...)`` parses stdout, asserting exit 0."""

    def __init__(self) -> None:
        self.runner = CliRunner()
        self.app = app

    def __call__(self, *args: str) -> Any:
        return self.runner.invoke(app, list(args), env={"COLUMNS": "250"})

    def json(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture
def add_file(tmp_path: Path) -> Path:
    path = tmp_path / "kernels.py"
    path.write_text(ADD_KERNEL)
    return path


@pytest.fixture
def matmul_file(tmp_path: Path) -> Path:
    path = tmp_path / "mm.py"
    path.write_text(MATMUL_FILE)
    return path


def _mark(module: Any, ctx: Any) -> None:
    """A Python pass that changes nothing (its presence in the pass list is what tests look at)."""


@pytest.fixture
def no_pipelining_plugin() -> tritonx.Plugin:
    """A registered (not installed) plugin whose pipeline disables software pipelining."""
    pipe = tritonx.Pipeline("cli-no-pipelining").disable("tritongpu-pipeline").insert_after(
        "tritongpu-coalesce", _mark, pass_name="cli-mark")
    return tritonx.register_plugin(tritonx.Plugin("cli-test", "1.2.3", "disables tritongpu-pipeline",
                                                  pipelines=[pipe]))
