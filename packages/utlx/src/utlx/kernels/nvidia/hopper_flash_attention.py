"""Flash attention forward for Hopper, written in TLX: one TMA producer, 2 or 3 wgmma consumer warpgroups.

The design follows FlashAttention-3. A persistent CTA walks its share of (head, row-block) tiles:

* **producer** (the default task, 4 warps, few registers): for each tile it loads each consumer's
  ``BLOCK_M_SPLIT`` rows of Q (``q_full``/``q_empty`` per slot and consumer, ``NUM_Q`` slots so the next
  tile's Q lands while this one runs), then streams the K and V blocks through a ring of ``NUM_KV`` slots
  (``k_full``/``v_full``: TMA bytes landed; ``k_empty``/``v_empty``: every consumer is done reading). K and
  V have separate barriers so S = Q K^T can start before V has landed.
* **consumers** (``async_task(replicate=NUM_CONSUMERS)``, 4 warps each, ``setmaxnreg`` budget
  ``CONSUMER_REGS``): each owns ``BLOCK_M_SPLIT = 64`` rows of the tile. Per KV block j it issues
  ``S_j = Q K_j^T`` and ``O += P_{j-1} V_{j-1}`` back to back (intra-warpgroup overlap: the softmax of
  S_j runs while the tensor cores do P_{j-1} V_{j-1}), rescales O by the previous block's correction
  before issuing the PV GEMM (it is not in flight then), and converts P to fp16/bf16 only once that GEMM
  has finished reading the previous P.
* **pingpong**: the consumers pass a token round a ring of named barriers (ids ``SCHED_BAR`` ..),
  and only the holder issues its two GEMMs; so one warpgroup's softmax overlaps the other's GEMMs and the
  tensor cores see the warpgroups' GEMMs in a fixed order.
* softmax in base 2 with ``sm_scale * log2(e)`` folded into one FMA per element; the row max and sum
  stay in registers.
* **causal**: the host gives each CTA its list of tiles, balanced by their cost and heaviest first
  within groups of heads (so the K/V of the heads in flight stay in L2; ``sched``); fully masked KV blocks
  are never loaded, and only the blocks the tile's diagonal band crosses are masked (one for square
  tiles, two for 192-row tiles over 128-column blocks). A consumer whose 64 rows end before a block starts
  does not compute that block: it only passes the GEMM token on and releases the block (``_drain``), as does
  a consumer whose rows are all past N_CTX after its first block. Non-causal inputs whose N_CTX is not a multiple of
  ``BLOCK_N`` mask the last block's columns; rows past N_CTX are not stored (with ``TRIM``, a consumer whose rows
  are all past it computes only its first block). A tile's first
  block is masked only when it is one of those.
* **stream-K** (non-causal, ``STREAM_K``): whole tiles go round robin, and the tiles of the last,
  partial round are cut along KV into equal shares for every program (``utlx.attention.stream_k_schedule``),
  so no SM idles through most of a last round (about 3% of the run at N_CTX 2048 and 4096 on 132 SMs). A
  piece that is not a whole tile parks its unnormalised O, row max and row sum in an fp32 workspace, and
  ``attn_combine`` (a small second kernel) merges each split tile's pieces into O.

Inputs are viewed as 2-D ``(Z*H*N_CTX, HEAD_DIM)`` TMA descriptors; a block that runs past the end of a
head reads the next head's rows (they are masked out: their columns are >= N_CTX) or TMA's zero fill.
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx.kernels import grid_dependency
from utlx.kernels.accumulator_io import store_pairs

#: First named-barrier id of the consumers' token ring (Triton's warp specialization uses ids 0..3).
SCHED_BAR = 9


@triton.jit
def _walk(sched, ZH, n_m, SCHEDULED: tl.constexpr):
    """(first, end, step) of this program's walk over its segments.

    Unscheduled (non-causal, no stream-K, no trimmed tiles): every tile costs the same, program p takes tiles
    p, p + P, ...
    Scheduled: the host lists each program's segments (``utlx.attention``'s ``balanced_schedule`` /
    ``stream_k_schedule``): ``sched`` holds P + 1 offsets, then 4 int32 per segment (see ``_segment``).
    """
    if SCHEDULED:
        pid = tl.program_id(0)
        return tl.load(sched + pid), tl.load(sched + pid + 1), 1
    else:
        return tl.program_id(0), n_m * ZH, tl.num_programs(0)


@triton.jit
def _segment(sched, k, N_CTX, BLOCK_N: tl.constexpr, SCHEDULED: tl.constexpr):
    """Segment ``k`` of the walk: (tile, first KV block, number of KV blocks, partial slot).

    A segment is a tile's KV blocks ``lo .. lo + n - 1``. ``slot`` is -1 when the segment is the whole
    tile (its epilogue stores O); otherwise the segment is one piece of a tile split between programs
    (stream-K) and its epilogue writes its unnormalised O, row max and row sum to workspace slot ``slot``,
    which ``attn_combine`` merges.
    """
    if SCHEDULED:
        e = sched + tl.num_programs(0) + 1 + 4 * k
        lo = tl.load(e + 1)
        return tl.load(e), lo, tl.load(e + 2) - lo, tl.load(e + 3)
    else:
        return k, 0, tl.cdiv(N_CTX, BLOCK_N), -1


@triton.jit
def _advance(s, phase, NUM: tl.constexpr):
    """Next slot of a ring of ``NUM`` buffers and its barrier phase (no integer division)."""
    s1 = s + 1
    wrap = (s1 == NUM).to(tl.int32)
    return s1 - wrap * NUM, phase ^ wrap


@triton.jit
def _sched_wait(cid: tl.constexpr, NUM_CONSUMERS: tl.constexpr):
    """Wait for the GEMM token (consumer ``cid`` owns named barrier ``SCHED_BAR + cid``)."""
    tlx.named_barrier_wait(9 + cid, 256)


@triton.jit
def _sched_pass(cid: tl.constexpr, NUM_CONSUMERS: tl.constexpr):
    """Hand the GEMM token to the next consumer."""
    tlx.named_barrier_arrive(9 + (cid + 1) % NUM_CONSUMERS, 256)


@triton.jit
def _softmax(qk, m_i, l_i, qk_scale, rows, col0, N_CTX, BLOCK_N: tl.constexpr, MASK: tl.constexpr,
             FIRST: tl.constexpr):
    """Online softmax of one S block (base 2): returns (P in fp32, new row max, new row sum, correction).
    ``MASK`` (bits): 1 hides columns >= N_CTX, 2 columns past the row (causal); 0 masks nothing."""
    if MASK != 0:
        cols = col0 + tl.arange(0, BLOCK_N)
        if MASK == 1:
            keep = cols[None, :] < N_CTX
        elif MASK == 2:  # N_CTX a multiple of BLOCK_N: no loaded column is past it
            keep = cols[None, :] <= rows[:, None]
        else:
            keep = (cols[None, :] < N_CTX) & (cols[None, :] <= rows[:, None])
        qk = tl.where(keep, qk, float("-inf"))
    if FIRST:
        m_new = tl.max(qk, 1) * qk_scale
    else:
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    if FIRST:
        alpha = tl.full(m_new.shape, 1.0, tl.float32)
        l_new = tl.sum(p, 1)
    else:
        alpha = tl.math.exp2(m_i - m_new)
        l_new = l_i * alpha + tl.sum(p, 1)
    return p, m_new, l_new, alpha


@triton.jit
def _to_input_dtype(p, dtype: tl.constexpr, PTX: tl.constexpr):
    """P (fp32) in the P V GEMM's input dtype. bf16 with ``PTX``: one ``cvt.rn.bf16x2.f32`` per column pair.
    Left to LLVM, some bf16 conversion sites become one ``cvt.rn.bf16.f32`` per element, and ptxas then packs
    each pair with an extra PRMT on the softmax's critical path (fp16 always gets the paired form)."""
    if PTX and dtype == tl.bfloat16:
        return tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $2, $1;", "=r,f,f", [p], dtype=tl.bfloat16,
                                         is_pure=True, pack=2)
    else:
        return p.to(dtype)


@triton.jit
def _step(q_tile, k_tiles, v_tiles, k_fulls, k_empties, v_fulls, v_empties, acc, p, m_i, l_i, alpha, s, ph, sp, php,
          qk_scale, rows, col0, N_CTX, cid: tl.constexpr, NUM_CONSUMERS: tl.constexpr, BLOCK_N: tl.constexpr,
          MASK: tl.constexpr, LATE: tl.constexpr, PTX: tl.constexpr):
    """One KV block j (ring slot ``s``): issue S_j and O += P_{j-1} V_{j-1} (slot ``sp``), softmax S_j
    while the PV GEMM runs."""
    tlx.barrier_wait(k_fulls[s], ph)
    k_t = tlx.local_trans(k_tiles[s])
    _sched_wait(cid, NUM_CONSUMERS)
    qk = tlx.async_dot(q_tile, k_t)
    acc = acc * alpha[:, None]
    tlx.barrier_wait(v_fulls[sp], php)
    acc = tlx.async_dot(p, v_tiles[sp], acc)
    _sched_pass(cid, NUM_CONSUMERS)
    qk = tlx.async_dot_wait(1, qk)
    if not LATE:
        tlx.barrier_arrive(k_empties[s])
    p_new, m_i, l_i, alpha = _softmax(qk, m_i, l_i, qk_scale, rows, col0, N_CTX, BLOCK_N, MASK, False)
    if LATE:  # K_j released after the softmax: its warpgroup barrier leaves the S -> P critical path
        tlx.barrier_arrive(k_empties[s])
    acc = tlx.async_dot_wait(0, acc)
    tlx.barrier_arrive(v_empties[sp])
    # P_j in the input dtype only now: the PV GEMM above has finished reading P_{j-1}'s registers
    return acc, _to_input_dtype(p_new, p.dtype, PTX), m_i, l_i, alpha


@triton.jit
def _blocks_needed(row0, lo, n_kv, N_CTX, ROWS: tl.constexpr, BLOCK_N: tl.constexpr, NUM_KV: tl.constexpr,
                   CAUSAL: tl.constexpr):
    """How many of a segment's KV blocks this consumer's ``ROWS`` rows (from ``row0``) compute; it drains the rest.

    Causal: the blocks up to its own last row's diagonal (a 192-row tile's first consumer needs one block
    less than the tile, as do the second consumer of every other tile). It holds its last computed block's
    V until the next tile's first GEMM, so it may drain at most ``NUM_KV - 1`` blocks past it (more would
    wait on its own slot). Rows wholly past N_CTX (the last tile of a head whose N_CTX is not a multiple of
    the tile) compute only the first block; nothing of theirs is stored.
    """
    if CAUSAL:
        n = tl.minimum(n_kv, (row0 + ROWS - 1) // BLOCK_N + 1 - lo)
        n = tl.maximum(n, n_kv - (NUM_KV - 1))
    else:
        n = n_kv
    past = (row0 >= N_CTX).to(tl.int32)
    return past + (1 - past) * n, past


@triton.jit
def _drain(k_fulls, k_empties, v_fulls, v_empties, s, ph, sp, php, past, cid: tl.constexpr,
           NUM_CONSUMERS: tl.constexpr):
    """A KV block this consumer does not compute: pass the GEMM token on and release K and V once landed
    (waiting first, so each arrival counts for this fill and not an earlier one of the slot).

    ``past`` (rows past N_CTX, any number of drained blocks): release the V held for the pending P V
    instead and hold this one, so the held slot moves with the ring; the next P V then reads this block,
    and its result is never stored. Returns the new (``sp``, ``php``).
    """
    tlx.barrier_wait(k_fulls[s], ph)
    _sched_wait(cid, NUM_CONSUMERS)
    _sched_pass(cid, NUM_CONSUMERS)
    tlx.barrier_arrive(k_empties[s])
    tlx.barrier_wait(v_fulls[s], ph)
    tlx.barrier_arrive(v_empties[past * sp + (1 - past) * s])
    return past * s + (1 - past) * sp, past * ph + (1 - past) * php


@triton.jit
def _tile_steps(q_tile, k_tiles, v_tiles, k_fulls, k_empties, v_fulls, v_empties, acc, p, m_i, l_i, alpha, s, ph, sp,
                php, lo, n_kv, n_c, past, qk_scale, rows, N_CTX, cid: tl.constexpr, NUM_CONSUMERS: tl.constexpr,
                NUM_KV: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, KEEP: tl.constexpr,
                LATE: tl.constexpr, TRIM: tl.constexpr, PTX: tl.constexpr):
    """KV blocks lo+1 .. lo+n_kv-1 of a segment; the last ``MASKED`` of them masked (the blocks that can hold
    columns to hide: the causal diagonal band, or a ragged N_CTX's last block). ``TRIM``: this consumer
    computes only its first ``n_c`` blocks and drains the rest (:func:`_blocks_needed`)."""
    if TRIM:
        n_end = n_c
    else:
        n_end = n_kv
    if MASKED > 1:
        n_plain = tl.maximum(n_kv - MASKED, 1)
    else:  # no max: the code of the one-masked-block kernels stays as it was measured
        n_plain = n_kv - MASKED
    if TRIM:
        n_plain = tl.minimum(n_plain, n_end)
    for j in tl.range(1, n_plain, num_stages=0):
        acc, p, m_i, l_i, alpha = _step(q_tile, k_tiles, v_tiles, k_fulls, k_empties, v_fulls, v_empties, acc, p,
                                        m_i, l_i, alpha, s, ph, sp, php, qk_scale, rows, (lo + j) * BLOCK_N, N_CTX, cid,
                                        NUM_CONSUMERS, BLOCK_N, 0, LATE, PTX)
        sp = s
        php = ph
        s, ph = _advance(s, ph, NUM_KV)
    if MASKED == 1:  # one block: straight-line code (a one-trip loop would carry the whole state through it)
        if TRIM:
            last = n_kv > 1 and n_end == n_kv
        else:
            last = n_kv > 1
        if last:
            col0 = (lo + n_kv - 1) * BLOCK_N
            acc, p, m_i, l_i, alpha = _step(q_tile, k_tiles, v_tiles, k_fulls, k_empties, v_fulls, v_empties, acc,
                                            p, m_i, l_i, alpha, s, ph, sp, php, qk_scale, rows, col0, N_CTX, cid,
                                            NUM_CONSUMERS, BLOCK_N, KEEP, LATE, PTX)
            sp = s
            php = ph
            s, ph = _advance(s, ph, NUM_KV)
    elif MASKED > 1:
        for j in tl.range(n_plain, n_end, num_stages=0):
            acc, p, m_i, l_i, alpha = _step(q_tile, k_tiles, v_tiles, k_fulls, k_empties, v_fulls, v_empties, acc,
                                            p, m_i, l_i, alpha, s, ph, sp, php, qk_scale, rows, (lo + j) * BLOCK_N,
                                            N_CTX, cid, NUM_CONSUMERS, BLOCK_N, KEEP, LATE, PTX)
            sp = s
            php = ph
            s, ph = _advance(s, ph, NUM_KV)
    if TRIM:
        for _j in tl.range(n_end, n_kv, num_stages=0):
            sp, php = _drain(k_fulls, k_empties, v_fulls, v_empties, s, ph, sp, php, past, cid, NUM_CONSUMERS)
            s, ph = _advance(s, ph, NUM_KV)
    return acc, p, m_i, l_i, alpha, s, ph, sp, php


@triton.jit
def _store_o(acc, l_i, bh, row0, rows, o_tile, desc_o, o_ptr, N_CTX, HEAD_DIM: tl.constexpr, EVEN_M: tl.constexpr):
    """Normalise and store one consumer's 64 rows of a finished tile."""
    o = (acc * (1.0 / l_i)[:, None]).to(o_tile.dtype)
    if EVEN_M:  # N_CTX is a multiple of 64: this block is wholly inside the head, or wholly past it
        if row0 < N_CTX:
            tlx.async_descriptor_store_wait(0)  # the previous tile's store has finished reading o_tile
            tlx.local_store(o_tile, o)
            tlx.fence_async_shared()
            tlx.async_descriptor_store(desc_o, o_tile, [bh * N_CTX + row0, 0])
    else:  # the last block of a head runs past N_CTX: masked stores
        base = (bh * N_CTX).to(tl.int64) * HEAD_DIM
        offs = rows[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
        tl.store(o_ptr + base + offs, o, mask=rows[:, None] < N_CTX)


@triton.jit
def _park_piece(acc, m_i, l_i, slot, ws_ptr, cid: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                REG_STORE: tl.constexpr):
    """One consumer's rows of a piece of a split tile -> workspace slot ``slot``: the unnormalised O
    (``BLOCK_M x HEAD_DIM`` fp32 per slot), then the row maxima (base 2, scaled) and the row sums."""
    r = cid * 64 + tl.arange(0, 64)
    base = ws_ptr + slot.to(tl.int64) * (BLOCK_M * (HEAD_DIM + 2))
    ptrs = base + r[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    # straight from the accumulator's registers: a tl.store would first convert the fp32 tile through 32 KB of
    # shared memory per consumer, which the kernel does not have
    store_pairs(ptrs, acc, REG_STORE)
    tl.store(base + BLOCK_M * HEAD_DIM + r, m_i)
    tl.store(base + BLOCK_M * (HEAD_DIM + 1) + r, l_i)


@triton.jit
def _epilogue(acc, m_i, l_i, bh, row0, rows, slot, o_tile, desc_o, o_ptr, ws_ptr, N_CTX, cid: tl.constexpr,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, EVEN_M: tl.constexpr, STREAM_K: tl.constexpr,
              REG_STORE: tl.constexpr):
    """The end of a segment: store O (whole tile) or park the piece (``slot >= 0``, stream-K only)."""
    if STREAM_K:
        if slot >= 0:
            _park_piece(acc, m_i, l_i, slot, ws_ptr, cid, HEAD_DIM, BLOCK_M, REG_STORE)
        else:
            _store_o(acc, l_i, bh, row0, rows, o_tile, desc_o, o_ptr, N_CTX, HEAD_DIM, EVEN_M)
    else:
        _store_o(acc, l_i, bh, row0, rows, o_tile, desc_o, o_ptr, N_CTX, HEAD_DIM, EVEN_M)


@triton.jit
def _consumer(cid: tl.constexpr, q_tiles, k_tiles, v_tiles, o_tiles, q_fulls, q_empties, k_fulls, k_empties, v_fulls,
              v_empties, desc_o, o_ptr, sm_scale, ZH, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr, NUM_CONSUMERS: tl.constexpr, NUM_Q: tl.constexpr, NUM_KV: tl.constexpr,
              CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, EVEN_M: tl.constexpr, LATE: tl.constexpr,
              STREAM_K: tl.constexpr, REG_STORE: tl.constexpr, TRIM: tl.constexpr, SCHEDULED: tl.constexpr, sched,
              ws_ptr):
    """One consumer warpgroup: its 64 rows of every segment (tile, or piece of a tile) of this CTA.

    Tiles are chained: the last P V GEMM of a tile is issued together with the first S GEMM of the next
    one, and the finished tile is normalised and stored while that S GEMM runs, so a tile boundary costs
    the tensor cores no more than any other KV block. The first tile is chained to a dummy one whose
    P is zero (one wasted P V per CTA, its result discarded), so the loop body exists once.
    """
    BLOCK_M_SPLIT: tl.constexpr = BLOCK_M // NUM_CONSUMERS
    MASK_LAST: tl.constexpr = CAUSAL or not EVEN_N
    # KV blocks at the end of a tile that may hold columns to hide: causal, those the tile's diagonal band
    # crosses (BLOCK_M / BLOCK_N of them, rounded up: tiles start at multiples of BLOCK_N / 2); else the last
    MASKED: tl.constexpr = (BLOCK_M + BLOCK_N - 1) // BLOCK_N if CAUSAL else (0 if EVEN_N else 1)
    KEEP: tl.constexpr = (2 if CAUSAL else 0) + (0 if EVEN_N else 1)  # what a masked block hides (_softmax)
    dtype = tlx.dtype_of(desc_o)
    o_tile = o_tiles[cid]
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))
    n_m = tl.cdiv(N_CTX, BLOCK_M)
    if cid == NUM_CONSUMERS - 1:
        _sched_pass(cid, NUM_CONSUMERS)  # the first token goes to consumer 0
    s = 0  # ring slot of the next KV block, and its phase
    ph = 0
    sp = 0  # ring slot of the previous KV block, and its phase
    php = 0
    # State of a dummy tile before the first one: its P V (P = 0, V_0 of the first tile) is issued but its
    # result is discarded, and it releases no buffer.
    acc = tl.zeros([BLOCK_M_SPLIT, HEAD_DIM], tl.float32)
    p = tl.zeros([BLOCK_M_SPLIT, BLOCK_N], dtype)
    alpha = tl.full([BLOCK_M_SPLIT], 1.0, tl.float32)
    m_i = tl.zeros([BLOCK_M_SPLIT], tl.float32)
    l_i = tl.full([BLOCK_M_SPLIT], 1.0, tl.float32)
    bh = 0
    row0 = 0
    rows = tl.arange(0, BLOCK_M_SPLIT)
    slot = -1
    first, end, step = _walk(sched, ZH, n_m, SCHEDULED)
    i = 0
    for k in tl.range(first, end, step, num_stages=0):
        t, lo, n_kv, slot_n = _segment(sched, k, N_CTX, BLOCK_N, SCHEDULED)
        bh_n = t // n_m
        m = t - bh_n * n_m
        row0_n = m * BLOCK_M + cid * BLOCK_M_SPLIT
        rows_n = row0_n + tl.arange(0, BLOCK_M_SPLIT)
        if TRIM:
            n_c, past = _blocks_needed(row0_n, lo, n_kv, N_CTX, BLOCK_M_SPLIT, BLOCK_N, NUM_KV, CAUSAL)
        else:
            n_c = n_kv
            past = 0
        q_slot = (i % NUM_Q) * NUM_CONSUMERS + cid
        tlx.barrier_wait(q_fulls[q_slot], (i // NUM_Q) & 1)
        q_tile = q_tiles[q_slot]
        tlx.barrier_wait(k_fulls[s], ph)
        # the previous tile's last P V, then this tile's S_0
        acc = acc * alpha[:, None]
        tlx.barrier_wait(v_fulls[sp], php)  # before the first tile: V_0, which the dummy P V reads
        _sched_wait(cid, NUM_CONSUMERS)
        acc = tlx.async_dot(p, v_tiles[sp], acc)
        qk = tlx.async_dot(q_tile, tlx.local_trans(k_tiles[s]))
        _sched_pass(cid, NUM_CONSUMERS)
        acc = tlx.async_dot_wait(1, acc)  # the older group: P V
        if i > 0:
            tlx.barrier_arrive(v_empties[sp])
            _epilogue(acc, m_i, l_i, bh, row0, rows, slot, o_tile, desc_o, o_ptr, ws_ptr, N_CTX, cid, HEAD_DIM,
                      BLOCK_M, EVEN_M, STREAM_K, REG_STORE)
        qk = tlx.async_dot_wait(0, qk)
        tlx.barrier_arrive(k_empties[s])
        if MASK_LAST:
            if n_kv <= MASKED:  # the first block is one of the masked tail (short tiles, the first causal row block)
                p32, m_i, l_i, alpha = _softmax(qk, m_i, l_i, qk_scale, rows_n, lo * BLOCK_N, N_CTX, BLOCK_N, KEEP,
                                              True)
            else:
                p32, m_i, l_i, alpha = _softmax(qk, m_i, l_i, qk_scale, rows_n, lo * BLOCK_N, N_CTX, BLOCK_N, 0,
                                              True)
        else:
            p32, m_i, l_i, alpha = _softmax(qk, m_i, l_i, qk_scale, rows_n, lo * BLOCK_N, N_CTX, BLOCK_N, 0, True)
        p = _to_input_dtype(p32, dtype, REG_STORE)
        acc = tl.zeros([BLOCK_M_SPLIT, HEAD_DIM], tl.float32)
        sp = s
        php = ph
        s, ph = _advance(s, ph, NUM_KV)
        acc, p, m_i, l_i, alpha, s, ph, sp, php = _tile_steps(q_tile, k_tiles, v_tiles, k_fulls, k_empties, v_fulls,
                                                              v_empties, acc, p, m_i, l_i, alpha, s, ph, sp, php,
                                                              lo, n_kv, n_c, past, qk_scale, rows_n, N_CTX, cid,
                                                              NUM_CONSUMERS, NUM_KV, BLOCK_N, MASKED, KEEP, LATE,
                                                              TRIM, REG_STORE)
        tlx.barrier_arrive(q_empties[q_slot])  # the tile's last S GEMM has read Q
        bh = bh_n
        row0 = row0_n
        rows = rows_n
        slot = slot_n
        i += 1

    # the last tile's last P V
    acc = acc * alpha[:, None]
    tlx.barrier_wait(v_fulls[sp], php)
    _sched_wait(cid, NUM_CONSUMERS)
    acc = tlx.async_dot(p, v_tiles[sp], acc)
    _sched_pass(cid, NUM_CONSUMERS)
    acc = tlx.async_dot_wait(0, acc)
    tlx.barrier_arrive(v_empties[sp])
    _epilogue(acc, m_i, l_i, bh, row0, rows, slot, o_tile, desc_o, o_ptr, ws_ptr, N_CTX, cid, HEAD_DIM, BLOCK_M,
              EVEN_M, STREAM_K, REG_STORE)
    if EVEN_M:
        tlx.async_descriptor_store_wait(0)


@triton.jit
def _producer(desc_q, desc_k, desc_v, q_tiles, k_tiles, v_tiles, q_fulls, q_empties, k_fulls, k_empties, v_fulls,
              v_empties, ZH, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              NUM_CONSUMERS: tl.constexpr, NUM_Q: tl.constexpr, NUM_KV: tl.constexpr, CAUSAL: tl.constexpr,
              SCHEDULED: tl.constexpr, sched):
    BLOCK_M_SPLIT: tl.constexpr = BLOCK_M // NUM_CONSUMERS
    Q_BYTES: tl.constexpr = BLOCK_M_SPLIT * HEAD_DIM * tlx.size_of(tlx.dtype_of(desc_q))
    KV_BYTES: tl.constexpr = BLOCK_N * HEAD_DIM * tlx.size_of(tlx.dtype_of(desc_k))
    n_m = tl.cdiv(N_CTX, BLOCK_M)
    s = 0  # ring slot of the next KV block, and the phase its empty barriers must have completed
    ph = 1
    i = 0
    first, end, step = _walk(sched, ZH, n_m, SCHEDULED)
    for k in tl.range(first, end, step, num_stages=0):
        t, lo, n_kv, _slot = _segment(sched, k, N_CTX, BLOCK_N, SCHEDULED)
        bh = t // n_m
        m = t - bh * n_m
        q_row = bh * N_CTX + m * BLOCK_M
        kv_row = bh * N_CTX + lo * BLOCK_N
        q_phase = ((i // NUM_Q) & 1) ^ 1
        q_base = (i % NUM_Q) * NUM_CONSUMERS
        # Q of consumer 0, K_0, the other consumers' Q, V_0: the first S GEMM can start early
        tlx.barrier_wait(q_empties[q_base], q_phase)
        tlx.barrier_expect_bytes(q_fulls[q_base], Q_BYTES)
        tlx.async_descriptor_load(desc_q, q_tiles[q_base], [q_row, 0], q_fulls[q_base])
        tlx.barrier_wait(k_empties[s], ph)
        tlx.barrier_expect_bytes(k_fulls[s], KV_BYTES)
        tlx.async_descriptor_load(desc_k, k_tiles[s], [kv_row, 0], k_fulls[s])
        for c in tl.static_range(1, NUM_CONSUMERS):
            tlx.barrier_wait(q_empties[q_base + c], q_phase)
            tlx.barrier_expect_bytes(q_fulls[q_base + c], Q_BYTES)
            tlx.async_descriptor_load(desc_q, q_tiles[q_base + c], [q_row + c * BLOCK_M_SPLIT, 0], q_fulls[q_base + c])
        tlx.barrier_wait(v_empties[s], ph)
        tlx.barrier_expect_bytes(v_fulls[s], KV_BYTES)
        tlx.async_descriptor_load(desc_v, v_tiles[s], [kv_row, 0], v_fulls[s])
        s, ph = _advance(s, ph, NUM_KV)
        for j in tl.range(1, n_kv, num_stages=0):
            tlx.barrier_wait(k_empties[s], ph)
            tlx.barrier_expect_bytes(k_fulls[s], KV_BYTES)
            tlx.async_descriptor_load(desc_k, k_tiles[s], [kv_row + j * BLOCK_N, 0], k_fulls[s])
            tlx.barrier_wait(v_empties[s], ph)
            tlx.barrier_expect_bytes(v_fulls[s], KV_BYTES)
            tlx.async_descriptor_load(desc_v, v_tiles[s], [kv_row + j * BLOCK_N, 0], v_fulls[s])
            s, ph = _advance(s, ph, NUM_KV)
        i += 1


@triton.jit
def attn_fwd_ws(desc_q, desc_k, desc_v, desc_o, o_ptr, sched, ws_ptr, sm_scale, ZH, N_CTX,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_CONSUMERS: tl.constexpr,
                NUM_Q: tl.constexpr, NUM_KV: tl.constexpr, CAUSAL: tl.constexpr, EVEN_N: tl.constexpr,
                EVEN_M: tl.constexpr, LATE_K_RELEASE: tl.constexpr, CONSUMER_REGS: tl.constexpr,
                STREAM_K: tl.constexpr, REG_STORE: tl.constexpr = True, PDL: tl.constexpr = False,
                TRIM: tl.constexpr = False, SCHEDULED: tl.constexpr = False):
    """Flash attention forward over ``ZH = Z*H`` heads of ``N_CTX`` rows; one CTA per SM (persistent).

    ``desc_q`` has blocks of ``[BLOCK_M // NUM_CONSUMERS, HEAD_DIM]``, ``desc_k``/``desc_v`` of
    ``[BLOCK_N, HEAD_DIM]``, ``desc_o`` like ``desc_q``, all over the ``(ZH*N_CTX, HEAD_DIM)`` view; ``o_ptr``
    is the output's base (contiguous like it), for the masked stores when N_CTX is not a multiple of 64.
    ``sched`` (int32, ``SCHEDULED``: causal, stream-K, or tiles of unequal cost) lists each CTA's segments (see
    ``_walk`` and ``_segment``);
    ``ws_ptr`` (fp32, ``STREAM_K`` only) is the workspace the pieces of split tiles are parked in;
    ``REG_STORE`` allows inline PTX (False under the interpreter): it parks them with PTX stores (else ``tl.store``)
    and converts a bf16 P in column pairs (:func:`_to_input_dtype`); ``PDL``: launched
    with programmatic dependent launch (:mod:`utlx.kernels.grid_dependency`); ``TRIM``: some consumers need fewer
    KV blocks than their tile (causal tiles taller than ``BLOCK_N``, or rows wholly past N_CTX) and drain the rest
    instead of computing them (``utlx.attention.Config.trims``).
    """
    grid_dependency.begin(PDL)  # before the task split: every task starts after the previous grid
    BLOCK_M_SPLIT: tl.constexpr = BLOCK_M // NUM_CONSUMERS
    tl.static_assert(BLOCK_M_SPLIT == 64, "each consumer warpgroup owns 64 rows (one wgmma M)")
    tl.static_assert(not CAUSAL or BLOCK_M % (BLOCK_N // 2) == 0,
                     "causal: BLOCK_M a multiple of BLOCK_N / 2 (the masked blocks are the diagonal band's)")
    dtype = tlx.dtype_of(desc_q)
    q_tiles = tlx.local_alloc((BLOCK_M_SPLIT, HEAD_DIM), dtype, NUM_Q * NUM_CONSUMERS)
    k_tiles = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_KV)
    v_tiles = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_KV)
    o_tiles = tlx.local_alloc((BLOCK_M_SPLIT, HEAD_DIM), dtype, NUM_CONSUMERS)  # TMA store staging
    q_fulls = tlx.alloc_barriers(NUM_Q * NUM_CONSUMERS, 1)
    q_empties = tlx.alloc_barriers(NUM_Q * NUM_CONSUMERS, 1)
    k_fulls = tlx.alloc_barriers(NUM_KV, 1)
    k_empties = tlx.alloc_barriers(NUM_KV, NUM_CONSUMERS)
    v_fulls = tlx.alloc_barriers(NUM_KV, 1)
    v_empties = tlx.alloc_barriers(NUM_KV, NUM_CONSUMERS)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            _producer(desc_q, desc_k, desc_v, q_tiles, k_tiles, v_tiles, q_fulls, q_empties, k_fulls, k_empties,
                      v_fulls, v_empties, ZH, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, NUM_CONSUMERS, NUM_Q, NUM_KV,
                      CAUSAL, SCHEDULED, sched)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=NUM_CONSUMERS):
            cid: tl.constexpr = tlx.async_task_replica_id()
            _consumer(cid, q_tiles, k_tiles, v_tiles, o_tiles, q_fulls, q_empties, k_fulls, k_empties, v_fulls,
                      v_empties, desc_o, o_ptr, sm_scale, ZH, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, NUM_CONSUMERS,
                      NUM_Q, NUM_KV, CAUSAL, EVEN_N, EVEN_M, LATE_K_RELEASE, STREAM_K, REG_STORE, TRIM,
                      SCHEDULED, sched, ws_ptr)


@triton.jit
def attn_combine(ws_ptr, splits, o_ptr, N_CTX, n_m, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """Merge the pieces of one split tile (stream-K) into O: program ``p`` takes split tile ``p``.

    ``splits`` holds 3 int32 per split tile: the tile id, its first workspace slot and its number of
    pieces (their slots are consecutive). Each piece holds an unnormalised O and its row maxima ``m`` and
    sums ``l`` in base 2, so ``O = sum_i O_i 2^(m_i - m) / sum_i l_i 2^(m_i - m)`` with ``m = max_i m_i``.
    """
    e = splits + 3 * tl.program_id(0)
    t = tl.load(e)
    first = tl.load(e + 1)
    count = tl.load(e + 2)
    bh = t // n_m
    r = tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    m_run = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_run = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for slot in range(first, first + count):
        base = ws_ptr + slot * (BLOCK_M * (HEAD_DIM + 2))  # int32: slots stay far below 2**31 / 16640
        m_s = tl.load(base + BLOCK_M * HEAD_DIM + r)
        l_s = tl.load(base + BLOCK_M * (HEAD_DIM + 1) + r)
        m_new = tl.maximum(m_run, m_s)
        a = tl.math.exp2(m_run - m_new)
        b = tl.math.exp2(m_s - m_new)
        acc = acc * a[:, None] + tl.load(base + r[:, None] * HEAD_DIM + d[None, :]) * b[:, None]
        l_run = l_run * a + l_s * b
        m_run = m_new
    rows = (t - bh * n_m) * BLOCK_M + r
    offs = (bh * N_CTX + rows).to(tl.int64)[:, None] * HEAD_DIM + d[None, :]
    o = acc / l_run[:, None]
    tl.store(o_ptr + offs, o.to(o_ptr.dtype.element_ty), mask=rows[:, None] < N_CTX)
