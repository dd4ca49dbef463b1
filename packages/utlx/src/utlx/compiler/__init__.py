"""The utlx compile path: TLX ops traced as placeholders, lowered to TTGIR after conversion.

Importing this package registers the compiler body of every TLX op with
``utlx.language._dispatch`` (the contract between the two sides: ``docs/utlx.md``, "How it compiles").
"""

from __future__ import annotations

from utlx import compat
from utlx.language import types as _types

# Importing each module registers its ops' compiler bodies (and lowerings).
from . import amd_ops, blackwell, global_ops, layout_ops, ops, sync_ops, tasks, view_ops  # noqa: F401
from .errors import UtlxCompileError
from .lowering import lower_module
from .stages import lowering_pass
from .values import AsyncToken, Barriers, BarrierView, SharedBuffers, SharedView

# The compile path's values count as TLX's types (``isinstance(bufs, tlx.buffered_tensor)``, ``reuse_group``).
for _tlx_class, _impl in ((_types.buffered_tensor, SharedBuffers), (_types.buffered_tensor, SharedView),
                          (_types.mbarrier, Barriers), (_types.mbarrier, BarrierView),
                          (_types.async_token, AsyncToken)):
    _types.register_value_class(_tlx_class, _impl)
del _tlx_class, _impl

# Replicated tasks are traced once per replica: utlx's ``with`` statements go through tasks.trace_with.
compat.install_with_hook(tasks.trace_with)

__all__ = ["UtlxCompileError", "lower_module", "lowering_pass"]
