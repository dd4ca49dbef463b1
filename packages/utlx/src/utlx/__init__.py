"""utlx: TLX (Triton Language Extensions) on stock Triton. Use as ``import utlx as tlx``.

Importing utlx exposes every TLX op, makes ``import triton.language.extra.tlx`` (and its submodules) resolve
to utlx when no real module of that name exists, and enables the utlx plugin (``utlx.plugin.ensure_active``)
so TLX kernels compile without further setup. Enabling it switches on utlx's declared seams of Triton
(``utlx.seams``, installed by ``tritonx.seams`` and listed by ``tritonx doctor``): Triton's CPU interpreter
(``TRITON_INTERPRET=1``) learns the utlx ops, and the fork-only Triton surface TLX code uses is accepted
(``utlx.fork_surface``). Under the interpreter only the seams are switched on (nothing compiles).
``utlx.matmul(a, b)`` runs the best packaged GEMM.
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


def _enable() -> None:
    """Switch utlx on unless the environment disables it: its seams of Triton (``utlx.seams``, installed by
    ``tritonx.seams``) and, when not interpreting, the compile-path lowering (interpreted kernels never compile,
    so the plugin's pipeline is only activated then)."""
    from utlx.compat import interpreting
    from utlx.plugin import ensure_active, switch_on_seams

    if interpreting():
        switch_on_seams()
    else:
        ensure_active()


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
_enable()

from utlx.attention import attention as attention  # noqa: E402  (flash attention forward, a TLX kernel)
from utlx.matmul import matmul  # noqa: E402  (after the ops: the packaged kernels use them)

__all__ = ["OPS", "__version__", "matmul", *_language_all]

from utlx.settings import settings as _utlx_settings  # noqa: E402

if _utlx_settings.inductor != "off":
    import utlx.inductor  # noqa: F401  (the knob switches the torch.compile integration on: utlx.inductor)
