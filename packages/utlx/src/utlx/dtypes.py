"""Kernel-argument dtypes Meta's fork knows and stock Triton does not: ``torch.float8_e8m0fnu`` (MX scales).

Why: a kernel argument's type comes from ``triton._utils.type_canonicalisation_dict`` (the tensor's dtype name ->
Triton's type string); stock Triton 3.6-3.9 has no entry for ``float8_e8m0fnu``, so passing the e8m0 scale tensors
of an MXFP8 kernel fails with ``KeyError: 'float8_e8m0fnu'``, compiled or interpreted. Meta's fork passes them as
``*u8`` (an e8m0 scale is one byte, an exponent: the kernels read it as uint8); the seam adds that one entry.

Where: ``canonicalize_dtype`` reads the module global, and the other users (``jit.mangle_type`` via
``canonicalize_ptr_dtype``, ``TensorDescriptor``, gluon's descriptors) call that function, so one replaced
mapping reaches all of them.
"""

from __future__ import annotations

from typing import Any

from tritonx.seams import Seam

#: torch dtype name -> Triton type string (the fork's mapping)
EXTRA_DTYPES: dict[str, str] = {"float8_e8m0fnu": "u8"}


class _CanonicalDtypes(dict):
    """Stock Triton's mapping plus :data:`EXTRA_DTYPES` (a dict subclass, so the seam can mark it)."""


def _with_extra(original: Any) -> _CanonicalDtypes:
    return _CanonicalDtypes({**original, **EXTRA_DTYPES})


def _where() -> tuple[Any, str]:
    import triton._utils

    return triton._utils, "type_canonicalisation_dict"


def _lacks_extra() -> bool:
    owner, attribute = _where()
    return not all(name in getattr(owner, attribute) for name in EXTRA_DTYPES)


SEAMS: tuple[Seam, ...] = (
    Seam("utlx.e8m0-argument-dtype", where=_where, make=_with_extra, needed=_lacks_extra,
         reason="torch.float8_e8m0fnu tensors (MX scales) are kernel arguments of type *u8, as in Meta's fork"),
)
