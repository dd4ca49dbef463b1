"""Issue 27 acceptance: Meta's Blackwell TLX tutorials, unchanged, compile for cuda:100 and run right interpreted.

Each case (``blackwell_cases.py``) imports the tutorial file as it is (``import triton.language.extra.tlx as tlx``
resolves to utlx) and calls its own host function on small CPU tensors, in a process of its own
(``run_blackwell_case.py``):

* compiled for ``cuda:100`` under the compile-only driver (a B200 stand-in: launches recorded, nothing run,
  autotuning reduced to the first surviving config): every launch targets ``sm_100a``, no utlx placeholder is
  left, and the PTX shows what the file promises (``tcgen05.mma``, ``tcgen05.ld``, TMA, mbarriers, CLC, 2-CTA);
* interpreted (``TRITON_INTERPRET=1``) on fresh random data (the seed is printed on failure) and compared with
  a float32 torch reference.

The wheel's files are downloaded at test time (``meta_wheel``), the fork's are read from ``$UTLX_FBTRITON_DIR``
(skipped without it). Expected failures (``expected_blackwell.py``) are strict xfails quoting the first error.
No Blackwell GPU is available: this is what "compile- and interpreter-verified" means for Blackwell.
"""

from __future__ import annotations

import random

import blackwell_cases
import expected_blackwell
import pytest
import run_blackwell_case
from expected import KnownFirstError

pytest.importorskip("torch")

COMPILE = expected_blackwell.table(expected_blackwell.COMPILE)
INTERPRET = expected_blackwell.table(expected_blackwell.INTERPRET)


def _params(table: dict[str, str], only_interpreted: bool = False) -> list:
    out = []
    for case in blackwell_cases.CASES:
        if only_interpreted and not case.interpret:
            continue
        marks = [pytest.mark.slow] if case.slow else []
        if case.id in table:
            marks.append(pytest.mark.xfail(strict=True, raises=KnownFirstError, reason=str(table[case.id])))
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def _first_error(case_id: str, table: dict[str, str], result: dict) -> None:
    error = result["first_error"]
    if error.startswith("SkipReason: "):
        pytest.skip(error[len("SkipReason: "):])
    if case_id in table and expected_blackwell.quotes(table[case_id], error):
        raise KnownFirstError(error)
    want = f" (expected_blackwell.py quotes: {table[case_id]})" if case_id in table else ""
    raise AssertionError(f"{case_id}: {error}{want}\n{result.get('stderr', '')[-3000:]}")


@pytest.mark.parametrize("case", _params(COMPILE))
def test_compiles_for_cuda100_through_its_host_code(case, tmp_path):
    result = run_blackwell_case.run_in_subprocess(case.id, cache=str(tmp_path))
    if not result["ok"]:
        _first_error(case.id, COMPILE, result)
    launches = result["launches"]
    assert launches, f"{case.id}: the host function launched nothing"
    for launch in launches:
        assert launch.get("sm_100a"), f"{launch['name']}: not compiled for sm_100a ({launch})"
        assert not launch["placeholders_left"], f"{launch['name']}: utlx placeholders reached the final TTGIR"
    shown = {p for launch in launches for p in launch["matched"]}
    missing = [p for p in case.ptx if p not in shown]
    assert not missing, f"{case.id}: no launch's PTX shows {missing}: {launches}"


@pytest.mark.parametrize("case", _params(INTERPRET, only_interpreted=True))
def test_matches_float32_reference_under_the_interpreter(case, tmp_path):
    seed = random.randrange(2**31)
    result = run_blackwell_case.run_in_subprocess(case.id, cache=str(tmp_path), interpret=True, seed=seed)
    if "first_error" in result:
        _first_error(case.id, INTERPRET, result)
    assert result["max_abs_error"], f"{case.id}: nothing was compared"
    assert result["ok"], f"{case.id} (seed {seed}): max abs errors {result['max_abs_error']}"


@pytest.mark.parametrize("source", ["wheel", "fork"])
def test_every_blackwell_file_has_a_case(source):
    """A new Blackwell tutorial in a future wheel or pin must not be left out silently."""
    tutorials, why = run_blackwell_case.tutorials_for(source)
    if tutorials is None:
        pytest.skip(why)
    covered = {c.module for c in blackwell_cases.CASES if c.source == source}
    skipped = set(blackwell_cases.NOT_CASES) if source == "fork" else set()
    assert blackwell_cases.blackwell_files(tutorials) == covered | skipped


def test_every_expected_failure_names_a_case():
    known = set(blackwell_cases.BY_ID)
    for table in (expected_blackwell.COMPILE, expected_blackwell.INTERPRET, *expected_blackwell.BY_VERSION.values()):
        assert set(table) <= known, set(table) - known
