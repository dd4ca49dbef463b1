"""Make the helper modules of this folder importable.

The repository runs pytest with ``--import-mode=importlib`` and only ``packages/core/tests`` on the
path, so ``native_fixtures``/``native_kernels`` (helpers, not tests) are put on ``sys.path`` here:
appended, never first, so ``from conftest import ...`` elsewhere still finds the top-level conftest.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)
