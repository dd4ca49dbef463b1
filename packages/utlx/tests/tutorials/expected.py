"""Which tutorial cases fail today, with the first error each one stops at (issue 10).

The one place to flip: when a helper's work lands and a case starts to pass, its strict xfail turns into
an XPASS failure; delete its entry here. When it fails with a *different* first error, the test fails and
prints the new one: update the quote. Reasons quote the real first error (``run_tutorial.first_error``),
measured on Triton 3.8.0, CPU, with this branch's utlx.
"""

from __future__ import annotations

#: case id -> first error when compiling for cuda:90 through the host function
COMPILE: dict[str, str] = {}

#: case id -> first error under TRITON_INTERPRET=1
INTERPRET: dict[str, str] = {}


class KnownFirstError(Exception):
    """A case failed with exactly the first error its table entry quotes (what its xfail expects)."""


def xfail_marks(table: dict[str, str], case_id: str) -> list:
    """A strict xfail that only accepts :class:`KnownFirstError`: a *different* first error fails the test,
    so the quoted reasons stay true as the other helpers' work moves each case forward."""
    import pytest

    if case_id not in table:
        return []
    return [pytest.mark.xfail(strict=True, raises=KnownFirstError, reason=table[case_id])]


def raise_first_error(table: dict[str, str], case_id: str, error: str, detail: str = "") -> None:
    """Raise :class:`KnownFirstError` when ``error`` is the one the table quotes, else AssertionError."""
    if table.get(case_id) == error:
        raise KnownFirstError(error)
    want = f" (expected.py quotes: {table[case_id]})" if case_id in table else ""
    raise AssertionError(f"{case_id}: {error}{want}\n{detail}")
