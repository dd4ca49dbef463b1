"""Issue 17 acceptance: Meta's AMD TLX tutorials (the fork at the pinned commit, unchanged) compile with utlx.

Each case imports the tutorial file as it is (``import triton.language.extra.tlx as tlx`` resolves to utlx),
calls its own host function on CPU tensors under the compile-only driver for its target (gfx942 = MI300X,
gfx950 = MI355X: launches recorded, autotuning reduced to the first surviving config, the device's LDS budget
enforced as on the GPU), in a process of its own (``run_amd_case.py``), and checks every launched kernel:
compiled for that target, no utlx placeholder left, and the AMDGCN shows what the file promises (MFMA,
direct-to-LDS copies, buffer loads, ``s_setprio`` for warp pipelines on Triton 3.7+).

The fork's files are read from ``$UTLX_FBTRITON_DIR`` (``fbtriton_checkout``); without it every case skips
with that reason (CI), so this costs nothing in the default suite. Expected failures (``expected_amd.py``)
are strict xfails quoting the first error.
"""

from __future__ import annotations

import re
from pathlib import Path

import amd_cases
import expected_amd
import fbtriton_checkout
import pytest
import run_amd_case
from expected import KnownFirstError
from tutorial_sources import tutorials_or_skip
from utlx import compat

MINOR = "{}.{}".format(*compat.TRITON_VERSION[:2])
EXPECTED = expected_amd.table(MINOR)


@pytest.fixture(scope="module")
def tutorials() -> Path:
    return tutorials_or_skip(fbtriton_checkout)


def _params() -> list:
    out = []
    for case in amd_cases.CASES:
        marks = [pytest.mark.slow] if case.slow else []
        if case.id in EXPECTED:
            marks.append(pytest.mark.xfail(strict=True, raises=KnownFirstError, reason=EXPECTED[case.id]))
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
def test_compiles_for_its_target_through_its_host_code(case, tutorials, tmp_path):
    result = run_amd_case.run_in_subprocess(case.id, timeout=3600 if case.slow else 900, cache=str(tmp_path))
    if not result["ok"]:
        error = expected_amd.normalise(result["first_error"])
        if EXPECTED.get(case.id) == error:
            raise KnownFirstError(error)
        want = f" (expected_amd.py quotes: {EXPECTED[case.id]})" if case.id in EXPECTED else ""
        raise AssertionError(f"{case.id}: {error}{want}\n{result.get('stderr', '')[-3000:]}")
    launches = result["launches"]
    assert launches, f"{case.id}: the host function launched nothing"
    totals: dict[str, int] = {}
    for launch in launches:
        # "amdgcn-amd-amdhsa--gfx950" up to 3.8, "amdgpu9.50-amd-amdhsa-unknown-gfx950" on 3.9
        assert re.fullmatch(rf"\S+-amd-amdhsa-\w*-{case.arch}\S*", launch.get("amdgcn_target") or ""), launch
        assert not launch["placeholders_left"], f"{launch['name']}: utlx placeholders reached the final TTGIR"
        for name, n in launch["counts"].items():
            totals[name] = totals.get(name, 0) + n
    staged = expected_amd.STAGED_BY_VERSION.get(MINOR, {})
    for pattern in case.promises:
        name = next(k for k in run_amd_case.PATTERNS if getattr(amd_cases, k) == pattern)
        if name == "DIRECT_TO_LDS" and case.id in staged:
            assert totals[name] == 0, f"{case.id}: direct-to-LDS copies on {MINOR}: drop it from STAGED_BY_VERSION"
            continue
        assert totals[name] > 0, f"{case.id}: no {name} in the AMDGCN of {[x['name'] for x in launches]}: {totals}"
    if case.warp_pipeline and compat.version_at_least(3, 7):
        stages = sum(launch["warp_pipeline_stages"] for launch in launches)
        assert stages > 0, f"{case.id}: the warp_pipeline_stage borders did not become pipeline stages"


def test_every_amd_file_of_the_fork_has_a_case(tutorials):
    """A new AMD tutorial at a new pin must not be skipped silently."""
    assert amd_cases.corpus_files(tutorials) == {c.module for c in amd_cases.CASES if not c.variant_of}


def test_every_expected_failure_names_a_case():
    known = {c.id for c in amd_cases.CASES}
    tables = [expected_amd.COMPILE, *expected_amd.BY_VERSION.values()]
    assert all(set(t) <= known for t in tables)
    assert all(re.match(r"^\w+: ", reason) for t in tables for reason in t.values() if reason is not None)
    assert all(case in expected_amd.COMPILE for t in expected_amd.BY_VERSION.values()
               for case, reason in t.items() if reason is None)  # None lifts a COMPILE entry on one version
