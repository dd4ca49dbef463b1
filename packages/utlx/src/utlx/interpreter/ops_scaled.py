"""Block-scaled tcgen05 MMAs under the interpreter: ``tmem_copy`` (``tcgen05.cp``) and ``async_dot_scaled``.

What the hardware computes: ``acc (+)= (A * 2^(sA - 127)) @ (B * 2^(sB - 127))`` where every 32 consecutive K
values of a row of A (a column of B) share one e8m0 scale byte ``s`` (255 is NaN). Operands are e4m3 / e5m2
(mxfp8) or e2m1 (mxfp4, two values a byte along K, low nibble first).

How the scales are held here: a tensor-memory scales buffer (uint8/int8, ``rows x K/32``) holds scale ``[r, c]``
for row ``r`` and K block ``c`` -- what the block-scaled MMA reads for that row, and what a ``local_store`` of a
``rows x K/32`` tensor puts there. Shared memory holds the scales as TMA brings them, in the packed block layout
``[1, rows/128, cols/4, 2, 256]``: within a 512-byte block, the scale of row ``r`` (mod 128) and K block ``c``
(mod 4) is byte ``(r % 32) * 16 + (r // 32) * 4 + c`` (cuBLAS's / torchao's swizzled scale layout, the one
``tcgen05.cp .32x128b.warpx4`` spreads over the four lane quarters). ``tmem_copy`` and a shared-memory scale
operand of ``async_dot_scaled`` undo that packing -- the same view the compiled path builds
(``compiler/nvidia/blackwell/scaled.py``).

Completion follows ``async_dot`` (``ops_mma.issue``): both are tcgen05 ops, run in issue order per task and
tracked by ``tcgen05_commit`` / ``mBarriers``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter import fp8
from utlx.interpreter import state as _state
from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where
from utlx.interpreter.memory import BufferView
from utlx.interpreter.ops_blackwell import is_tmem
from utlx.interpreter.ops_mma import issue
from utlx.interpreter.state import InFlight
from utlx.language._dispatch import register_interpreter_impl as impl

_unwrap = tl._unwrap_if_constexpr

#: operand format -> FP8 dtype (None: e2m1, packed two a byte)
FORMATS: dict[str, Any] = {"e4m3": tl.float8e4nv, "e5m2": tl.float8e5, "e2m1": None}
SCALE_DTYPES = (tl.uint8, tl.int8)
VEC = 32  # K values per scale


def unpack_scales(packed: np.ndarray, rows: int, cols: int, op: str, loc: Any) -> np.ndarray:
    """``rows x cols`` scales from the shared-memory packed block layout ``[1, rows/128, cols/4, 2, 256]``."""
    want = [1, rows // 128, cols // 4, 2, 256]
    if rows % 128 or cols % 4 or list(packed.shape) != want:
        raise UtlxInterpreterError(f"{op}: shared-memory scales for {rows} x {cols} must be in the packed block "
                                   f"layout {want}, got {list(packed.shape)}{where(loc)}")
    blocks = np.asarray(packed).view(np.uint8).reshape(rows // 128, cols // 4, 32, 4, 4)
    return blocks.transpose(0, 3, 2, 1, 4).reshape(rows, cols)


def _scale_buffer(value: Any, name: str, op: str) -> BufferView:
    value = _unwrap(value)
    if not isinstance(value, BufferView) or value.dtype not in SCALE_DTYPES:
        raise UtlxInterpreterError(f"{op}: '{name}' must be a uint8/int8 (e8m0) scales buffer, got "
                                   f"{value!r}{where(kernel_location())}")
    return value


@impl("tmem_copy")
def tmem_copy(_semantic: Any, src: Any, dst: Any) -> None:
    """Copy packed shared-memory scales into a tensor-memory scales buffer (asynchronous, a tcgen05 op)."""
    op, loc = "tmem_copy", kernel_location()
    s, d = _scale_buffer(src, "src", op), _scale_buffer(dst, "dst", op)
    if is_tmem(s) or not is_tmem(d):
        raise UtlxInterpreterError(f"{op}: copies a shared-memory buffer (src) into a tensor-memory buffer (dst), "
                                   f"got {s.name} -> {d.name}{where(loc)}")
    rows, cols = d.shape
    st = _state.current()
    st.check_read(s, op, loc, tcgen05=True)
    st.check_write(d, op, loc, tcgen05=True)
    d.data[...] = unpack_scales(s.data, rows, cols, op, loc).view(d.data.dtype)
    st.tcgen05_issue([InFlight(op, s.region, s.name, loc)], [InFlight(op, d.region, d.name, loc)])


def _scales(st: _state.ProgramState, buf: BufferView, rows: int, cols: int, name: str, loc: Any) -> np.ndarray:
    """``rows x cols`` float32 scale factors ``2^(s - 127)`` from a TMEM or packed shared-memory buffer."""
    op = "async_dot_scaled"
    st.check_read(buf, op, loc, tcgen05=True)
    if is_tmem(buf):
        if buf.shape != [rows, cols]:
            raise UtlxInterpreterError(f"{op}: '{name}' in tensor memory must be {rows} x {cols} (rows x K/{VEC}), "
                                       f"got {buf.shape}{where(loc)}")
        codes = np.asarray(buf.data).view(np.uint8)
    else:
        codes = unpack_scales(buf.data, rows, cols, op, loc)
    return np.where(codes == 255, np.float32(np.nan), np.exp2(codes.astype(np.float32) - 127)).astype(np.float32)


def _values(st: _state.ProgramState, value: Any, fmt: str, k_axis: int, name: str, loc: Any) -> np.ndarray:
    """An operand buffer's values in float32, decoded as ``fmt`` (the buffer's bytes; fp4 unpacked along K)."""
    op = "async_dot_scaled"
    if not isinstance(value, BufferView):
        raise UtlxInterpreterError(f"{op}: '{name}' must be a shared- or tensor-memory buffer, got "
                                   f"{value!r}{where(loc)}")
    st.check_read(value, op, loc, tcgen05=True)
    if _compat.np_dtype(value.dtype).itemsize != 1:
        raise UtlxInterpreterError(f"{op}: '{name}' holds {value.dtype}; {fmt} operands are 8-bit{where(loc)}")
    data = np.ascontiguousarray(value.data)
    dtype = FORMATS[fmt]
    return fp8.decode_e2m1(data, k_axis) if dtype is None else fp8.decode(data, dtype)


@impl("async_dot_scaled")
def async_dot_scaled(_semantic: Any, A: Any, B: Any, acc: Any, A_scale: Any, A_format: Any, B_scale: Any,
                     B_format: Any, use_acc: Any, pred: Any, mBarriers: Any, two_ctas: Any, force_async: Any,
                     out_dtype: Any) -> Any:
    """``acc (+)= (A * A_scale) @ (B * B_scale)`` with e8m0 block scales, as a tcgen05 MMA (see module doc)."""
    op, loc = "async_dot_scaled", kernel_location()
    if not _compat.to_bool(pred, f"{op} pred"):
        return acc
    if _compat.to_bool(two_ctas, f"{op} two_ctas"):
        raise UtlxInterpreterError(f"{op}: two_ctas (cta_group::2) block-scaled MMAs are not modelled by the "
                                   f"interpreter{where(loc)}")
    if not isinstance(acc, BufferView) or not is_tmem(acc):
        raise UtlxInterpreterError(f"{op}: the accumulator must be a tensor-memory buffer, got {acc!r}{where(loc)}")
    formats = []
    for name, fmt in (("A_format", A_format), ("B_format", B_format)):
        fmt = _unwrap(fmt)
        if fmt not in FORMATS:
            raise UtlxInterpreterError(f"{op}: '{name}' must be one of {', '.join(FORMATS)}, got {fmt!r}{where(loc)}")
        formats.append(fmt)
    st = _state.current()
    a = _values(st, A, formats[0], 1, "A", loc)
    b = _values(st, B, formats[1], 0, "B", loc)
    (m, k), n = a.shape, b.shape[1]
    if b.shape[0] != k or k % VEC:
        raise UtlxInterpreterError(f"{op}: shapes {list(a.shape)} @ {list(b.shape)} do not chain in whole "
                                   f"{VEC}-element scale blocks{where(loc)}")
    a_scale = _scales(st, _scale_buffer(A_scale, "A_scale", op), m, k // VEC, "A_scale", loc)
    b_scale = _scales(st, _scale_buffer(B_scale, "B_scale", op), n, k // VEC, "B_scale", loc)
    a = a * np.repeat(a_scale, VEC, axis=1)
    b = b * np.repeat(b_scale, VEC, axis=1).T
    operands = [A, B, _unwrap(A_scale), _unwrap(B_scale)]
    return issue(_semantic, op, st, a, b, operands, acc, use_acc, mBarriers, force_async, out_dtype, loc)
