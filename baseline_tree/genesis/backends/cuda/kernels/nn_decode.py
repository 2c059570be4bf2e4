"""Triton kernels of one decoding step over a preallocated KV cache.

Both read the cache position from device memory rather than from an argument, so a step captured in a CUDA graph
stays valid while the cache grows.

- ``kv_write_kernel``: copy the new keys (or values) of T positions into the cache at the device-held position.
- ``rope_cache_kernel``: for one new token, rotary embedding of the queries and keys and the cache writes of a
  layer in one launch (instead of two RoPE and two cache-write kernels).
- ``decode_attention_kernel`` + ``decode_combine_kernel``: attention of one query per head over the cached keys, in
  the split-K form of flash decoding (Dao et al., 2023). The key axis is cut into fixed splits; each program
  handles one (batch, KV head, split) and all the query heads that share that KV head (grouped-query attention
  without repeating K/V), writing an unnormalized partial output with its running max and sum. Splits past the
  valid length exit at once. The combine kernel merges the partials of each head with the usual log-sum-exp
  rescaling. The grid depends only on the cache size, so one captured graph serves every length.
"""

from __future__ import annotations

import triton
import triton.language as tl

NEG_BIG = tl.constexpr(-1.0e30)  # the running max starts finite, so fully masked blocks never compute (-inf) - (-inf)


@triton.jit
def kv_write_kernel(cache, new, position, T, H, n_sb, n_sh, n_st, c_sb, c_sh, c_ss, D, BLOCK_D: tl.constexpr):
    """cache[b, h, position + t, :] = new[b, h, t, :]; one program per (b, h, t); unit stride on D."""
    pid = tl.program_id(0)
    t = pid % T
    bh = pid // T
    h = bh % H
    b = bh // H
    start = tl.load(position)
    d = tl.arange(0, BLOCK_D)
    dmask = d < D
    x = tl.load(new + b * n_sb + h * n_sh + t * n_st + d, mask=dmask)
    tl.store(cache + b * c_sb + h * c_sh + (start + t) * c_ss + d, x, mask=dmask)


@triton.jit
def decode_attention_kernel(Q, K, V, length_ptr, MASK, PO, PM, PL, sm_scale, HK, D, num_splits,
                            q_sb, q_sh, k_sb, k_sh, k_ss, v_sb, v_sh, v_ss, mask_sb,
                            GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_D: tl.constexpr, SPLIT: tl.constexpr, HAS_MASK: tl.constexpr,
                            IEEE: tl.constexpr):
    """Partial attention of GROUP query heads over keys [split * SPLIT, min((split + 1) * SPLIT, length)).

    Q (B, H, D) rows; K, V (B, HK, S, D) with unit stride on D; MASK (B, >= length) int8, nonzero = attend.
    PO (B, H, num_splits, D) float32 unnormalized outputs, PM / PL (B, H, num_splits) running max and sum.
    """
    pid = tl.program_id(0)
    split = tl.program_id(1)
    b = pid // HK
    kh = pid % HK
    length = tl.load(length_ptr).to(tl.int32)
    start = split * SPLIT
    end = tl.minimum(start + SPLIT, length)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    heads = kh * GROUP + g
    gmask = g < GROUP
    dmask = d < D
    q = tl.load(Q + b * q_sb + heads[:, None] * q_sh + d[None, :], mask=gmask[:, None] & dmask[None, :], other=0.0)
    m_i = tl.full([BLOCK_G], NEG_BIG, tl.float32)
    l_i = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], tl.float32)
    k_base = K + b * k_sb + kh * k_sh
    v_base = V + b * v_sb + kh * v_sh
    for n0 in range(start, end, BLOCK_N):
        n = n0 + tl.arange(0, BLOCK_N)
        valid = n < end
        kv_mask = valid[:, None] & dmask[None, :]
        k = tl.load(k_base + n[:, None] * k_ss + d[None, :], mask=kv_mask, other=0.0)  # (BLOCK_N, BLOCK_D)
        if IEEE:
            s = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))
        s = s * sm_scale  # (BLOCK_G, BLOCK_N)
        if HAS_MASK:
            keep = tl.load(MASK + b * mask_sb + n, mask=valid, other=0)
            valid = valid & (keep != 0)
        s = tl.where(valid[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + n[:, None] * v_ss + d[None, :], mask=kv_mask, other=0.0)
        if IEEE:
            acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32), input_precision="ieee")
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    H = HK * GROUP
    row = (b * H + heads) * num_splits + split  # (BLOCK_G,)
    tl.store(PM + row, m_i, mask=gmask)
    tl.store(PL + row, l_i, mask=gmask)
    tl.store(PO + row[:, None] * D + d[None, :], acc, mask=gmask[:, None] & dmask[None, :])


@triton.jit
def decode_combine_kernel(PO, PM, PL, OUT, num_splits, D, o_sb, o_sh, H,
                          BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    """OUT[b, h, :] = sum_s w_s PO[s] / sum_s w_s PL[s] with w_s = exp(PM[s] - max PM); one program per (b, h)."""
    pid = tl.program_id(0)
    b = pid // H
    h = pid % H
    d = tl.arange(0, BLOCK_D)
    dmask = d < D
    base = pid * num_splits
    m_all = tl.full([BLOCK_S], NEG_BIG, tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        s = s0 + tl.arange(0, BLOCK_S)
        m_all = tl.maximum(m_all, tl.load(PM + base + s, mask=s < num_splits, other=NEG_BIG))
    m = tl.max(m_all, 0)
    total = tl.zeros([BLOCK_S], tl.float32)
    acc = tl.zeros([BLOCK_S, BLOCK_D], tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        s = s0 + tl.arange(0, BLOCK_S)
        smask = s < num_splits
        w = tl.exp(tl.load(PM + base + s, mask=smask, other=NEG_BIG) - m)
        w = tl.where(smask, w, 0.0)
        total += w * tl.load(PL + base + s, mask=smask, other=0.0)
        o = tl.load(PO + (base + s)[:, None] * D + d[None, :], mask=smask[:, None] & dmask[None, :], other=0.0)
        acc += w[:, None] * o
    out = tl.sum(acc, 0) / tl.sum(total, 0)
    tl.store(OUT + b * o_sb + h * o_sh + d, out.to(OUT.dtype.element_ty), mask=dmask)


@triton.jit
def rope_cache_kernel(q, k, v, cos, sin, q_out, k_cache, v_cache, position,
                      q_sb, q_sh, k_sb, k_sh, v_sb, v_sh, t_sb, kc_sb, kc_sh, kc_ss, vc_sb, vc_sh, vc_ss, H,
                      HALF: tl.constexpr, BLOCK: tl.constexpr):
    """One decoding token, one launch for a layer: rotate the query heads into ``q_out`` (B, H, 1, D), rotate the
    key heads into ``k_cache`` and copy the value heads into ``v_cache`` at the device-held position.

    One program per (batch row, head) over H query heads then HK key/value heads; q, k, v rows and the (B, D) cos/sin
    tables have unit stride along D. Tables are rounded to the input dtype first, as in ``rope_kernel``.
    """
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    cols = tl.arange(0, BLOCK)
    m = cols < HALF
    ty = q.dtype.element_ty
    t = b * t_sb + cols
    ca = tl.load(cos + t, mask=m, other=0.0).to(ty).to(tl.float32)
    cb = tl.load(cos + t + HALF, mask=m, other=0.0).to(ty).to(tl.float32)
    sa = tl.load(sin + t, mask=m, other=0.0).to(ty).to(tl.float32)
    sb = tl.load(sin + t + HALF, mask=m, other=0.0).to(ty).to(tl.float32)
    if h < H:
        src = q + b * q_sb + h * q_sh
        dst = q_out + (b * H + h) * (2 * HALF)
    else:
        j = h - H
        p = tl.load(position)
        src = k + b * k_sb + j * k_sh
        dst = k_cache + b * kc_sb + j * kc_sh + p * kc_ss
        vrow = v + b * v_sb + j * v_sh
        vdst = v_cache + b * vc_sb + j * vc_sh + p * vc_ss
        tl.store(vdst + cols, tl.load(vrow + cols, mask=m), mask=m)
        tl.store(vdst + cols + HALF, tl.load(vrow + cols + HALF, mask=m), mask=m)
    x1 = tl.load(src + cols, mask=m, other=0.0).to(tl.float32)
    x2 = tl.load(src + cols + HALF, mask=m, other=0.0).to(tl.float32)
    tl.store(dst + cols, (x1 * ca - x2 * sa).to(ty), mask=m)
    tl.store(dst + cols + HALF, (x2 * cb + x1 * sb).to(ty), mask=m)
