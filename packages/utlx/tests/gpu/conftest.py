"""GPU sweep tests: this folder's helpers (``gemm_sweep``, ``sweep_kernels``) are importable through the root
``pyproject.toml``'s pytest ``pythonpath``, the one way tests import their helpers."""
