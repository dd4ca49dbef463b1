"""The checker process :mod:`tritonx._startup` runs: check each library, print the verdicts as JSON.

It runs isolated (``python -I``) with the parent's tritonx first on its path.

It runs with ``TRITON_PLUGIN_PATHS`` and ``TRITONX_NATIVE_PLUGINS`` removed, so importing tritonx (and
with it triton) here loads no plugin; the parent, which must not import triton yet, only reads the
one JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .._startup import CHILD_MARKER
from ..compat.native import native_loading
from .check import diagnose_native
from .installation import find_triton


def verdicts(paths: list[str]) -> dict[str, Any]:
    """The report the start-up parent consumes: mechanism plus one result per library."""
    triton = find_triton()
    loading = native_loading(triton.version) if triton is not None else None
    results: list[dict[str, Any]] = []
    for path in paths:
        diagnosis = diagnose_native(path)
        if diagnosis.info is not None:
            info = diagnosis.info
            calls = loading.load_calls(bool(info.dialects), bool(info.ops)) if loading is not None else []
            results.append({"path": info.path, "ok": True, "info": info.to_dict(), "calls": calls})
        else:
            error = diagnosis.error
            assert error is not None
            failed = diagnosis.checks[-1]
            results.append({"path": diagnosis.path, "ok": False, "check": error.check, "message": failed.detail})
    return {
        "mechanism": loading.mechanism if loading is not None else None,
        "triton_version": triton.version if triton is not None else None,
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    paths = list(sys.argv[1:] if argv is None else argv)
    report = verdicts(paths)
    sys.stdout.write(CHILD_MARKER + json.dumps(report) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
