"""CPU bodies of ``async_dot`` (float32 accumulate) and ``async_dot_wait``, with in-flight tracking."""

from __future__ import annotations

from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter import cluster as _cluster
from utlx.interpreter import state as _state
from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where
from utlx.interpreter.memory import BufferView
from utlx.interpreter.ops_blackwell import is_tmem, tcgen05_issue
from utlx.interpreter.ops_mem import _barrier, peer_barrier, peer_buffer
from utlx.interpreter.state import InFlight
from utlx.language._dispatch import register_interpreter_impl as impl

_unwrap = tl._unwrap_if_constexpr


def _as_f32(_semantic: Any, data: np.ndarray, dtype: tl.dtype) -> np.ndarray:
    """Operand values in float32, converted by the interpreter's own casts (bf16/fp8 are stored as ints)."""
    if dtype == tl.float32:
        return data.astype(np.float32, copy=False)
    return _compat.tensor_data(_compat.make_tensor(data, dtype).to(tl.float32, _semantic=_semantic))


def _operand(_semantic: Any, value: Any, op_arg: str, st: _state.ProgramState, loc: Any,
             *, tcgen05: bool = False) -> tuple[np.ndarray, Any]:
    if isinstance(value, BufferView):
        st.check_read(value, "async_dot", loc, tcgen05)
        return _as_f32(_semantic, value.data, value.dtype), value
    if isinstance(value, tl.tensor):
        return _as_f32(_semantic, _compat.tensor_data(value), value.dtype), None
    raise UtlxInterpreterError(f"async_dot: '{op_arg}' must be a buffer or a tensor, got {value!r}{where(loc)}")


@impl("async_dot")
def async_dot(_semantic: Any, A: Any, B: Any, acc: Any, use_acc: Any, pred: Any, mBarriers: Any, two_ctas: Any,
              force_async: Any, input_precision: Any, out_dtype: Any) -> Any:
    loc = kernel_location()
    if not _compat.to_bool(pred, "async_dot pred"):
        return acc
    if _unwrap(two_ctas):
        return _two_cta_dot(_semantic, A, B, acc, use_acc, mBarriers, loc)
    st = _state.current()
    acc_buf = acc if isinstance(acc, BufferView) else None
    tcgen05 = acc_buf is not None and is_tmem(acc_buf)
    ordered = {"tcgen05": True} if tcgen05 else {}  # tcgen05: after this task's earlier tcgen05 ops, in order
    a, a_buf = _operand(_semantic, A, "A", st, loc, **ordered)
    b, b_buf = _operand(_semantic, B, "B", st, loc, **ordered)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise UtlxInterpreterError(f"async_dot: shapes {list(a.shape)} @ {list(b.shape)} do not chain{where(loc)}")
    result = np.matmul(a, b, dtype=np.float32)
    keep = True if use_acc is None else _compat.to_bool(use_acc, "async_dot use_acc")
    out_ty = _unwrap(out_dtype) or tl.float32
    if acc is not None and keep:
        if acc_buf is not None:
            st.check_read(acc_buf, "async_dot", loc, tcgen05)
            prev = _as_f32(_semantic, acc_buf.data, acc_buf.dtype)
        else:
            prev = _as_f32(_semantic, _compat.tensor_data(acc), acc.dtype)
        if prev.shape != result.shape:
            raise UtlxInterpreterError(f"async_dot: acc of shape {list(prev.shape)} does not match "
                                       f"{list(result.shape)}{where(loc)}")
        result = result + prev
    barriers = [_barrier(m, "async_dot", "mBarriers") for m in (_unwrap(mBarriers) or ())]
    if acc_buf is not None:
        st.check_write(acc_buf, "async_dot", loc, tcgen05)
    out = _compat.make_tensor(result, tl.float32)
    if out_ty != tl.float32 or (acc_buf is not None and acc_buf.dtype != tl.float32):
        out = out.to(acc_buf.dtype if acc_buf is not None else out_ty, _semantic=_semantic)
    reads = [InFlight("async_dot", v.region, v.name, loc) for v in (a_buf, b_buf) if v is not None]
    if tcgen05:
        # Asynchronous only with mBarriers or force_async; otherwise the compiled MMA is waited for at once.
        if barriers or _compat.to_bool(force_async, "async_dot force_async"):
            tcgen05_issue(st, reads, InFlight("async_dot", acc_buf.region, acc_buf.name, loc), barriers, loc)
    elif barriers:
        # wgmma with mBarriers: completion is signalled on the barriers (modelled as immediate).
        for bar in barriers:
            bar.arrive(1, "async_dot", loc)
    else:
        st.task().dots.append(reads)
    if acc_buf is not None:
        acc_buf.data[...] = _compat.tensor_data(out).reshape(acc_buf.shape)
        return acc_buf
    return out


def _two_cta_dot(_semantic: Any, A: Any, B: Any, acc: Any, use_acc: Any, mBarriers: Any, loc: Any) -> Any:
    """``async_dot(..., two_ctas=True)``: a tcgen05 ``cta_group::2`` MMA of the CTA pair (ranks 2i, 2i + 1).

    As PTX defines it, the pair computes one tile: each CTA holds its rows of A and half the columns of B (the
    even CTA the first half) in its own shared memory, and gets its rows of the product (all columns) in its own
    TMEM accumulator. The even CTA issues it (the odd CTA's call issues nothing), and its completion arrives on
    the ``mBarriers`` of both CTAs (the commit is multicast to the pair)."""
    for arg, value in (("A", A), ("B", B), ("acc", acc)):
        if not isinstance(value, BufferView) or (arg == "acc" and not is_tmem(value)):
            where_ = "tensor memory" if arg == "acc" else "shared memory"
            raise UtlxInterpreterError(f"async_dot: two_ctas=True needs '{arg}' to be a buffer in {where_} (each CTA "
                                       f"of the pair holds its part), got {value!r}{where(loc)}")
    rank = _cluster.cta_rank()
    if _cluster.size() % 2:
        raise UtlxInterpreterError(f"async_dot: two_ctas=True needs clusters of an even number of CTAs (pairs), but "
                                   f"the launch has ctas_per_cga={_cluster.launch_shape()}{where(loc)}")
    if rank % 2:
        return acc  # the even CTA of the pair issues the MMA for both
    peer = rank + 1
    me = _state.current()
    them = _cluster.peer_state(peer, "async_dot")
    sides = [(me, A, B, acc), (them, *(peer_buffer(v, peer, "async_dot") for v in (A, B, acc)))]
    b_full = np.concatenate([_operand(_semantic, b, "B", st, loc, tcgen05=True)[0] for st, _, b, _ in sides], axis=1)
    bars = [_barrier(m, "async_dot", "mBarriers") for m in (_unwrap(mBarriers) or ())]
    keep = True if use_acc is None else _compat.to_bool(use_acc, "async_dot use_acc")
    for side, (st, a_buf, b_buf, acc_buf) in enumerate(sides):
        a = _operand(_semantic, a_buf, "A", st, loc, tcgen05=True)[0]
        if a.ndim != 2 or a.shape[1] != b_full.shape[0] or list(acc_buf.shape) != [a.shape[0], b_full.shape[1]]:
            raise UtlxInterpreterError(f"async_dot: two_ctas=True: A {list(a.shape)} @ B of the pair "
                                       f"{list(b_full.shape)} does not fill the accumulator {acc_buf.shape}"
                                       f"{where(loc)}")
        result = np.matmul(a, b_full, dtype=np.float32)
        if keep:
            st.check_read(acc_buf, "async_dot", loc, True)
            result = result + _as_f32(_semantic, acc_buf.data, acc_buf.dtype)
        st.check_write(acc_buf, "async_dot", loc, True)
        out = _compat.make_tensor(result, tl.float32)
        if acc_buf.dtype != tl.float32:
            out = out.to(acc_buf.dtype, _semantic=_semantic)
        acc_buf.data[...] = _compat.tensor_data(out).reshape(acc_buf.shape)
        reads = [InFlight("async_dot", v.region, v.name, loc) for v in (a_buf, b_buf)]
        write = InFlight("async_dot", acc_buf.region, acc_buf.name, loc)
        side_bars = bars if side == 0 else [peer_barrier(b, peer, "async_dot") for b in bars]
        if side == 0:
            tcgen05_issue(st, reads, write, side_bars, loc)
        else:
            st.remote_tcgen05(reads, write, side_bars, loc)
    return acc


@impl("async_dot_wait")
def async_dot_wait(_semantic: Any, pendings: Any, inp: Any) -> Any:
    n = _compat.to_int(pendings, "async_dot_wait pendings")
    if n < 0:
        raise UtlxInterpreterError(f"async_dot_wait: pendings must be >= 0, got {n}{where(kernel_location())}")
    task = _state.current().task()
    while len(task.dots) > n:
        task.dots.popleft()
    return inp
