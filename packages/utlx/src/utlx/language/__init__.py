"""The utlx op surface: TLX's names and signatures, each op a Triton builtin routed by ``_dispatch``."""

from utlx.language._dispatch import (
    UtlxDispatchError,
    dispatch,
    register_compiler_impl,
    register_interpreter_impl,
    registered_ops,
)
from utlx.language.barrier import *  # noqa: F403
from utlx.language.barrier import __all__ as _barrier_all
from utlx.language.mem_ops import *  # noqa: F403
from utlx.language.mem_ops import __all__ as _mem_all
from utlx.language.mma_ops import *  # noqa: F403
from utlx.language.mma_ops import __all__ as _mma_all
from utlx.language.tasks import *  # noqa: F403
from utlx.language.tasks import __all__ as _tasks_all
from utlx.language.types import storage_kind
from utlx.language.utility import *  # noqa: F403
from utlx.language.utility import __all__ as _utility_all

#: Every op of the surface (the names a TLX kernel calls as ``tlx.<name>``).
OPS: tuple[str, ...] = tuple(sorted({*_barrier_all, *_mem_all, *_mma_all, *_tasks_all, *_utility_all}))

__all__ = [
    "OPS",
    "UtlxDispatchError",
    "dispatch",
    "register_compiler_impl",
    "register_interpreter_impl",
    "registered_ops",
    "storage_kind",
    *OPS,
]
