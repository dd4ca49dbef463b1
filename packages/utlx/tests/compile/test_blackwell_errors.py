"""Blackwell-only TLX ops compiled for sm_90 or AMD: an error naming the op, the target and sm_100.

Ops whose stub the language surface does not have yet are declared here with the language's own ``op``
decorator under TLX's name, so they dispatch to the same compiler bodies a TLX kernel reaches.
"""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from utlx.language._op import op


def _surface(name: str, stub):
    return getattr(tlx, name, None) or op(stub)


def _tmem_copy(src, dst, _semantic=None):
    """TLX tmem_copy."""


def _clc_create_context(num_consumers, num_stages=1, _semantic=None):
    """TLX clc_create_context."""


def _stoch_round(src, dst_ty, rand_bits, _semantic=None):
    """TLX stoch_round."""


def _vote_ballot_sync(mask, pred, _semantic=None):
    """TLX vote_ballot_sync."""


_tmem_copy.__name__ = "tmem_copy"
_clc_create_context.__name__ = "clc_create_context"
_stoch_round.__name__ = "stoch_round"
_vote_ballot_sync.__name__ = "vote_ballot_sync"
tmem_copy = _surface("tmem_copy", _tmem_copy)
clc_create_context = _surface("clc_create_context", _clc_create_context)
stoch_round = _surface("stoch_round", _stoch_round)
vote_ballot_sync = _surface("vote_ballot_sync", _vote_ballot_sync)


@triton.jit
def _uses(out_ptr, WHICH: tl.constexpr):
    bars = tlx.alloc_barriers(1)
    bufs = tlx.local_alloc((64, 64), tl.float16, 1)
    if WHICH == "tcgen05_commit":
        tlx.tcgen05_commit(bars[0])
    elif WHICH == "tmem":
        tlx.local_alloc((128, 64), tl.float32, 1, tlx.storage_kind.tmem)
    elif WHICH == "tmem_copy":
        tmem_copy(bufs[0], bufs[0])
    elif WHICH == "clc":
        clc_create_context(1)
    elif WHICH == "stoch_round":
        stoch_round(tl.zeros((64,), tl.float32), tl.float16, tl.zeros((64,), tl.uint32))
    elif WHICH == "mbarriers":
        tlx.async_dot(bufs[0], bufs[0], mBarriers=[bars[0]])


@pytest.mark.parametrize(("which", "op_name"), [
    ("tcgen05_commit", "tcgen05_commit"), ("tmem", "local_alloc"), ("tmem_copy", "tmem_copy"),
    ("clc", "clc_create_context"), ("stoch_round", "stoch_round"), ("mbarriers", "async_dot"),
])
def test_blackwell_op_on_hopper_names_op_and_sm100(which, op_name):
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_uses, {"out_ptr": "*fp32"}, {"WHICH": which})
    text = str(info.value)
    assert f"utlx.{op_name}:" in text and "needs Blackwell (sm_100)" in text and "cuda:90" in text, text


@triton.jit
def _alone(out_ptr, WHICH: tl.constexpr):
    if WHICH == "tmem":
        tlx.local_alloc((128, 64), tl.float32, 1, tlx.storage_kind.tmem)
    else:
        clc_create_context(1)


@pytest.mark.parametrize("which", ["tmem", "clc"])
def test_blackwell_op_on_amd_names_op_and_sm100(which):
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_alone, {"out_ptr": "*fp32"}, {"WHICH": which}, "hip:gfx942")
    text = str(info.value)
    assert "needs Blackwell (sm_100)" in text and "hip:gfx942" in text, text


@triton.jit
def _ballot(x_ptr, out_ptr):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, vote_ballot_sync(0xFFFFFFFF, x > 0))


def test_vote_ballot_sync_is_a_warp_vote():
    ptx = compile_kernel(_ballot, {"x_ptr": "*i32", "out_ptr": "*i32"}, {}).asm["ptx"]
    assert "vote.sync.ballot.b32" in ptx and "0xffffffff" in ptx
