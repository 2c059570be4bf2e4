"""Batch normalization and group normalization, forward and backward, on contiguous (N, C, S) arrays (batch norm
also on channels_last ones).

Batch norm (statistics per channel over N * S elements) runs in three launches each way:
  1. ``bn_partials``: program (c, p) reduces one chunk of channel c (the chunk runs over the channel's N * S elements
     in blocks that span at most two rows of S, so no element divides). Forward: the chunk's count, mean and sum of
     squared deviations (Welford per lane with one count for all lanes, lanes merged with Chan et al.'s
     parallel-variance formula, which stays accurate where ``E[x^2] - E[x]^2`` cancels). Backward: ``sum(dy)`` and
     ``sum(dy * (x - mean))``.
  2. ``bn_finalize`` / ``bn_bwd_finalize``: one program per channel merges its P partials in a fixed order (no atomics,
     so every statistic and the weight/bias gradients are bitwise reproducible), updates the running statistics and
     writes per-channel coefficients.
  3. ``bn_apply`` (forward and backward): one elementwise pass with the per-channel coefficients, from the last
     block to the first (the L2 cache still holds what the statistics pass read last).
channels_last input (and (N, C) input) is read in place as N * S rows of C channels by ``bn_partials_cl`` and
``bn_apply_cl``: (rows, channels) tiles whose columns are channels, so a program loads its coefficients once and
nothing is divided; the result keeps the input's layout.
Bytes: forward reads x twice and writes y (3 N C S elements); backward reads dy and x twice and writes dx
(5 N C S elements), plus O(C * P) partials.

Group norm: one program per (sample, group) walks the group's ``C / G * S`` contiguous elements: statistics (tiles
merged with Chan's formula), then normalization with the per-channel affine. Its backward writes per-(sample, channel)
partial sums of ``dy * xhat`` and ``dy`` (summed over the batch afterwards in a fixed order) and ``dx``. Bytes:
forward reads x twice and writes y; backward reads dy and x twice and writes dx.

All statistics and sums run in float32 (float64 for float64 input, ``F64``); results are stored in the output dtype.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _acc(v, F64: tl.constexpr):
    if F64:
        r = v.to(tl.float64)
    else:
        r = v.to(tl.float32)
    return r


@triton.jit
def _rsqrt(v):
    """``1 / sqrt(v)`` correctly rounded square root (``tl.sqrt`` is an approximation, float32 only in precision)."""
    if v.dtype.is_fp64():
        r = 1.0 / libdevice.sqrt(v)
    else:
        r = 1.0 / tl.sqrt_rn(v)
    return r


@triton.jit
def _merge(count, mean, m2, v, m, F64: tl.constexpr):
    """(count, mean, M2) of a running set merged with the valid elements ``v[m]`` of one tile (Chan et al.)."""
    v = _acc(v, F64)
    k = tl.sum(m.to(v.dtype), 0)
    tmean = tl.sum(tl.where(m, v, 0.0), 0) / tl.maximum(k, 1.0)
    d = tl.where(m, v - tmean, 0.0)
    tm2 = tl.sum(d * d, 0)
    total = count + k
    delta = tmean - mean
    frac = k / tl.maximum(total, 1.0)
    return total, mean + delta * frac, m2 + tm2 + delta * delta * count * frac


@triton.jit
def _lane_zeros(BLOCK: tl.constexpr, F64: tl.constexpr):
    """BLOCK lanes of zeros in the accumulation dtype (float64 for float64 input, else float32)."""
    if F64:
        z = tl.zeros([BLOCK], tl.float64)
    else:
        z = tl.zeros([BLOCK], tl.float32)
    return z


@triton.jit
def _lanes(cnt, mean, m2, s_g, s_gx, x, g, addr, m, mu, BACKWARD: tl.constexpr, F64: tl.constexpr):
    """The elements ``x[addr]`` (and ``g[addr]`` backward), one per lane, into the lanes' running sums: Welford's
    (count, mean, M2) forward, or sum(dy) and sum(dy * (x - mean)) backward."""
    v = _acc(tl.load(x + addr, mask=m, other=0.0), F64)
    if BACKWARD:
        gv = _acc(tl.load(g + addr, mask=m, other=0.0), F64)
        s_g += gv
        s_gx += tl.where(m, gv * (v - mu), 0.0)
    else:
        cnt += m.to(v.dtype)
        delta = tl.where(m, v - mean, 0.0)
        mean += delta / tl.maximum(cnt, 1.0)
        m2 += delta * tl.where(m, v - mean, 0.0)
    return cnt, mean, m2, s_g, s_gx


@triton.jit
def _merge_lanes(cnt, mean, m2, s_g, s_gx, BACKWARD: tl.constexpr):
    """A program's lanes merged over axis 0 into its partial: forward (count, mean, M2) with Chan's formula,
    backward (sum dy, sum dy (x - mean), 0)."""
    if BACKWARD:
        a0 = tl.sum(s_g, 0)
        a1 = tl.sum(s_gx, 0)
        a2 = a0 * 0.0
    else:
        a0 = tl.sum(cnt, 0)
        a1 = tl.sum(cnt * mean, 0) / tl.maximum(a0, 1.0)
        d = tl.where(cnt > 0, mean - a1, 0.0)
        a2 = tl.sum(m2, 0) + tl.sum(cnt * d * d, 0)
    return a0, a1, a2


@triton.jit
def _store_partials(part, plane, o, a0, a1, a2, mask):
    """A program's partial (a0, a1, a2) at ``o`` of the three planes of ``part``, ``plane`` elements apart (``mask``:
    None, or which lanes store)."""
    tl.store(part + o, a0, mask=mask)
    tl.store(part + plane + o, a1, mask=mask)
    tl.store(part + 2 * plane + o, a2, mask=mask)


@triton.jit
def _channel_addr(c, e0, lanes, C, S, STRADDLE: tl.constexpr):
    """Where elements ``e0 + lanes`` of channel c's N * S (flat over (n, s)) lie in (N, C, S) memory. ``STRADDLE``
    (BLOCK <= S): the block covers at most two rows, so a lane is in the first row or the next one, with no
    division; else every lane divides by S."""
    if STRADDLE:
        n0 = e0 // S
        a0 = (n0 * C + c) * S + (e0 - n0 * S)
        addr = tl.where(lanes < (n0 + 1) * S - e0, a0 + lanes, a0 + (C - 1) * S + lanes)
    else:
        e = e0 + lanes
        n = e // S
        addr = (n * C + c) * S + (e - n * S)
    return addr


@triton.jit
def _chunk_sums(x, g, mu, c, p, NS, C, S, chunk, BACKWARD: tl.constexpr, STRADDLE: tl.constexpr,
                F64: tl.constexpr, BLOCK: tl.constexpr):
    """Elements [p chunk, (p + 1) chunk) of channel c's N * S (chunk: a multiple of BLOCK) reduced to (count, mean,
    M2) forward or (sum dy, sum dy (x - mu), 0) backward. Every block but the last is full, so all lanes share one
    count: the forward's Welford update divides by that count once per block, not per element. The last block is
    reduced as one tile and merged with Chan's formula; the lanes are merged once."""
    lanes = tl.arange(0, BLOCK)
    zeros = _lane_zeros(BLOCK, F64)
    mean, m2, s_g, s_gx = zeros, zeros, zeros, zeros
    k = tl.sum(zeros, 0)  # the count every lane has seen
    start = p * chunk
    stop = tl.minimum(start + chunk, NS)
    full = start + (stop - start) // BLOCK * BLOCK
    for e0 in range(start, full, BLOCK):
        addr = _channel_addr(c, e0, lanes, C, S, STRADDLE)
        v = _acc(tl.load(x + addr), F64)
        if BACKWARD:
            gv = _acc(tl.load(g + addr), F64)
            s_g += gv
            s_gx += gv * (v - mu)
        else:
            k += 1.0
            d = v - mean
            mean += d * (1.0 / k)
            m2 += d * (v - mean)
    m = full + lanes < stop
    addr = _channel_addr(c, full, lanes, C, S, STRADDLE)
    v = _acc(tl.load(x + addr, mask=m, other=0.0), F64)
    if BACKWARD:
        gv = _acc(tl.load(g + addr, mask=m, other=0.0), F64)
        a0 = tl.sum(s_g + gv, 0)
        a1 = tl.sum(s_gx + gv * (v - mu), 0)
        a2 = a0 * 0.0
    else:
        lmean = tl.sum(mean, 0) / BLOCK
        d = mean - lmean
        a0, a1, a2 = _merge(k * BLOCK, lmean, tl.sum(m2, 0) + k * tl.sum(d * d, 0), v, m, F64)
    return a0, a1, a2


@triton.jit
def bn_partials(
    x, g, mean_in, part,                   # pointers: x, g (N, C, S) contiguous; mean_in (C,); part (3, C, P)
    NS, C, S, chunk, P,                    # NS = N * S elements per channel; chunk: a multiple of BLOCK
    BACKWARD: tl.constexpr, STRADDLE: tl.constexpr, F64: tl.constexpr, I64: tl.constexpr, BLOCK: tl.constexpr,
):
    """Program (c, p) stores the partial of chunk p of channel c (``_chunk_sums``)."""
    c = tl.program_id(0)
    p = tl.program_id(1)
    if I64:
        c = c.to(tl.int64)
        p = p.to(tl.int64)
    mu = 0.0
    if BACKWARD:
        mu = _acc(tl.load(mean_in + c), F64)
    a0, a1, a2 = _chunk_sums(x, g, mu, c, p, NS, C, S, chunk, BACKWARD, STRADDLE, F64, BLOCK)
    _store_partials(part, C * P, c * P + p, a0, a1, a2, None)


@triton.jit
def bn_finalize(
    part, w, b, rmean, rvar, save_mean, save_invstd, coef,   # part (3, C, P); w, b, running (C,); coef (2, C)
    C, P, momentum, eps,
    TRAINING: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, HAS_RUNNING: tl.constexpr,
    F64: tl.constexpr, BLOCK_P: tl.constexpr,
):
    c = tl.program_id(0)
    if TRAINING:
        ps = tl.arange(0, BLOCK_P)
        mp = ps < P
        cnt = _acc(tl.load(part + c * P + ps, mask=mp, other=0.0), F64)
        mean_p = _acc(tl.load(part + C * P + c * P + ps, mask=mp, other=0.0), F64)
        m2_p = _acc(tl.load(part + 2 * C * P + c * P + ps, mask=mp, other=0.0), F64)
        n = tl.sum(cnt, 0)
        mean = tl.sum(cnt * mean_p, 0) / n
        d = mean_p - mean
        var = (tl.sum(m2_p, 0) + tl.sum(cnt * d * d, 0)) / n
        if HAS_RUNNING:
            rm = _acc(tl.load(rmean + c), F64)
            rv = _acc(tl.load(rvar + c), F64)
            unbiased = var * n / tl.maximum(n - 1.0, 1.0)
            tl.store(rmean + c, ((1.0 - momentum) * rm + momentum * mean).to(rmean.dtype.element_ty))
            tl.store(rvar + c, ((1.0 - momentum) * rv + momentum * unbiased).to(rvar.dtype.element_ty))
    else:
        mean = _acc(tl.load(rmean + c), F64)
        var = _acc(tl.load(rvar + c), F64)
    invstd = _rsqrt(var + eps)
    scale = invstd
    if HAS_W:
        scale = scale * _acc(tl.load(w + c), F64)
    shift = -mean * scale
    if HAS_B:
        shift = shift + _acc(tl.load(b + c), F64)
    tl.store(save_mean + c, mean.to(save_mean.dtype.element_ty))
    tl.store(save_invstd + c, invstd.to(save_invstd.dtype.element_ty))
    tl.store(coef + c, scale)
    tl.store(coef + C + c, shift)


@triton.jit
def _apply_store(x, g, coef, y, offs, m, c, mc, C, BACKWARD: tl.constexpr):
    """``y[offs] = x * scale[c] + shift[c]`` (forward) or ``a[c] (dy - k1[c] - (x - mean[c]) k2[c])`` (backward)."""
    v = tl.load(x + offs, mask=m, other=0.0)
    a = tl.load(coef + c, mask=mc, other=0.0)
    if BACKWARD:
        gv = tl.load(g + offs, mask=m, other=0.0).to(a.dtype)
        k1 = tl.load(coef + C + c, mask=mc, other=0.0)
        k2 = tl.load(coef + 2 * C + c, mask=mc, other=0.0)
        mu = tl.load(coef + 3 * C + c, mask=mc, other=0.0)
        out = a * (gv - k1 - (v.to(a.dtype) - mu) * k2)
    else:
        out = v.to(a.dtype) * a + tl.load(coef + C + c, mask=mc, other=0.0)
    tl.store(y + offs, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def bn_apply(
    x, g, coef, y,                         # pointers: x, g, y (N, C, S) contiguous; coef (K, C)
    C, S, total,                           # sizes (total = N * C * S)
    BACKWARD: tl.constexpr, STRADDLE: tl.constexpr, I64: tl.constexpr, BLOCK: tl.constexpr,
):
    """Forward: ``y = x * scale[c] + shift[c]``. Backward: ``dx = a[c] * (dy - k1[c] - (x - mean[c]) * k2[c])``.

    Program i maps one block of BLOCK flat elements, from the last block to the first: the statistics pass read the
    end last, so this pass starts on what the L2 cache still holds. ``STRADDLE`` (BLOCK <= S): a block lies in at
    most two rows of S, whose two channels come from one division per program; else each element's channel is
    ``(offs // S) % C``."""
    pid = tl.num_programs(0) - 1 - tl.program_id(0)
    if I64:
        pid = pid.to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    e0 = pid * BLOCK
    offs = e0 + lanes
    m = offs < total
    if STRADDLE:
        r0 = e0 // S
        c = tl.where(lanes < (r0 + 1) * S - e0, r0 % C, (r0 + 1) % C)
        mc = True
    else:
        c = (offs // S) % C
        mc = m
    _apply_store(x, g, coef, y, offs, m, c, mc, C, BACKWARD)


@triton.jit
def bn_bwd_finalize(
    part, w, mean, stat, gw, gb, coef,     # part (3, C, P); w, mean (C,); stat: invstd, or running var in eval
    C, P, count, eps,                      # count: N * S; gw, gb (C,); coef (4, C)
    TRAINING: tl.constexpr, HAS_W: tl.constexpr, F64: tl.constexpr, BLOCK_P: tl.constexpr,
):
    c = tl.program_id(0)
    ps = tl.arange(0, BLOCK_P)
    mp = ps < P
    sum_g = tl.sum(_acc(tl.load(part + c * P + ps, mask=mp, other=0.0), F64), 0)
    sum_gx = tl.sum(_acc(tl.load(part + C * P + c * P + ps, mask=mp, other=0.0), F64), 0)
    mu = _acc(tl.load(mean + c), F64)
    if TRAINING:
        r = _acc(tl.load(stat + c), F64)
    else:
        r = _rsqrt(_acc(tl.load(stat + c), F64) + eps)
    a = r
    if HAS_W:
        a = a * _acc(tl.load(w + c), F64)
    if TRAINING:
        k1 = sum_g / count
        k2 = sum_gx * r * r / count
    else:
        k1 = sum_g * 0.0
        k2 = sum_gx * 0.0
    tl.store(gw + c, (sum_gx * r).to(gw.dtype.element_ty))
    tl.store(gb + c, sum_g.to(gb.dtype.element_ty))
    tl.store(coef + c, a)
    tl.store(coef + C + c, k1)
    tl.store(coef + 2 * C + c, k2)
    tl.store(coef + 3 * C + c, mu)


@triton.jit
def bn_partials_cl(
    x, g, mean_in, part,                   # pointers: x, g as R rows of C channels; mean_in (C,); part (3, C, P)
    R, C, RCH, P,                          # R = N * S rows; each program takes RCH rows of one block of BK channels
    BACKWARD: tl.constexpr, F64: tl.constexpr, I64: tl.constexpr, BR: tl.constexpr, BK: tl.constexpr,
):
    """``bn_partials`` for channels_last input (and (N, C) input), read in place: program (cb, p) reduces rows
    [p RCH, (p + 1) RCH) of the BK channels of block cb in (BR, BK) tiles, one result per channel (the channel is the
    tile's column: no division anywhere)."""
    p = tl.program_id(1)
    rows = tl.arange(0, BR)[:, None]
    c = tl.program_id(0) * BK + tl.arange(0, BK)[None, :]
    cm = c < C
    r_lo = p * RCH
    r_hi = tl.minimum(r_lo + RCH, R)
    if F64:
        zeros = tl.zeros([BR, BK], tl.float64)
    else:
        zeros = tl.zeros([BR, BK], tl.float32)
    cnt, mean, m2, s_g, s_gx = zeros, zeros, zeros, zeros, zeros
    mu = zeros
    if BACKWARD:
        mu = zeros + _acc(tl.load(mean_in + c, mask=cm, other=0.0), F64)
    for r0 in range(r_lo, r_hi, BR):
        r = r0 + rows
        if I64:
            r = r.to(tl.int64)
        m = (r < r_hi) & cm
        cnt, mean, m2, s_g, s_gx = _lanes(cnt, mean, m2, s_g, s_gx, x, g, r * C + c, m, mu, BACKWARD, F64)
    a0, a1, a2 = _merge_lanes(cnt, mean, m2, s_g, s_gx, BACKWARD)
    c1 = tl.program_id(0) * BK + tl.arange(0, BK)
    _store_partials(part, C * P, c1 * P + p, a0, a1, a2, c1 < C)


@triton.jit
def bn_apply_cl(
    x, g, coef, y,                         # pointers: x, g, y as R rows of C channels; coef (2 or 4, C)
    R, C,
    BACKWARD: tl.constexpr, I64: tl.constexpr, BR: tl.constexpr, BK: tl.constexpr,
):
    """``bn_apply`` for channels_last input: program (i, j) maps the (BR, BK) tile at rows i BR, channels j BK;
    the coefficients are loaded once per tile column."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)[:, None]
    if I64:
        r = r.to(tl.int64)
    c = tl.program_id(1) * BK + tl.arange(0, BK)[None, :]
    mc = c < C
    m = (r < R) & mc
    offs = r * C + c
    _apply_store(x, g, coef, y, offs, m, c, mc, C, BACKWARD)


@triton.jit
def gn_fwd(
    x, w, b, y, mean, rstd,                # pointers: x, y (N, C, S) contiguous; w, b (C,); mean, rstd (N * G,)
    C, S, G, eps,                          # sizes and epsilon
    HAS_W: tl.constexpr, HAS_B: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    cpg = C // G
    K = cpg * S
    base = row.to(tl.int64) * K
    c0 = (row % G) * cpg
    if F64:
        zero = tl.zeros([], tl.float64)
    else:
        zero = tl.zeros([], tl.float32)
    cnt, mu, m2 = zero, zero, zero
    for k0 in range(0, K, BLOCK):
        k = k0 + tl.arange(0, BLOCK)
        m = k < K
        cnt, mu, m2 = _merge(cnt, mu, m2, tl.load(x + base + k, mask=m, other=0.0), m, F64)
    r = _rsqrt(m2 / K + eps)
    tl.store(mean + row, mu.to(mean.dtype.element_ty))
    tl.store(rstd + row, r.to(rstd.dtype.element_ty))
    for k0 in range(0, K, BLOCK):
        k = k0 + tl.arange(0, BLOCK)
        m = k < K
        out = (_acc(tl.load(x + base + k, mask=m, other=0.0), F64) - mu) * r
        c = c0 + k // S
        if HAS_W:
            out = out * _acc(tl.load(w + c, mask=m, other=0.0), F64)
        if HAS_B:
            out = out + _acc(tl.load(b + c, mask=m, other=0.0), F64)
        tl.store(y + base + k, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def gn_bwd(
    g, x, w, mean, rstd, dx, part,         # pointers: g, x, dx (N, C, S); w (C,); mean, rstd (N * G,); part (2, N, C)
    N, C, S, G,                            # sizes
    HAS_W: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, BLOCK_S: tl.constexpr,
):
    """``dx = rstd * (dy * w - mean(dy * w) - xhat * mean(dy * w * xhat))`` over the group; per-(n, c) sums of
    ``dy * xhat`` and ``dy`` go to ``part`` for the weight and bias gradients."""
    row = tl.program_id(0)
    cpg = C // G
    K = cpg * S
    base = row.to(tl.int64) * K
    n = row // G
    c0 = (row % G) * cpg
    mu = _acc(tl.load(mean + row), F64)
    r = _acc(tl.load(rstd + row), F64)
    wa = mu * 0.0
    wb = mu * 0.0
    for cc in range(0, cpg):
        sa = tl.zeros([BLOCK_S], mu.dtype)
        sb = tl.zeros([BLOCK_S], mu.dtype)
        cbase = base + cc * S
        for s0 in range(0, S, BLOCK_S):
            s = s0 + tl.arange(0, BLOCK_S)
            m = s < S
            gv = _acc(tl.load(g + cbase + s, mask=m, other=0.0), F64)
            xh = (_acc(tl.load(x + cbase + s, mask=m, other=0.0), F64) - mu) * r
            sa += tl.where(m, gv * xh, 0.0)
            sb += gv
        a = tl.sum(sa, 0)
        b = tl.sum(sb, 0)
        c = c0 + cc
        tl.store(part + n * C + c, a)
        tl.store(part + N * C + n * C + c, b)
        if HAS_W:
            wc = _acc(tl.load(w + c), F64)
            a = a * wc
            b = b * wc
        wa += a
        wb += b
    wa = wa / K
    wb = wb / K
    for k0 in range(0, K, BLOCK):
        k = k0 + tl.arange(0, BLOCK)
        m = k < K
        gv = _acc(tl.load(g + base + k, mask=m, other=0.0), F64)
        if HAS_W:
            gv = gv * _acc(tl.load(w + c0 + k // S, mask=m, other=0.0), F64)
        xh = (_acc(tl.load(x + base + k, mask=m, other=0.0), F64) - mu) * r
        tl.store(dx + base + k, (r * (gv - wb - xh * wa)).to(dx.dtype.element_ty), mask=m)


@triton.jit
def gn_partials(
    x, g, mean, rstd, part,                # pointers: x, g (R, K) rows (g, mean, rstd: backward only); part (3, R, P)
    K, chunk, P,                           # row length; elements of a row per program; programs per row
    BACKWARD: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr,
):
    """Program (row, p) reduces elements [p chunk, (p + 1) chunk) of one group's contiguous row, for groups too few
    to fill the device one program each. Forward: (count, mean, M2) with Welford lanes. Backward (one channel per
    group): ``sum(dy * xhat)`` and ``sum(dy)``."""
    row = tl.program_id(0)
    p = tl.program_id(1)
    R = tl.num_programs(0)
    base = row.to(tl.int64) * K
    zeros = _lane_zeros(BLOCK, F64)
    cnt, mu_l, m2, s_g, s_gx = zeros, zeros, zeros, zeros, zeros
    mu = 0.0
    r = 1.0
    if BACKWARD:
        mu = _acc(tl.load(mean + row), F64)
        r = _acc(tl.load(rstd + row), F64)
    lanes = tl.arange(0, BLOCK)
    for k0 in range(p * chunk, tl.minimum(p * chunk + chunk, K), BLOCK):
        m = k0 + lanes < K
        cnt, mu_l, m2, s_g, s_gx = _lanes(cnt, mu_l, m2, s_g, s_gx, x, g, base + k0 + lanes, m, mu, BACKWARD, F64)
    a0, a1, a2 = _merge_lanes(cnt, mu_l, m2, s_g, s_gx, BACKWARD)
    if BACKWARD:  # sum(dy (x - mean)) rstd = sum(dy xhat)
        a0, a1 = a1 * r, a0
    _store_partials(part, R * P, row * P + p, a0, a1, a2, None)


@triton.jit
def gn_apply(
    x, g, w, b, y, mean, rstd, part, gpart,  # x, g, y (R, K) rows; w, b (C,); mean, rstd (R,); part (3, R, P);
    C, S, G, K, P, eps,                    # gpart (2, N, C): backward's per-(sample, channel) sums
    BACKWARD: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, ONE: tl.constexpr, F64: tl.constexpr,
    BLOCK_P: tl.constexpr, BLOCK: tl.constexpr,
):
    """Program (row, block) merges its row's P partials of ``gn_partials`` (every program of the row the same way),
    then maps one block of the row. Forward: ``y = (x - mean) rstd w[c] + b[c]``, block 0 storing the row's mean and
    rstd. Backward (``ONE`` channel per group): ``dx = rstd (dy w - mean(dy) w - xhat mean(dy xhat) w)``, block 0
    storing the row's two sums for the weight and bias gradients."""
    row = tl.program_id(0)
    blk = tl.program_id(1)
    base = row.to(tl.int64) * K
    c0 = (row % G) * (C // G)
    ps = tl.arange(0, BLOCK_P)
    mp = ps < P
    a0 = _acc(tl.load(part + row * P + ps, mask=mp, other=0.0), F64)
    a1 = _acc(tl.load(part + (tl.num_programs(0) + row) * P + ps, mask=mp, other=0.0), F64)
    k = blk * BLOCK + tl.arange(0, BLOCK)
    m = k < K
    v = _acc(tl.load(x + base + k, mask=m, other=0.0), F64)
    if ONE:
        c = c0
        mc = True
    else:
        c = c0 + k // S
        mc = m
    if BACKWARD:
        mu = _acc(tl.load(mean + row), F64)
        r = _acc(tl.load(rstd + row), F64)
        sxh = tl.sum(a0, 0)
        sg = tl.sum(a1, 0)
        if blk == 0:
            n = row // G
            tl.store(gpart + n * C + c0, sxh)
            tl.store(gpart + (tl.num_programs(0) // G + n) * C + c0, sg)
        gv = _acc(tl.load(g + base + k, mask=m, other=0.0), F64)
        if HAS_W:
            wc = _acc(tl.load(w + c0), F64)
            gv = gv * wc
            sxh = sxh * wc
            sg = sg * wc
        out = r * (gv - sg / K - (v - mu) * r * (sxh / K))
    else:
        a2 = _acc(tl.load(part + (2 * tl.num_programs(0) + row) * P + ps, mask=mp, other=0.0), F64)
        n = tl.sum(a0, 0)
        mu = tl.sum(a0 * a1, 0) / n
        d = a1 - mu
        r = _rsqrt((tl.sum(a2, 0) + tl.sum(a0 * d * d, 0)) / n + eps)
        if blk == 0:
            tl.store(mean + row, mu.to(mean.dtype.element_ty))
            tl.store(rstd + row, r.to(rstd.dtype.element_ty))
        out = (v - mu) * r
        if HAS_W:
            out = out * _acc(tl.load(w + c, mask=mc, other=0.0), F64)
        if HAS_B:
            out = out + _acc(tl.load(b + c, mask=mc, other=0.0), F64)
    tl.store(y + base + k, out.to(y.dtype.element_ty), mask=m)
