"""Flash attention (Dao et al., FlashAttention-2), forward and backward, with causal masking, an optional additive
mask and grouped-query attention (key/value head ``h // GROUP`` serves query head ``h``; K and V are never repeated).

Scores are kept in the base-2 domain (``s2 = (q . k * scale + mask) * log2(e)``) so the kernels use ``exp2``; the
forward saves ``lse2 = max + log2(sum exp2)`` per query row (float32), which the backward uses to recompute the
probabilities block by block. Nothing of size L x S ever reaches memory.

Bytes: the forward reads Q, K, V once per query block row (K, V re-read L / BLOCK_M times, mostly from L2) and
writes O; FLOPs ``4 * B * H * L * S * D`` (half that with causal masking). The backward is two kernels without
atomics: ``attn_bwd_dkdv`` owns a key block and loops over every query block of every query head of its group;
``attn_bwd_dq`` owns a query block and loops over the key blocks. Ragged tails are masked on every load.

Q, K, V, mask are strided (unit stride on the last dim); O, dO, dQ, dK, dV are contiguous (B, heads, len, D).
"""

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def attn_fwd(
    Q, K, V, Mask, O, LSE,                       # pointers; LSE (B * H, L) float32
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn,  # strides of Q, K, V (batch, head, position)
    smb, smh, smm, smn,                          # strides of the additive mask (0 where broadcast)
    H, GROUP, L, S, scale,                       # query heads, query heads per key head, lengths, softmax scale
    HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
):
    start_m = tl.program_id(0)
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
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (start_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < S
        kt = tl.load(k_base + offs_n[None, :] * skn + offs_d[:, None], mask=col_ok[None, :], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        if HAS_MASK:
            s += tl.load(m_base + offs_m[:, None] * smm + offs_n[None, :] * smn,
                         mask=row_ok[:, None] & col_ok[None, :], other=0.0).to(tl.float32) * LOG2E
        ok = col_ok[None, :]
        if CAUSAL:
            ok = ok & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(ok, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)  # rows with nothing visible yet
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + offs_n[:, None] * svn + offs_d[None, :], mask=col_ok[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / l_i[:, None]
    o_rows = bh.to(tl.int64) * L + offs_m
    tl.store(O + o_rows[:, None] * HEAD_D + offs_d[None, :], out.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + o_rows, m_i + tl.log2(l_i), mask=row_ok)


@triton.jit
def attn_bwd_pre(
    O, DO, Delta,                    # pointers: O, dO contiguous (rows, HEAD_D); Delta (rows,) float32
    R,                               # rows (B * H * L)
    HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr,
):
    # delta_i = sum_d dO[i, d] * O[i, d], the row term of the softmax backward.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    ok = rows < R
    r64 = rows.to(tl.int64)
    o = tl.load(O + r64[:, None] * HEAD_D + offs_d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
    do = tl.load(DO + r64[:, None] * HEAD_D + offs_d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
    tl.store(Delta + r64, tl.sum(o * do, 1), mask=ok)


@triton.jit
def attn_bwd_dkdv(
    Q, K, V, Mask, DO, LSE, Delta, DK, DV,       # pointers; DO (B, H, L, D), DK, DV (B, HK, S, D) contiguous
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn,  # strides of Q, K, V (batch, head, position)
    smb, smh, smm, smn,                          # strides of the additive mask (0 where broadcast)
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
    lo = 0
    if CAUSAL:
        lo = (start_n * BLOCK_N // BLOCK_M) * BLOCK_M  # earlier queries see none of these keys
    for g in range(0, GROUP):
        h = hk * GROUP + g
        bh = b * H + h
        q_base = Q + b * sqb + h * sqh
        m_base = Mask + b * smb + h * smh
        for start_m in range(lo, L, BLOCK_M):
            offs_m = start_m + tl.arange(0, BLOCK_M)
            row_ok = offs_m < L
            qt = tl.load(q_base + offs_m[None, :] * sqm + offs_d[:, None], mask=row_ok[None, :], other=0.0)
            st = tl.dot(k, qt) * qk_scale  # (BLOCK_N, BLOCK_M): scores transposed
            if HAS_MASK:
                st += tl.load(m_base + offs_m[None, :] * smm + offs_n[:, None] * smn,
                              mask=row_ok[None, :] & col_ok[:, None], other=0.0).to(tl.float32) * LOG2E
            lse = tl.load(LSE + bh * L + offs_m, mask=row_ok, other=0.0)
            ok = row_ok[None, :] & col_ok[:, None]
            if CAUSAL:
                ok = ok & (offs_n[:, None] <= offs_m[None, :])
            pt = tl.where(ok, tl.exp2(st - lse[None, :]), 0.0)
            do = tl.load(DO + (bh * L + offs_m)[:, None] * HEAD_D + offs_d[None, :], mask=row_ok[:, None],
                         other=0.0)
            dv = tl.dot(pt.to(do.dtype), do, dv)
            dpt = tl.dot(v, tl.trans(do))
            delta = tl.load(Delta + bh * L + offs_m, mask=row_ok, other=0.0)
            dst = pt * (dpt - delta[None, :])
            dk = tl.dot(dst.to(qt.dtype), tl.trans(qt), dk)
    out_rows = bhk.to(tl.int64) * S + offs_n
    tl.store(DK + out_rows[:, None] * HEAD_D + offs_d[None, :], (dk * scale).to(DK.dtype.element_ty),
             mask=col_ok[:, None])
    tl.store(DV + out_rows[:, None] * HEAD_D + offs_d[None, :], dv.to(DV.dtype.element_ty), mask=col_ok[:, None])


@triton.jit
def attn_bwd_dq(
    Q, K, V, Mask, DO, LSE, Delta, DQ,           # pointers; DO, DQ (B, H, L, D) contiguous
    sqb, sqh, sqm, skb, skh, skn, svb, svh, svn,  # strides of Q, K, V (batch, head, position)
    smb, smh, smm, smn,                          # strides of the additive mask (0 where broadcast)
    H, GROUP, L, S, scale,                       # query heads, query heads per key head, lengths, softmax scale
    HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    row_ok = offs_m < L
    rows = bh.to(tl.int64) * L + offs_m
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    do = tl.load(DO + rows[:, None] * HEAD_D + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    lse = tl.load(LSE + rows, mask=row_ok, other=0.0)
    delta = tl.load(Delta + rows, mask=row_ok, other=0.0)
    k_base = K + b * skb + hk * skh
    v_base = V + b * svb + hk * svh
    m_base = Mask + b * smb + h * smh
    dq = tl.zeros([BLOCK_M, HEAD_D], tl.float32)
    qk_scale = scale * LOG2E
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (start_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < S
        kt = tl.load(k_base + offs_n[None, :] * skn + offs_d[:, None], mask=col_ok[None, :], other=0.0)
        vt = tl.load(v_base + offs_n[None, :] * svn + offs_d[:, None], mask=col_ok[None, :], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        if HAS_MASK:
            s += tl.load(m_base + offs_m[:, None] * smm + offs_n[None, :] * smn,
                         mask=row_ok[:, None] & col_ok[None, :], other=0.0).to(tl.float32) * LOG2E
        ok = row_ok[:, None] & col_ok[None, :]
        if CAUSAL:
            ok = ok & (offs_n[None, :] <= offs_m[:, None])
        p = tl.where(ok, tl.exp2(s - lse[:, None]), 0.0)
        dp = tl.dot(do, vt)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(kt.dtype), tl.trans(kt), dq)
    tl.store(DQ + rows[:, None] * HEAD_D + offs_d[None, :], (dq * scale).to(DQ.dtype.element_ty),
             mask=row_ok[:, None])
