"""Issue 29: every input error is one line without Python internals; messages on stderr, data on stdout."""

from __future__ import annotations

import pytest
from cli_helpers import ADD_SIG


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def one_line_error(result, *needles: str) -> str:
    """Exit 1, exactly one line on stderr naming each needle, nothing on stdout, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.stdout == "", result.stdout
    err = result.stderr
    assert len(_lines(err)) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    for needle in needles:
        assert needle in err, err
    return err


# ------------------------------------------------------------------------------------------------
# TRITONX_DEBUG


@pytest.mark.parametrize("value", ["2", "verbose"])
def test_bad_tritonx_debug_is_one_line(cli, value):
    result = cli.runner.invoke(cli.app, ["pipeline", "--stage", "ttir"], env={"TRITONX_DEBUG": value})
    err = one_line_error(result, f"TRITONX_DEBUG={value!r} is not a boolean", "1, true, yes, on, 0, false, no, off")
    assert err.startswith("tritonx: error: ")


@pytest.mark.parametrize("value", ["1", "yes", "0", ""])
def test_valid_tritonx_debug_values_run(cli, value):
    result = cli.runner.invoke(cli.app, ["pipeline", "--stage", "ttir", "--json"], env={"TRITONX_DEBUG": value})
    assert result.exit_code == 0, result.output


def test_tritonx_debug_1_shows_the_traceback(cli, add_file):
    """The documented switch: TRITONX_DEBUG=1 behaves as --debug (Triton's own exception is re-raised)."""
    result = cli.runner.invoke(cli.app, ["compile", f"{add_file}:add_one", "--signature", ADD_SIG, "-c", "BLOCK=100"],
                               env={"TRITONX_DEBUG": "1"})
    assert result.exit_code == 1
    assert result.exception is not None and not isinstance(result.exception, SystemExit)
