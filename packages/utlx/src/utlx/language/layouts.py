"""TLX's layout classes: how a shared-memory buffer or a register tensor is laid out.

Why a module of their own: TLX keeps them in its ``types`` module (``utlx.language.types`` re-exports every
one), but they are plain data with rules of their own that the rest of ``types`` does not need:

* Kernels keep layouts in module globals (``_C4 = tlx.layout(...)``) and read them inside ``@jit`` code.
  Stock Triton's code generator only lets a kernel read a global that is a constexpr, a module, a JIT
  function, or an object whose ``__module__`` starts with ``triton.language`` (``global_lookup``, 3.6-3.9).
  In Meta's fork these classes live in ``triton.language.extra.tlx.types``; each class here says so in
  ``__module__`` (that name is the alias of ``utlx.language.types``, which holds every one of them), so the
  same kernels are accepted.
* The JIT remembers every global a kernel read and compares it on each launch ("Global variable ... has
  changed since we compiled this kernel"), so layouts compare and hash by value.
* They carry no IR: the compiler turns them into Gluon layouts when it lowers the ops that use them
  (``utlx.compiler.common.layouts``), the CPU interpreter ignores them (a layout never changes values).

The AMD layouts follow Meta's fork (``third_party/tlx/language/tlx/types.py``): a CuTe-style register
``layout`` (thread/value modes of shape and flat stride), the CuTe ``swizzled_layout`` (``Swizzle<B, M, S>``,
resolved once the buffer shape is known), padded shared layouts (``with_bases`` / ``with_identity_for``),
shared linear layouts, the MFMA accumulator layout and MFMA dot-operand layouts.
"""

from __future__ import annotations

from typing import Any

from triton.language import core as tl
from triton.runtime.jit import constexpr_function

#: Where Meta's fork defines these classes (see the module docstring: stock Triton's global rule).
TLX_TYPES_MODULE = "triton.language.extra.tlx.types"


def _frozen(value: Any) -> Any:
    """A hashable copy of a field (nested lists become tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _int(value: Any) -> int:
    return int(tl._unwrap_if_constexpr(value))


def _int_lists(rows: Any) -> list[list[int]]:
    return [[_int(x) for x in tl._unwrap_if_constexpr(row)] for row in tl._unwrap_if_constexpr(rows)]


class TMemCTAMode:
    """How a Blackwell tensor-memory buffer is split across a CTA pair (``tensor_memory_layout_encoding``)."""

    DEFAULT = 0
    TwoCTA_LHS = 1
    TwoCTA_RHS = 2

def _ints(values: Any) -> list[int]:
    return [int(tl._unwrap_if_constexpr(v)) for v in values]


def _permuted(order: Any, dims: Any) -> tuple[int, ...]:
    """Layout order of a view whose dimension ``i`` is the original dimension ``dims[i]``."""
    order, dims = _ints(order), _ints(dims)
    if sorted(dims) != list(range(len(order))):
        raise ValueError(f"make_permute: dims {dims} is not a permutation of {len(order)} dimensions")
    return tuple(order[d] for d in dims)


class layout_encoding:
    """Base of every TLX layout: a description of how a buffer or tensor is laid out."""

    def __init__(self) -> None:
        pass

    def _fields(self) -> tuple[Any, ...]:
        return tuple(_frozen(v) for k, v in sorted(vars(self).items()) if not k.startswith("_"))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._fields()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in sorted(vars(self).items()) if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


class shared_layout_encoding(layout_encoding):
    """Base of shared-memory (and tensor-memory) buffer layouts; ``make_permute`` gives a transposed view's."""

    def __init__(self) -> None:
        super().__init__()

    def make_permute(self, dims):
        """Layout of the view whose dimension ``i`` is this layout's dimension ``dims[i]``."""
        raise TypeError(f"{type(self).__name__} cannot be permuted")


class swizzled_shared_layout_encoding(shared_layout_encoding):
    """A swizzled shared layout (``#ttg.swizzled_shared``): ``vectorSize`` elements per swizzle unit, XOR
    phases ``perPhase``/``maxPhase``, ``order`` fastest dimension first, and the CTA-split description."""

    def __init__(self, vectorSize, perPhase, maxPhase, order, numCTAs, numCTAsPerCGA, numCTASplit, numCTAOrder):
        super().__init__()
        self.vectorSize = vectorSize
        self.perPhase = perPhase
        self.maxPhase = maxPhase
        self.order = order
        self.numCTAs = numCTAs
        self.numCTAsPerCGA = numCTAsPerCGA
        self.numCTASplit = numCTASplit
        self.numCTAOrder = numCTAOrder

    @classmethod
    def make_default(cls, rank):
        """The unswizzled row-major layout of a ``rank``-dimensional buffer on one CTA."""
        ones = [1] * rank
        return cls(1, 1, 1, list(range(rank - 1, -1, -1)), list(ones), list(ones), list(ones), list(ones))

    def make_permute(self, dims):
        return swizzled_shared_layout_encoding(self.vectorSize, self.perPhase, self.maxPhase,
                                               _permuted(self.order, dims), self.numCTAs, self.numCTAsPerCGA,
                                               self.numCTASplit, self.numCTAOrder)


class tensor_memory_layout_encoding(shared_layout_encoding):
    """Blackwell tensor-memory layout: ``blockM`` x ``blockN`` blocks, ``colStride`` columns per element."""

    def __init__(self, blockM, blockN, colStride, CTASplitM, CTASplitN, ctaMode=0):
        super().__init__()
        self.ctaMode = ctaMode
        self.blockM = blockM
        self.blockN = blockN
        self.colStride = colStride
        self.CTASplitM = CTASplitM
        self.CTASplitN = CTASplitN

    @classmethod
    def make_default(cls, shape):
        """One block covering the 2-D ``shape``, one column per element, one CTA."""
        rows, cols = _ints(shape)[:2]
        return cls(rows, cols, 1, 1, 1)


class tensor_memory_scales_layout_encoding:
    """Blackwell tensor-memory layout of the scale factors of a scaled MMA."""

    def __init__(self, CTASplitM: int = 1, CTASplitN: int = 1):
        self.CTASplitM = CTASplitM
        self.CTASplitN = CTASplitN

    @classmethod
    def make_default(cls):
        return cls()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, tensor_memory_scales_layout_encoding) and (
            self.CTASplitM, self.CTASplitN) == (other.CTASplitM, other.CTASplitN)

    def __hash__(self) -> int:
        return hash((self.CTASplitM, self.CTASplitN))

    def __repr__(self) -> str:
        return f"tensor_memory_scales_layout_encoding(CTASplitM={self.CTASplitM}, CTASplitN={self.CTASplitN})"


class nv_mma_shared_layout_encoding(shared_layout_encoding):
    """The NVMMA shared layout (``#ttg.nvmma_shared``) that wgmma/tcgen05 and TMA read directly."""

    def __init__(self, shape, order, elemType, numCTAsPerCGA, numCTASplit, numCTAOrder, fp4Padded, swizzled):
        super().__init__()
        self.shape = shape
        self.order = order
        self.elemType = elemType
        self.numCTAsPerCGA = numCTAsPerCGA
        self.numCTASplit = numCTASplit
        self.numCTAOrder = numCTAOrder
        self.fp4Padded = fp4Padded
        self.swizzled = swizzled

    @classmethod
    def make_default(cls, shape, elemType, fp4Padded=False):
        """Row-major, swizzled, one CTA."""
        rank = len(shape)
        ones = [1] * rank
        return cls(shape, list(range(rank - 1, -1, -1)), elemType, list(ones), list(ones), list(ones), fp4Padded,
                   True)

    def make_permute(self, dims):
        return nv_mma_shared_layout_encoding(self.shape, _permuted(self.order, dims), self.elemType,
                                             self.numCTAsPerCGA, self.numCTASplit, self.numCTAOrder, self.fp4Padded,
                                             self.swizzled)


class DummyRegisterLayoutEncoding(layout_encoding):
    """Placeholder for a register (distributed) layout that the compiler picks later; ``tmem_compatible``
    asks for one that Blackwell tensor-memory loads and stores can use."""

    def __init__(self, shape: list[int], element_type: tl.dtype, tmem_compatible: bool = False):
        super().__init__()
        self.shape = shape
        self.element_type = element_type
        self.tmem_compatible = tmem_compatible


class DummyTMEMLayoutEncoding(layout_encoding):
    """Placeholder for a tensor-memory layout that the compiler picks later (sub-16-bit TMEM buffers)."""

    def __init__(self):
        super().__init__()


# ------------------------------------------------------------------------------------------- AMD layouts


class swizzled_layout:
    """A CuTe ``Swizzle<B, M, S>`` shared-memory layout: ``bits`` (B) gives ``maxPhase = 2**B``, ``base``
    (M) the unswizzled vector ``vec = 2**M``, ``shift`` (S) the distance between the XOR'd bit fields.

    ``order`` lists the axes fastest first (row-major when omitted). CuTe's ``S`` is defined on the flat
    offset while Triton's ``perPhase`` counts rows, so the layout becomes a concrete
    :class:`swizzled_shared_layout_encoding` only once the buffer shape is known (``local_alloc``):
    ``perPhase = 2**(shift + base) // shape[order[0]]``.
    """

    def __init__(self, bits, base=0, shift=0, order=None):
        self.bits = _int(bits)
        self.base = _int(base)
        self.shift = _int(shift)
        order = tl._unwrap_if_constexpr(order)
        self.order = [_int(d) for d in order] if order is not None else None

    @classmethod
    def make_default(cls, rank):
        """``Swizzle<0, 0, 0>`` (no swizzle), row-major."""
        return cls(bits=0, base=0, shift=0, order=list(reversed(range(rank))))

    @property
    def maxPhase(self):
        return 1 << self.bits

    @property
    def vectorSize(self):
        return 1 << self.base

    def _to_encoding(self, shape=None):
        """The :class:`swizzled_shared_layout_encoding` of a buffer of ``shape`` (needed unless trivial)."""
        if self.order is None and shape is None:
            raise ValueError("swizzled_layout: cannot resolve without an order or a buffer shape")
        rank = len(self.order) if self.order is not None else len(shape)
        order = list(self.order) if self.order is not None else list(reversed(range(rank)))
        if self.maxPhase == 1:
            per_phase = 1
        else:
            if shape is None:
                raise ValueError(f"{self!r} needs the buffer shape: pass it as tlx.local_alloc(..., layout=...)")
            contiguous = _int(list(shape)[order[0]])
            span = 1 << (self.shift + self.base)
            if span % contiguous:
                raise ValueError(f"{self!r} gives perPhase < 1 for a contiguous extent of {contiguous} elements "
                                 f"(needs shift + base >= log2({contiguous}))")
            per_phase = span // contiguous
        ones = [1] * rank
        return swizzled_shared_layout_encoding(self.vectorSize, per_phase, self.maxPhase, order, list(ones),
                                               list(ones), list(ones), list(reversed(range(rank))))

    def __repr__(self):
        return f"swizzled_layout(Swizzle<{self.bits},{self.base},{self.shift}>, order={self.order})"

    def __eq__(self, other):
        return isinstance(other, swizzled_layout) and (self.bits, self.base, self.shift, self.order) == (
            other.bits, other.base, other.shift, other.order)

    def __hash__(self):
        return hash((self.bits, self.base, self.shift, _frozen(self.order)))


class padded_shared_layout_encoding(shared_layout_encoding):
    """``#ttg.padded_shared``: after every ``intervals[i]`` elements, ``paddings[i]`` elements of padding.

    Two forms, as in Triton: the identity form (row-major over ``shape`` in ``order``), or an explicit
    linear component (``offset_bases``, one basis vector per offset bit, and ``block_bases``) that pins a
    permuted layout. Build them with :meth:`with_identity_for` and :meth:`with_bases` (both usable inside
    ``@jit`` code on compile-time arguments).
    """

    def __init__(self, intervals, paddings, order, shape, numCTAsPerCGA, numCTASplit, numCTAOrder, offset_bases=None,
                 block_bases=None):
        super().__init__()
        if len(intervals) != len(paddings):
            raise ValueError(f"padded_shared_layout_encoding: {len(intervals)} intervals but {len(paddings)} paddings")
        self.intervals = [_int(v) for v in intervals]
        self.paddings = [_int(v) for v in paddings]
        self.order = [_int(v) for v in order]
        self.shape = [_int(v) for v in shape]
        self.numCTAsPerCGA = [_int(v) for v in numCTAsPerCGA]
        self.numCTASplit = [_int(v) for v in numCTASplit]
        self.numCTAOrder = [_int(v) for v in numCTAOrder]
        self.offset_bases = None if offset_bases is None else _int_lists(offset_bases)
        self.block_bases = None if block_bases is None else _int_lists(block_bases)
        rank = len(self.shape)
        if not rank or len(self.order) != rank or sorted(self.order) != list(range(rank)):
            raise ValueError(f"padded_shared_layout_encoding: order {self.order} is not a permutation of the "
                             f"{rank} dimensions of shape {self.shape}")
        if self.offset_bases is not None and not self.offset_bases:
            raise ValueError("padded_shared_layout_encoding: offset_bases must be non-empty")
        for basis in (self.offset_bases or []) + (self.block_bases or []):
            if len(basis) != rank:
                raise ValueError(f"padded_shared_layout_encoding: basis {basis} does not have rank {rank}")

    # The two builders run inside @jit code (constexpr functions): Triton hashes their source and accepts
    # references to builtins and classes only, so the checks and conversions are in __init__.
    @staticmethod
    @constexpr_function
    def with_bases(interval_padding_pairs, offset_bases, shape, block_bases=None):
        """``#ttg.padded_shared<[i:+p, ...] {offset = offset_bases, block = block_bases}>`` over ``shape``."""
        rank = len(shape)
        return padded_shared_layout_encoding([p[0] for p in interval_padding_pairs],
                                             [p[1] for p in interval_padding_pairs], list(reversed(range(rank))),
                                             shape, [1] * rank, [1] * rank, list(range(rank)),
                                             offset_bases=offset_bases, block_bases=block_bases or [])

    @staticmethod
    @constexpr_function
    def with_identity_for(interval_padding_pairs, shape, order=None):
        """The identity padded layout of ``shape`` (``order``: fastest axis first, row-major by default)."""
        rank = len(shape)
        return padded_shared_layout_encoding([p[0] for p in interval_padding_pairs],
                                             [p[1] for p in interval_padding_pairs],
                                             list(reversed(range(rank))) if order is None else order, shape,
                                             [1] * rank, [1] * rank, list(range(rank)))

    def make_permute(self, dims):
        dims = _ints(dims)
        return padded_shared_layout_encoding(self.intervals, self.paddings, [self.order[d] for d in dims],
                                             [self.shape[d] for d in dims], self.numCTAsPerCGA, self.numCTASplit,
                                             self.numCTAOrder)


class shared_linear_layout_encoding(shared_layout_encoding):
    """``#ttg.shared_linear``: each offset bit maps to one tensor coordinate (``offset_bases``), no padding."""

    def __init__(self, offset_bases, block_bases=None, alignment=16):
        super().__init__()
        self.offset_bases = _int_lists(offset_bases)
        self.block_bases = _int_lists(block_bases or [])
        self.alignment = _int(alignment)
        if not self.offset_bases or not self.offset_bases[0]:
            raise ValueError("shared_linear_layout_encoding: offset_bases must be non-empty")
        rank = len(self.offset_bases[0])
        if any(len(b) != rank for b in self.offset_bases + self.block_bases):
            raise ValueError(f"shared_linear_layout_encoding: every basis must have rank {rank}")
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            raise ValueError(f"shared_linear_layout_encoding: alignment must be a power of two, got {self.alignment}")

    def make_permute(self, dims):
        # A physical image: the bases stay, the transposed view describes the logical permutation.
        return self


class amd_mfma_layout(layout_encoding):
    """``#ttg.amd_mfma``: the accumulator layout of AMD matrix-core (MFMA) instructions."""

    def __init__(self, version, instr_shape, transposed, warps_per_cta, element_bitwidth=32, tiles_per_warp=None,
                 cga_layout=None):
        super().__init__()
        self.version = _int(version)
        self.instr_shape = [_int(v) for v in tl._unwrap_if_constexpr(instr_shape)]
        self.transposed = bool(tl._unwrap_if_constexpr(transposed))
        self.warps_per_cta = [_int(v) for v in tl._unwrap_if_constexpr(warps_per_cta)]
        self.element_bitwidth = _int(element_bitwidth)
        rank = len(self.warps_per_cta)
        tiles = tl._unwrap_if_constexpr(tiles_per_warp)
        self.tiles_per_warp = [_int(v) for v in tiles] if tiles else [1] * rank
        self.cga_layout = _int_lists(cga_layout or [])
        problems = []
        if not 1 <= self.version <= 4:
            problems.append(f"version {self.version} (1..4)")
        if len(self.instr_shape) != 3 or self.instr_shape[:2] not in ([32, 32], [16, 16], [64, 4], [4, 64]):
            problems.append(f"instr_shape {self.instr_shape} ([32, 32, K], [16, 16, K], [64, 4, K] or [4, 64, K])")
        if self.element_bitwidth not in (32, 64):
            problems.append(f"element_bitwidth {self.element_bitwidth} (32 or 64)")
        if len(self.tiles_per_warp) != rank:
            problems.append(f"tiles_per_warp {self.tiles_per_warp} (one per warp axis)")
        if problems:
            raise ValueError("amd_mfma_layout: bad " + ", ".join(problems))


class dot_operand_layout(layout_encoding):
    """``#ttg.dot_op``: operand ``operand_index`` (0 = A, 1 = B) of an MFMA with layout ``parent``."""

    def __init__(self, operand_index, parent, k_width=8):
        super().__init__()
        self.operand_index = _int(operand_index)
        self.parent = tl._unwrap_if_constexpr(parent)
        self.k_width = _int(k_width)
        if self.operand_index not in (0, 1) or self.k_width <= 0:
            raise ValueError(f"dot_operand_layout: operand_index must be 0 or 1 and k_width > 0, got "
                             f"{self.operand_index}, {self.k_width}")


def _mode_bit_strides(shape: Any, stride: Any) -> list[int]:
    """The flat offset of each bit of a CuTe mode list: a mode ``(2**k, s)`` gives ``s, 2s, ..., 2**(k-1) s``."""
    shape, stride = tl._unwrap_if_constexpr(shape), tl._unwrap_if_constexpr(stride)
    if len(shape) != len(stride):
        raise ValueError(f"layout: {len(shape)} mode extents but {len(stride)} strides")
    out = []
    for extent, step in zip(shape, stride, strict=True):
        extent, step = _int(extent), _int(step)
        if extent <= 0 or extent & (extent - 1):
            raise ValueError(f"layout: mode extent {extent} is not a power of two")
        bit = 1
        while bit < extent:
            out.append(step * bit)
            bit <<= 1
    return out


def _coordinate(flat: int, shape: list[int]) -> list[int]:
    """The row-major coordinate of flat offset ``flat`` in a tensor of ``shape``."""
    coord = []
    for d in range(len(shape)):
        inner = 1
        for later in shape[d + 1:]:
            inner *= later
        coord.append((flat // inner) % shape[d])
    return coord


class layout(layout_encoding):
    """A register (distributed) layout written CuTe-style as ``(thread, value)`` modes of shape and stride.

    ``shape = (thread_shape, value_shape)`` and ``stride = (thread_stride, value_stride)``: power-of-two
    extents and flat row-major offsets into the tile. The low ``log2(warp_size)`` thread bits are lanes, the
    rest warps; value bits are registers (:meth:`linear_bases`). ``tlx.layout(swizzled_layout(...))`` is a
    shared-memory layout instead: it returns the ``swizzled_layout`` (or, when trivial, its encoding).
    """

    def __new__(cls, spec=None, *, shape=None, stride=None):
        spec = tl._unwrap_if_constexpr(spec)
        if isinstance(spec, swizzled_layout):
            return spec._to_encoding() if spec.maxPhase == 1 else spec
        return super().__new__(cls)

    def __init__(self, spec=None, *, shape=None, stride=None):
        super().__init__()
        shape, stride = tl._unwrap_if_constexpr(shape), tl._unwrap_if_constexpr(stride)
        if shape is None or stride is None or len(shape) != 2 or len(stride) != 2:
            raise ValueError("tlx.layout needs a swizzled_layout(...), or shape=(thread, value) and "
                             "stride=(thread, value) for a register layout")
        self.thread_shape, self.value_shape = (_frozen(tl._unwrap_if_constexpr(s)) for s in shape)
        self.thread_stride, self.value_stride = (_frozen(tl._unwrap_if_constexpr(s)) for s in stride)

    def linear_bases(self, shape: Any, warp_size: int) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
        """(register, lane, warp) basis vectors of this layout over a tensor of ``shape``."""
        tensor_shape = [_int(s) for s in shape]
        lane_bits = int(warp_size).bit_length() - 1
        values = _mode_bit_strides(self.value_shape, self.value_stride)
        threads = _mode_bit_strides(self.thread_shape, self.thread_stride)
        to_coord = [_coordinate(f, tensor_shape) for f in threads]
        return ([_coordinate(f, tensor_shape) for f in values], to_coord[:lane_bits], to_coord[lane_bits:])

    def __repr__(self):
        return (f"layout(shape=({self.thread_shape}, {self.value_shape}), "
                f"stride=({self.thread_stride}, {self.value_stride}))")


for _cls in (layout_encoding, shared_layout_encoding, swizzled_shared_layout_encoding, tensor_memory_layout_encoding,
             tensor_memory_scales_layout_encoding, nv_mma_shared_layout_encoding, DummyRegisterLayoutEncoding,
             DummyTMEMLayoutEncoding, TMemCTAMode, swizzled_layout, padded_shared_layout_encoding,
             shared_linear_layout_encoding, amd_mfma_layout, dot_operand_layout, layout):
    _cls.__module__ = TLX_TYPES_MODULE
del _cls

__all__ = [
    "DummyRegisterLayoutEncoding",
    "DummyTMEMLayoutEncoding",
    "TMemCTAMode",
    "amd_mfma_layout",
    "dot_operand_layout",
    "layout",
    "layout_encoding",
    "nv_mma_shared_layout_encoding",
    "padded_shared_layout_encoding",
    "shared_layout_encoding",
    "shared_linear_layout_encoding",
    "swizzled_layout",
    "swizzled_shared_layout_encoding",
    "tensor_memory_layout_encoding",
    "tensor_memory_scales_layout_encoding",
]
