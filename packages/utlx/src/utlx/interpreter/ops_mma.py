"""CPU bodies of ``async_dot`` (float32 accumulate) and ``async_dot_wait``, with in-flight tracking."""

from __future__ import annotations

from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter import state as _state
from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where
from utlx.interpreter.memory import BufferView
from utlx.interpreter.ops_blackwell import is_tmem, tcgen05_issue
from utlx.interpreter.ops_mem import _barrier
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
    st = _state.current()
    acc_buf = acc if isinstance(acc, BufferView) else None
    tcgen05 = acc_buf is not None and is_tmem(acc_buf)
    ordered = {"tcgen05": True} if tcgen05 else {}  # tcgen05: after this task's earlier tcgen05 ops, in order
    a, a_buf = _operand(_semantic, A, "A", st, loc, **ordered)
    b, b_buf = _operand(_semantic, B, "B", st, loc, **ordered)
    return issue(_semantic, "async_dot", st, a, b, [v for v in (a_buf, b_buf) if v is not None], acc, use_acc,
                 mBarriers, force_async, out_dtype, loc)


def issue(_semantic: Any, op: str, st: _state.ProgramState, a: np.ndarray, b: np.ndarray, operands: list[BufferView],
          acc: Any, use_acc: Any, mBarriers: Any, force_async: Any, out_dtype: Any, loc: Any) -> Any:
    """``acc (+)= a @ b`` in float32 from operand values ``a``/``b`` (read from the buffers ``operands``), then the
    completion model: a tcgen05 MMA (TMEM ``acc``) stays in flight until its barriers are observed, a wgmma until
    ``async_dot_wait``. Shared by ``async_dot`` and ``async_dot_scaled``."""
    acc_buf = acc if isinstance(acc, BufferView) else None
    tcgen05 = acc_buf is not None and is_tmem(acc_buf)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise UtlxInterpreterError(f"{op}: shapes {list(a.shape)} @ {list(b.shape)} do not chain{where(loc)}")
    result = np.matmul(a, b, dtype=np.float32)
    keep = True if use_acc is None else _compat.to_bool(use_acc, f"{op} use_acc")
    out_ty = _unwrap(out_dtype) or tl.float32
    if acc is not None and keep:
        if acc_buf is not None:
            st.check_read(acc_buf, op, loc, tcgen05)
            prev = _as_f32(_semantic, acc_buf.data, acc_buf.dtype)
        else:
            prev = _as_f32(_semantic, _compat.tensor_data(acc), acc.dtype)
        if prev.shape != result.shape:
            raise UtlxInterpreterError(f"{op}: acc of shape {list(prev.shape)} does not match "
                                       f"{list(result.shape)}{where(loc)}")
        result = result + prev
    barriers = [_barrier(m, op, "mBarriers") for m in (_unwrap(mBarriers) or ())]
    if acc_buf is not None:
        st.check_write(acc_buf, op, loc, tcgen05)
    out = _compat.make_tensor(result, tl.float32)
    if out_ty != tl.float32 or (acc_buf is not None and acc_buf.dtype != tl.float32):
        out = out.to(acc_buf.dtype if acc_buf is not None else out_ty, _semantic=_semantic)
    reads = [InFlight(op, v.region, v.name, loc) for v in operands]
    if tcgen05:
        # Asynchronous only with mBarriers or force_async; otherwise the compiled MMA is waited for at once.
        if barriers or _compat.to_bool(force_async, f"{op} force_async"):
            tcgen05_issue(st, reads, InFlight(op, acc_buf.region, acc_buf.name, loc), barriers, loc)
    elif barriers:
        # wgmma with mBarriers: completion is signalled on the barriers (modelled as immediate).
        for bar in barriers:
            bar.arrive(1, op, loc)
    else:
        st.task().dots.append(reads)
    if acc_buf is not None:
        acc_buf.data[...] = _compat.tensor_data(out).reshape(acc_buf.shape)
        return acc_buf
    return out


@impl("async_dot_wait")
def async_dot_wait(_semantic: Any, pendings: Any, inp: Any) -> Any:
    n = _compat.to_int(pendings, "async_dot_wait pendings")
    if n < 0:
        raise UtlxInterpreterError(f"async_dot_wait: pendings must be >= 0, got {n}{where(kernel_location())}")
    task = _state.current().task()
    while len(task.dots) > n:
        task.dots.popleft()
    return inp
