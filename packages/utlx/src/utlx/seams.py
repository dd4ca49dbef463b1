"""Every change utlx makes to stock Triton, handed to :mod:`tritonx.seams` (utlx's plugin hooks).

utlx never writes to Triton itself: this module implements tritonx's ``tritonx_seams`` hook, and tritonx
installs the seams when it enables the utlx plugin (``import utlx`` does, through
:func:`utlx.plugin.ensure_active`; under ``TRITON_INTERPRET=1``, :func:`utlx.plugin.switch_on_seams`) and undoes
them when utlx is disabled; ``tritonx doctor`` lists them. Each seam is declared beside the wrapper it installs:

* :data:`utlx.interpreter.hooks.SEAMS`: Triton's CPU interpreter runs utlx ops (``_patch_lang``,
  ``FunctionRewriter.ast_transformer``) and computes bf16 ``tl.dot`` right (``InterpreterBuilder.create_dot``);
* :data:`utlx.fork_surface.SEAMS`: the Triton surface only Meta's fork has and TLX code uses (``triton.Config``,
  the autotuner, launch keywords, ``GPUTarget.is_cuda_backend``, the code generator's comprehensions and
  annotations, and two Triton 3.8 behaviours on 3.6/3.7);
* :data:`utlx.compiler.SEAMS`: replicated ``async_task`` bodies traced once per replica (``visit_With``).

Where each Triton class and method lives, per version, is in :mod:`utlx.compat`.
"""

from __future__ import annotations

from tritonx.seams import Seam, hookimpl

from utlx import compiler, fork_surface
from utlx.interpreter import hooks as interpreter_hooks


@hookimpl
def tritonx_seams() -> list[Seam]:
    """utlx's seams, in installation order (tritonx's hook specification, :class:`tritonx.seams.SeamSpec`)."""
    return [*interpreter_hooks.SEAMS, *fork_surface.SEAMS, *compiler.SEAMS]
