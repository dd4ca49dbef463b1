"""A generated Python-variant plugin installs and its own tests pass, found through its entry point.

Runs the generated ``ci/matrix.py`` for the installed Triton with this interpreter: it installs the
package into a private directory (``pip --target``, no dependencies, this environment's Triton and
tritonx) and runs the generated tests there, as a user's CI would.
"""

from __future__ import annotations

import importlib.metadata as md
import sys

import pytest

pytest.importorskip("cookiecutter")

# Marked smoke: the repo's compile smoke runs it on every Triton version of the matrix.
pytestmark = pytest.mark.smoke


def test_generated_python_plugin_passes_its_own_tests(render, python_runner):
    project = render("tpl-pycheck", plugin_name="tpl_pycheck")
    version = md.version("triton").split("+")[0]
    listed = (project / "ci" / "triton-versions.txt").read_text().split()
    assert version in listed
    done = python_runner(["ci/matrix.py", "--versions", version, "--python", f"{version}={sys.executable}"],
                         cwd=project)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert f"{version:<7} passed" in output
    assert " passed" in output and " failed" not in output and "error" not in output.lower()
    # The package really went through pip (a wheel build), into the matrix's private directory.
    assert (project / ".matrix" / version / "site" / "tpl_pycheck" / "passes.py").is_file()
    assert list((project / ".matrix" / version / "site").glob("tpl_pycheck-0.1.0.dist-info/entry_points.txt"))


def test_matrix_plan_follows_the_range(render, python_runner):
    project = render("tpl-plan", triton_range=">=3.7,<3.9")
    done = python_runner(["ci/matrix.py", "--dry-run"], cwd=project)
    assert done.returncode == 0, done.stderr
    assert "[triton 3.7.1] $" in done.stdout and "[triton 3.8.0] $" in done.stdout
    assert "[triton 3.6.0]" not in done.stdout and "[triton 3.9.0]" not in done.stdout
    assert "pip install -q triton==3.8.0" in done.stdout
    bad = python_runner(["ci/matrix.py", "--versions", "3.6.0"], cwd=project)
    assert bad.returncode == 2 and "3.6.0 not in triton-versions.txt" in bad.stderr
