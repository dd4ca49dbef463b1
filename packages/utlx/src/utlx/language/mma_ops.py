"""Asynchronous matrix multiply-accumulate (Hopper wgmma / Blackwell tcgen05) and its wait."""

from __future__ import annotations

from triton.language import core as tl

from utlx.language._op import op


@op
def async_dot(
    A,
    B,
    acc=None,
    use_acc=None,
    pred=None,
    mBarriers=(),
    two_ctas=False,
    force_async=False,
    input_precision=None,
    out_dtype=tl.float32,
    _semantic=None,
):
    """Start ``A @ B + acc`` asynchronously (``A`` a buffer or registers, ``B`` a buffer).

    Returns the accumulator in flight: it (and the buffers ``A``/``B``) are in use until
    :func:`async_dot_wait` lets this dot finish; with ``mBarriers`` (Blackwell) completion arrives on
    those barriers instead. ``use_acc=False`` ignores ``acc``'s contents.
    """


@op
def async_dot_scaled(
    A,
    B,
    acc,
    A_scale,
    A_format,
    B_scale,
    B_format,
    use_acc=None,
    pred=None,
    mBarriers=(),
    two_ctas=False,
    force_async=False,
    out_dtype=tl.float32,
    _semantic=None,
):
    """Start a block-scaled MMA (Blackwell ``tcgen05.mma`` with scale factors): ``acc += (A * A_scale) @
    (B * B_scale)`` with ``A_format``/``B_format`` naming the low-precision formats ("e4m3", "e5m2", ...)."""


@op
def async_dot_wait(pendings, inp, _semantic=None):
    """Wait until at most ``pendings`` async dots are in flight; returns ``inp`` (the accumulator)."""


@op
def tcgen05_commit(mBarrier, two_ctas=False, _semantic=None):
    """Make ``mBarrier`` receive one arrival when every earlier tcgen05 op has completed."""


__all__ = ["async_dot", "async_dot_scaled", "async_dot_wait", "tcgen05_commit"]
