"""utlx: TLX (Triton Language Extensions) on stock Triton. Use as ``import utlx as tlx``.

Importing utlx exposes every TLX op, makes ``import triton.language.extra.tlx`` (and its submodules) resolve
to utlx when no real module of that name exists, teaches Triton's CPU interpreter (``TRITON_INTERPRET=1``)
the utlx ops, accepts the fork-only Triton surface TLX code uses (``utlx.fork_surface``), and (when not
interpreting) activates the compile-path lowering (``utlx.plugin.ensure_active``) so TLX kernels compile
without further setup. ``utlx.matmul(a, b)`` runs the best packaged GEMM.
"""

import sys as _sys

from utlx.__about__ import __version__
from utlx.language import *  # noqa: F403
from utlx.language import OPS
from utlx.language import __all__ as _language_all
from utlx.language._alias import bind_submodules as _bind_submodules
from utlx.language._alias import install as _install_alias

_install_alias()
_bind_submodules(_sys.modules[__name__])


def _install_interpreter_support() -> None:
    """Register utlx with Triton's interpreter; cheap (wraps two hooks) and harmless when compiling."""
    from utlx.interpreter import install

    install()


def _activate_compile_path() -> None:
    """Interpreted kernels never compile, so the lowering is only activated when not interpreting."""
    from utlx.compat import interpreting

    if interpreting():
        return
    from utlx.plugin import ensure_active

    ensure_active()


def _install_fork_surface() -> None:
    """Accept the Triton surface only Meta's fork has and TLX code uses (``triton.Config(ctas_per_cga=...)``,
    ``GPUTarget.is_cuda_backend``); nothing is patched when the environment disables utlx."""
    from utlx.plugin import disabled_by_environment

    if disabled_by_environment():
        return
    from utlx.fork_surface import install

    install()


def _warn_if_shadowed() -> None:
    """Meta's ``triton-utlx`` installs a top-level ``utlx`` too: say so (this import got ours; see docs/utlx.md).

    Only the distributions known to ship ``utlx`` are looked up (a named lookup: microseconds); ``tritonx
    doctor`` scans every installed distribution, and reports the other order too (theirs imported).
    """
    import warnings

    from tritonx.plugins.shadowing import shadowing

    found = shadowing("utlx", "utlx", candidates=_KNOWN_UTLX_OWNERS, running=True)
    if found is not None:
        warnings.warn(f"utlx: {found.message()}; docs/utlx.md says how to choose", UserWarning, stacklevel=3)


#: Other distributions known to ship a top-level ``utlx`` package.
_KNOWN_UTLX_OWNERS = ("triton-utlx",)

_warn_if_shadowed()
_install_interpreter_support()
_install_fork_surface()
_activate_compile_path()

from utlx.attention import attention as attention  # noqa: E402  (flash attention forward, a TLX kernel)
from utlx.matmul import matmul  # noqa: E402  (after the ops: the packaged kernels use them)

__all__ = ["OPS", "__version__", "matmul", *_language_all]
