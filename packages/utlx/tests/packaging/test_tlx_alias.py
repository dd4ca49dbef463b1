"""``import triton.language.extra.tlx`` gives utlx in a fresh interpreter, with no prior ``import utlx``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def test_alias_works_from_the_pth_at_startup(tmp_path):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "utlx-tlx-alias.pth").write_text((SRC / "utlx-tlx-alias.pth").read_text())
    # what site-packages does at start-up: process the .pth of a site directory
    code = (
        f"import site, sys; sys.path.insert(0, {str(SRC)!r}); site.addsitedir({str(site_dir)!r});"
        "assert 'utlx' not in sys.modules and 'triton' not in sys.modules;"
        "import triton.language.extra.tlx as tlx, utlx;"
        "assert tlx is utlx and callable(tlx.local_alloc); print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"UTLX_DISABLE": "1", "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok")
