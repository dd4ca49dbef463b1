"""Every ```python block of README.md and docs/*.md runs as written, each in a fresh interpreter.

Why: a doc snippet is what a new user copies first; README's "Pipelines in one screen" once did not even
parse. Markers, an HTML comment on the line right before the fence:

- ``<!-- gpu -->``: needs an NVIDIA GPU; skipped without one (``torch.cuda.is_available()``).
- ``<!-- illustrative: WHY -->``: not meant to run; skipped, with WHY as the reason.

Blocks starting ``# extending: FILE`` are the files of docs/extending.md's example project: they only run
together, and ``packages/core/tests/test_extending_doc.py`` runs them. Compiled kernels are cached for the
session (one Triton cache under pytest's tmp dir), so blocks compiling the same kernel compile it once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SRC = [str(ROOT / "packages" / p / "src") for p in ("core", "utlx")]
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
MARKER = re.compile(r"<!--\s*(gpu|illustrative:\s*(?P<why>.+?))\s*-->\s*$")
EXTENDING = "# extending: "


class Block(NamedTuple):
    doc: str
    line: int
    code: str
    marker: str | None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = before.strip() if before.strip().startswith("<!--") else None
            found.append(Block(str(doc.relative_to(ROOT)), line, match.group(1), marker))
    return found


BLOCKS = blocks()


def test_the_docs_have_python_blocks_and_only_known_markers():
    assert {b.doc for b in BLOCKS} >= {"README.md", "docs/utlx.md", "docs/extending.md"}
    for b in BLOCKS:
        assert b.marker is None or MARKER.match(b.marker), f"{b.id}: unknown marker {b.marker!r}"


def test_extending_blocks_are_run_by_their_own_test():
    runner = (ROOT / "packages/core/tests/test_extending_doc.py").read_text()
    assert 'DOC = ROOT / "docs" / "extending.md"' in runner and f'startswith("{EXTENDING}")' in runner


@pytest.fixture(scope="session")
def triton_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("doc-blocks-triton-cache")


def _gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_python_block_runs(block, tmp_path, triton_cache):
    if block.code.startswith(EXTENDING):
        pytest.skip("a file of docs/extending.md's example project: test_extending_doc.py runs it")
    marker = MARKER.match(block.marker) if block.marker else None
    if marker and marker.group("why"):
        pytest.skip(f"illustrative: {marker.group('why')}")
    if marker and not _gpu():
        pytest.skip("marked <!-- gpu -->: needs an NVIDIA GPU")
    script = tmp_path / "block.py"  # @triton.jit needs its source in a file
    script.write_text(block.code)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITONX_PLUGINS")}
    env.update(PYTHONPATH=os.pathsep.join([*SRC, os.environ.get("PYTHONPATH", "")]),
               TRITON_CACHE_DIR=str(triton_cache))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{block.id} failed:\n{done.stderr[-4000:]}"
