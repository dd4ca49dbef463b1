"""The utlx compile path: TLX ops traced as placeholders, lowered to TTGIR after conversion.

Laid out by vendor: :mod:`.common` (what every target shares, the lowering driver), :mod:`.nvidia` (Hopper and
Blackwell), :mod:`.amd` (gfx942/gfx950). Importing this package registers the compiler body of every TLX op with
``utlx.language._dispatch`` (the contract between the two sides: ``docs/utlx.md``, "How it compiles"); each
vendor registers its bodies for its own targets.
"""

from __future__ import annotations

from tritonx.seams import Seam

from utlx import compat
from utlx.language import types as _types

# Importing each module registers its ops' compiler bodies (and lowerings).
from . import amd, common, key, nvidia  # noqa: F401
from .common.errors import UtlxCompileError
from .common.lowering import lower_module
from .common.stages import lowering_pass
from .common.values import AsyncToken, Barriers, BarrierView, SharedBuffers, SharedView
from .nvidia import tasks

# The compile path's values count as TLX's types (``isinstance(bufs, tlx.buffered_tensor)``, ``reuse_group``).
for _tlx_class, _impl in ((_types.buffered_tensor, SharedBuffers), (_types.buffered_tensor, SharedView),
                          (_types.mbarrier, Barriers), (_types.mbarrier, BarrierView),
                          (_types.async_token, AsyncToken)):
    _types.register_value_class(_tlx_class, _impl)
del _tlx_class, _impl

#: Replicated tasks are traced once per replica: utlx's ``with`` statements go through tasks.trace_with (a seam
#: of Triton's code generator, installed by tritonx.seams while utlx is enabled: see utlx.seams).
SEAMS: tuple[Seam, ...] = (
    Seam("utlx.codegen-with", where=lambda: (compat.code_generator_class(), "visit_With"),
         make=compat.with_hook(tasks.trace_with),
         reason="each replica of async_task(replicate=N) is traced separately (stock visits a with body once); "
                "other with statements go to stock"),
)

__all__ = ["SEAMS", "UtlxCompileError", "lower_module", "lowering_pass"]
