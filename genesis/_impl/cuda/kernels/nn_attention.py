"""Flash attention (Dao et al., FlashAttention-2), forward and backward, with causal masking, an optional additive
mask and grouped-query attention (key/value head ``h // GROUP`` serves query head ``h``; K and V are never repeated).

Scores are kept in the base-2 domain (``s2 = (q . k * scale + mask) * log2(e)``) so the kernels use ``exp2``; without
a mask the forward folds the scale into the running max and into one FMA per score (so the scale must be positive
there). The forward saves ``lse2 = max + log2(sum exp2)`` per query row (float32), which the backward uses to
recompute the probabilities block by block. Nothing of size L x S ever reaches memory.

Structure as in Triton's fused-attention tutorial: each kernel walks its blocks in two loops, one over the blocks
that need no masking at all (fully visible under the causal mask, inside both lengths: no bounds checks, no
``where``) and one over the few blocks on the causal diagonal or the ragged tail, which apply every mask. With
causal masking the blocks above the diagonal are never visited, and the forward and dQ grids start with the query
blocks that have the most keys to visit, so the longest programs do not run last.

Bytes: the forward reads Q, K, V once per query block row (K, V re-read L / BLOCK_M times, mostly from L2) and
writes O; FLOPs ``4 * B * H * L * S * D`` (half that with causal masking). The backward is two kernels without
atomics: ``attn_bwd_dkdv`` owns a key block and loops over every query block of every query head of its group;
``attn_bwd_dq`` owns a query block and loops over the key blocks.

Q, K, V, mask are strided (unit stride on the last dim); O, dO, dQ, dK, dV are contiguous (B, heads, len, D).
Block sizes must nest: BLOCK_N divides BLOCK_M in the forward and dQ kernels, BLOCK_M divides BLOCK_N in dK/dV.
"""

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, m_base, offs_m, lo, hi, skn, svn, smm, smn, L, S, qk_scale,
                HEAD_D: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                HAS_MASK: tl.constexpr):
    """Online softmax over the key blocks [lo, hi); MASKED applies the length and causal masks."""
    offs_d = tl.arange(0, HEAD_D)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        if MASKED:
            col_ok = offs_n < S
            k = tl.load(k_base + offs_n[:, None] * skn + offs_d[None, :], mask=col_ok[:, None], other=0.0)
        else:
            k = tl.load(k_base + offs_n[:, None] * skn + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k))
        if HAS_MASK:
            add = tl.load(m_base + offs_m[:, None] * smm + offs_n[None, :] * smn,
                          mask=(offs_m[:, None] < L) & (offs_n[None, :] < S), other=0.0).to(tl.float32)
            qk = qk * qk_scale + add * LOG2E
        if MASKED:
            ok = col_ok[None, :]
            if CAUSAL:
                ok = ok & (offs_n[None, :] <= offs_m[:, None])
            qk = tl.where(ok, qk, -float("inf"))
        if HAS_MASK:
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # a row with nothing visible yet (mask of -inf)
            p = tl.exp2(qk - m_ref[:, None])
        else:
            # Unscaled scores: the scale (> 0, the launcher's promise) folds into the max and into one FMA per
            # score; every row sees key 0 in its first block, so the max is finite from then on.
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            m_ref = m_new
            p = tl.exp2(qk * qk_scale - m_ref[:, None])
        alpha = tl.exp2(m_i - m_ref)
        l_i = l_i * alpha + tl.sum(p, 1)
        if MASKED:
            v = tl.load(v_base + offs_n[:, None] * svn + offs_d[None, :], mask=col_ok[:, None], other=0.0)
        else:
            v = tl.load(v_base + offs_n[:, None] * svn + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd(
    Q, K, V, Mask, O, LSE,                       # pointers; LSE (B * H, L) float32
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn,  # strides of Q, K, V (batch, head, position)
    smb, smh, smm, smn,                          # strides of the additive mask (0 where broadcast)
    H, GROUP, L, S, scale,                       # query heads, query heads per key head, lengths, softmax scale
    HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
):
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)  # the longest causal rows first
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    row_ok = offs_m < L
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    m_base = Mask + b * smb + h * smh
    m_i = tl.zeros([BLOCK_M], tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], tl.float32)
    qk_scale = scale * LOG2E
    s_full = (S // BLOCK_N) * BLOCK_N  # key blocks inside S
    if CAUSAL:
        # Key blocks left of the diagonal block are fully visible to every row of this block.
        full = tl.minimum(start_m * BLOCK_M, s_full)
        end = tl.minimum((start_m + 1) * BLOCK_M, S)
    else:
        full = s_full
        end = S
    acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, m_base, offs_m, 0, full, skn, svn, smm, smn, L, S,
                                qk_scale, HEAD_D, BLOCK_N, False, CAUSAL, HAS_MASK)
    acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, m_base, offs_m, full, end, skn, svn, smm, smn, L, S,
                                qk_scale, HEAD_D, BLOCK_N, True, CAUSAL, HAS_MASK)
    # A row that sees no key (a mask of -inf everywhere) gives zeros, as torch; its log-sum-exp is stored as +inf so
    # that the backward's probabilities exp2(score - lse) are 0 there too.
    empty = l_i == 0
    out = acc / tl.where(empty, 1.0, l_i)[:, None]
    o_rows = bh.to(tl.int64) * L + offs_m
    tl.store(O + o_rows[:, None] * HEAD_D + offs_d[None, :], out.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + o_rows, tl.where(empty, float("inf"), m_i + tl.log2(l_i)), mask=row_ok)


@triton.jit
def attn_bwd_pre(
    O, DO, Delta,                    # pointers: O contiguous (rows, HEAD_D); dO (B, H, L, HEAD_D); Delta (rows,)
    sdob, sdoh, sdom,                # strides of dO (batch, head, position; unit along HEAD_D)
    R, H, L,                         # rows (B * H * L), heads, length
    HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr,
):
    # delta_i = sum_d dO[i, d] * O[i, d], the row term of the softmax backward.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    ok = rows < R
    r64 = rows.to(tl.int64)
    do_rows = (r64 // (H * L)) * sdob + ((r64 // L) % H) * sdoh + (r64 % L) * sdom
    o = tl.load(O + r64[:, None] * HEAD_D + offs_d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
    do = tl.load(DO + do_rows[:, None] + offs_d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
    tl.store(Delta + r64, tl.sum(o * do, 1), mask=ok)


@triton.jit
def _dkdv_blocks(dk, dv, k, v, q_base, do_base, lse_base, delta_base, m_base, offs_n, lo, hi, sqm, sdom, smm, smn, L,
                 S, qk_scale, HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                 HAS_MASK: tl.constexpr):
    """dK, dV of one key block over the query blocks [lo, hi) of one head; MASKED applies the row and causal masks.

    Keys past S need no mask: their rows of dK/dV are never stored and touch no other key's."""
    offs_d = tl.arange(0, HEAD_D)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        if MASKED:
            row_ok = offs_m < L
            qt = tl.load(q_base + offs_m[None, :] * sqm + offs_d[:, None], mask=row_ok[None, :], other=0.0)
            lse = tl.load(lse_base + offs_m, mask=row_ok, other=0.0)
            do = tl.load(do_base + offs_m[:, None] * sdom + offs_d[None, :], mask=row_ok[:, None], other=0.0)
            delta = tl.load(delta_base + offs_m, mask=row_ok, other=0.0)
        else:
            qt = tl.load(q_base + offs_m[None, :] * sqm + offs_d[:, None])
            lse = tl.load(lse_base + offs_m)
            do = tl.load(do_base + offs_m[:, None] * sdom + offs_d[None, :])
            delta = tl.load(delta_base + offs_m)
        st = tl.dot(k, qt)  # (BLOCK_N, BLOCK_M): scores transposed
        if HAS_MASK:
            add = tl.load(m_base + offs_m[None, :] * smm + offs_n[:, None] * smn,
                          mask=(offs_m[None, :] < L) & (offs_n[:, None] < S), other=0.0).to(tl.float32)
            pt = tl.exp2(st * qk_scale + add * LOG2E - lse[None, :])
        else:
            pt = tl.exp2(st * qk_scale - lse[None, :])
        if MASKED:
            ok = row_ok[None, :]
            if CAUSAL:
                ok = ok & (offs_n[:, None] <= offs_m[None, :])
            pt = tl.where(ok, pt, 0.0)
        dv = tl.dot(pt.to(do.dtype), do, dv)
        dpt = tl.dot(v, tl.trans(do))
        dst = pt * (dpt - delta[None, :])
        dk = tl.dot(dst.to(qt.dtype), tl.trans(qt), dk)
    return dk, dv


@triton.jit
def attn_bwd_dkdv(
    Q, K, V, Mask, DO, LSE, Delta, DK, DV,       # pointers; DO (B, H, L, D); DK, DV (B, HK, S, D) contiguous
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn,  # strides of Q, K, V (batch, head, position)
    smb, smh, smm, smn,                          # strides of the additive mask (0 where broadcast)
    sdob, sdoh, sdom,                            # strides of DO (batch, head, position)
    H, GROUP, L, S, scale,                       # query heads, query heads per key head, lengths, softmax scale
    HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
):
    start_n = tl.program_id(0)
    bhk = tl.program_id(1)
    HK = H // GROUP
    b = (bhk // HK).to(tl.int64)
    hk = (bhk % HK).to(tl.int64)
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    col_ok = offs_n < S
    k = tl.load(K + b * skb + hk * skh + offs_n[:, None] * skn + offs_d[None, :], mask=col_ok[:, None], other=0.0)
    v = tl.load(V + b * svb + hk * svh + offs_n[:, None] * svn + offs_d[None, :], mask=col_ok[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_D], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_D], tl.float32)
    qk_scale = scale * LOG2E
    l_full = (L // BLOCK_M) * BLOCK_M  # query blocks inside L
    if CAUSAL:
        # Queries before this key block see none of it; those on its diagonal see part of it.
        diag = start_n * BLOCK_N
        lo = diag + BLOCK_N
    else:
        diag = 0
        lo = 0
    for g in range(0, GROUP):
        h = hk * GROUP + g
        bh = b * H + h
        q_base = Q + b * sqb + h * sqh
        do_base = DO + b * sdob + h * sdoh
        m_base = Mask + b * smb + h * smh
        if CAUSAL:
            dk, dv = _dkdv_blocks(dk, dv, k, v, q_base, do_base, LSE + bh * L, Delta + bh * L, m_base, offs_n, diag,
                                  tl.minimum(lo, L), sqm, sdom, smm, smn, L, S, qk_scale, HEAD_D, BLOCK_M, True,
                                  CAUSAL, HAS_MASK)
        dk, dv = _dkdv_blocks(dk, dv, k, v, q_base, do_base, LSE + bh * L, Delta + bh * L, m_base, offs_n, lo,
                              l_full, sqm, sdom, smm, smn, L, S, qk_scale, HEAD_D, BLOCK_M, False, CAUSAL, HAS_MASK)
        dk, dv = _dkdv_blocks(dk, dv, k, v, q_base, do_base, LSE + bh * L, Delta + bh * L, m_base, offs_n,
                              tl.maximum(lo, l_full), L, sqm, sdom, smm, smn, L, S, qk_scale, HEAD_D, BLOCK_M, True,
                              CAUSAL, HAS_MASK)
    out_rows = bhk.to(tl.int64) * S + offs_n
    tl.store(DK + out_rows[:, None] * HEAD_D + offs_d[None, :], (dk * scale).to(DK.dtype.element_ty),
             mask=col_ok[:, None])
    tl.store(DV + out_rows[:, None] * HEAD_D + offs_d[None, :], dv.to(DV.dtype.element_ty), mask=col_ok[:, None])


@triton.jit
def _dq_blocks(dq, q, do, lse, delta, k_base, v_base, m_base, offs_m, lo, hi, skn, svn, smm, smn, L, S, qk_scale,
               HEAD_D: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
               HAS_MASK: tl.constexpr):
    """dQ of one query block over the key blocks [lo, hi); MASKED applies the length and causal masks."""
    offs_d = tl.arange(0, HEAD_D)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        if MASKED:
            col_ok = offs_n < S
            k = tl.load(k_base + offs_n[:, None] * skn + offs_d[None, :], mask=col_ok[:, None], other=0.0)
            vt = tl.load(v_base + offs_n[None, :] * svn + offs_d[:, None], mask=col_ok[None, :], other=0.0)
        else:
            k = tl.load(k_base + offs_n[:, None] * skn + offs_d[None, :])
            vt = tl.load(v_base + offs_n[None, :] * svn + offs_d[:, None])
        s = tl.dot(q, tl.trans(k))
        if HAS_MASK:
            add = tl.load(m_base + offs_m[:, None] * smm + offs_n[None, :] * smn,
                          mask=(offs_m[:, None] < L) & (offs_n[None, :] < S), other=0.0).to(tl.float32)
            p = tl.exp2(s * qk_scale + add * LOG2E - lse[:, None])
        else:
            p = tl.exp2(s * qk_scale - lse[:, None])
        if MASKED:
            ok = col_ok[None, :]
            if CAUSAL:
                ok = ok & (offs_n[None, :] <= offs_m[:, None])
            p = tl.where(ok, p, 0.0)
        dp = tl.dot(do, vt)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    return dq


@triton.jit
def attn_bwd_dq(
    Q, K, V, Mask, DO, LSE, Delta, DQ,           # pointers; DO (B, H, L, D); DQ (B, H, L, D) contiguous
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn,  # strides of Q, K, V (batch, head, position)
    smb, smh, smm, smn,                          # strides of the additive mask (0 where broadcast)
    sdob, sdoh, sdom,                            # strides of DO (batch, head, position)
    H, GROUP, L, S, scale,                       # query heads, query heads per key head, lengths, softmax scale
    HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
):
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)  # the longest causal rows first
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    row_ok = offs_m < L
    rows = bh.to(tl.int64) * L + offs_m
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    do = tl.load(DO + b * sdob + h * sdoh + offs_m[:, None] * sdom + offs_d[None, :], mask=row_ok[:, None],
                 other=0.0)
    lse = tl.load(LSE + rows, mask=row_ok, other=0.0)
    delta = tl.load(Delta + rows, mask=row_ok, other=0.0)
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    m_base = Mask + b * smb + h * smh
    dq = tl.zeros([BLOCK_M, HEAD_D], tl.float32)
    qk_scale = scale * LOG2E
    s_full = (S // BLOCK_N) * BLOCK_N
    if CAUSAL:
        full = tl.minimum(start_m * BLOCK_M, s_full)
        end = tl.minimum((start_m + 1) * BLOCK_M, S)
    else:
        full = s_full
        end = S
    dq = _dq_blocks(dq, q, do, lse, delta, k_base, v_base, m_base, offs_m, 0, full, skn, svn, smm, smn, L, S,
                    qk_scale, HEAD_D, BLOCK_N, False, CAUSAL, HAS_MASK)
    dq = _dq_blocks(dq, q, do, lse, delta, k_base, v_base, m_base, offs_m, full, end, skn, svn, smm, smn, L, S,
                    qk_scale, HEAD_D, BLOCK_N, True, CAUSAL, HAS_MASK)
    tl.store(DQ + rows[:, None] * HEAD_D + offs_d[None, :], (dq * scale).to(DQ.dtype.element_ty),
             mask=row_ok[:, None])
