"""The utlx FlexAttention forward template for Hopper (Inductor ``TritonTemplate`` source, TLX).

Why a template of its own: stock Inductor's flex template is one warpgroup-agnostic ``tl.dot`` loop; on an H200
it reaches about 0.6x of cuDNN's SDPA (issue 31). This one follows :mod:`utlx.kernels.nvidia.hopper_flash_attention`'s
design in the form Inductor can render:

* one CTA per (128-row Q tile, batch, query head); a **producer** (the default task, 4 warps) streams Q (64 rows
  per consumer) and then the K and V blocks the BlockMask lists (partial blocks first, then full blocks) through a
  ring of ``NUM_KV`` shared-memory slots with TMA (device-side descriptors: Inductor installs Triton's scratch
  allocator before each launch); K and V have separate barriers so S = Q K^T starts before V has landed;
* two **consumer** warpgroups (``async_task(replicate=2)``, ``setmaxnreg`` ``CONSUMER_REGS``) each own 64 rows:
  per KV block S = Q K^T on wgmma, then Inductor's inlined ``score_mod`` (``{{modification}}`` subgraph 0) and,
  for partial blocks only, ``mask_mod`` (subgraph 1), online softmax in base 2, O += P V on wgmma. Two consumer
  loops, one template choice each (``OVERLAP``): the plain one waits for each GEMM; the FA3 one issues S_j and
  then P_{j-1} V_{j-1} and runs the softmax of S_j while the P V GEMM is in flight (as
  :mod:`utlx.kernels.nvidia.hopper_flash_attention`'s ``_step``);
* the mods run on the two 64-column halves of S (a register-only split of the accumulator; P stays in halves and
  O += P V is two K=64 GEMMs, ``utlx_flex_pv``): a gather a mod makes
  with the KV index (a document mask's ``doc[kv]``) then loads 64 values, which Triton keeps in the accumulator's
  layout; at 128 it gave the load a blocked layout of its own and the softmax followed it there (S through
  shared memory every block, spills: the 0.10x document-mask cell of issue 31). A partial block's mask_mod is
  evaluated before the wait for its S GEMM, so its gathers are in flight with the GEMM;
* fully masked blocks are never loaded (they are not in the BlockMask's lists); rows past ``Q_LEN`` are zero
  filled by TMA and not stored, columns past ``KV_LEN`` are masked (``IS_DIVISIBLE`` False);
* GQA through ``GQA_SHARED_HEADS`` (query head h reads KV head h // GQA_SHARED_HEADS), a batch-broadcast KV
  (``ZKV == 1``) through ``off_z % ZKV``;
* the epilogue goes through ``{{store_output}}`` (so Inductor can fuse pointwise epilogues) and writes the
  base-2 logsumexp (and the row max) exactly as the stock template does, so the stock backward template
  computes the gradients from them.

The ``{{...}}`` placeholders are Inductor's template hooks (``def_kernel``, ``stride``, ``size``,
``modification``, ``store_output``, ``gen_argdefs``, ``gen_defines``).
"""

from __future__ import annotations

#: The Jinja source rendered by Inductor's ``TritonTemplateKernel`` (``import utlx.language`` first: it makes the
#: kernel module load utlx, which switches the TLX plugin on in whatever process Inductor compiles it in).
SOURCE = r'''
import utlx.language as tlx

{{def_kernel("Q", "K", "V", "LSE", "MAX", "KV_NUM_BLKS", "KV_IDX", "FULL_KV_NUM_BLKS", "FULL_KV_IDX")}}
    tl.static_assert(SPARSE_Q_BLOCK_SIZE % TILE_M == 0, "utlx flex: SPARSE_Q_BLOCK_SIZE a multiple of 128")
    tl.static_assert(SPARSE_KV_BLOCK_SIZE % BLOCK_N == 0, "utlx flex: SPARSE_KV_BLOCK_SIZE a multiple of BLOCK_N")
    stride_qz, stride_qh, stride_qm, stride_qk = {{stride("Q")}}
    stride_kz, stride_kh, stride_kn, stride_kk = {{stride("K")}}
    stride_vz, stride_vh, stride_vn, stride_vk = {{stride("V")}}
    HQ = {{size("Q", 1)}}
    Q_LEN = {{size("Q", 2)}}
    ZKV = {{size("K", 0)}}
    KV_LEN = {{size("K", 2)}}
    SPARSE_Z = {{size("KV_NUM_BLKS", 0)}}
    SPARSE_HQ = {{size("KV_NUM_BLKS", 1)}}
    stride_kv_num_blks_h = {{stride("KV_NUM_BLKS", 1)}}
    stride_kv_idx_h = {{stride("KV_IDX", 1)}}
    stride_kv_idx_m = {{stride("KV_IDX", 2)}}

    q_start = tl.program_id(0).to(INDEX_DTYPE)
    off_zq = tl.program_id(1).to(INDEX_DTYPE)
    off_hq = tl.program_id(2).to(INDEX_DTYPE)
    off_zkv = off_zq % ZKV
    off_hkv = off_hq // GQA_SHARED_HEADS

    desc_q = tl.make_tensor_descriptor(base=Q + off_zq * stride_qz + off_hq * stride_qh, shape=[Q_LEN, QK_HEAD_DIM],
                                       strides=[stride_qm, 1], block_shape=[BLOCK_M, QK_HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(base=K + off_zkv * stride_kz + off_hkv * stride_kh,
                                       shape=[KV_LEN, QK_HEAD_DIM], strides=[stride_kn, 1],
                                       block_shape=[BLOCK_N, QK_HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(base=V + off_zkv * stride_vz + off_hkv * stride_vh,
                                       shape=[KV_LEN, V_HEAD_DIM], strides=[stride_vn, 1],
                                       block_shape=[BLOCK_N, V_HEAD_DIM])

    SPARSE_Q_MULTIPLE: tl.constexpr = SPARSE_Q_BLOCK_SIZE // TILE_M
    SPARSE_KV_MULTIPLE: tl.constexpr = SPARSE_KV_BLOCK_SIZE // BLOCK_N
    sparse_hz = (off_zq % SPARSE_Z) * SPARSE_HQ + off_hq % SPARSE_HQ
    num_off = sparse_hz * stride_kv_num_blks_h + q_start // SPARSE_Q_MULTIPLE
    idx_off = sparse_hz * stride_kv_idx_h + (q_start // SPARSE_Q_MULTIPLE) * stride_kv_idx_m
    n_kv_cap = tl.maximum(tl.cdiv(KV_LEN, BLOCK_N), 1)
    n_part = tl.minimum(tl.load(KV_NUM_BLKS + num_off) * SPARSE_KV_MULTIPLE, n_kv_cap)
    if HAS_FULL_BLOCKS:
        n_full = tl.minimum(tl.load(FULL_KV_NUM_BLKS + num_off) * SPARSE_KV_MULTIPLE, n_kv_cap)
    else:
        n_full = 0

    DTYPE = Q.dtype.element_ty
    q_tiles = tlx.local_alloc((BLOCK_M, QK_HEAD_DIM), DTYPE, 2)
    k_tiles = tlx.local_alloc((BLOCK_N, QK_HEAD_DIM), DTYPE, NUM_KV)
    v_tiles = tlx.local_alloc((BLOCK_N, V_HEAD_DIM), DTYPE, NUM_KV)
    q_fulls = tlx.alloc_barriers(2, 1)
    k_fulls = tlx.alloc_barriers(NUM_KV, 1)
    k_empties = tlx.alloc_barriers(NUM_KV, 2)
    v_fulls = tlx.alloc_barriers(NUM_KV, 1)
    v_empties = tlx.alloc_barriers(NUM_KV, 2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            Q_BYTES: tl.constexpr = BLOCK_M * QK_HEAD_DIM * tlx.size_of(DTYPE)
            K_BYTES: tl.constexpr = BLOCK_N * QK_HEAD_DIM * tlx.size_of(DTYPE)
            V_BYTES: tl.constexpr = BLOCK_N * V_HEAD_DIM * tlx.size_of(DTYPE)
            q_row = (q_start * TILE_M).to(tl.int32)
            for c in tl.static_range(2):
                tlx.barrier_expect_bytes(q_fulls[c], Q_BYTES)
                tlx.async_descriptor_load(desc_q, q_tiles[c], [q_row + c * BLOCK_M, 0], q_fulls[c])
            s = 0
            ph = 1
            for j in tl.range(0, n_part + n_full, num_stages=0):
                start_n = utlx_flex_block_start(j, n_part, KV_IDX + idx_off, FULL_KV_IDX + idx_off,
                                                SPARSE_KV_BLOCK_SIZE, SPARSE_KV_MULTIPLE, BLOCK_N,
                                                HAS_FULL_BLOCKS)
                tlx.barrier_wait(k_empties[s], ph)
                tlx.barrier_expect_bytes(k_fulls[s], K_BYTES)
                tlx.async_descriptor_load(desc_k, k_tiles[s], [start_n, 0], k_fulls[s])
                tlx.barrier_wait(v_empties[s], ph)
                tlx.barrier_expect_bytes(v_fulls[s], V_BYTES)
                tlx.async_descriptor_load(desc_v, v_tiles[s], [start_n, 0], v_fulls[s])
                s1 = s + 1
                wrap = (s1 == NUM_KV).to(tl.int32)
                s = s1 - wrap * NUM_KV
                ph = ph ^ wrap
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            offs_m = q_start * TILE_M + cid * BLOCK_M + tl.arange(0, BLOCK_M)
            m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
            l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
            acc = tl.zeros([BLOCK_M, V_HEAD_DIM], dtype=tl.float32)
            tlx.barrier_wait(q_fulls[cid], 0)
            q_tile = q_tiles[cid]
            n_blocks = n_part + n_full
            if OVERLAP:
                # FA3 intra-warpgroup overlap: S_j is issued before P_{j-1} V_{j-1}, and the softmax of S_j runs
                # while the tensor cores do P_{j-1} V_{j-1}. Block 0 is peeled (it has no P V before it).
                if n_blocks > 0:
                    start_n, qk = utlx_flex_issue_s(q_tile, k_tiles[0], k_fulls[0], 0, 0, n_part, KV_IDX + idx_off,
                                                    FULL_KV_IDX + idx_off, SPARSE_KV_BLOCK_SIZE, SPARSE_KV_MULTIPLE,
                                                    BLOCK_N, HAS_FULL_BLOCKS)
                    p_lo, p_hi, m_i, l_i, alpha = utlx_flex_block(
                        {{gen_argdefs()}}, qk, 0, n_part, m_i, l_i, off_zq, off_hq, offs_m, start_n, Q_LEN, KV_LEN,
                        1)
                    tlx.barrier_arrive(k_empties[0])
                    p_lo = utlx_flex_to_input(p_lo, DTYPE, PTX_CVT)
                    p_hi = utlx_flex_to_input(p_hi, DTYPE, PTX_CVT)
                    sp = 0
                    php = 0
                    s = 1 % NUM_KV
                    ph = (1 // NUM_KV) & 1
                    for j in tl.range(1, n_blocks, num_stages=0):
                        start_n, qk = utlx_flex_issue_s(q_tile, k_tiles[s], k_fulls[s], ph, j, n_part, KV_IDX + idx_off,
                                                        FULL_KV_IDX + idx_off, SPARSE_KV_BLOCK_SIZE, SPARSE_KV_MULTIPLE,
                                                        BLOCK_N, HAS_FULL_BLOCKS)
                        acc = acc * alpha[:, None]
                        tlx.barrier_wait(v_fulls[sp], php)
                        acc = utlx_flex_pv(p_lo, p_hi, v_tiles[sp], acc, BLOCK_N // 2, V_HEAD_DIM)
                        # S_j's wait leaves the two P V GEMMs (one per half of P) in flight: 3 groups
                        new_lo, new_hi, m_i, l_i, alpha = utlx_flex_block(
                            {{gen_argdefs()}}, qk, j, n_part, m_i, l_i, off_zq, off_hq, offs_m, start_n, Q_LEN,
                            KV_LEN, 3)
                        tlx.barrier_arrive(k_empties[s])
                        acc = tlx.async_dot_wait(0, acc)
                        tlx.barrier_arrive(v_empties[sp])
                        # only now: the P V GEMMs above have finished reading P_{j-1}
                        p_lo = utlx_flex_to_input(new_lo, DTYPE, PTX_CVT)
                        p_hi = utlx_flex_to_input(new_hi, DTYPE, PTX_CVT)
                        sp = s
                        php = ph
                        s1 = s + 1
                        wrap = (s1 == NUM_KV).to(tl.int32)
                        s = s1 - wrap * NUM_KV
                        ph = ph ^ wrap
                    acc = acc * alpha[:, None]
                    tlx.barrier_wait(v_fulls[sp], php)
                    acc = utlx_flex_pv(p_lo, p_hi, v_tiles[sp], acc, BLOCK_N // 2, V_HEAD_DIM)
                    acc = tlx.async_dot_wait(0, acc)
                    tlx.barrier_arrive(v_empties[sp])
            else:
                s = 0
                ph = 0
                for j in tl.range(0, n_blocks, num_stages=0):
                    start_n, qk = utlx_flex_issue_s(q_tile, k_tiles[s], k_fulls[s], ph, j, n_part, KV_IDX + idx_off,
                                                    FULL_KV_IDX + idx_off, SPARSE_KV_BLOCK_SIZE, SPARSE_KV_MULTIPLE,
                                                    BLOCK_N, HAS_FULL_BLOCKS)
                    p_lo, p_hi, m_i, l_i, alpha = utlx_flex_block(
                        {{gen_argdefs()}}, qk, j, n_part, m_i, l_i, off_zq, off_hq, offs_m, start_n, Q_LEN, KV_LEN,
                        1)
                    tlx.barrier_arrive(k_empties[s])
                    acc = acc * alpha[:, None]
                    tlx.barrier_wait(v_fulls[s], ph)
                    acc = utlx_flex_pv(utlx_flex_to_input(p_lo, DTYPE, PTX_CVT),
                                       utlx_flex_to_input(p_hi, DTYPE, PTX_CVT), v_tiles[s], acc, BLOCK_N // 2,
                                       V_HEAD_DIM)
                    acc = tlx.async_dot_wait(0, acc)
                    tlx.barrier_arrive(v_empties[s])
                    s1 = s + 1
                    wrap = (s1 == NUM_KV).to(tl.int32)
                    s = s1 - wrap * NUM_KV
                    ph = ph ^ wrap
            # fully masked rows: l_i = 0 and m_i = -inf; O = 0 and lse = -inf as in the stock template
            l_i = tl.where(l_i == 0.0, 1, l_i)
            acc = acc / l_i[:, None]
            idx_zq = off_zq
            idx_hq = off_hq
            idx_m = offs_m[:, None].to(INDEX_DTYPE)
            idx_d = tl.arange(0, V_HEAD_DIM)[None, :].to(INDEX_DTYPE)
            mask = (idx_m < Q_LEN) & (idx_d < V_HEAD_DIM)
            {{store_output(("idx_zq", "idx_hq", "idx_m", "idx_d"), "acc", "mask", indent_width=12,
                          val_shape=("BLOCK_M", "V_HEAD_DIM"))}}
            off_hz = off_zq * HQ + off_hq
            if OUTPUT_LOGSUMEXP:
                tl.store(LSE + off_hz * Q_LEN + offs_m, m_i + tl.math.log2(l_i), mask=offs_m < Q_LEN)
            if OUTPUT_MAX:
                tl.store(MAX + off_hz * Q_LEN + offs_m, m_i, mask=offs_m < Q_LEN)


@triton.jit
def utlx_flex_issue_s(q_tile, k_tile, k_full, phase, j, n_part, kv_idx, full_kv_idx, SPARSE_KV_BLOCK_SIZE: tl.constexpr,
                      SPARSE_KV_MULTIPLE: tl.constexpr, BLOCK_N: tl.constexpr, HAS_FULL_BLOCKS: tl.constexpr):
    """A consumer's start of block j: its first KV row, and S_j = Q K_j^T issued once K_j has landed (not waited
    for: the caller overlaps it with other work and waits)."""
    start_n = utlx_flex_block_start(j, n_part, kv_idx, full_kv_idx, SPARSE_KV_BLOCK_SIZE, SPARSE_KV_MULTIPLE, BLOCK_N,
                                    HAS_FULL_BLOCKS)
    tlx.barrier_wait(k_full, phase)
    return start_n, tlx.async_dot(q_tile, tlx.local_trans(k_tile))


@triton.jit
def utlx_flex_block_start(j, n_part, kv_idx, full_kv_idx, SPARSE_KV_BLOCK_SIZE: tl.constexpr,
                          SPARSE_KV_MULTIPLE: tl.constexpr, BLOCK_N: tl.constexpr, HAS_FULL_BLOCKS: tl.constexpr):
    """First KV row of the j-th block this tile computes: the partial blocks' list, then the full blocks'.
    Without full blocks Inductor passes an empty float tensor for their list: it is never read then."""
    if HAS_FULL_BLOCKS:
        if j < n_part:
            sparse = tl.load(kv_idx + j // SPARSE_KV_MULTIPLE)
            jj = j
        else:
            jj = j - n_part
            sparse = tl.load(full_kv_idx + jj // SPARSE_KV_MULTIPLE)
    else:
        jj = j
        sparse = tl.load(kv_idx + j // SPARSE_KV_MULTIPLE)
    return (sparse * SPARSE_KV_BLOCK_SIZE + (jj % SPARSE_KV_MULTIPLE) * BLOCK_N).to(tl.int32)


@triton.jit
def utlx_flex_to_input(p, dtype: tl.constexpr, PTX_CVT: tl.constexpr):
    """P (fp32) in the P V GEMM's input dtype. With ``PTX_CVT``: one ``cvt.rn.bf16x2.f32`` (``cvt.rn.f16x2.f32``)
    per column pair. Left to LLVM, the FA3 loop's conversion became one cvt per element plus a PRMT per pair in
    bf16 (128 PRMTs per block), and in fp16 a PRMT per pair too (32 per block, seen 2026-12-04 in the SASS:
    LLVM pairs them, but the loop-carried halves are repacked); ``PTX_CVT`` is off only where no PTX is made (the
    interpreter)."""
    if PTX_CVT and dtype == tl.bfloat16:
        return tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $2, $1;", "=r,f,f", [p], dtype=tl.bfloat16,
                                         is_pure=True, pack=2)
    elif PTX_CVT and dtype == tl.float16:
        return tl.inline_asm_elementwise("cvt.rn.f16x2.f32 $0, $2, $1;", "=r,f,f", [p], dtype=tl.float16,
                                         is_pure=True, pack=2)
    else:
        return p.to(dtype)


@triton.jit
def utlx_flex_pv(p_lo, p_hi, v_tile, acc, HALF_N: tl.constexpr, V_HEAD_DIM: tl.constexpr):
    """O += P V for one block as two K=64 wgmma GEMMs (P's column halves against V's row halves), issued async."""
    acc = tlx.async_dot(p_lo, tlx.local_slice(v_tile, [0, 0], [HALF_N, V_HEAD_DIM]), acc)
    return tlx.async_dot(p_hi, tlx.local_slice(v_tile, [HALF_N, 0], [HALF_N, V_HEAD_DIM]), acc)


@triton.jit
def utlx_flex_block(
    {{gen_argdefs()}}, qk, j, n_part, m_i, l_i, off_z, off_h, offs_m, start_n, Q_LEN, KV_LEN, PENDING: tl.constexpr,
):
    """Block j's softmax step from its S GEMM ``qk`` (issued, not waited for): a partial block (j < n_part)
    evaluates mask_mod first, so its gathers are in flight while the GEMM runs, then waits until at most
    ``PENDING - 1`` GEMMs are outstanding (the overlapped variant's P V stays in flight), then score_mod and
    the online softmax. A full block skips mask_mod."""
    {{gen_defines() | indent_except_first(1)}}
    HALF_N: tl.constexpr = BLOCK_N // 2
    offs_lo = start_n + tl.arange(0, HALF_N)
    if j < n_part:
        keep_lo = utlx_flex_mask({{gen_argdefs()}}, off_z, off_h, offs_m[:, None], offs_lo[None, :], Q_LEN, KV_LEN)
        keep_hi = utlx_flex_mask({{gen_argdefs()}}, off_z, off_h, offs_m[:, None], (offs_lo + HALF_N)[None, :],
                                 Q_LEN, KV_LEN)
        qk = tlx.async_dot_wait(PENDING - 1, qk)
        p_lo, p_hi, m_i, l_i, alpha = utlx_flex_scores(
            {{gen_argdefs()}}, qk, keep_lo, keep_hi, m_i, l_i, off_z, off_h, offs_m[:, None], offs_lo[None, :], Q_LEN,
            KV_LEN, False)
    else:
        qk = tlx.async_dot_wait(PENDING - 1, qk)
        p_lo, p_hi, m_i, l_i, alpha = utlx_flex_scores(
            {{gen_argdefs()}}, qk, True, True, m_i, l_i, off_z, off_h, offs_m[:, None], offs_lo[None, :], Q_LEN,
            KV_LEN, True)
    return p_lo, p_hi, m_i, l_i, alpha


@triton.jit
def utlx_flex_indices(offs_m, offs_n, Q_LEN, KV_LEN, IS_DIVISIBLE: tl.constexpr):
    """The (m, n) the mods see: the positions, wrapped into range where the lengths are not tile multiples (a
    padded row or column then reads a valid index; its score is masked anyway)."""
    if IS_DIVISIBLE:
        return offs_m, offs_n
    return offs_m % Q_LEN, offs_n % KV_LEN


@triton.jit
def utlx_flex_mask(
    {{gen_argdefs()}}, off_z, off_h, offs_m, offs_n, Q_LEN, KV_LEN,
):
    """mask_mod on a [BLOCK_M, BLOCK_N // 2] half of a block (True: keep the score).

    Why halves: a gather mask_mod makes with the KV index (``doc[n]``) is a load of as many values as ``n`` has;
    at 128 (one per thread of the warpgroup) Triton makes that load a layout anchor of its own, and the
    softmax around it then moved to its blocked layout (S through shared memory every block, the softmax
    computed in both layouts, 7 KB of spills: the 0.10x document-mask cell). At 64 values the load is cheap to
    rematerialise and stays in the wgmma accumulator's layout, like everything else."""
    {{gen_defines() | indent_except_first(1)}}
    m, n = utlx_flex_indices(offs_m, offs_n, Q_LEN, KV_LEN, IS_DIVISIBLE)
    {{ modification(subgraph_number=1, output_name="mask_mod_output", score="None", b="off_z", h="off_h", m="m",
                    n="n") | indent_except_first(1) }}
    return mask_mod_output


@triton.jit
def utlx_flex_mods(
    {{gen_argdefs()}}, qk, keep, off_z, off_h, offs_m, offs_n, Q_LEN, KV_LEN, IS_FULL_BLOCKS,
):
    """score_mod on a [BLOCK_M, BLOCK_N // 2] half of an S block, then the mask (partial blocks), in natural
    units (halves for the reason utlx_flex_mask gives: score_mod may gather with the KV index too). The base-2
    factor is left to the softmax, where it folds into the exponent's FFMA (utlx_flex_scores); where the score_mod
    is the identity (``SCORE_IS_QK``) so is SM_SCALE, and the scores come back unscaled."""
    {{gen_defines() | indent_except_first(1)}}
    if not SCORE_IS_QK:
        qk *= SM_SCALE
    m, n = utlx_flex_indices(offs_m, offs_n, Q_LEN, KV_LEN, IS_DIVISIBLE)
    {{ modification(subgraph_number=0, output_name="post_mod_scores", score="qk", b="off_z", h="off_h", m="m",
                    n="n", out="qk") | indent_except_first(1) }}
    if not IS_DIVISIBLE:
        post_mod_scores = tl.where(offs_n < KV_LEN, post_mod_scores, float("-inf"))
    if not IS_FULL_BLOCKS:
        post_mod_scores = tl.where(keep, post_mod_scores, float("-inf"))
    return post_mod_scores


@triton.jit
def utlx_flex_scores(
    {{gen_argdefs()}}, qk, keep_lo, keep_hi, m_i, l_i, off_z, off_h, offs_m, offs_lo, Q_LEN, KV_LEN,
    IS_FULL_BLOCKS,
):
    """The mods on the two column halves of one S block (a register-only split of the accumulator), then the
    online softmax step (base 2). P stays in halves: the P V GEMM runs as two K=64 GEMMs (utlx_flex_pv), so P
    never goes back to the 128-column layout (a join reorders the bf16 pairs: one PRMT per pair).

    Per element the softmax is one FFMA (``s * SCALE - m``) and one MUFU.EX2, as in utlx.attention: the row max
    is taken on the unscaled scores and scaled once per row (a positive factor keeps the order), and each row
    reduction (max, sum) runs once over both halves, not once per half (half the shuffles). Until 2026-12-04
    the scores were multiplied by SM_SCALE and by log2(e) apart (128 FMUL per thread and block more than
    utlx.attention's loop, whose softmax bounds it: its SASS loop was 596 instructions against 455)."""
    {{gen_defines() | indent_except_first(1)}}
    HALF_N: tl.constexpr = BLOCK_N // 2
    RCP_LN2: tl.constexpr = 1.44269504
    # the scores' base-2 factor: log2(e), times SM_SCALE where the mods left the scores unscaled
    SCALE: tl.constexpr = SM_SCALE * RCP_LN2 if SCORE_IS_QK else RCP_LN2
    qk_lo, qk_hi = tl.split(tl.permute(tl.reshape(qk, [BLOCK_M, 2, HALF_N]), [0, 2, 1]))
    s_lo = utlx_flex_mods({{gen_argdefs()}}, qk_lo, keep_lo, off_z, off_h, offs_m, offs_lo, Q_LEN, KV_LEN,
                          IS_FULL_BLOCKS)
    s_hi = utlx_flex_mods({{gen_argdefs()}}, qk_hi, keep_hi, off_z, off_h, offs_m, offs_lo + HALF_N, Q_LEN, KV_LEN,
                          IS_FULL_BLOCKS)
    m_ij = tl.maximum(m_i, tl.max(tl.maximum(s_lo, s_hi), 1) * SCALE)
    if not ROWS_GUARANTEED_SAFE:
        m_ij_masked = tl.where(m_ij == float("-inf"), 0, m_ij)
    else:
        m_ij_masked = m_ij
    alpha = tl.math.exp2(m_i - m_ij_masked)
    p_lo = tl.math.exp2(s_lo * SCALE - m_ij_masked[:, None])
    p_hi = tl.math.exp2(s_hi * SCALE - m_ij_masked[:, None])
    l_i = l_i * alpha + tl.sum(p_lo + p_hi, 1)
    return p_lo, p_hi, m_ij, l_i, alpha
'''
