"""docs/extending.md: its examples run as written and print what the page shows; its native excerpts are the
template's own code.

Why: the page is the first thing a plugin author copies. Each ``# extending: <file>`` block is written to a
fresh folder, and each ``# output of: [VAR=1] python <file>`` block is the output of running it there
(register numbers aside, which differ between Triton versions). The level-2 excerpts name the template file
they come from (``// native/Passes.cpp``); rendered for a plugin called ``mydialect``, that file must contain
each excerpt (``...`` separates pieces), so the page cannot drift from the template the slow test builds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "extending.md"
SRC = [str(ROOT / "packages" / p / "src") for p in ("core", "utlx")]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(DOC.read_text())


def _normalise(text: str) -> str:
    return re.sub(r"%r\d+|\bv\d+\b", "R", text)


def test_examples_run_and_print_what_the_page_shows(tmp_path):
    pytest.importorskip("torch")  # the interpreter example launches on torch CPU tensors
    files, runs = {}, []
    for lang, body in _blocks():
        first, _, rest = body.partition("\n")
        if lang == "python" and first.startswith("# extending: "):
            files[first.split(": ", 1)[1].strip()] = rest
        elif lang == "text" and first.startswith("# output of: "):
            runs.append((first.split(": ", 1)[1].split(), rest))
    assert {"level1.py", "bits.py", "count_bits.py", "compile_it.py", "run_it.py", "seam_it.py"} <= set(files)
    assert len(runs) == 4
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for command, expected in runs:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([*SRC, os.environ.get("PYTHONPATH", "")]),
                   TRITON_CACHE_DIR=str(tmp_path / "cache"), TRITONX_PLUGINS="none")
        while "=" in command[0]:
            key, value = command.pop(0).split("=", 1)
            env[key] = value
        assert command[0] == "python"
        done = subprocess.run([sys.executable, *command[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-4000:]
        assert _normalise(done.stdout) == _normalise(expected), " ".join(command)


def test_native_excerpts_are_the_templates_code(tmp_path):
    pytest.importorskip("cookiecutter")
    from tritonx.cli.new import scaffold

    project = scaffold("mydialect", native=True, output_dir=tmp_path, answers={"plugin_name": "mydialect"})
    checked = 0
    for lang, body in _blocks():
        first, _, rest = body.partition("\n")
        if lang not in ("cpp", "tablegen", "python") or not re.match(r"(//|#) (native|src)/", first):
            continue
        source = (project / first.split(" ", 1)[1].strip()).read_text()
        for piece in rest.split("...\n"):
            assert piece.strip("\n") in source, f"{first}: not in the template:\n{piece}"
            checked += 1
    assert checked >= 5
