"""CPU implementations of every utlx op for Triton's interpreter (``TRITON_INTERPRET=1``), plus a hazard
checker (on by default; ``UTLX_HAZARD_CHECKS=0`` turns it off).

Importing this package registers the implementations with ``utlx.language._dispatch`` and the CPU value
classes with TLX's type classes (``isinstance(buf, tlx.buffered_tensor)`` holds for a CPU buffer);
the seams of :data:`utlx.interpreter.hooks.SEAMS` hook them into the interpreter (installed by tritonx.seams
when utlx is enabled: ``import utlx``).
"""

from utlx.interpreter import (  # noqa: F401
    ops_amd,
    ops_barrier,
    ops_blackwell,
    ops_clc,
    ops_fork_cuda,
    ops_mem,
    ops_mma,
    ops_scaled,
    ops_util,
    tasks,
)
from utlx.interpreter.barriers import Barrier, BarrierArray
from utlx.interpreter.errors import UtlxDeadlockError, UtlxHazardError, UtlxInterpreterError
from utlx.interpreter.hooks import installed
from utlx.interpreter.memory import BufferView
from utlx.interpreter.ops_blackwell import UtlxNeedsBlackwellError
from utlx.interpreter.ops_mem import AsyncToken, DescriptorSlot, DescriptorStorage
from utlx.interpreter.state import CHECKS_ENV
from utlx.language import types as _types

for _tlx_class, _impl in (
    (_types.buffered_tensor, BufferView),
    (_types.mbarrier, Barrier),
    (_types.mbarrier, BarrierArray),
    (_types.async_token, AsyncToken),
    (_types.tensor_descriptor_ptr, DescriptorStorage),
    (_types.tensor_descriptor_ptr, DescriptorSlot),
):
    _types.register_value_class(_tlx_class, _impl)
del _tlx_class, _impl

__all__ = [
    "CHECKS_ENV",
    "UtlxDeadlockError",
    "UtlxHazardError",
    "UtlxInterpreterError",
    "UtlxNeedsBlackwellError",
    "installed",
]
