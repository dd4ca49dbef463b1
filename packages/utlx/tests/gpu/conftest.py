"""GPU sweep tests: importable helpers from this folder (``--import-mode=importlib`` does not add it)."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
