"""Regenerate ``tritonx/data/passmap.json``: adder path -> MLIR pass name, per Triton version.

Run once per installed Triton (each in its own environment); entries of other versions are kept:

    python tools/gen_passmap.py            # adds/updates the installed version's entry

It captures every stage of a pipelined matmul for every target of the matrix, so the map holds
every pass the stock pipelines add there (options-dependent passes that never run by default, such
as sanitizers, are absent: edits naming them are still validated against the adder names).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packages" / "core" / "src"))

TARGETS = ["cuda:80", "cuda:90", "cuda:100", "hip:gfx942", "hip:gfx950"]


def main() -> int:
    import tritonx
    from tritonx import compat

    found: dict[str, str] = {}
    for target in TARGETS:
        cap = tritonx.capture(target)
        for stage in cap:
            for info in cap[stage]:
                found.setdefault(info.adder, info.name)
    path = ROOT / "packages" / "core" / "src" / "tritonx" / "data" / "passmap.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    version = "{}.{}.{}".format(*compat.TRITON_VERSION)
    data[version] = dict(sorted(found.items()))
    path.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
    print(f"{version}: {len(found)} passes -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
