"""Which Blackwell tutorial kernels do not compile (or are not right interpreted) on stock Triton, and why.

The one place to flip (the pattern of ``expected.py``): each entry is a strict xfail that only accepts exactly the
quoted first error, so a case that starts to work (XPASS) or stops at another error fails the test and shows what
changed. Quotes are ``run_blackwell_case.py``'s ``first_error`` on the CPU with this branch's utlx (regenerate with
``python run_blackwell_case.py --summary --errors-to FILE``). docs/utlx.md ("Blackwell") says why for each.

``COMPILE`` / ``INTERPRET`` hold what fails on Triton 3.8 and 3.9; ``BY_VERSION`` what differs on one minor version.
"""

from __future__ import annotations

from utlx import compat

#: case id -> first error compiling for cuda:100
COMPILE: dict[str, str] = {}

#: case id -> first error under TRITON_INTERPRET=1
INTERPRET: dict[str, str] = {}

#: Triton minor version -> case id -> first error on that version only (None: works there although listed above)
BY_VERSION: dict[str, dict[str, str | None]] = {}


def table(base: dict[str, str]) -> dict[str, str]:
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
