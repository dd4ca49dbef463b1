"""GPU sweep tests: this folder's helpers (``gemm_sweep``, ``sweep_kernels``) are importable through the root
``pyproject.toml``'s pytest ``pythonpath``, the one way tests import their helpers."""

import pytest


@pytest.fixture
def private_matmul_tuning(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Tuning cut short (``UTLX_MATMUL_TUNE_BUDGET_S=0``: the first correct candidate wins) and private (a
    temporary tuning cache), for the modules that test the host path and numerics rather than speed (they ask for
    it with ``pytest.mark.usefixtures``)."""
    monkeypatch.setenv("UTLX_MATMUL_TUNE_BUDGET_S", "0")
    monkeypatch.setenv("UTLX_MATMUL_CACHE", str(tmp_path / "tuning.json"))
