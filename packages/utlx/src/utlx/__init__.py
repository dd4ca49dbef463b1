"""utlx: TLX (Triton Language Extensions) on stock Triton. Use as ``import utlx as tlx``.

Importing utlx exposes every TLX op, makes ``import triton.language.extra.tlx`` resolve to utlx when no
real module of that name exists, and teaches Triton's CPU interpreter (``TRITON_INTERPRET=1``) the utlx
ops. Compile-path implementations are registered by ``utlx.compiler`` (imported lazily on first use).
"""

from utlx.__about__ import __version__
from utlx.language import *  # noqa: F403
from utlx.language import OPS
from utlx.language import __all__ as _language_all
from utlx.language._alias import install as _install_alias

_install_alias()


def _install_interpreter_support() -> None:
    """Register utlx with Triton's interpreter; cheap (wraps two hooks) and harmless when compiling."""
    from utlx.interpreter import install

    install()


_install_interpreter_support()

__all__ = ["OPS", "__version__", *_language_all]
