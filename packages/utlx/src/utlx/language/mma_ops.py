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


@op
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=tl.float32, tiles_per_warp=None, _semantic=None):
    """``tl.dot_scaled`` with Meta's fork's extra ``tiles_per_warp`` (MFMA tiling hint; only ``None`` on stock)."""


@op
def require_layout(x, layout, pin=True, late_address_compute=False, _semantic=None):
    """``x`` (values unchanged) in register layout ``layout``. ``pin`` and ``late_address_compute`` are
    layout-propagation hints of Meta's fork: stock Triton may still move the conversion."""


@op
def release_layout(x, _semantic=None):
    """``x`` with its layout free again for the compiler to choose (the inverse of :func:`require_layout`)."""


@op
def require_amd_wmma_layout(src, version=3, transposed=True, warp_bases=((0, 2), (2, 0)), reg_bases=((0, 1), (1, 0)),
                            instr_shape=(16, 16, 128), _semantic=None):
    """``src`` in an explicit AMD WMMA register layout (RDNA / gfx1250)."""


@op
def extract_slice(source, shape, offsets, _semantic=None):
    """The static register sub-tile ``source[offsets : offsets + shape]``."""


@op
def rematerialized_range(start, end, identity, placement=None, _semantic=None):
    """``tl.arange(start, end)`` that the fork keeps apart per ``identity`` (a register-pressure hint)."""


@op
def amd_register_resident(value, register_class="agpr", registers_per_group=1, _semantic=None):
    """``value``, asked to stay in AGPR/VGPR tuples (a register-allocation hint of Meta's fork)."""


@op
def amd_register_handoff(value, register_class="vgpr", _semantic=None):
    """``value``, starting a new register-allocation interval (a hint of Meta's fork)."""


@op
def amd_scheduled_mfma(a, b, acc, accumulator_role, resident_operand=None, accumulator_register_class=None,
                       initialize=False, _semantic=None):
    """``acc + a @ b`` (``a @ b`` with ``initialize``) on AMD matrix cores; the role and register-class
    arguments fix MFMA issue order and accumulator registers in Meta's fork (hints here)."""


@op
def amd_mfma_commit(value, preserve=None, _semantic=None):
    """An MFMA-result boundary: returns ``value`` (and ``preserve`` when given) unchanged."""


__all__ = [
    "amd_mfma_commit",
    "amd_register_handoff",
    "amd_register_resident",
    "amd_scheduled_mfma",
    "async_dot",
    "async_dot_scaled",
    "async_dot_wait",
    "dot_scaled",
    "extract_slice",
    "release_layout",
    "rematerialized_range",
    "require_amd_wmma_layout",
    "require_layout",
    "tcgen05_commit",
]
