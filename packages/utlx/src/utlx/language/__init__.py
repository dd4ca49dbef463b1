"""The utlx op surface: TLX's names and signatures, each op a Triton builtin routed by ``_dispatch``.

The submodules mirror the modules of Meta's ``triton.language.extra.tlx`` package (``barrier``,
``mem_ops``, ``mma_ops``, ``utility``, ``warp_ops``, ``dynamic_launch``, ``types``, ``mxfp8_utils``,
``warp_spec``; ``async_task_utils`` is :mod:`utlx.language.tasks`), so the alias package can map each
``triton.language.extra.tlx.<module>`` onto one of them.
"""

from tritonx import dsl as _dsl

from utlx.language import (  # noqa: F401  (the fork's modules outside tlx)
    inline_ptx_lib,
    subtile_ops,
    types,
)
from utlx.language._dispatch import (
    UtlxDispatchError,
    dispatch,
    register_compiler_impl,
    register_interpreter_impl,
    registered_ops,
)
from utlx.language.barrier import *  # noqa: F403
from utlx.language.barrier import __all__ as _barrier_all
from utlx.language.dynamic_launch import *  # noqa: F403
from utlx.language.dynamic_launch import __all__ as _clc_all
from utlx.language.mem_ops import *  # noqa: F403
from utlx.language.mem_ops import __all__ as _mem_all
from utlx.language.mma_ops import *  # noqa: F403
from utlx.language.mma_ops import __all__ as _mma_all
from utlx.language.mxfp8_utils import _to_mxfp8_block
from utlx.language.tasks import *  # noqa: F403
from utlx.language.tasks import __all__ as _tasks_all
from utlx.language.types import (  # noqa: F401  (re-exported through TYPES)
    CLCPipelineContext,
    CLCPipeliner,
    DummyRegisterLayoutEncoding,
    DummyTMEMLayoutEncoding,
    TMemCTAMode,
    amd_mfma_layout,
    async_token,
    buffered_tensor,
    buffered_tensor_type,
    clc_response,
    clc_response_type,
    dot_operand_layout,
    layout,
    layout_encoding,
    mbarrier,
    mbarrier_type,
    nv_mma_shared_layout_encoding,
    padded_shared_layout_encoding,
    register_value_class,
    reuse_group,
    reuse_group_ir_type,
    reuse_group_type,
    shared_layout_encoding,
    shared_linear_layout_encoding,
    storage_alias_spec_type,
    storage_kind,
    swizzled_layout,
    swizzled_shared_layout_encoding,
    tensor_descriptor_ptr,
    tensor_descriptor_ptr_type,
    tensor_memory_layout_encoding,
)
from utlx.language.types import storage_alias_spec as storage_alias_spec_type_class  # noqa: F401
from utlx.language.utility import *  # noqa: F403
from utlx.language.utility import __all__ as _utility_all
from utlx.language.warp_ops import *  # noqa: F403
from utlx.language.warp_ops import __all__ as _warp_all
from utlx.language.warp_pipeline import warp_pipeline_stage  # noqa: F401  (re-exported through TYPES)

_SURFACE = {*_barrier_all, *_clc_all, *_mem_all, *_mma_all, *_tasks_all, *_utility_all, *_warp_all}

#: Every op of the surface (the builtins a TLX kernel calls as ``tlx.<name>``: ``tritonx.dsl`` ops of utlx's
#: language).
OPS: tuple[str, ...] = tuple(sorted(n for n in _SURFACE if isinstance(globals()[n], _dsl.Op)))

#: ``@triton.jit`` helpers of the surface, written in plain Triton (the fork's ``warp_ops.warp_redux``): no op
#: of their own, so they compile for every target and run under the interpreter as they are.
JIT_HELPERS: tuple[str, ...] = tuple(sorted(_SURFACE - set(OPS)))

#: The classes and helpers of TLX's surface that are not ops (TLX exports them under these names;
#: ``storage_alias_spec`` is the op, its value class is ``storage_alias_spec_type_class`` as in TLX).
TYPES: tuple[str, ...] = (
    "CLCPipelineContext",
    "CLCPipeliner",
    "DummyRegisterLayoutEncoding",
    "DummyTMEMLayoutEncoding",
    "TMemCTAMode",
    "amd_mfma_layout",
    "async_token",
    "buffered_tensor",
    "buffered_tensor_type",
    "clc_response",
    "clc_response_type",
    "dot_operand_layout",
    "layout",
    "layout_encoding",
    "mbarrier",
    "mbarrier_type",
    "nv_mma_shared_layout_encoding",
    "padded_shared_layout_encoding",
    "reuse_group",
    "reuse_group_ir_type",
    "reuse_group_type",
    "shared_layout_encoding",
    "shared_linear_layout_encoding",
    "storage_alias_spec_type",
    "storage_alias_spec_type_class",
    "storage_kind",
    "swizzled_layout",
    "swizzled_shared_layout_encoding",
    "tensor_descriptor_ptr",
    "tensor_descriptor_ptr_type",
    "tensor_memory_layout_encoding",
    "warp_pipeline_stage",
)

__all__ = [
    "JIT_HELPERS",
    "OPS",
    "TYPES",
    "UtlxDispatchError",
    "_to_mxfp8_block",
    "dispatch",
    "register_compiler_impl",
    "register_interpreter_impl",
    "register_value_class",
    "registered_ops",
    *OPS,
    *JIT_HELPERS,
    *TYPES,
]
