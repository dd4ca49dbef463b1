"""What every GPU test module needs first: torch with a GPU. Importing this module skips the importing test module
on a machine without one (``pytest.skip`` at module level), so each test file says it in one import."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

if not torch.cuda.is_available():  # pragma: no cover - CPU machines
    pytest.skip("needs a GPU", allow_module_level=True)

__all__ = ["torch"]
