"""Thread-block clusters, 2-CTA tcgen05 MMAs and remote shared memory compile for cuda:100 (issue 27).

Compile-verified only (no Blackwell GPU is available): each kernel is checked in its PTX. A ``ctas_per_cga``
kernel carries its cluster shape in the PTX entry (``.explicitcluster`` + ``.reqnctapercluster``) and in its
metadata; a ``two_ctas`` MMA is the pair's ``tcgen05.mma.cta_group::2`` issued by the even CTA, its completion
multicast to both CTAs of the pair, and every tcgen05 op of such a kernel names ``cta_group::2``; remote stores
are ``mapa`` + ``st.async``/``st.shared::cluster`` stores. The launch itself (clusters in x, y and z formed by
the driver from ``.reqnctapercluster``) is checked on a GPU in ``tests/gpu/test_cluster_launch.py``.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from utlx import compat
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.nvidia import cluster_ptx
from utlx.compiler.nvidia.blackwell import two_cta

needs_blackwell_tlx = pytest.mark.skipif(not compat.BLACKWELL_TLX,
                                         reason="utlx compiles TLX's Blackwell ops with Triton 3.7+")


def _error(info: pytest.ExceptionInfo) -> str:
    """The utlx error at the root of a compile failure (Triton and tritonx wrap it)."""
    exc: BaseException | None = info.value
    while exc is not None and not isinstance(exc, UtlxCompileError):
        exc = exc.__cause__ or exc.__context__
    return str(exc if exc is not None else info.value)


# ------------------------------------------------------------------------------------- cluster shape


@triton.jit
def _rank_store(out_ptr):
    tl.store(out_ptr + tl.program_id(0) * 4 + tl.program_id(1), tlx.cluster_cta_rank())


@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
@pytest.mark.parametrize("dims", [(2, 1, 1), (4, 2, 1), (1, 4, 1), (1, 2, 2)])
def test_ctas_per_cga_is_the_kernels_cluster_shape_in_its_ptx_and_metadata(target, dims):
    k = compile_kernel(_rank_store, {"out_ptr": "*i32"}, {}, target, ctas_per_cga=dims)
    entry = k.asm["ptx"][k.asm["ptx"].index(".entry"):]
    head = entry[:entry.index("{")]
    assert ".explicitcluster" in head
    assert f".reqnctapercluster {dims[0]}, {dims[1]}, {dims[2]}" in head
    assert tuple(k.metadata.ctas_per_cga) == dims and tuple(k.metadata.cluster_dims) == dims
    assert k.metadata.num_ctas == 1  # one program per CTA: no CTA-split layouts
    plain = compile_kernel(_rank_store, {"out_ptr": "*i32"}, {}, target)
    assert ".reqnctapercluster" not in plain.asm["ptx"] and plain.hash != k.hash


def test_a_one_cta_cluster_is_a_plain_launch():
    one = compile_kernel(_rank_store, {"out_ptr": "*i32"}, {}, "cuda:100", ctas_per_cga=(1, 1, 1))
    plain = compile_kernel(_rank_store, {"out_ptr": "*i32"}, {}, "cuda:100")
    assert one.hash == plain.hash and ".explicitcluster" not in one.asm["ptx"]


def test_clusters_beyond_the_portable_size_are_refused():
    with pytest.raises(Exception) as info:
        compile_kernel(_rank_store, {"out_ptr": "*i32"}, {}, "cuda:100", ctas_per_cga=(4, 4, 1))
    assert "ctas_per_cga: clusters of 16 CTAs ((4, 4, 1)) exceed the portable maximum of 8" in _error(info)


# ------------------------------------------------------------------------------------- 2-CTA MMA


@triton.jit
def _mma_2cta(c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, COMMIT: tl.constexpr,
              PLAIN_TOO: tl.constexpr):
    a = tlx.local_alloc((M, K), tl.float16, 1)
    b = tlx.local_alloc((K, N // 2), tl.float16, 1)  # this CTA's half of B's columns
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    bars = tlx.alloc_barriers(2)
    if COMMIT:
        tlx.async_dot(a[0], b[0], acc[0], use_acc=False, force_async=True, two_ctas=True)
        tlx.tcgen05_commit(bars[1], two_ctas=True)
        tlx.barrier_wait(bars[1], 0)
    else:
        tlx.async_dot(a[0], b[0], acc[0], use_acc=False, mBarriers=[bars[0]], two_ctas=True)
        tlx.barrier_wait(bars[0], 0)
    if PLAIN_TOO:
        b2 = tlx.local_alloc((K, N), tl.float16, 1)
        tlx.async_dot(a[0], b2[0], acc[0], mBarriers=[bars[0]])
    c = tlx.local_load(acc[0])
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def _mma_2cta_kernel(commit: bool = False, plain_too: bool = False, dims=(2, 1, 1), M: int = 128, N: int = 128):
    consts = {"M": M, "N": N, "K": 32, "COMMIT": commit, "PLAIN_TOO": plain_too}
    options = {"ctas_per_cga": dims} if dims else {}
    return compile_kernel(_mma_2cta, {"c_ptr": "*fp32"}, consts, "cuda:100", **options)


@needs_blackwell_tlx
@pytest.mark.parametrize("commit", [False, True], ids=["mBarriers", "tcgen05_commit"])
def test_two_ctas_mma_is_the_pairs_cta_group_2_mma_issued_by_the_even_cta(commit):
    k = _mma_2cta_kernel(commit=commit)
    ptx = k.asm["ptx"]
    mmas = re.findall(r"tcgen05\.mma\.cta_group::(\d)\.kind::f16", ptx)
    assert mmas and set(mmas) == {"2"}  # K=32: two K steps of 16
    assert "cta_group::1" not in ptx  # one CTA group per kernel: alloc, relinquish, dealloc too
    assert re.search(r"tcgen05\.alloc\.cta_group::2\.sync\.aligned\.shared::cta\.b32 \[%r\d+\], 128;", ptx)
    assert re.search(r"tcgen05\.dealloc\.cta_group::2", ptx)
    # the instruction descriptor's M and N fields doubled: the one-CTA MMA of the leader's operands
    # (M=128, N/2=64) becomes the pair's 256 x 128
    assert ptx.count("and.b32 %utlx_idesc, ") == len(mmas)
    # the completion arrives on the barrier at that offset in both CTAs of the pair
    commits = re.findall(r"tcgen05\.commit\.cta_group::2\.mbarrier::arrive::one\.shared::cluster"
                         r"\.multicast::cluster\.b64 \[%r\d+\], %utlx_pair;", ptx)
    # (force_async: the MMA's own commit is on a barrier whose arrival is predicated off, then the tcgen05_commit)
    assert len(commits) == (2 if commit else 1)
    assert "and.b32 %utlx_rank, %utlx_rank, -2" in ptx and "shl.b32 %utlx_rank, %utlx_three, %utlx_rank" in ptx
    # only the even CTA of the pair issues it: %cluster_ctarank & 1 == 0 is in its predicate
    assert re.search(r"and\.b32\s+%r\d+, %r\d+, 1;", ptx) and "%cluster_ctarank" in ptx
    assert ".reqnctapercluster 2, 1, 1" in ptx
    assert "cubin" in k.asm  # ptxas accepted the rewritten PTX for sm_100a


def test_the_idesc_fields_double_without_overflowing():
    # kind::f16, M=128 (8 << 24), N=64 (8 << 17): the pair's M=256, N=128
    old = 0x8110010
    new = (old & two_cta.IDESC_NM_MASK) + old
    assert (new >> 24) & 0x1F == 16 and (new >> 17) & 0x3F == 16
    assert new & ~two_cta.IDESC_NM_MASK == old & ~two_cta.IDESC_NM_MASK  # types, transposes, sparsity kept


def test_the_pair_rewrite_does_not_depend_on_where_llvm_puts_the_mma_block():
    """Triton lowers an MMA into blocks of its own that LLVM may lay out after the code that follows it (it did
    in Meta's blackwell_gemm_2cta): the 2-CTA mode marker encloses nothing, the rewrite reads the whole PTX."""
    ptx = "\n".join([
        f"\t{cluster_ptx.marker('pair_mode', 7, operand=False).replace('$0', '%r1')}",
        f"\t{cluster_ptx.marker('end', 7).replace('$0', '%r2')}",
        "\t@%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 128;",
        "\tbra.uni \t$L__BB0_3;",
        "$L__BB0_2:",
        "\t@%p4 tcgen05.mma.cta_group::1.kind::f16 [ %r9 + 0 ], %rd2, %rd3, %r6, %p5;",
        "\t@%p4 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r7];",
        "\tbra.uni \t$L__BB0_3;",
        "$L__BB0_3:",
        "\t@%p6 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r8];",
    ])
    out = cluster_ptx.rewrite(ptx)
    assert "tcgen05.mma.cta_group::2.kind::f16 [ %r9 + 0 ], %rd2, %rd3, %utlx_idesc, %p5;" in out
    assert "multicast::cluster.b64 [%r7], %utlx_pair" in out  # the MMA's own commit: to both CTAs
    # a plain commit elsewhere (tcgen05_commit without two_ctas) arrives locally, in the kernel's CTA group
    assert "@%p6 tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 [%r8];" in out
    assert "tcgen05.alloc.cta_group::2" in out and "cta_group::1" not in out


@needs_blackwell_tlx
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dims": None}, "two_ctas pairs the CTAs of a cluster, but this kernel is launched in clusters of 1 CTA"),
    ({"dims": (3, 1, 1)}, "in clusters of 3 CTAs (ctas_per_cga=(3, 1, 1))"),
    ({"plain_too": True}, "this kernel has two_ctas MMAs too; every tcgen05 op of a kernel uses the same CTA group"),
    ({"M": 64, "N": 128}, "two_ctas with M=64 rows per CTA"),
    ({"N": 48}, "two_ctas needs N a multiple of 32"),
])
def test_two_ctas_mmas_utlx_cannot_pair_are_refused_naming_why(kwargs, message):
    with pytest.raises(Exception) as info:
        _mma_2cta_kernel(**kwargs)
    assert message in _error(info)
    assert "async_dot" in _error(info)


@triton.jit
def _mma_2cta_sync(M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a = tlx.local_alloc((M, K), tl.float16, 1)
    b = tlx.local_alloc((K, N // 2), tl.float16, 1)
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    tlx.async_dot(a[0], b[0], acc[0], two_ctas=True)


@needs_blackwell_tlx
def test_a_synchronous_two_ctas_mma_is_refused():
    with pytest.raises(Exception) as info:
        compile_kernel(_mma_2cta_sync, {}, {"M": 128, "N": 128, "K": 32}, "cuda:100", ctas_per_cga=(2, 1, 1))
    assert "two_ctas needs mBarriers=[...]" in _error(info)


@pytest.mark.parametrize("commit", [False, True])
def test_two_ctas_on_hopper_says_it_needs_sm100(commit):
    with pytest.raises(Exception) as info:
        compile_kernel(_mma_2cta, {"c_ptr": "*fp32"}, {"M": 128, "N": 128, "K": 32, "COMMIT": commit,
                                                       "PLAIN_TOO": False}, "cuda:90", ctas_per_cga=(2, 1, 1))
    err = _error(info)
    assert "needs" in err and "sm_100" in err.replace("Blackwell (sm_100)", "sm_100"), err


# ------------------------------------------------------------------------------------- 2-CTA TMA


@triton.jit
def _tma_2cta(a_ptr, M: tl.constexpr, K: tl.constexpr):
    desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[M, K])
    a = tlx.local_alloc((M, K), tl.float16, 1)
    bar = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bar[0], M * K * 2)
    tlx.async_descriptor_load(desc, a[0], [0, 0], bar[0], two_ctas=True)
    tlx.barrier_wait(bar[0], 0)


def test_two_ctas_tma_load_completes_on_the_pair_leaders_barrier():
    ptx = compile_kernel(_tma_2cta, {"a_ptr": "*fp16"}, {"M": 128, "K": 64}, "cuda:100",
                         ctas_per_cga=(2, 1, 1)).asm["ptx"]
    assert re.search(r"mapa\.shared::cluster\.u32 %utlx_lead, %r\d+, %r\d+;", ptx)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes"
                     r"\.cta_group::2 \[%r\d+\], \[%rd\d+, \{[^}]+\}\], \[%utlx_lead\];", ptx)
    with pytest.raises(Exception) as info:
        compile_kernel(_tma_2cta, {"a_ptr": "*fp16"}, {"M": 128, "K": 64}, "cuda:90", ctas_per_cga=(2, 1, 1))
    assert "two_ctas (cta_group::2) TMA needs sm_100" in _error(info)


# ------------------------------------------------------------------------------------- remote shared memory


@triton.jit
def _cluster_sum(x_ptr, y_ptr, M: tl.constexpr, C: tl.constexpr, ASYNC: tl.constexpr):
    """Meta's multi-CTA layer norm's reduction: each CTA publishes its partial sums to every peer."""
    rank = tlx.cluster_cta_rank()
    parts = tlx.local_alloc((M, 1), tl.float32, C)
    bars = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bars[0], M * 4 * (C - 1))
    tlx.cluster_barrier()
    v = tl.sum(tl.load(x_ptr + tl.arange(0, M)[:, None] * 64 + tl.arange(0, 64)[None, :]), axis=1, keep_dims=True)
    tlx.local_store(parts[rank], v)
    for i in tl.static_range(C):
        if rank != i:
            if ASYNC:
                tlx.async_remote_shmem_store(dst=parts[rank], src=v, remote_cta_rank=i, barrier=bars[0])
            else:
                tlx.remote_shmem_store(dst=parts[rank], src=v, remote_cta_rank=i)
    if ASYNC:
        tlx.barrier_wait(bars[0], 0)
    else:
        tlx.barrier_arrive(tlx.remote_view(bars[0], 0))
        tlx.cluster_barrier()
    total = tl.zeros((M, 1), tl.float32)
    for i in tl.static_range(C):
        total += tlx.local_load(parts[i])
    tl.store(y_ptr + tl.arange(0, M)[:, None], total)


def _cluster_sum_ptx(target: str, asynchronous: bool, M: int = 2, C: int = 2) -> str:
    return compile_kernel(_cluster_sum, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"M": M, "C": C, "ASYNC": asynchronous},
                          target, num_warps=4, ctas_per_cga=(1, C, 1)).asm["ptx"]

@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
def test_async_remote_shmem_store_is_mapa_and_st_async_completing_on_the_peers_barrier(target):
    ptx = _cluster_sum_ptx(target, True, C=4)
    stores = re.findall(r"(@%p\d+ )?st\.async\.shared::cluster\.mbarrier::complete_tx::bytes\.b32 \[%utlx_dst\], "
                        r"%r\d+, \[%r\d+\];", ptx)
    assert len(stores) == 4  # one per unrolled peer (the CTA's own rank skips its one at run time): M=2 elements
    # over 128 threads, each stored once ...
    assert all(pred for pred in stores)  # ... by the one thread that owns it (the store is predicated)
    assert len(re.findall(r"mapa\.shared::cluster\.u32", ptx)) == 8  # each peer's buffer and barrier
    assert "// utlx: address probe (its arrive removed)" in ptx
    assert not re.search(r"mbarrier\.arrive(\.release)?(\.cta)?\.shared(::cta)?\.b64 _, ", ptx)  # probes are gone
    assert "st.global" in ptx  # the kernel's own store of the totals is untouched
    assert ".reqnctapercluster 1, 4, 1" in ptx


@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
def test_remote_shmem_store_and_remote_view_arrive_are_shared_cluster_ops(target):
    ptx = _cluster_sum_ptx(target, False)
    assert re.search(r"@%p\d+ st\.shared::cluster\.b32 \[%utlx_dst\], %r\d+;", ptx)
    assert re.search(r"mapa\.shared::cluster\.u32 %utlx_bar, %r\d+, %r\d+;\n\s*@%p\d+ mbarrier\.arrive\.shared::cluster"
                     r"\.b64 _, \[%utlx_bar\];", ptx)
    assert "st.async" not in ptx


@triton.jit
def _remote_misuse(x_ptr, WHICH: tl.constexpr):
    bufs = tlx.local_alloc((2, 64), tl.float16, 2)
    bars = tlx.alloc_barriers(1) if WHICH < 2 else None
    v = tl.load(x_ptr + tl.arange(0, 2)[:, None] * 64 + tl.arange(0, 64)[None, :])
    if WHICH == 0:
        tlx.async_remote_shmem_store(dst=bufs[0], src=v, remote_cta_rank=1, barrier=bars[0])
    elif WHICH == 1:
        tlx.barrier_wait(tlx.remote_view(bars[0], 1), 0)
    else:
        tlx.remote_shmem_store(dst=bufs[0], src=v, remote_cta_rank=1)


@pytest.mark.parametrize(("which", "message"), [
    (0, "async_remote_shmem_store: st.async stores 32- or 64-bit elements; src is fp16"),
    (1, "barrier_wait: a remote_view of a barrier can only be arrived on"),
])
def test_remote_ops_refuse_what_they_cannot_compile(which, message):
    with pytest.raises(Exception) as info:
        compile_kernel(_remote_misuse, {"x_ptr": "*fp16"}, {"WHICH": which}, "cuda:100", ctas_per_cga=(2, 1, 1))
    assert message in _error(info)


def test_remote_ops_need_a_cluster_target():
    with pytest.raises(Exception) as info:
        compile_kernel(_remote_misuse, {"x_ptr": "*fp16"}, {"WHICH": 2}, "hip:gfx942")
    assert "remote_shmem_store: needs distributed shared memory (a thread-block cluster, sm_90 or newer)" in \
        _error(info)


# ------------------------------------------------------------------------------------- init before peers


def _sync_after_inits(ptx: str) -> bool:
    lines = [line.strip() for line in ptx.split("\n")]
    inits = [i for i, line in enumerate(lines) if re.match(r"(@%p\d+ )?mbarrier\.init\.", line)]
    return bool(inits) and lines[inits[-1] + 1].startswith("fence.mbarrier_init.release.cluster;") and \
        lines[inits[-1] + 2] == "barrier.cluster.arrive.release.aligned;" and \
        lines[inits[-1] + 3] == "barrier.cluster.wait.acquire.aligned;"


@needs_blackwell_tlx
def test_cluster_kernels_whose_ctas_use_each_others_barriers_sync_after_the_inits():
    """As Meta's compiler does: a peer must not arrive on a barrier its owner has not initialised yet."""
    assert _sync_after_inits(_mma_2cta_kernel().asm["ptx"])
    assert _sync_after_inits(_cluster_sum_ptx("cuda:90", True))
    alone = compile_kernel(_cluster_sum, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"M": 2, "C": 2, "ASYNC": True},
                           "cuda:90").asm["ptx"]  # no ctas_per_cga: a one-CTA cluster has no peers to wait for
    assert "fence.mbarrier_init" not in alone and "mapa.shared::cluster" in alone


def test_no_sync_is_added_to_kernels_without_peer_ops():
    ptx = compile_kernel(_rank_store, {"out_ptr": "*i32"}, {}, "cuda:100", ctas_per_cga=(2, 1, 1)).asm["ptx"]
    assert "barrier.cluster" not in ptx and "fence.mbarrier_init" not in ptx
