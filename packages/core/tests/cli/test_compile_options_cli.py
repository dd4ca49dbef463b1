"""``tritonx compile -o`` refuses values Triton would accept and never run (issue 28, item 12), with the
same check as ``compile_for`` (``tritonx.integration.options.check_compile_options``)."""

from __future__ import annotations

import pytest
from cli_helpers import ADD_SIG


def _compile(cli, add_file, *args: str):
    return cli("compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=128", *args)


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        ("num_warps=1048576", "-o num_warps=1048576: must be a power of 2 from 1 to 32"),
        ("num_stages=-1", "-o num_stages=-1: must be an int >= 0"),
        ("num_ctas=3", "-o num_ctas=3: must be a power of 2 from 1 to 16"),
        ("enable_fp_fusion='yes'", "-o enable_fp_fusion='yes': must be a bool"),
    ],
)
def test_out_of_range_options_are_refused_naming_the_option(cli, add_file, option, needle):
    result = _compile(cli, add_file, "-o", option)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert needle in result.stderr
    assert len([ln for ln in result.stderr.splitlines() if ln.strip()]) <= 2


def test_valid_options_still_compile(cli, add_file):
    result = _compile(cli, add_file, "-o", "num_warps=8", "-o", "num_stages=0", "--json")
    assert result.exit_code == 0, result.output
