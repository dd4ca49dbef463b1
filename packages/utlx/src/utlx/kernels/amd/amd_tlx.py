"""AMD TLX kernels in the style of Meta's gfx9 tutorials, one per family of AMD ops (issue 17).

They exist to show, and to test, that every AMD op and layout of the TLX surface compiles for gfx942 and
gfx950 to the instructions it promises and computes the right values under ``TRITON_INTERPRET=1``. They are
compile-verified and interpreter-checked only: no AMD GPU has run them.

* :func:`buffer_gemm_kernel` (``v1_buffer_load`` style): ``assume_uniform`` tile bases, masked
  ``buffer_load`` of A and B, ``tl.dot`` into ``zeros`` in the MFMA layout, masked ``buffer_store``.
* :func:`direct_lds_gemm_kernel` (``v4``/``v8`` style): a ring of LDS buffers filled by direct-to-LDS copies,
  A with ``buffer_load_to_local`` into a padded layout, column-major B with ``async_load`` into a
  ``swizzled_layout`` buffer read through ``local_trans``, ``local_load(relaxed=True)``, two
  ``warp_pipeline_stage`` s and an ``amd_sched_barrier``.
* :func:`layouts_kernel`: register layouts (``tlx.layout``, ``require_layout``/``release_layout``) and shared
  layouts (``padded_shared_layout_encoding.with_bases``, ``shared_linear_layout_encoding``,
  ``local_reinterpret(layout=)``, ``local_reshape``), ``extract_slice``, ``rematerialized_range``,
  ``dump_layout`` and ``assert_same_layout``; every output is an exact copy of (part of) the input.
* :func:`mfma_hints_kernel`: ``amd_mfma_layout``/``dot_operand_layout`` operands, ``amd_scheduled_mfma``,
  ``amd_mfma_commit`` and the register-class hints on one tile.
* :func:`row_table_kernel`: ``assume_uniform`` on base pointers read from memory (a grouped GEMM's case), then
  buffer ops on them.
* :func:`atomic_rowsum_kernel`: ``buffer_atomic_add`` of per-tile row sums.
* :func:`gather_scatter_kernel` (Triton 3.7+): ``local_scatter`` rows into LDS by an index, ``local_gather``
  them back by another.
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx


@triton.jit
def buffer_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_WARPS: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # Tile bases in scalar registers: every lane addresses the tile through one buffer resource.
    a_base = tlx.assume_uniform(a_ptr + pid_m * BLOCK_M * stride_am)
    b_base = tlx.assume_uniform(b_ptr + pid_n * BLOCK_N)
    a_offs = rm[:, None] * stride_am + rk[None, :]
    b_offs = rk[:, None] * stride_bk + rn[None, :]
    rows = (pid_m * BLOCK_M + rm)[:, None] < M
    cols = (pid_n * BLOCK_N + rn)[None, :] < N
    acc = tlx.zeros((BLOCK_M, BLOCK_N), tl.float32,
                    layout=tlx.amd_mfma_layout(3, [16, 16, 16], True, [NUM_WARPS // 2, 2]))
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tlx.buffer_load(a_base, a_offs, mask=rows & (rk[None, :] < K - k * BLOCK_K), other=0.0)
        b = tlx.buffer_load(b_base, b_offs, mask=(rk[:, None] < K - k * BLOCK_K) & cols, other=0.0)
        acc = tl.dot(a, b, acc)
        a_offs += BLOCK_K
        b_offs += BLOCK_K * stride_bk
    c_offs = (pid_m * BLOCK_M + rm)[:, None] * stride_cm + (pid_n * BLOCK_N + rn)[None, :]
    tlx.buffer_store(acc.to(tlx.dtype_of(c_ptr)), c_ptr, c_offs, mask=rows & cols)


@triton.jit
def direct_lds_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           NUM_BUFFERS: tl.constexpr):
    """C = A @ B with A row-major (M x K) and B column-major (element (k, n) at ``b_ptr + n * stride_bn + k``)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    dtype = tlx.dtype_of(a_ptr)
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # A padded by 16 elements every 512 (a direct-to-LDS copy writes 64 lanes x 16 bytes = 512 fp16 contiguous,
    # so padding may only come between such runs); B tiles K-contiguous.
    bufs_a = tlx.local_alloc((BLOCK_M, BLOCK_K), dtype, NUM_BUFFERS,
                             layout=tlx.padded_shared_layout_encoding.with_identity_for([[512, 16]],
                                                                                        [BLOCK_M, BLOCK_K]))
    bufs_b = tlx.local_alloc((BLOCK_N, BLOCK_K), dtype, NUM_BUFFERS,
                             layout=tlx.layout(tlx.swizzled_layout(0, 0, 0, order=[1, 0])))
    a_base = a_ptr + pid_m * BLOCK_M * stride_am
    b_ptrs = b_ptr + (pid_n * BLOCK_N + rn)[:, None] * stride_bn + rk[None, :]
    a_offs = rm[:, None] * stride_am + rk[None, :]
    rows = (pid_m * BLOCK_M + rm)[:, None] < M
    cols = (pid_n * BLOCK_N + rn)[:, None] < N
    k_iters = tl.cdiv(K, BLOCK_K)
    for i in tl.static_range(NUM_BUFFERS - 1):
        tlx.buffer_load_to_local(bufs_a[i], a_base, a_offs + i * BLOCK_K, mask=rows & (rk[None, :] < K - i * BLOCK_K))
        tlx.async_load(b_ptrs + i * BLOCK_K, bufs_b[i], mask=cols & (rk[None, :] < K - i * BLOCK_K))
        tlx.async_load_commit_group()
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k in range(0, k_iters):
        tlx.async_load_wait_group(NUM_BUFFERS - 2)
        with tlx.warp_pipeline_stage("lds_read", priority=1):
            a = tlx.local_load(bufs_a[k % NUM_BUFFERS], relaxed=True)
            b = tlx.local_load(tlx.local_trans(bufs_b[k % NUM_BUFFERS]), relaxed=True)
        with tlx.warp_pipeline_stage("mfma_and_copy", priority=0):
            nxt = k + NUM_BUFFERS - 1
            tlx.buffer_load_to_local(bufs_a[nxt % NUM_BUFFERS], a_base, a_offs + nxt * BLOCK_K,
                                     mask=rows & (rk[None, :] < K - nxt * BLOCK_K))
            tlx.async_load(b_ptrs + nxt * BLOCK_K, bufs_b[nxt % NUM_BUFFERS],
                           mask=cols & (rk[None, :] < K - nxt * BLOCK_K))
            tlx.async_load_commit_group()
            acc = tl.dot(a, b, acc)
        tlx.amd_sched_barrier(0)
    tlx.async_load_wait_group(0)
    c_ptrs = c_ptr + (pid_m * BLOCK_M + rm)[:, None] * stride_cm + (pid_n * BLOCK_N + rn)[None, :]
    tl.store(c_ptrs, acc.to(tlx.dtype_of(c_ptr)), mask=rows & ((pid_n * BLOCK_N + rn)[None, :] < N))


#: Register layout of a 32 x 64 tile on 4 warps of 64 lanes: 8 consecutive elements per lane along a row,
#: lanes 8 x 8 (columns, then rows), warps down the rows. Flat offsets are row-major (m * 64 + n).
TILE_LAYOUT = tlx.layout(shape=((8, 8, 4), (8,)), stride=((8, 64, 512), (1,)))
#: The same thread/value split with the warps swizzled across rows and columns (#ttg.generic_linear): a layout
#: stock Triton cannot build, so utlx leaves it to the compiler (with a performance warning).
SWIZZLED_WARPS = tlx.layout(shape=((8, 8, 4), (8,)), stride=((8, 64, 520), (1,)))
#: Offset bases of a 32 x 64 buffer with rows 1 and 2 swapped in every 4 (a permuted padded layout).
PERMUTED_ROWS = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [2, 0], [1, 0], [4, 0], [8, 0], [16, 0]]
#: A 32 x 64 shared linear layout whose row bits also flip column bits (an XOR swizzle).
XOR_SWIZZLE = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [1, 8], [2, 16], [4, 32], [8, 0], [16, 0]]


@triton.jit
def layouts_kernel(x_ptr, y_ptr, bits_ptr, t_ptr, q_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   REGISTER: tl.constexpr, SWIZZLED: tl.constexpr):
    r = tlx.rematerialized_range(0, BLOCK_M, 0)
    c = tl.arange(0, BLOCK_N)
    offs = r[:, None] * BLOCK_N + c[None, :]
    x = tlx.require_layout(tl.load(x_ptr + offs), REGISTER)
    padded = tlx.local_alloc((BLOCK_M, BLOCK_N), tl.float16, 1, layout=tlx.padded_shared_layout_encoding.with_bases(
        [[BLOCK_N, 4]], [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [2, 0], [1, 0], [4, 0], [8, 0], [16, 0]],
        [BLOCK_M, BLOCK_N]))
    tlx.local_store(padded[0], x)
    y = tlx.local_load(padded[0], layout=REGISTER)
    tlx.assert_same_layout(y, REGISTER)
    tlx.dump_layout(y)
    linear = tlx.local_alloc((BLOCK_M, BLOCK_N), tl.float16, 1, layout=tlx.shared_linear_layout_encoding(
        [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [1, 8], [2, 16], [4, 32], [8, 0], [16, 0]]))
    tlx.local_store(linear[0], tlx.release_layout(y))
    z = tlx.local_load(linear[0], layout=SWIZZLED)
    tl.store(y_ptr + offs, z)
    plain = tlx.local_alloc((BLOCK_M, BLOCK_N), tl.float16, 1)
    tlx.local_store(plain[0], z)
    flat: tl.constexpr = tlx.swizzled_shared_layout_encoding(1, 1, 1, [1, 0], [1, 1], [1, 1], [1, 1], [1, 0])
    bits = tlx.local_load(tlx.local_reinterpret(plain[0], tl.int16, [BLOCK_M, BLOCK_N], layout=flat))
    tl.store(bits_ptr + offs, bits)
    t = tlx.local_load(tlx.local_reshape(plain[0], [BLOCK_N, BLOCK_M]))
    tl.store(t_ptr + tl.arange(0, BLOCK_N)[:, None] * BLOCK_M + tl.arange(0, BLOCK_M)[None, :], t)
    q = tlx.extract_slice(z, [BLOCK_M // 2, BLOCK_N // 2], [BLOCK_M // 2, BLOCK_N // 2])
    tl.store(q_ptr + tl.arange(0, BLOCK_M // 2)[:, None] * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)[None, :], q)


@triton.jit
def mfma_hints_kernel(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr, NUM_WARPS: tl.constexpr):
    """One BLOCK x BLOCK tile: C = A @ B (transient chain), D = A @ B + C (persistent chain)."""
    r = tl.arange(0, BLOCK)
    offs = r[:, None] * BLOCK + r[None, :]
    mfma: tl.constexpr = tlx.amd_mfma_layout(3, [16, 16, 16], True, [NUM_WARPS // 2, 2])
    a = tlx.require_layout(tl.load(a_ptr + offs), tlx.dot_operand_layout(0, mfma, 8))
    b = tlx.require_layout(tl.load(b_ptr + offs), tlx.dot_operand_layout(1, mfma, 8))
    a = tlx.amd_register_handoff(a, "vgpr")
    c = tlx.amd_scheduled_mfma(a, b, tlx.zeros((BLOCK, BLOCK), tl.float32, layout=mfma), "transient",
                               initialize=True)
    c, b = tlx.amd_mfma_commit(c, preserve=b)
    acc = tlx.amd_register_resident(c, "agpr", 4)
    d = tlx.amd_scheduled_mfma(a, b, acc, "persistent", resident_operand=1, accumulator_register_class="agpr")
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


@triton.jit
def row_table_kernel(table_ptr, out_ptr, N, BLOCK: tl.constexpr, UNIFORM: tl.constexpr):
    """out[r, :N] = 2 * (row r, at the address table[r]): each program's source base is read from memory."""
    row = tl.program_id(0)
    src = tl.load(table_ptr + row).to(tl.pointer_type(tl.float32))
    if UNIFORM:
        src = tlx.assume_uniform(src)
    offs = tl.arange(0, BLOCK)
    x = tlx.buffer_load(src, offs, mask=offs < N, other=0.0)
    tlx.buffer_store(x * 2, out_ptr, row * N + offs, mask=offs < N)


@triton.jit
def atomic_rowsum_kernel(x_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[m] += sum of row m of this program's column tile (x is M x N, row-major)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rm[:, None] * stride_m + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    tlx.buffer_atomic_add(out_ptr, rm, tl.sum(x.to(tl.float32), axis=1), mask=rm < M, sem="relaxed")


@triton.jit
def gather_scatter_kernel(x_ptr, perm_ptr, idx_ptr, y_ptr, g_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y[perm[m, n], n] = x[m, n] through LDS; g[m, n] = y[idx[m, n], n]."""
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    buf = tlx.local_alloc((BLOCK_M, BLOCK_N), tl.float32, 1)
    tlx.local_scatter(buf[0], tl.load(x_ptr + offs), tl.load(perm_ptr + offs), 0)
    tl.store(y_ptr + offs, tlx.local_load(buf[0]))
    tl.store(g_ptr + offs, tlx.local_gather(buf[0], tl.load(idx_ptr + offs), 0))
