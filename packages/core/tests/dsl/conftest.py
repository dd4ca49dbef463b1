"""Make this folder's helper modules (the test language and its kernels) importable (appended, as in native/)."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)
