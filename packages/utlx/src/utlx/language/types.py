"""TLX's value, type and layout classes, with TLX's names and constructor signatures.

Why these exist in utlx: TLX kernels and their ``@jit`` helpers name these classes (annotations such as
``bar: tlx.mbarrier``, ``tlx.storage_kind.tmem``, ``tlx.reuse_group(...)``, layouts passed to
``local_alloc(layout=...)``), so a kernel written for Meta's TLX only imports unchanged if each of them
exists with the same constructor.

How utlx uses them: the *description* classes (layouts, ``storage_kind``, ``reuse_group``, the ``*_type``
classes) are plain data, equal when their fields are. The *value* classes (``buffered_tensor``,
``mbarrier``, ``async_token``, ...) describe what a TLX op returns. utlx's two paths return their own
objects (``utlx.compiler.common.values`` while compiling, ``utlx.interpreter`` objects on the CPU); each path
registers its classes with :func:`register_value_class` so ``isinstance(x, tlx.buffered_tensor)`` holds
for them as it does in TLX. The value classes can also be built directly (TLX's constructors take an IR
handle), which is what a compiler body does when it wants TLX's own types.
"""

from __future__ import annotations

import abc
import enum
from typing import Any

from triton.language import core as tl

from utlx.language._dispatch import dispatch
from utlx.language.layouts import (  # TLX keeps its layouts in its types module
    DummyRegisterLayoutEncoding,
    DummyTMEMLayoutEncoding,
    TMemCTAMode,
    _ints,
    amd_mfma_layout,
    dot_operand_layout,
    layout,
    layout_encoding,
    nv_mma_shared_layout_encoding,
    padded_shared_layout_encoding,
    shared_layout_encoding,
    shared_linear_layout_encoding,
    swizzled_layout,
    swizzled_shared_layout_encoding,
    tensor_memory_layout_encoding,
    tensor_memory_scales_layout_encoding,
)


class storage_kind(enum.Enum):
    """Where ``local_alloc`` places buffers: shared memory, Blackwell tensor memory, or cluster smem."""

    smem = "smem"
    tmem = "tmem"
    smemCluster = "smemCluster"




# ------------------------------------------------------------------------------------ buffer reuse groups


class reuse_group_type(enum.Enum):
    """How the members of a :class:`reuse_group` relate: ``shared`` members occupy the same bytes at each
    buffer index (used at different times); ``distinct`` members never overlap (used together)."""

    shared = "shared"
    distinct = "distinct"


class reuse_group:
    """A tree of buffers (leaves) and nested groups that tells ``storage_alias_spec.set_buffer_overlap``
    how allocations of one storage alias spec share memory. ``group_size`` > 1 treats that many
    consecutive buffers of each member as one logical buffer (subtiling)."""

    def __init__(self, *args, group_type=reuse_group_type.shared, group_size=1):
        if not args:
            raise ValueError("reuse_group: needs at least one buffer or nested reuse_group")
        size = tl._unwrap_if_constexpr(group_size)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"reuse_group: group_size must be a positive integer, got {size!r}")
        kind = tl._unwrap_if_constexpr(group_type)
        if not isinstance(kind, reuse_group_type):
            raise TypeError(f"reuse_group: group_type must be a tlx.reuse_group_type, got {kind!r}")
        members = tuple(tl._unwrap_if_constexpr(a) for a in args)
        for member in members:
            if not isinstance(member, (reuse_group, buffered_tensor)):
                raise TypeError(f"reuse_group: members must be buffers (local_alloc results) or reuse_groups, got "
                                f"{type(member).__name__}")
        self._args = members
        self._group_type = kind
        self._group_size = size

    @property
    def args(self) -> tuple:
        return self._args

    @property
    def group_type(self) -> reuse_group_type:
        return self._group_type

    @property
    def group_size(self) -> int:
        return self._group_size

    def leaves(self) -> list:
        """Every buffer of the tree, depth first."""
        out: list = []
        for member in self._args:
            out += member.leaves() if isinstance(member, reuse_group) else [member]
        return out

    def __repr__(self) -> str:
        size = f", group_size={self._group_size}" if self._group_size != 1 else ""
        return f"reuse_group({', '.join(map(repr, self._args))}, group_type={self._group_type.value}{size})"


class reuse_group_ir_type(tl.base_type):
    """Type of a lowered :class:`reuse_group` (only its kind: shared or distinct)."""

    def __init__(self, group_kind: reuse_group_type):
        self._group_kind = group_kind

    @property
    def group_kind(self) -> reuse_group_type:
        return self._group_kind

    def __eq__(self, other: object) -> bool:
        return isinstance(other, reuse_group_ir_type) and self._group_kind == other._group_kind

    def __hash__(self) -> int:
        return hash(self._group_kind)

    def __repr__(self) -> str:
        return f"reuse_group_ir_type({self._group_kind.value})"

    def mangle(self) -> str:
        return f"RG{self._group_kind.value}"


# ------------------------------------------------------------------------------------------------- values


class _TlxValue(tl.base_value, metaclass=abc.ABCMeta):
    """Base of TLX's value classes: a path registers its own classes as virtual subclasses."""

    handle: Any

    def _flatten_ir(self, handles: list) -> None:
        handles.append(self.handle)


def register_value_class(tlx_class: type, impl: type) -> type:
    """Make ``isinstance(x, tlx_class)`` true for instances of ``impl`` (a path's own value class)."""
    if not (isinstance(tlx_class, abc.ABCMeta) and issubclass(tlx_class, _TlxValue)):
        raise TypeError(f"register_value_class: {tlx_class!r} is not a TLX value class")
    tlx_class.register(impl)
    return impl


class _TlxType(tl.base_type):
    """Base of the ``*_type`` classes that are not block or pointer types."""

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)


class storage_alias_spec_type(_TlxType):
    """Type of a :class:`storage_alias_spec` value: its storage kind and optional fixed size."""

    def __init__(self, storage: storage_kind, buffer_size_bytes: int | None = None):
        self._storage = storage
        self._buffer_size_bytes = buffer_size_bytes

    @property
    def storage(self) -> storage_kind:
        return self._storage

    @property
    def buffer_size_bytes(self) -> int | None:
        return self._buffer_size_bytes

    def __repr__(self) -> str:
        size = f", {self._buffer_size_bytes} bytes" if self._buffer_size_bytes else ""
        return f"storage_alias_spec_type({self._storage.value}{size})"

    def mangle(self) -> str:
        return f"SAS{self._storage.value}{self._buffer_size_bytes or ''}"


class storage_alias_spec(_TlxValue):
    """Memory owned by no single allocation that several ``local_alloc(..., reuse=spec)`` share; how they
    share it is declared with :meth:`set_buffer_overlap`. Made by the ``tlx.storage_alias_spec`` op."""

    def __init__(self, handle, storage: storage_kind, buffer_size_bytes: int | None = None):
        super().__init__()
        if storage == storage_kind.smemCluster:
            raise ValueError("storage_alias_spec: storage must be smem or tmem, not smemCluster")
        self._handle = handle
        self._storage = storage
        self._buffer_size_bytes = buffer_size_bytes
        self.type = storage_alias_spec_type(storage, buffer_size_bytes)

    @property
    def handle(self):
        return self._handle

    @property
    def storage(self) -> storage_kind:
        return self._storage

    @property
    def buffer_size_bytes(self) -> int | None:
        return self._buffer_size_bytes

    @tl.builtin
    def set_buffer_overlap(self, overlap_def, _semantic=None):
        """Declare how the allocations using this spec overlap: ``overlap_def`` is a :class:`reuse_group`
        tree over them (call it after the allocations). Dispatched as op ``set_buffer_overlap``."""
        return dispatch("set_buffer_overlap", _semantic, spec=self, overlap_def=overlap_def)

    def __repr__(self) -> str:
        size = f", {self._buffer_size_bytes} bytes" if self._buffer_size_bytes else ""
        return f"storage_alias_spec({self._storage.value}{size})"


class buffered_tensor_type(tl.block_type):
    """Type of a :class:`buffered_tensor`: element type, shape of one buffer, number of buffers (0 for a
    single buffer view), storage and layout."""

    def __init__(self, element_ty: tl.dtype, shape: list, num: int, storage: storage_kind, layout=None):
        super().__init__(element_ty, shape)
        self.num = num
        self.storage = storage
        self.layout = layout

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self.element_ty == other.element_ty and self.shape == other.shape
                and (self.num, self.storage, self.layout) == (other.num, other.storage, other.layout))

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(self.shape), self.num))

    def __str__(self) -> str:
        return f"buffered_tensor<{self.element_ty}, {list(self.shape)}, num={self.num}, {self.storage.value}>"

    def mangle(self) -> str:
        return f"B{self.element_ty.mangle()}S{'_'.join(map(str, self.shape))}N{self.num}{self.storage.value}"


class buffered_tensor(_TlxValue):
    """Buffers in shared or tensor memory (what ``local_alloc``/``local_view`` return): ``num`` buffers
    of ``shape`` x ``element_ty`` (``num == 0``: one buffer, e.g. a ``local_view``)."""

    def __init__(self, handle, element_ty: tl.dtype, shape: list, num: int, storage: storage_kind, layout=None):
        super().__init__()
        self.handle = handle
        self.shape = shape
        self.dtype = element_ty
        self.type = buffered_tensor_type(element_ty, shape, num, storage, layout)

    def make_permute(self, handle, dims):
        """The transposed view (``local_trans``) of this buffer, backed by ``handle``."""
        dims = _ints(dims)
        layout = self.type.layout.make_permute(dims) if self.type.layout is not None else None
        return buffered_tensor(handle, self.dtype, [self.shape[d] for d in dims], self.type.num, self.type.storage,
                               layout)


class mbarrier_type(buffered_tensor_type):
    """Type of an :class:`mbarrier` array (each barrier one 64-bit word)."""

    def __init__(self, num: int, layout, storage, is_warp_barrier: bool = False):
        super().__init__(tl.int64, [1], num, storage, layout)
        self.is_warp_barrier = is_warp_barrier


class mbarrier(_TlxValue):
    """``num`` mbarriers (``alloc_barriers``/``alloc_warp_barrier``), or one (``num == 0``, a local_view)."""

    def __init__(self, handle, num: int, layout, storage: storage_kind = storage_kind.smem,
                 is_warp_barrier: bool = False):
        super().__init__()
        if storage not in (storage_kind.smem, storage_kind.smemCluster):
            raise ValueError(f"mbarrier: storage must be smem or smemCluster, got {storage}")
        self.handle = handle
        self.num = num
        self.is_warp_barrier = is_warp_barrier
        self.type = mbarrier_type(num, layout, storage, is_warp_barrier)


class clc_response_type(buffered_tensor_type):
    """Type of a :class:`clc_response` array (Blackwell cluster launch control)."""

    def __init__(self, num: int, layout):
        super().__init__(tl.int64, [1], num, storage_kind.smem, layout)


class clc_response(_TlxValue):
    """Buffers receiving Blackwell cluster-launch-control (CLC) responses (``_alloc_clc_responses``)."""

    def __init__(self, handle, num: int, layout):
        super().__init__()
        self.handle = handle
        self.num = num
        self.type = clc_response_type(num, layout)


class CLCPipelineContext_type(_TlxType):
    """Type of a :class:`CLCPipelineContext`: the types of its three members, flattened in order (so a context
    can be bound to a kernel variable and passed to a ``@jit`` helper, as TLX's aggregate can)."""

    def __init__(self, member_types: tuple) -> None:
        self.member_types = tuple(member_types)

    def _flatten_ir_types(self, builder: Any, out: list) -> None:
        for ty in self.member_types:
            ty._flatten_ir_types(builder, out)

    def _unflatten_ir(self, handles: list, cursor: int):
        members = []
        for ty in self.member_types:
            value, cursor = ty._unflatten_ir(handles, cursor)
            members.append(value)
        return CLCPipelineContext(*members), cursor

    def mangle(self) -> str:
        return "CLC" + "".join(ty.mangle() for ty in self.member_types)


class CLCPipelineContext(tl.base_value):
    """The barriers and response buffers of a CLC tile-scheduling pipeline (``clc_create_context``).

    A Triton value (TLX's is an aggregate): it holds whatever the running path's ops returned (compile-path
    handles, or the interpreter's barriers and responses).
    """

    def __init__(self, clc_mbars_empty: mbarrier, clc_mbars_full: mbarrier, clc_responses: clc_response):
        self._clc_mbars_empty = clc_mbars_empty
        self._clc_mbars_full = clc_mbars_full
        self._clc_responses = clc_responses

    def _members(self) -> tuple:
        return self._clc_mbars_empty, self._clc_mbars_full, self._clc_responses

    def _flatten_ir(self, handles: list) -> None:
        for member in self._members():
            member._flatten_ir(handles)

    def _set_name(self, builder: Any, name: str) -> None:
        """Bound to a name or a helper's parameter: the members are placeholders, which keep no names."""

    @property
    def type(self) -> CLCPipelineContext_type:
        return CLCPipelineContext_type(tuple(member.type for member in self._members()))


#: Name listed in TLX's ``__all__`` (3.8.0.post16) without a definition there; the pipeline context it names.
CLCPipeliner = CLCPipelineContext


class async_token_type(_TlxType):
    """Type of an :class:`async_token` (carries no IR type of its own)."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, async_token_type)

    def __hash__(self) -> int:
        return hash("async_token_type")

    def __repr__(self) -> str:
        return "async_token_type"

    def mangle(self) -> str:
        return "AT"


class async_token(_TlxValue):
    """Orders asynchronous operations (what ``async_load`` and the commit/wait group ops return)."""

    def __init__(self, handle):
        super().__init__()
        self.handle = handle
        self.type = async_token_type(handle)


class tensor_descriptor_ptr_type(tl.pointer_type):
    """Pointer to ``num`` device-side tensor descriptors of ``size`` bytes each (``ptr + 1`` is the next)."""

    def __init__(self, num: int, size: int = 128):
        super().__init__(tl.block_type(tl.int8, [size]))
        self.num = num
        self.size = size

    def __eq__(self, other: object) -> bool:
        return isinstance(other, tensor_descriptor_ptr_type) and (self.num, self.size) == (other.num, other.size)

    def __hash__(self) -> int:
        return hash((self.num, self.size))

    def __repr__(self) -> str:
        return f"tensor_descriptor_ptr_type(num={self.num}, size={self.size})"

    def mangle(self) -> str:
        return f"TDP{self.num}_{self.size}"


class tensor_descriptor_ptr(_TlxValue):
    """Global storage for device-side tensor descriptors (``allocate_tensor_descriptor``)."""

    def __init__(self, handle, num: int, descriptor_size: int):
        super().__init__()
        self.handle = handle
        self.type = tensor_descriptor_ptr_type(num, descriptor_size)

    @property
    def num(self) -> int:
        return self.type.num

    @property
    def descriptor_size(self) -> int:
        return self.type.size


#: The classes TLX's ``__init__`` exports from its ``types`` module, by the name it exports them under.
__all__ = [
    "CLCPipelineContext",
    "CLCPipeliner",
    "DummyRegisterLayoutEncoding",
    "DummyTMEMLayoutEncoding",
    "TMemCTAMode",
    "amd_mfma_layout",
    "async_token",
    "async_token_type",
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
    "register_value_class",
    "reuse_group",
    "reuse_group_ir_type",
    "reuse_group_type",
    "shared_layout_encoding",
    "shared_linear_layout_encoding",
    "storage_alias_spec",
    "storage_alias_spec_type",
    "storage_kind",
    "swizzled_layout",
    "swizzled_shared_layout_encoding",
    "tensor_descriptor_ptr",
    "tensor_descriptor_ptr_type",
    "tensor_memory_layout_encoding",
    "tensor_memory_scales_layout_encoding",
]
