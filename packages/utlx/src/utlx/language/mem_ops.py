"""Shared/tensor-memory buffers, async copies and TMA: the TLX memory op surface.

Each function here is a stub: ``@op`` turns it into a Triton builtin that dispatches to the interpreter
or compiler implementation (see ``_dispatch``). Signatures follow TLX so TLX kernels run unchanged.
"""

from __future__ import annotations

from utlx.language._op import op
from utlx.language.types import storage_kind


@op
def local_alloc(shape, dtype, num, storage=storage_kind.smem, reuse=None, layout=None, _semantic=None):
    """Allocate ``num`` buffers of ``shape`` x ``dtype`` in shared (or tensor) memory.

    Returns the multi-buffer; pick one with :func:`local_view`. ``reuse`` aliases the storage of an
    earlier allocation; ``layout`` forces a shared-memory layout (compile path only).
    """


@op
def storage_alias_spec(storage=storage_kind.smem, buffer_size_bytes=None, _semantic=None):
    """Memory that several ``local_alloc(..., reuse=spec)`` share as equal peers (``smem`` or ``tmem``).

    Unsized by default (as large as its largest user) or ``buffer_size_bytes`` large; how its users overlap
    is declared with ``spec.set_buffer_overlap(tlx.reuse_group(...))``.
    """


@op
def local_view(local_allocated_buffers, buffer_idx, _semantic=None):
    """Return buffer ``buffer_idx`` of a ``local_alloc``/``alloc_barriers`` result (index may be dynamic).

    ``bufs[i]`` is the same as ``local_view(bufs, i)``.
    """


@op
def remote_view(local_allocated_buffer, remote_cta_rank, _semantic=None):
    """The same mbarrier in the shared memory of cluster CTA ``remote_cta_rank`` (to arrive on it)."""


@op
def remote_shmem_store(dst, src, remote_cta_rank, _semantic=None):
    """Store register tensor ``src`` into buffer ``dst`` of cluster CTA ``remote_cta_rank`` (DSMEM)."""


@op
def async_remote_shmem_store(dst, src, remote_cta_rank, barrier, _semantic=None):
    """Asynchronous :func:`remote_shmem_store`; completion arrives (as bytes) on ``barrier`` of the remote CTA."""


@op
def local_slice(buffer, offset, shape, _semantic=None):
    """Return the sub-buffer of ``buffer`` starting at element ``offset`` (one per dim) with ``shape``."""


@op
def subslice(local_allocated_buffer, offset, size, _semantic=None):
    """Return columns ``[offset, offset + size)`` of a 2-D buffer (TMEM subslicing in TLX)."""


@op
def local_load(src, token=None, layout=None, relaxed=False, rematerialize_coordinates=False,
               rematerialize_coordinates_group=None, _semantic=None):
    """Load a whole buffer into registers (a distributed ``tl.tensor``).

    ``layout`` (a ``tlx.layout`` or an MFMA/dot-operand layout) is the register layout to load in. On AMD,
    ``relaxed=True`` (or a ``token``) says an ``async_load_wait_group`` already orders this read after the
    direct-to-LDS copies that wrote the buffer. ``rematerialize_coordinates[_group]`` are register-pressure
    hints of Meta's fork (accepted; stock Triton has no use for them).
    """


@op
def local_store(dst, src, _semantic=None):
    """Store the register tensor ``src`` into buffer ``dst`` (same shape and dtype)."""


@op
def tmem_copy(src, dst, _semantic=None):
    """Start a copy from shared-memory buffer ``src`` to tensor-memory buffer ``dst`` (Blackwell ``tcgen05.cp``)."""


@op
def local_trans(input, dims=(1, 0), _semantic=None):
    """View a buffer with permuted dimensions (no data movement)."""


@op
def local_reinterpret(src, dtype, shape=None, layout=None, _semantic=None):
    """View a buffer's bytes as another dtype/shape (no data movement), optionally through an explicit
    shared-memory ``layout``."""


@op
def local_reshape(src, shape, _semantic=None):
    """View a shared-memory buffer with another shape of the same size (no data movement)."""


@op
def local_gather(src, indices, axis, token=None, _semantic=None):
    """``result[I] = src[..., indices[I], ...]``: read a buffer at per-element indices along ``axis``."""


@op
def local_scatter(dst, src, indices, axis, token=None, _semantic=None):
    """``dst[..., indices[I], ...] = src[I]``: write a register tensor into a buffer at per-element indices."""


@op
def async_load(
    src,
    result,
    mask=None,
    other=None,
    cache_modifier="",
    eviction_policy="",
    is_volatile=False,
    bulk=False,
    bulk_size=None,
    barrier=None,
    _semantic=None,
):
    """Start an asynchronous copy (``cp.async``) from the global pointers ``src`` into buffer ``result``.

    Returns a token. The copy is in flight until :func:`async_load_commit_group` has put it in a group
    and :func:`async_load_wait_group` has waited for that group; reading ``result`` earlier is a race.
    With ``bulk=True`` (1-D, needs ``barrier``) it is one ``cp.async.bulk`` completing on ``barrier``.
    """


@op
def async_load_commit_group(tokens=(), _semantic=None):
    """Close a group over every ``async_load`` issued and not yet committed; returns a group token."""


@op
def async_load_wait_group(pendings, tokens=(), _semantic=None):
    """Wait until at most ``pendings`` committed copy groups are still in flight (oldest finish first)."""


@op
def async_store(dst_global_ptr, src_smem, size, _semantic=None):
    """Start a bulk copy of ``size`` bytes from buffer ``src_smem`` to ``dst_global_ptr``
    (waited with :func:`async_descriptor_store_wait`)."""


@op
def async_descriptor_load(
    desc,
    result,
    offsets,
    barrier,
    pred=None,
    cache_modifier="",
    eviction_policy="",
    multicast_targets=(),
    two_ctas=False,
    _semantic=None,
):
    """Start a TMA copy of the tile at ``offsets`` of tensor descriptor ``desc`` into buffer ``result``.

    Completion is signalled to mbarrier ``barrier`` as transferred bytes (pair it with
    :func:`barrier_expect_bytes`); readers must :func:`barrier_wait` on it first.
    """


@op
def async_descriptor_store(desc, source, offsets, eviction_policy="", store_reduce="", _semantic=None):
    """Start a TMA store of buffer ``source`` to the tile at ``offsets`` of ``desc``.

    ``source`` stays in use until :func:`async_descriptor_store_wait`; a ``local_store`` into it must be
    followed by :func:`fence_async_shared` before the store. ``store_reduce`` is "", add, min, max, and,
    or, xor.
    """


@op
def async_descriptor_store_wait(pendings, _semantic=None):
    """Wait until at most ``pendings`` TMA stores are still reading their source buffers."""


@op
def async_descriptor_prefetch_tensor(desc, offsets, pred=None, eviction_policy="", _semantic=None):
    """Hint a prefetch of a descriptor tile into L2 (no architectural effect)."""


@op
def prefetch(pointer, level="L2", mask=None, tensormap=False, _semantic=None):
    """Hint a prefetch of the addresses ``pointer`` (into ``"L1"`` or ``"L2"``), or of a TMA descriptor
    (``tensormap=True``). No effect on results."""


@op
def async_remote_shmem_copy(dst, src, remote_cta_rank, barrier, _semantic=None):
    """Copy buffer ``src`` into buffer ``dst`` of cluster CTA ``remote_cta_rank``; completion arrives on
    ``barrier`` there."""


@op
def update_tensor_descriptor(desc, add_offsets=None, set_bounds=None, pred=None, clamp_bounds=False, _semantic=None):
    """Move an AMD TDM tensor descriptor (gfx1250) by ``add_offsets`` and/or give it new bounds."""


@op
def async_amd_descriptor_load(desc, result, offsets=None, pred=None, clamp_bounds=True, _semantic=None):
    """AMD TDM (gfx1250) copy of a descriptor tile into buffer ``result``."""


@op
def async_amd_descriptor_load_fused(members, cache_modifier="", _semantic=None):
    """Several AMD TDM (gfx1250) descriptor loads issued as one."""


@op
def async_amd_descriptor_store(desc, source, offsets=None, clamp_bounds=True, _semantic=None):
    """AMD TDM (gfx1250) copy of buffer ``source`` to a descriptor tile."""


@op
def amd_descriptor_prefetch_tensor(desc, offsets, pred=None, speculative=False, _semantic=None):
    """AMD TDM (gfx1250) prefetch of a descriptor tile."""


@op
def async_amd_descriptor_wait(pendings=0, tokens=None, _semantic=None):
    """Wait until at most ``pendings`` AMD TDM (gfx1250) copies are in flight."""


# ---------------------------------------------------------------------------------------- AMD buffer ops


@op
def assume_uniform(value, _semantic=None):
    """``value`` (a scalar pointer or 16/32/64-bit scalar) is the same in every lane of the wave.

    Returns it unchanged. On AMD it is read with ``v_readfirstlane`` so that buffer ops built on it keep
    their base in scalar registers (no per-lane waterfall loop); elsewhere a no-op.
    """


@op
def buffer_load(ptr, offsets, mask=None, other=None, cache=None, contiguity=1, _semantic=None):
    """AMD buffer load: ``ptr[offsets]`` into registers, through a buffer resource built on the scalar base
    ``ptr`` (``offsets``: i32 element offsets; masked-off lanes read ``other``, or 0)."""


@op
def buffer_store(stored_value, ptr, offsets, mask=None, cache=None, _semantic=None):
    """AMD buffer store: ``ptr[offsets] = stored_value`` through a buffer resource on the scalar base ``ptr``."""


@op
def buffer_atomic_add(ptr, offsets, value, mask=None, sem=None, scope=None, contiguity=1, _semantic=None):
    """AMD buffer atomic add: ``ptr[offsets] += value``; returns the old values."""


@op
def buffer_load_to_local(dest, ptr, offsets, mask=None, other=None, cache_modifier="", _semantic=None):
    """AMD direct-to-LDS copy of ``ptr[offsets]`` into buffer ``dest`` (asynchronous: commit and wait it like
    :func:`async_load`). Returns a token."""


@op
def zeros(shape, dtype, layout=None, _semantic=None):
    """A zero tensor, optionally created in an explicit register ``layout``."""


@op
def assert_same_layout(lhs, rhs, _semantic=None):
    """Check at compile time that ``lhs`` ends up in ``rhs``'s layout (a value or a TLX layout)."""


@op
def dump_layout(x, _semantic=None):
    """Print, at compile time, the layout a value or buffer ends up with."""


@op
def fence(scope, _semantic=None):
    """Memory fence: "gpu", "sys", or "async_shared" (order generic smem writes before async-proxy reads)."""


@op
def fence_async_shared(_semantic=None):
    """Order earlier ``local_store`` writes before later TMA/wgmma reads of shared memory
    (``fence.proxy.async``). Same as ``fence("async_shared")``."""


@op
def allocate_tensor_descriptor(num, _semantic=None):
    """Allocate global storage for ``num`` device-side tensor descriptors (128 bytes each)."""


@op
def make_tensor_descriptor(desc_ptr, base, shape, strides, block_shape, padding_option="zero", _semantic=None):
    """Create a device-side TMA descriptor over ``base`` (optionally stored at ``desc_ptr``)."""


@op
def reinterpret_tensor_descriptor(desc_ptr, block_shape, dtype, _semantic=None):
    """Use the descriptor stored at ``desc_ptr`` as a tensor descriptor with ``block_shape`` x ``dtype``."""


__all__ = [
    "allocate_tensor_descriptor",
    "amd_descriptor_prefetch_tensor",
    "assert_same_layout",
    "assume_uniform",
    "async_amd_descriptor_load",
    "async_amd_descriptor_load_fused",
    "async_amd_descriptor_store",
    "async_amd_descriptor_wait",
    "async_descriptor_load",
    "async_descriptor_prefetch_tensor",
    "async_descriptor_store",
    "async_descriptor_store_wait",
    "async_load",
    "async_load_commit_group",
    "async_load_wait_group",
    "async_remote_shmem_copy",
    "async_remote_shmem_store",
    "async_store",
    "buffer_atomic_add",
    "buffer_load",
    "buffer_load_to_local",
    "buffer_store",
    "dump_layout",
    "fence",
    "fence_async_shared",
    "local_alloc",
    "local_gather",
    "local_load",
    "local_reinterpret",
    "local_reshape",
    "local_scatter",
    "local_slice",
    "local_store",
    "local_trans",
    "local_view",
    "make_tensor_descriptor",
    "prefetch",
    "reinterpret_tensor_descriptor",
    "remote_shmem_store",
    "remote_view",
    "storage_alias_spec",
    "subslice",
    "tmem_copy",
    "update_tensor_descriptor",
    "zeros",
]
