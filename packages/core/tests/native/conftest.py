"""Helpers of this folder (``native_fixtures``, ``native_kernels``) are importable through the root
``pyproject.toml``'s pytest ``pythonpath``, the one way tests import their helpers."""
