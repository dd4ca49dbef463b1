"""``tlx.async_load(ptr, buf, bulk=True, barrier=bar)`` compiles to one ``cp.async.bulk`` global -> shared whose bytes
complete on the mbarrier (sm_90+; utlx/compiler/nvidia/bulk_copy.py). Compile-verified in the PTX."""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from bulk_kernels import bulk_rows
from utlx.compiler.common.errors import UtlxCompileError

_BULK = re.compile(r"(@%p\d+ )?cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes "
                   r"\[%utlx_bdst\], \[(%rd\d+)(\+\d+)?\], %utlx_bsize, \[(%r\d+)\];")


def _ptx(target: str = "cuda:100", **consts) -> str:
    c = {"N": 128, "SIZE": 512, "NBUF": 2, **consts}
    return compile_kernel(bulk_rows, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, c, target, num_warps=4).asm["ptx"]


def _error(info: pytest.ExceptionInfo) -> str:
    exc: BaseException | None = info.value
    while exc is not None and not isinstance(exc, UtlxCompileError):
        exc = exc.__cause__ or exc.__context__
    return str(exc if exc is not None else info.value)


@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
def test_bulk_async_load_is_one_predicated_cp_async_bulk_per_copy(target):
    ptx = _ptx(target)
    copies = _BULK.findall(ptx)
    assert len(copies) == 2  # one per buffer
    assert all(pred for pred, *_ in copies)  # issued by one thread (the scalar store's predicate)
    # the low word of the carrier is the destination, the high word the byte count
    assert len(re.findall(r"mov\.b64 \{%utlx_bdst, %utlx_bsize\}, %rd\d+;", ptx)) == 2
    assert "cp.async.cg" not in ptx and "cp.async.ca" not in ptx  # not a per-thread cp.async
    assert "// utlx: address probe (its arrive removed)" in ptx
    assert not re.search(r"mbarrier\.arrive(\.release)?(\.cta)?\.shared(::cta)?\.b64 _, ", ptx)
    assert re.search(r"mbarrier\.try_wait\.parity", ptx)


def test_bulk_async_load_byte_count_reaches_the_copy():
    ptx = _ptx(SIZE=256)
    # the count is packed as (SIZE << 32) | dst: 256 << 32 appears as a constant OR-ed in
    assert str(256 << 32) in ptx
    assert len(_BULK.findall(ptx)) == 2


@pytest.mark.parametrize(("consts", "message"), [
    ({"SIZE": 520}, "bulk_size is 520 bytes; cp.async.bulk copies a positive multiple of 16 bytes, at most the "
                    "buffer's 512"),
    ({"SIZE": 24}, "bulk_size is 24 bytes"),
])
def test_bulk_async_load_refuses_sizes_it_cannot_copy(consts, message):
    with pytest.raises(Exception) as info:
        _ptx(**consts)
    assert message in _error(info)


@triton.jit
def _bulk_misuse(x_ptr, WHICH: tl.constexpr):
    bufs = tlx.local_alloc((16, 16), tl.float32, 1)
    flat = tlx.local_alloc((64,), tl.float32, 1)
    bars = tlx.alloc_barriers(1)
    if WHICH == 0:
        tlx.async_load(x_ptr, bufs[0], bulk=True, barrier=bars[0])
    elif WHICH == 1:
        tlx.async_load(x_ptr, flat[0], bulk=True)
    else:
        tlx.async_load(x_ptr + tl.arange(0, 64), flat[0], bulk=True, barrier=bars[0])


@pytest.mark.parametrize(("which", "message"), [
    (0, "async_load: bulk=True copies into a 1-D shared-memory buffer, got shape [16, 16]"),
    (1, "async_load: bulk=True needs barrier="),
    (2, "async_load: bulk=True copies from one pointer (a scalar)"),
])
def test_bulk_async_load_refuses_misuse_with_one_line(which, message):
    with pytest.raises(Exception) as info:
        compile_kernel(_bulk_misuse, {"x_ptr": "*fp32"}, {"WHICH": which}, "cuda:100")
    assert message in _error(info)
