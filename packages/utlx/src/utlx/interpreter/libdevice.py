"""``triton.language.extra.libdevice`` math under the interpreter, for the functions Blackwell kernels call.

Why: the portable ``triton.language.extra.libdevice`` module holds stubs (``def fast_dividef(a, b): ...``) that
the compiler replaces with the target's libdevice; the interpreter has no replacement, so under
``TRITON_INTERPRET=1`` ``fast_dividef(qk, 1.0 + tl.exp(-qk))`` (Meta's cross-attention tutorial) returns None.
For the launch, the stubs of :data:`BODIES` (in the libdevice module and in the kernel's globals, where a
``from ... import`` put them) compute in numpy, in float32 (the fast variants' approximations are within
float32 rounding of these).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat


def _f32(value: Any) -> np.ndarray:
    return np.asarray(_compat.tensor_data(value) if isinstance(value, tl.tensor) else value, dtype=np.float32)


def _elementwise(body: Callable[..., np.ndarray]) -> Callable[..., tl.tensor]:
    def fn(*args: Any, _semantic: Any = None) -> tl.tensor:
        with np.errstate(all="ignore"):  # inf/NaN as the GPU gives them
            data = body(*np.broadcast_arrays(*(_f32(a) for a in args)))
        return _compat.make_tensor(np.asarray(data, dtype=np.float32), tl.float32)

    fn.__name__ = getattr(body, "__name__", "libdevice")
    return fn


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) * b + c


#: libdevice function -> float32 numpy body
BODIES: dict[str, Callable[..., np.ndarray]] = {
    "fast_dividef": np.divide,
    "div_rn": np.divide,
    "fast_expf": np.exp,
    "fast_exp10f": lambda x: np.power(np.float32(10), x),
    "fast_logf": np.log,
    "fast_log2f": np.log2,
    "fast_powf": np.power,
    "fast_tanf": np.tan,
    "tanh": np.tanh,
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sqrt": np.sqrt,
    "pow": np.power,
    "fma": _fma,
}

INTERPRETED: dict[str, Callable[..., tl.tensor]] = {name: _elementwise(body) for name, body in BODIES.items()}


def stubs() -> dict[str, Any]:
    """The portable libdevice module's stub functions that :data:`INTERPRETED` replaces, by name."""
    import triton.language.extra.libdevice as portable

    return {name: getattr(portable, name) for name in INTERPRETED if hasattr(portable, name)}
