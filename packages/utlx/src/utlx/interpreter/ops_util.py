"""CPU bodies of the small utilities: ids, clock, cluster queries (``interpreter.cluster``), warp votes and
stochastic rounding."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter import cluster as _cluster
from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where
from utlx.interpreter.rounding import FORMATS, stochastic_round
from utlx.interpreter.tasks import replica_id
from utlx.language._dispatch import register_interpreter_impl as impl

_unwrap = tl._unwrap_if_constexpr
#: Lanes of a warp.
WARP = 32


@impl("async_task_replica_id")
def async_task_replica_id(_semantic: Any) -> tl.constexpr:
    # TLX gives each replica its own copy of the task body, so the id is a compile-time constant there
    return tl.constexpr(replica_id())


@impl("thread_id")
def thread_id(_semantic: Any, axis: Any) -> tl.tensor:
    axis_i = _compat.to_int(axis, "thread_id axis")
    if axis_i not in (0, 1, 2):
        raise UtlxInterpreterError(f"thread_id: axis must be 0, 1 or 2, got {axis_i}{where(kernel_location())}")
    # The interpreter runs a program's threads as one: it is thread 0.
    return _compat.scalar(0)


@impl("clock64")
def clock64(_semantic: Any) -> tl.tensor:
    return _compat.scalar(time.perf_counter_ns(), tl.int64)


@impl("cluster_cta_rank")
def cluster_cta_rank(_semantic: Any) -> tl.tensor:
    return _compat.scalar(_cluster.cta_rank())


@impl("cluster_size_1d")
def cluster_size_1d(_semantic: Any) -> tl.tensor:
    return _compat.scalar(_cluster.size())


def ballot(pred: np.ndarray, mask: int) -> np.ndarray:
    """Ballot of every element of ``pred`` under Triton's default blocked layout, one element per lane in
    row-major order: lane ``l`` of the warp holding element ``i`` holds element ``32 * (i // 32) + l``, and a
    tensor of fewer than 32 elements is repeated across the warp's lanes. Returns int32 words (bit ``l`` set
    when lane ``l`` is in ``mask`` and its predicate holds)."""
    flat = np.asarray(pred, dtype=bool).reshape(-1)
    n = flat.size
    lanes = np.arange(WARP)
    weights = np.left_shift(np.uint64(1), lanes.astype(np.uint64)) & np.uint64(mask & 0xFFFFFFFF)
    if n < WARP:
        word = int(np.sum(weights[flat[lanes % n]]))
        words = np.full(n, word, dtype=np.uint64)
    elif n % WARP:
        raise UtlxInterpreterError(f"vote_ballot_sync: a predicate tensor of {n} elements does not fill whole "
                                   f"warps (a multiple of {WARP}, or fewer than {WARP}){where(kernel_location())}")
    else:
        per_warp = (flat.reshape(-1, WARP).astype(np.uint64) * weights).sum(axis=1)
        words = np.repeat(per_warp, WARP)
    return words.astype(np.uint32).view(np.int32).reshape(np.shape(pred))


@impl("vote_ballot_sync")
def vote_ballot_sync(_semantic: Any, mask: Any, pred: Any) -> tl.tensor:
    loc = kernel_location()
    mask_v = _compat.to_int(mask, "vote_ballot_sync mask")
    if not 0 <= mask_v <= 0xFFFFFFFF:
        raise UtlxInterpreterError(f"vote_ballot_sync: mask must fit 32 bits, got {mask_v:#x}{where(loc)}")
    if isinstance(pred, tl.tensor) and pred.type.is_block():
        data = _compat.tensor_data(pred) != 0
        return _compat.make_tensor(ballot(data, mask_v), tl.int32)
    # a scalar predicate is the same on every lane of the warp
    flag = _compat.to_bool(pred, "vote_ballot_sync pred")
    word = np.uint32(mask_v if flag else 0).view(np.int32)
    return _compat.scalar(int(word), tl.int32)


@impl("stoch_round")
def stoch_round(_semantic: Any, src: Any, dst_ty: Any, rand_bits: Any) -> tl.tensor:
    loc = kernel_location()
    dst = _unwrap(dst_ty)
    fmt = FORMATS.get(getattr(dst, "name", None))
    if fmt is None:
        raise UtlxInterpreterError(f"stoch_round: dst_ty must be tl.float8e5, tl.float8e4nv, tl.float16 or "
                                   f"tl.bfloat16, got {dst}{where(loc)}")
    if not isinstance(src, tl.tensor) or src.dtype != tl.float32:
        raise UtlxInterpreterError(f"stoch_round: src must be a float32 tensor, got "
                                   f"{getattr(src, 'dtype', type(src).__name__)}{where(loc)}")
    if not isinstance(rand_bits, tl.tensor) or not rand_bits.dtype.is_int():
        raise UtlxInterpreterError(f"stoch_round: rand_bits must be an integer (uint32) tensor{where(loc)}")
    values, bits = _compat.tensor_data(src), _compat.tensor_data(rand_bits)
    if src.type.is_block() != rand_bits.type.is_block() or values.shape != bits.shape:
        raise UtlxInterpreterError(f"stoch_round: rand_bits of shape {list(bits.shape)} must match src of shape "
                                   f"{list(values.shape)}{where(loc)}")
    rounded = stochastic_round(values, bits, fmt)  # exactly representable in dst: the cast below is exact
    as_f32 = _compat.make_tensor(rounded, tl.float32) if src.type.is_block() else _compat.scalar(rounded.reshape(
        ())[()], tl.float32)
    return as_f32.to(dst, _semantic=_semantic)
