"""utlx: TLX (Triton Language Extensions) on stock Triton. Use as ``import utlx as tlx``."""

from utlx.__about__ import __version__
from utlx.language._dispatch import register_compiler_impl

__all__ = ["__version__", "register_compiler_impl"]
