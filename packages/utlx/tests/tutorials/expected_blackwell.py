"""Which Blackwell tutorial kernels do not compile (or are not right interpreted) on stock Triton, and why.

The one place to flip (the pattern of ``expected.py``): each entry is a strict xfail that only accepts the quoted
first error (the quote is the start of the error with paths cut to file names, :func:`quotes`), so a case that
starts to work (XPASS) or stops at another error fails the test and shows what changed. Quotes come from
``run_blackwell_case.py``'s ``first_error`` on the CPU with this branch's utlx (regenerate them with
``python run_blackwell_case.py --summary --errors-to FILE``); docs/utlx.md ("Blackwell") says why for each.

``COMPILE`` / ``INTERPRET`` hold what fails on Triton 3.8 and 3.9; ``BY_VERSION`` what differs on one version.
"""

from __future__ import annotations

import re
from typing import Any

from utlx import compat

#: case id -> first error compiling for cuda:100
COMPILE: dict[str, str] = {
    'wheel.blackwell_fa_ws_pipelined_persistent_mxfp8':
        'UtlxCompileError: utlx.storage_alias_spec: its block-scales members (uint8/int8) need tensor mem',
    'fork.blackwell_fa_ws_pipelined_persistent_mxfp8':
        'UtlxCompileError: utlx.storage_alias_spec: its block-scales members (uint8/int8) need tensor mem',
    'wheel.blackwell-gdpa':
        "CompilationError: NameError('p1_view is not defined')",
}

#: case id -> first error under TRITON_INTERPRET=1
INTERPRET: dict[str, str | tuple[str, ...]] = {
    # both are the tutorial's own bugs; which one the interpreter meets first depends on the random sequence
    # lengths of the case's data (seeded per run): either is this case's known first error
    'wheel.blackwell-gdpa': (
        "UnboundLocalError: cannot access local variable 'p1_view' where it is not associated with a valu",
        'UtlxHazardError: local_load reads o0_buf[0] at blackwell-gdpa.py:526 in gdpa_kernel_tma_ws_black',
    ),
    'fork.blackwell-gdpa':
        'UtlxHazardError: local_load reads o0_buf[0] at blackwell-gdpa.py:435 in gdpa_kernel_tma_ws_black',
}

#: Triton minor version -> case id -> first error on that version only (None: works there although listed above)
BY_VERSION: dict[str, dict[str, str | None]] = {}


def normalise(error: str) -> str:
    """``error`` with absolute paths cut to the file name and object addresses dropped (the quotes hold on any
    machine, checkout and run)."""
    error = re.sub(r" at 0x[0-9a-f]+", "", error)  # object addresses differ run to run
    return re.sub(r'(/[^\s"\')]+/)([^/\s"\')]+\.py)', r"\2", error)


def quotes(quote: str | tuple[str, ...], error: str) -> bool:
    """Whether ``quote`` (a table entry: one quote, or alternatives where the first error depends on the data) is
    the start of ``error`` once its paths are cut to file names."""
    return normalise(error).startswith(quote)


def table(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with the running Triton's version entries applied (``COMPILE`` or ``INTERPRET``)."""
    minor = "{}.{}".format(*compat.TRITON_VERSION[:2])
    out = dict(base)
    kind = "interpret" if base is INTERPRET else "compile"
    for case, error in BY_VERSION.get(f"{minor}:{kind}", {}).items():
        if error is None:
            out.pop(case, None)
        else:
            out[case] = error
    return out
