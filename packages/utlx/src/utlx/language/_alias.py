"""The ``triton.language.extra.tlx`` alias finder (it lives in the top-level ``utlx_tlx_alias`` module so the
``.pth`` shipped in the wheel can install it at start-up without importing utlx)."""

from __future__ import annotations

from utlx_tlx_alias import ALIAS, TARGET, TlxAliasFinder, install

__all__ = ["ALIAS", "TARGET", "TlxAliasFinder", "install"]
