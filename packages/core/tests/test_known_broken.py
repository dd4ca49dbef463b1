"""tritonx.compat.known_broken: the declared table of version combinations that break, and doctor's report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tritonx.compat import known_broken as kb

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(("triton", "numpy", "broken"), [
    ("3.6.0", "2.4.6", True),     # measured: InterpreterError ... only 0-dimensional arrays ...
    ("3.6.0", "2.4.0rc1", True),
    ("3.6.0", "2.3.5", False),    # measured: utlx.matmul under the interpreter works
    ("3.8.0", "2.4.6", False),    # 3.8 squeezes the array first
    ("3.6.0", None, False),       # numpy not installed: nothing to report
])
def test_triton_36_with_numpy_24_is_known_broken(triton, numpy, broken):
    hits = kb.found({"triton": triton, "numpy": numpy})
    assert bool(hits) is broken
    if broken:
        (hit,) = hits
        assert hit["installed"] == f"triton {triton}, numpy {numpy}"
        assert "only 0-dimensional arrays" in hit["effect"] and hit["fix"] == "pip install 'numpy<2.4'"


def test_an_unknown_comparison_is_refused():
    with pytest.raises(ValueError, match="unknown comparison '~=' for numpy"):
        kb.Condition("numpy", "~=", "2.4")


def _upper_bound(req: str) -> tuple[int, int, int]:
    match = re.search(r"<\s*([0-9.]+)", req)
    assert match, f"no upper bound in {req!r}"
    return kb.parse_version(match.group(1))


def test_utlx_declares_a_numpy_bound_that_excludes_every_known_broken_numpy():
    """pip cannot condition numpy on triton's version: utlx's own bound must keep the broken pair out."""
    deps = tomllib.loads((ROOT / "packages/utlx/pyproject.toml").read_text())["project"]["dependencies"]
    (numpy_req,) = [d for d in deps if d.startswith("numpy")]
    bound = _upper_bound(numpy_req)
    for entry in kb.KNOWN_BROKEN:
        for cond in entry.conditions:
            if cond.distribution == "numpy" and cond.op == ">=":
                assert bound <= kb.parse_version(cond.version), (numpy_req, entry)
