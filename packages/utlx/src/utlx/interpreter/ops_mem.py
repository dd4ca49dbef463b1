"""CPU bodies of the memory ops: buffers, cp.async copies and groups, TMA loads/stores, fences."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter import cluster as _cluster
from utlx.interpreter import state as _state
from utlx.interpreter.aliasing import AliasSpec
from utlx.interpreter.barriers import Barrier, BarrierArray
from utlx.interpreter.errors import UtlxHazardError, UtlxInterpreterError, kernel_location, where
from utlx.interpreter.memory import Allocation, BufferView
from utlx.interpreter.state import InFlight
from utlx.interpreter.tasks import yield_now
from utlx.language._dispatch import register_interpreter_impl as impl
from utlx.language.types import storage_kind

_unwrap = tl._unwrap_if_constexpr


class AsyncToken:
    """Token returned by async copies and commit groups (TLX threads them through; the model ignores them)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<utlx async_token {self.kind}>"


def _ints(values: Any, what: str) -> tuple[int, ...]:
    values = _unwrap(values)
    if isinstance(values, (tl.tuple, list, tuple)):
        return tuple(_compat.to_int(v, what) for v in values)
    return (_compat.to_int(values, what),)


def _buffer(value: Any, op: str, arg: str) -> BufferView:
    if not isinstance(value, BufferView):
        raise UtlxInterpreterError(f"{op}: argument '{arg}' must be a utlx buffer (from local_alloc), got {value!r}")
    return value


def _barrier(value: Any, op: str, arg: str) -> Barrier:
    if isinstance(value, BarrierArray) and len(value) == 1:
        return value.barriers[0]
    if not isinstance(value, Barrier):
        raise UtlxInterpreterError(
            f"{op}: argument '{arg}' must be one mbarrier (local_view of alloc_barriers), got {value!r}"
        )
    return value


def _fit(op: str, view: BufferView, value: tl.tensor) -> np.ndarray:
    """``value``'s data, checked against the buffer's dtype and shape."""
    data = _compat.tensor_data(value)
    dtype = value.dtype
    if dtype != view.dtype:
        raise UtlxInterpreterError(
            f"{op}: value of dtype {dtype} does not match buffer {view.name} of dtype {view.dtype}"
        )
    if list(data.shape) != view.shape:
        if data.size == 1 or data.ndim == 0:
            return np.broadcast_to(data.reshape(()), view.shape)
        raise UtlxInterpreterError(f"{op}: value of shape {list(data.shape)} does not match buffer {view.name} of "
                                   f"shape {view.shape}")
    return data


def view_of(buffers: Any, idx: Any, op: str) -> Any:
    """``local_view(buffers, idx)`` (also spelled ``buffers[idx]``) for buffers, barrier arrays and the other
    arrays of opaque hardware objects (CLC responses), which index themselves (``view(idx, op)``)."""
    if isinstance(buffers, BarrierArray) or callable(getattr(buffers, "view", None)):
        return buffers.view(idx, op)
    return _buffer(buffers, op, "local_allocated_buffers").buffer(idx, op)


@impl("local_alloc")
def local_alloc(_semantic: Any, shape: Any, dtype: Any, num: Any, storage: Any, reuse: Any, layout: Any) -> BufferView:
    loc = kernel_location()
    shape_t = _ints(shape, "local_alloc shape")
    dtype = _unwrap(dtype)
    if not isinstance(dtype, tl.dtype):
        raise UtlxInterpreterError(f"local_alloc: 'dtype' must be a triton dtype, got {dtype!r}{where(loc)}")
    n = _compat.to_int(num, "local_alloc num")
    storage = _unwrap(storage)
    if not isinstance(storage, storage_kind):
        raise UtlxInterpreterError(f"local_alloc: 'storage' must be a tlx.storage_kind, got {storage!r}{where(loc)}")
    reuse = _unwrap(reuse)
    base = None
    if reuse is not None and not isinstance(reuse, AliasSpec):
        base = _buffer(reuse, "local_alloc", "reuse").alloc
    name = (loc.assigned_name() if loc else None) or f"local_alloc@{loc.lineno if loc else '?'}"
    alloc = _state.current().allocated(Allocation(shape_t, dtype, n, storage.value, name, loc, reuse=base))
    if isinstance(reuse, AliasSpec):
        reuse.add_user(alloc)
    return BufferView(alloc)


@impl("storage_alias_spec")
def storage_alias_spec(_semantic: Any, storage: Any, buffer_size_bytes: Any) -> AliasSpec:
    loc = kernel_location()
    kind = _unwrap(storage)
    if kind not in (storage_kind.smem, storage_kind.tmem):
        raise UtlxInterpreterError(f"storage_alias_spec: storage must be tlx.storage_kind.smem or .tmem, got "
                                   f"{kind!r}{where(loc)}")
    size = None if buffer_size_bytes is None else _compat.to_int(buffer_size_bytes, "storage_alias_spec "
                                                                 "buffer_size_bytes")
    if size is not None and size <= 0:
        raise UtlxInterpreterError(f"storage_alias_spec: buffer_size_bytes must be > 0, got {size}{where(loc)}")
    return AliasSpec(kind, size)


@impl("local_view")
def local_view(_semantic: Any, local_allocated_buffers: Any, buffer_idx: Any) -> Any:
    return view_of(local_allocated_buffers, buffer_idx, "local_view")


@impl("local_slice")
def local_slice(_semantic: Any, buffer: Any, offset: Any, shape: Any) -> BufferView:
    view = _buffer(buffer, "local_slice", "buffer")
    if view.perm is not None or view.reinterpret is not None:
        raise UtlxInterpreterError(f"local_slice: slicing a transposed/reinterpreted view ({view.name}) is unsupported")
    offs, sizes = _ints(offset, "local_slice offset"), _ints(shape, "local_slice shape")
    if len(offs) != len(view.slices) or len(sizes) != len(view.slices):
        raise UtlxInterpreterError(f"local_slice: {view.name} has {len(view.slices)} dims, got offset {list(offs)} "
                                   f"and shape {list(sizes)}")
    slices = []
    for (start, stop), o, s in zip(view.slices, offs, sizes, strict=False):
        if o < 0 or s < 0 or start + o + s > stop:
            raise UtlxInterpreterError(f"local_slice: offset {list(offs)} + shape {list(sizes)} exceeds {view.name} "
                                       f"of shape {view.shape}")
        slices.append((start + o, start + o + s))
    return BufferView(view.alloc, view.index, tuple(slices))


@impl("subslice")
def subslice(_semantic: Any, local_allocated_buffer: Any, offset: Any, size: Any) -> BufferView:
    view = _buffer(local_allocated_buffer, "subslice", "local_allocated_buffer")
    shape = view.shape
    offs = [0] * (len(shape) - 1) + [_compat.to_int(offset, "subslice offset")]
    return local_slice(_semantic, view, offs, [*shape[:-1], _compat.to_int(size, "subslice size")])


@impl("local_trans")
def local_trans(_semantic: Any, input: Any, dims: Any) -> BufferView:
    view = _buffer(input, "local_trans", "input")
    perm = _ints(dims, "local_trans dims")
    if sorted(perm) != list(range(len(view.shape))):
        raise UtlxInterpreterError(f"local_trans: dims {list(perm)} is not a permutation of {len(view.shape)} dims")
    if view.perm is not None:
        perm = tuple(view.perm[p] for p in perm)
    return BufferView(view.alloc, view.index, view.slices, perm, view.reinterpret)


@impl("local_reinterpret")
def local_reinterpret(_semantic: Any, src: Any, dtype: Any, shape: Any, layout: Any = None) -> BufferView:
    view = _buffer(src, "local_reinterpret", "src")
    dtype = _unwrap(dtype)
    nbytes = view.data.nbytes
    itemsize = _compat.np_dtype(dtype).itemsize
    if view.alloc.tmem_root is not None:  # TMEM: TLX keeps the shape; the view starts at the same column
        new_shape = view.shape if shape is None else _ints(shape, "local_reinterpret shape")
        if list(new_shape) != view.shape or itemsize > view.data.itemsize:
            raise UtlxInterpreterError(f"local_reinterpret: a tensor-memory view keeps its shape and may only narrow "
                                       f"its dtype; {view.name} is {view.shape} x {view.dtype}, asked "
                                       f"{list(new_shape)} x {dtype}")
        return BufferView(view.alloc, view.index, view.slices, None, (dtype, tuple(new_shape)))
    if shape is not None:
        new_shape = _ints(shape, "local_reinterpret shape")
    else:
        new_shape = (*view.shape[:-1], view.shape[-1] * view.data.itemsize // itemsize)
    if int(np.prod(new_shape)) * itemsize != nbytes:
        raise UtlxInterpreterError(f"local_reinterpret: {list(new_shape)} x {dtype} does not cover the {nbytes} bytes "
                                   f"of {view.name}")
    if view.perm is not None or view.reinterpret is not None:
        raise UtlxInterpreterError(f"local_reinterpret: {view.name} is already a transposed/reinterpreted view")
    return BufferView(view.alloc, view.index, view.slices, None, (dtype, tuple(new_shape)))


@impl("local_load")
def local_load(_semantic: Any, src: Any, token: Any, layout: Any = None, relaxed: Any = False,
               rematerialize_coordinates: Any = False, rematerialize_coordinates_group: Any = None) -> tl.tensor:
    # layout / relaxed / rematerialize_*: how the GPU reads; the values (and the hazard rules) are the same
    view = _buffer(src, "local_load", "src")
    _state.current().check_read(view, "local_load", kernel_location())
    return _compat.make_tensor(view.data.copy(), view.dtype)


def _write(view: Any, src: Any, op: str, loc: Any, st: Any = None) -> Any:
    """Write tensor ``src`` into buffer ``view`` for ``op`` (its race check first); returns the state of the CTA
    owning ``view`` (``st``: a cluster peer's, for a remote store; default: the running program's)."""
    if not isinstance(src, tl.tensor):
        raise UtlxInterpreterError(f"{op}: 'src' must be a tensor, got {src!r}{where(loc)}")
    st = _state.current() if st is None else st
    st.check_write(view, op, loc)
    view.data[...] = _fit(op, view, src)
    return st


@impl("local_store")
def local_store(_semantic: Any, dst: Any, src: Any) -> None:
    loc = kernel_location()
    view = _buffer(dst, "local_store", "dst")
    st = _write(view, src, "local_store", loc)
    st.unfenced.append(InFlight("local_store", view.region, view.name, loc))


def _raw(address: int, nbytes: int) -> np.ndarray:
    """Host memory at ``address`` (the interpreter runs kernels on host copies of the arguments)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))


@impl("async_load")
def async_load(_semantic: Any, src: Any, result: Any, mask: Any, other: Any, cache_modifier: Any,
               eviction_policy: Any, is_volatile: Any, bulk: Any, bulk_size: Any, barrier: Any) -> AsyncToken:
    loc = kernel_location()
    view = _buffer(result, "async_load", "result")
    st = _state.current()
    st.check_write(view, "async_load", loc)
    if _unwrap(bulk):
        if mask is not None or other is not None:
            raise UtlxInterpreterError(f"async_load(bulk=True): mask/other are not allowed{where(loc)}")
        bar = _barrier(barrier, "async_load(bulk=True)", "barrier")
        nbytes = _compat.to_int(bulk_size, "async_load bulk_size") if bulk_size is not None else view.nbytes
        flat = view.data.reshape(-1).view(np.uint8)
        flat[:nbytes] = _raw(_compat.to_int(src, "async_load src"), nbytes)
        st.tma_loads.append(InFlight("async_load(bulk)", view.region, view.name, loc, bar, bar.completions + 1))
        bar.deliver(nbytes)
        return AsyncToken("async_load")
    values = tl.load(src, mask=mask, other=other, _semantic=_semantic)
    view.data[...] = _fit("async_load", view, values)
    st.task().uncommitted.append(InFlight("async_load", view.region, view.name, loc))
    return AsyncToken("async_load")


@impl("async_load_commit_group")
def async_load_commit_group(_semantic: Any, tokens: Any) -> AsyncToken:
    task = _state.current().task()
    task.groups.append(task.uncommitted)
    task.uncommitted = []
    return AsyncToken("commit_group")


@impl("async_load_wait_group")
def async_load_wait_group(_semantic: Any, pendings: Any, tokens: Any) -> None:
    loc = kernel_location()
    n = _compat.to_int(pendings, "async_load_wait_group pendings")
    if n < 0:
        raise UtlxInterpreterError(f"async_load_wait_group: pendings must be >= 0, got {n}{where(loc)}")
    st = _state.current()
    task = st.task()
    if st.checks and task.uncommitted and len(task.groups) <= n:
        first = task.uncommitted[0]
        raise UtlxHazardError(
            f"async_load_wait_group({n}){where(loc)} waits for more groups than were committed: only "
            f"{len(task.groups)} group(s) are in flight, so it returns at once, while {len(task.uncommitted)} "
            f"async_load(s) (the first into {first.name}{where(first.loc)}) were never committed "
            f"(call async_load_commit_group before waiting)"
        )
    while len(task.groups) > n:
        task.groups.popleft()


def _tile_bytes(desc: Any) -> int:
    block = [int(_unwrap(b)) for b in desc.block_shape]
    return int(np.prod(block)) * (desc.dtype.primitive_bitwidth // 8)


@impl("async_descriptor_load")
def async_descriptor_load(_semantic: Any, desc: Any, result: Any, offsets: Any, barrier: Any, pred: Any,
                          cache_modifier: Any, eviction_policy: Any, multicast_targets: Any,
                          two_ctas: Any = False) -> None:
    loc = kernel_location()
    op = "async_descriptor_load"
    targets = _unwrap(multicast_targets)
    ranks = [_compat.to_int(t, f"{op} multicast_targets")
             for t in (targets if isinstance(targets, (list, tuple)) else [targets] if targets is not None else [])]
    if not _compat.to_bool(pred, f"{op} pred"):
        return
    view = _buffer(result, op, "result")
    bar = _barrier(barrier, op, "barrier")
    values = desc.load(list(_unwrap(offsets)), _semantic=_semantic)
    data = _compat.tensor_data(values)
    if data.size != view.data.size:
        raise UtlxInterpreterError(f"{op}: descriptor block {list(data.shape)} does not match buffer "
                                   f"{view.name} of shape {view.shape}{where(loc)}")
    me = _cluster.cta_rank()
    # multicast: the tile lands at the same place in each target CTA and completes on each one's copy of the
    # barrier; two_ctas (a 2-CTA MMA's operand): this CTA's tile completes on the pair leader's barrier
    for rank in ranks or [me]:
        dst = view if rank == me else peer_buffer(view, rank, op)
        st = _state.current() if rank == me else _cluster.peer_state(rank, op)
        done_rank = (rank & ~1) if _unwrap(two_ctas) else rank
        done = bar if done_rank == me else peer_barrier(bar, done_rank, op)
        st.check_write(dst, op, loc)
        dst.data[...] = data.reshape(dst.shape)
        st.tma_loads.append(InFlight(op, dst.region, dst.name, loc, done, done.completions + 1))
        done.deliver(_tile_bytes(desc))


def _reduce(_semantic: Any, kind: str, old: tl.tensor, new: tl.tensor, loc: Any) -> tl.tensor:
    if kind == "add":
        return old.__add__(new, _semantic=_semantic)
    if kind in ("min", "max"):
        fn = tl.minimum if kind == "min" else tl.maximum
        return fn(old, new, _semantic=_semantic)
    if kind in ("and", "or", "xor"):
        return getattr(old, f"__{kind}__")(new, _semantic=_semantic)
    raise UtlxInterpreterError(f"async_descriptor_store: unknown store_reduce {kind!r}{where(loc)}")


@impl("async_descriptor_store")
def async_descriptor_store(_semantic: Any, desc: Any, source: Any, offsets: Any, eviction_policy: Any,
                           store_reduce: Any) -> None:
    loc = kernel_location()
    view = _buffer(source, "async_descriptor_store", "source")
    st = _state.current()
    st.check_read(view, "async_descriptor_store", loc)
    # No fence check: the compiler puts a fence.proxy.async before every TMA store whose source registers wrote
    # (Triton's fence insertion, as Meta's fork does; the PTX of test_fence_before_tma_store_is_inserted shows
    # it), so a local_store then async_descriptor_store is ordered as compiled. Bulk ``async_store`` stays checked.
    st.fence_for(view)
    block = [int(_unwrap(b)) for b in desc.block_shape]
    value = _compat.make_tensor(view.data.copy().reshape(block), view.dtype)
    offs = list(_unwrap(offsets))
    kind = _unwrap(store_reduce) or ""
    if kind:
        value = _reduce(_semantic, kind, desc.load(offs, _semantic=_semantic), value, loc)
    desc.store(offs, value, _semantic=_semantic)
    st.task().stores.append([InFlight("async_descriptor_store", view.region, view.name, loc)])


@impl("async_store")
def async_store(_semantic: Any, dst_global_ptr: Any, src_smem: Any, size: Any) -> None:
    loc = kernel_location()
    view = _buffer(src_smem, "async_store", "src_smem")
    st = _state.current()
    st.check_read(view, "async_store", loc)
    st.check_fenced(view, "async_store", loc)
    nbytes = _compat.to_int(size, "async_store size")
    _raw(_compat.to_int(dst_global_ptr, "async_store dst_global_ptr"), nbytes)[:] = view.data.reshape(-1).view(
        np.uint8)[:nbytes]
    st.task().stores.append([InFlight("async_store", view.region, view.name, loc)])


@impl("async_descriptor_store_wait")
def async_descriptor_store_wait(_semantic: Any, pendings: Any) -> None:
    n = _compat.to_int(pendings, "async_descriptor_store_wait pendings")
    task = _state.current().task()
    while len(task.stores) > n:
        task.stores.popleft()


@impl("async_descriptor_prefetch_tensor")
def async_descriptor_prefetch_tensor(_semantic: Any, desc: Any, offsets: Any, pred: Any, eviction_policy: Any) -> None:
    """A cache hint: nothing to model."""


@impl("fence")
def fence(_semantic: Any, scope: Any) -> None:
    scope = _unwrap(scope)
    if scope not in ("gpu", "sys", "async_shared"):
        raise UtlxInterpreterError(f"fence: scope must be 'gpu', 'sys' or 'async_shared', got {scope!r}")
    if scope == "async_shared":
        _state.current().unfenced.clear()


@impl("fence_async_shared")
def fence_async_shared(_semantic: Any) -> None:
    _state.current().unfenced.clear()


def _rank(remote_cta_rank: Any, op: str) -> int:
    return _compat.to_int(remote_cta_rank, f"{op} remote_cta_rank")


def peer_barrier(bar: Barrier, rank: int, op: str) -> Barrier:
    """The same mbarrier in the shared memory of cluster CTA ``rank``."""
    array = getattr(bar, "array", None)
    if array is None:
        if rank == _cluster.cta_rank():
            return bar
        raise UtlxInterpreterError(f"{op}: barrier {bar.name} does not come from alloc_barriers, so it has no copy "
                                   f"in cluster CTA {rank}{where(kernel_location(1))}")
    return _cluster.peer_of(array, rank, op).barriers[bar.index]


def peer_buffer(view: BufferView, rank: int, op: str) -> BufferView:
    """The same view of the same buffer in the shared memory of cluster CTA ``rank``."""
    alloc = _cluster.peer_of(view.alloc, rank, op)
    return BufferView(alloc, view.index, view.slices, view.perm, view.reinterpret)


@impl("remote_view")
def remote_view(_semantic: Any, local_allocated_buffer: Any, remote_cta_rank: Any) -> Barrier:
    bar = _barrier(local_allocated_buffer, "remote_view", "local_allocated_buffer")
    return peer_barrier(bar, _rank(remote_cta_rank, "remote_view"), "remote_view")


@impl("remote_shmem_store")
def remote_shmem_store(_semantic: Any, dst: Any, src: Any, remote_cta_rank: Any) -> None:
    loc = kernel_location()
    rank = _rank(remote_cta_rank, "remote_shmem_store")
    view = peer_buffer(_buffer(dst, "remote_shmem_store", "dst"), rank, "remote_shmem_store")
    st = _write(view, src, "remote_shmem_store", loc, _cluster.peer_state(rank, "remote_shmem_store"))
    st.unfenced.append(InFlight("remote_shmem_store", view.region, view.name, loc))


@impl("async_remote_shmem_store")
def async_remote_shmem_store(_semantic: Any, dst: Any, src: Any, remote_cta_rank: Any, barrier: Any) -> None:
    op = "async_remote_shmem_store"
    loc = kernel_location()
    rank = _rank(remote_cta_rank, op)
    view = peer_buffer(_buffer(dst, op, "dst"), rank, op)
    bar = peer_barrier(_barrier(barrier, op, "barrier"), rank, op)
    st = _write(view, src, op, loc, _cluster.peer_state(rank, op))
    # like a TMA copy: visible in the peer once a wait on its ``barrier`` sees the phase the bytes complete
    st.tma_loads.append(InFlight(op, view.region, view.name, loc, bar, bar.completions + 1))
    bar.deliver(view.nbytes)
    yield_now()


@impl("async_remote_shmem_copy")
def async_remote_shmem_copy(_semantic: Any, dst: Any, src: Any, remote_cta_rank: Any, barrier: Any) -> None:
    """Buffer ``src`` (this CTA's) into ``dst`` of cluster CTA ``remote_cta_rank``, completing on its ``barrier``."""
    op = "async_remote_shmem_copy"
    loc = kernel_location()
    source = _buffer(src, op, "src")
    _state.current().check_read(source, op, loc)
    async_remote_shmem_store(_semantic, dst, _compat.make_tensor(source.data.copy(), source.dtype), remote_cta_rank,
                             barrier)


class DescriptorStorage:
    """``allocate_tensor_descriptor(num)``: slots that remember the descriptors made into them."""

    def __init__(self, num: int) -> None:
        self.slots: list[tuple[Any, ...] | None] = [None] * num

    def __getitem__(self, idx: Any) -> DescriptorSlot:
        return DescriptorSlot(self, _compat.to_int(idx, "tensor descriptor index"))

    def __add__(self, idx: Any) -> DescriptorSlot:
        return self[idx]


class DescriptorSlot:
    def __init__(self, storage: DescriptorStorage, index: int) -> None:
        if not 0 <= index < len(storage.slots):
            raise UtlxInterpreterError(f"tensor descriptor index {index} out of range ({len(storage.slots)} slots)")
        self.storage, self.index = storage, index


def _slot(ptr: Any) -> DescriptorSlot:
    if isinstance(ptr, DescriptorStorage):
        return ptr[0]
    if isinstance(ptr, DescriptorSlot):
        return ptr
    raise UtlxInterpreterError(f"expected a pointer from allocate_tensor_descriptor, got {ptr!r}")


@impl("allocate_tensor_descriptor")
def allocate_tensor_descriptor(_semantic: Any, num: Any) -> DescriptorStorage:
    return DescriptorStorage(_compat.to_int(num, "allocate_tensor_descriptor num"))


@impl("make_tensor_descriptor")
def make_tensor_descriptor(_semantic: Any, desc_ptr: Any, base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any) -> Any:
    padding = _unwrap(padding_option)
    desc = tl.make_tensor_descriptor(base, list(shape), list(strides), list(block_shape), padding_option=padding,
                                     _semantic=_semantic)
    if desc_ptr is not None:
        slot = _slot(desc_ptr)
        slot.storage.slots[slot.index] = (base, list(shape), list(strides), padding)
    return desc


@impl("reinterpret_tensor_descriptor")
def reinterpret_tensor_descriptor(_semantic: Any, desc_ptr: Any, block_shape: Any, dtype: Any) -> Any:
    slot = _slot(desc_ptr)
    stored = slot.storage.slots[slot.index]
    if stored is None:
        raise UtlxHazardError(f"reinterpret_tensor_descriptor: slot {slot.index} holds no descriptor yet "
                              f"(make_tensor_descriptor into it first){where(kernel_location())}")
    base, shape, strides, padding = stored
    elem = base.dtype.element_ty
    if _unwrap(dtype) != elem:
        raise UtlxInterpreterError(f"reinterpret_tensor_descriptor: dtype {_unwrap(dtype)} differs from the stored "
                                   f"descriptor's {elem}")
    return tl.make_tensor_descriptor(base, shape, strides, list(block_shape), padding_option=padding,
                                     _semantic=_semantic)
