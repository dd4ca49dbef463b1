"""The utlx Hopper GEMM templates for Inductor's mm / addmm / bmm (``TritonTemplate`` sources, TLX).

Why templates of their own: stock Inductor's Hopper TMA template (``mm_persistent_tma``) is a ``tl.dot`` loop that
Triton pipelines by itself; utlx's persistent GEMM (:mod:`utlx.kernels.nvidia.hopper_tma_persistent`) runs an
explicit ring instead, and these templates *are* that kernel in the form Inductor renders:

* one program per SM walks output tiles ``pid, pid + NUM_SMS, ...`` (grouped order, ``GROUP_M`` row tiles);
* A and B come in by TMA (device-side descriptors made in the kernel from Inductor's pointers and strides:
  Inductor installs Triton's scratch allocator before each launch) into a ``NUM_STAGES``-slot shared-memory
  ring tracked by mbarriers, and asynchronous wgmma keeps one dot in flight
  (:func:`utlx.kernels.nvidia.hopper_tma_persistent.mainloop`, the shipped kernel's main loop, called as is);
* a column-major operand (``x.T``, e.g. a ``linear`` weight) is read through a descriptor over its transpose and a
  transposed shared-memory view (``A_COL`` / ``B_COL``), as the shipped ``_colmajor`` kernel does;
* the epilogue is Inductor's ``{{store_output}}`` instead of the shipped kernel's TMA store, so Inductor's own
  epilogue (addmm's ``beta * bias + alpha * acc``) and every pointwise node it fuses (GELU, SiLU * up, casts) run
  on the fp32 accumulator in registers before the single store.

``bmm``: the batch is the grid's second axis; each program makes its descriptors over its batch's matrices once.
:data:`WS_MM_SOURCE` is the warp-specialized variant for mm / addmm (:mod:`utlx.kernels.nvidia.hopper_ws_persistent`'s
cooperative design: a TMA producer task and two wgmma consumer warpgroups, see ``_WS_BODY``).
The ``{{...}}`` placeholders are Inductor's template hooks (``def_kernel``, ``size``, ``stride``, ``store_output``).
"""

from __future__ import annotations

#: What the generated kernel module imports (``import utlx.language`` switches the TLX plugin on in whatever process
#: Inductor compiles the kernel in; the main loop and tile order are the shipped kernel's ``@triton.jit`` helpers).
_HEADER = r'''
import utlx.language as tlx
from utlx.kernels.nvidia.hopper_tma_persistent import alloc_a, alloc_b, mainloop
from utlx.kernels.tiles import grouped_tile, operand_descriptor
'''

#: The descriptors, ring and persistent tile loop; ``{base_a}`` / ``{base_b}`` are the operands' base pointers
#: (offset by the batch for bmm), ``{store}`` the ``store_output`` call.
_BODY = r'''
    a_desc = operand_descriptor({base_a}, M, K, stride_am, stride_ak, BLOCK_M, BLOCK_K, A_COL)
    b_desc = operand_descriptor({base_b}, K, N, stride_bk, stride_bn, BLOCK_K, BLOCK_N, B_COL)
    DTYPE = A.dtype.element_ty
    buffers_A = alloc_a(DTYPE, BLOCK_M, BLOCK_K, NUM_STAGES, A_COL)
    buffers_B = alloc_b(DTYPE, BLOCK_N, BLOCK_K, NUM_STAGES, B_COL)
    ready = tlx.alloc_barriers(NUM_STAGES)
    STAGE_BYTES: tl.constexpr = (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * tlx.size_of(DTYPE)
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    it = 0  # k-steps this program already ran through the ring (slot and barrier phase follow from it)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, num_stages=0):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = mainloop(a_desc, b_desc, buffers_A, buffers_B, ready, it, off_m, off_n, 0, k_tiles, BLOCK_M, BLOCK_N,
                       BLOCK_K, NUM_STAGES, STAGE_BYTES, A_COL, B_COL)
        it += k_tiles
        idx_m = (off_m + tl.arange(0, BLOCK_M))[:, None].to(INDEX_DTYPE)
        idx_n = (off_n + tl.arange(0, BLOCK_N))[None, :].to(INDEX_DTYPE)
        mask = (idx_m < M) & (idx_n < N)
        {store}
'''

def _prologue(batched: bool) -> str:
    """The kernel signature and the sizes and strides of A [(Q,) M, K] and B [(Q,) K, N] as Inductor fills them
    in (bmm: a leading batch dim, its index the grid's second axis), then the output store hook."""
    lead = 1 if batched else 0
    a_dims, b_dims = ("q", "m", "k")[1 - lead:], ("q", "k", "n")[1 - lead:]
    lines = ['{{def_kernel("A", "B")}}', f'    M = {{{{size("A", {lead})}}}}', f'    N = {{{{size("B", {lead + 1})}}}}',
             f'    K = {{{{size("A", {lead + 1})}}}}']
    lines += [f'    stride_a{d} = {{{{stride("A", {i})}}}}' for i, d in enumerate(a_dims)]
    lines += [f'    stride_b{d} = {{{{stride("B", {i})}}}}' for i, d in enumerate(b_dims)]
    if batched:
        lines.append("    idx_q = tl.program_id(1).to(INDEX_DTYPE)")
    return "\n" + "\n".join(lines) + "\n"


def _store(batched: bool) -> str:
    indices = '("idx_q", "idx_m", "idx_n")' if batched else '("idx_m", "idx_n")'
    return f'{{{{store_output({indices}, "acc", "mask", indent_width=8, val_shape=("BLOCK_M", "BLOCK_N"))}}}}'


#: The mm / addmm template (addmm's bias is Inductor's prefix input, read by its epilogue in ``store_output``).
MM_SOURCE = _HEADER + _prologue(False) + _BODY.format(base_a="A", base_b="B", store=_store(False))
#: The bmm template: the batch is ``tl.program_id(1)``.
BMM_SOURCE = _HEADER + _prologue(True) + _BODY.format(base_a="A + idx_q * stride_aq", base_b="B + idx_q * stride_bq",
                                                    store=_store(True))

_WS_HEADER = r'''
import utlx.language as tlx
from utlx.kernels import ws_ring
from utlx.kernels.nvidia.hopper_tma_persistent import alloc_a, alloc_b
'''

#: Warp-specialized (:mod:`utlx.kernels.nvidia.hopper_ws_persistent`'s cooperative design in Inductor's form): the
#: default task (the kernel's 4 warps) is the TMA producer (:func:`utlx.kernels.ws_ring.produce`: A in two
#: ``BLOCK_M / 2``-row halves, B whole, one ``full`` barrier per slot), and two consumer warpgroups
#: (``async_task(replicate=2)``, ``setmaxnreg`` ``CONSUMER_REGS``) each own one half of every tile: wgmma with one in
#: flight, the slot released (``empty``, two arrivals) when the previous wgmma has read it, then ``store_output`` on
#: their half. One replicated consumer body is what lets Inductor's ``store_output`` be rendered once.
_WS_BODY = r'''
    HALF_M: tl.constexpr = BLOCK_M // 2
    a_desc = operand_descriptor(A, M, K, stride_am, stride_ak, HALF_M, BLOCK_K, A_COL)
    b_desc = operand_descriptor(B, K, N, stride_bk, stride_bn, BLOCK_K, BLOCK_N, B_COL)
    DTYPE = A.dtype.element_ty
    bufs_A0 = alloc_a(DTYPE, HALF_M, BLOCK_K, NUM_STAGES, A_COL)
    bufs_A1 = alloc_a(DTYPE, HALF_M, BLOCK_K, NUM_STAGES, A_COL)
    bufs_B = alloc_b(DTYPE, BLOCK_N, BLOCK_K, NUM_STAGES, B_COL)
    full = tlx.alloc_barriers(NUM_STAGES)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            ws_ring.produce(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full, empty, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K,
                            GROUP_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, True)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            if cid == 0:
                bufs_A = bufs_A0
            else:
                bufs_A = bufs_A1
            num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
            k_tiles = tl.cdiv(K, BLOCK_K)
            it = 0
            for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, num_stages=0):
                pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
                acc, it = ws_ring.whole_tile(bufs_A, bufs_B, full, empty, it, k_tiles, HALF_M, BLOCK_N, NUM_STAGES,
                                             A_COL, B_COL)
                idx_m = (pid_m * BLOCK_M + cid * HALF_M + tl.arange(0, HALF_M))[:, None].to(INDEX_DTYPE)
                idx_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N))[None, :].to(INDEX_DTYPE)
                mask = (idx_m < M) & (idx_n < N)
                {{store_output(("idx_m", "idx_n"), "acc", "mask", indent_width=16,
                              val_shape=("HALF_M", "BLOCK_N"))}}
'''

#: The warp-specialized mm / addmm template.
WS_MM_SOURCE = (_WS_HEADER + "from utlx.kernels.tiles import grouped_tile, operand_descriptor\n" + _prologue(False)
                + _WS_BODY)
