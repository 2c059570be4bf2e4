"""Max and average pooling over (N, C, D, H, W) windows, forward and backward (2-d pooling runs with D = 1), and
adaptive pooling of (N, C, H, W) input (windows from host tables, ``start = floor(i * in / out)``,
``end = ceil((i + 1) * in / out)``).

Max pooling: one program computes a (BC, BH, BW) tile of outputs (forward) or input gradients (backward) of one
(n, depth) with a 1-d grid decomposed once per program, so no element pays an integer division; strides are
arguments (unit strides compile-time constants), so channels_last input is read and written in place with the
threads along C. Average and adaptive pooling: one program per ``BLOCK`` flat outputs or input gradients. The
backward kernels gather: each input element visits the windows that can contain it in increasing output order and
sums their contributions, so the gradient is bitwise reproducible and needs no atomics.

Max: padding is implicit -inf (the lowest value for integers); the first maximum wins, NaN propagates and the last
NaN of a window gives the index (torch's rule); a window whose valid elements all equal the lowest value reports its
first valid element; the index is the flat position in the (D, H, W) plane. Average: sums and divisors in float32
(float64 for float64, int64 for int64 input: integer division as torch); the divisor is ``DIV_MODE`` 0: ``divisor``
(divisor_override), 1: the window clipped to the padded input (count_include_pad), 2: the window clipped to the
input.

Bytes (n input, m output elements of b bytes): max forward reads the input (n b: a tile's overlapping windows share
their loads through the cache) and writes m b values, plus 8 m of int64 indices only when asked for (``WRITE_IDX``);
max backward reads the indices and gradient of each window (m (b + 8), re-reads from cache) and writes n b; average
pooling reads/writes the same without indices.
"""

import triton
import triton.language as tl


@triton.jit
def _offsets(BLOCK: tl.constexpr, I64: tl.constexpr):
    """This program's ``BLOCK`` flat positions: int32 index arithmetic unless the arrays need 64-bit offsets."""
    pid = tl.program_id(0)
    if I64:
        pid = pid.to(tl.int64)
    return pid * BLOCK + tl.arange(0, BLOCK)


@triton.jit
def _out_coords(offs, C, OD, OH, OW):
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    t = t // OH
    od = t % OD
    nc = t // OD
    return nc // C, nc % C, od, oh, ow


@triton.jit
def _tile_coords(C, OD, CB, HB, WB, BC: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr):
    """This program's tile of a (N, C, D, H, W) array: the scalar n, the (1, 1, 1) depth d, the (BC, 1, 1) channels,
    (1, BH, 1) rows and (1, 1, BW) columns it covers (a 1-d grid of N * CB * D * HB * WB tiles; divisions per
    program, not per element)."""
    pid = tl.program_id(0)
    wb = pid % WB
    t = pid // WB
    hb = t % HB
    t = t // HB
    d = t % OD + tl.zeros([1, 1, 1], tl.int32)  # a (1, 1, 1) tensor: masks from it combine as tensors
    t = t // OD
    c = (t % CB) * BC + tl.arange(0, BC)[:, None, None]
    h = hb * BH + tl.arange(0, BH)[None, :, None]
    w = wb * BW + tl.arange(0, BW)[None, None, :]
    return t // CB, c, d, h, w, c < C


@triton.jit
def _first_inside(start, D: tl.constexpr):
    """The first position ``start + k * D`` (k >= 0) that is not negative: a window's first element in the input."""
    return start + ((tl.maximum(-start, 0) + D - 1) // D) * D


@triton.jit
def max_pool_fwd(
    x, y, idx,                                   # pointers: x (N, C, D, H, W); y, idx (N, C, OD, OH, OW)
    C, D, H, W, OD, OH, OW, CB, HB, WB,          # sizes; CB, HB, WB: tiles along C, OH, OW
    sN, sC, sD, sH, sW,                          # x strides in elements
    yN, yC, yD, yH, yW,                          # y and idx strides in elements
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
    LOWEST: tl.constexpr, WRITE_IDX: tl.constexpr, BC: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
):
    """One (BC, BH, BW) tile of outputs of one (n, od) per program. Each tap of the window is one masked load of
    the tile's inputs (neighbouring windows share them through the cache); the winning tap is kept as a small
    integer and turned into the flat input index once, at the store, only when the indices are written."""
    n, c, od, oh, ow, m = _tile_coords(C, OD, CB, HB, WB, BC, BH, BW)
    m = m & (oh < OH) & (ow < OW)
    base = x + n * sN + c * sC
    z0, h0, w0 = od * SD - PD, oh * SH - PH, ow * SW - PW
    best = tl.full([BC, BH, BW], LOWEST, x.dtype.element_ty)
    tap = tl.full([BC, BH, BW], -1, tl.int32)
    for a in range(KD):
        iz = z0 + a * DD
        okd = (iz >= 0) & (iz < D)
        for i in range(KH):
            ih = h0 + i * DH
            okh = m & okd & (ih >= 0) & (ih < H)
            for j in range(KW):
                iw = w0 + j * DW
                ok = okh & (iw >= 0) & (iw < W)
                v = tl.load(base + iz * sD + ih * sH + iw * sW, mask=ok, other=LOWEST)
                # Padding loads LOWEST, which never wins; a valid element wins when it is greater or NaN (torch's
                # rule: the first maximum, the last NaN). No winner: every valid element is LOWEST, and torch
                # reports the window's first valid element.
                take = (v > best) | (v != v)
                best = tl.where(take, v, best)
                tap = tl.where(take, (a * KH + i) * KW + j, tap)
    out = n * yN + c * yC + od * yD + oh * yH + ow * yW
    tl.store(y + out, best, mask=m)
    if WRITE_IDX:
        none = tap < 0
        iz = tl.where(none, _first_inside(z0, DD), z0 + (tap // (KH * KW)) * DD)
        ih = tl.where(none, _first_inside(h0, DH), h0 + (tap // KW % KH) * DH)
        iw = tl.where(none, _first_inside(w0, DW), w0 + (tap % KW) * DW)
        tl.store(idx + out, (iz.to(tl.int64) * H + ih) * W + iw, mask=m)


@triton.jit
def _windows(zp, t, K: tl.constexpr, S: tl.constexpr, DIL: tl.constexpr, R: tl.constexpr, O):
    """Along one axis, the ``t``-th (in increasing order, t < R) output whose window may hold the input position
    ``zp - P`` (``zp``: the position in padded coordinates, >= 0), and whether it does."""
    if DIL == 1:  # the R = ceil(K / S) outputs o <= zp / S nearest to it
        o = zp // S - (R - 1 - t)
        ok = (o >= 0) & (o < O) & (zp - o * S < K)
    else:  # each tap of the window (R = K), last tap first
        zz = zp - (K - 1 - t) * DIL
        o = zz // S
        ok = (zz >= 0) & (zz % S == 0) & (o < O)
    return o, ok


@triton.jit
def max_pool_bwd(
    g, idx, dx,                                  # pointers: g, idx (N, C, OD, OH, OW); dx (N, C, D, H, W)
    C, D, H, W, OD, OH, OW, CB, HB, WB,          # sizes; CB, HB, WB: tiles along C, H, W
    gN, gC, gD, gH, gW,                          # g strides in elements
    iN, iC, iD, iH, iW,                          # idx strides in elements
    dN, dC, dD, dH, dW,                          # dx strides in elements
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
    RD: tl.constexpr, RH: tl.constexpr, RW: tl.constexpr, F64: tl.constexpr,
    BC: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
):
    """One (BC, BH, BW) tile of input gradients of one (n, d) per program: each element visits the RD * RH * RW
    windows that may contain it (``ceil(K / S)`` per axis without dilation) in increasing output order and adds
    the gradient of those whose argmax it is."""
    n, c, iz, ih, iw, m = _tile_coords(C, D, CB, HB, WB, BC, BH, BW)
    m = m & (ih < H) & (iw < W)
    me = (iz * H + ih) * W + iw
    gbase = g + n * gN + c * gC
    ibase = idx + n * iN + c * iC
    if F64:
        acc = tl.zeros([BC, BH, BW], tl.float64)
    else:
        acc = tl.zeros([BC, BH, BW], tl.float32)
    for ta in range(RD):
        od, okd = _windows(iz + PD, ta, KD, SD, DD, RD, OD)
        for ti in range(RH):
            oh, okh = _windows(ih + PH, ti, KH, SH, DH, RH, OH)
            okh = m & okd & okh
            for tj in range(RW):
                ow, okw = _windows(iw + PW, tj, KW, SW, DW, RW, OW)
                ok = okh & okw
                hit = ok & (tl.load(ibase + od * iD + oh * iH + ow * iW, mask=ok, other=-1) == me)
                acc += tl.load(gbase + od * gD + oh * gH + ow * gW, mask=hit, other=0.0).to(acc.dtype)
    tl.store(dx + n * dN + c * dC + iz * dD + ih * dH + iw * dW, acc.to(dx.dtype.element_ty), mask=m)


@triton.jit
def _avg_divisor(od, oh, ow, D, H, W, divisor, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                 SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr,
                 PW: tl.constexpr, DIV_MODE: tl.constexpr):
    zs, hs, ws = od * SD - PD, oh * SH - PH, ow * SW - PW
    ze, he, we = tl.minimum(zs + KD, D + PD), tl.minimum(hs + KH, H + PH), tl.minimum(ws + KW, W + PW)
    if DIV_MODE == 0:
        div = tl.zeros_like(zs) + divisor
    elif DIV_MODE == 1:
        div = (ze - zs) * (he - hs) * (we - ws)
    else:
        div = (tl.minimum(ze, D) - tl.maximum(zs, 0)) * (tl.minimum(he, H) - tl.maximum(hs, 0)) * \
            (tl.minimum(we, W) - tl.maximum(ws, 0))
    return div


@triton.jit
def avg_pool_fwd(
    x, y,                                        # pointers: x (N, C, D, H, W) strided; y contiguous output
    total, C, D, H, W, OD, OH, OW, divisor,      # sizes (total = N * C * OD * OH * OW); divisor_override or 0
    sN, sC, sD, sH, sW,                          # x strides in elements
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DIV_MODE: tl.constexpr, ACC: tl.constexpr,
    I64: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = _offsets(BLOCK, I64)
    m = offs < total
    n, c, od, oh, ow = _out_coords(offs, C, OD, OH, OW)
    base = x + n * sN + c * sC
    if ACC == 2:  # int64 input: integer sum and division, truncating as torch
        acc = tl.zeros([BLOCK], tl.int64)
    elif ACC == 1:
        acc = tl.zeros([BLOCK], tl.float64)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for a in range(KD):
        iz = od * SD - PD + a
        okd = m & (iz >= 0) & (iz < D)
        for i in range(KH):
            ih = oh * SH - PH + i
            okh = okd & (ih >= 0) & (ih < H)
            for j in range(KW):
                iw = ow * SW - PW + j
                ok = okh & (iw >= 0) & (iw < W)
                acc += tl.load(base + iz * sD + ih * sH + iw * sW, mask=ok, other=0).to(acc.dtype)
    div = _avg_divisor(od, oh, ow, D, H, W, divisor, KD, KH, KW, SD, SH, SW, PD, PH, PW, DIV_MODE)
    if ACC == 2:
        out = acc // div.to(tl.int64)
    else:
        out = acc / div.to(acc.dtype)
    tl.store(y + offs, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def avg_pool_bwd(
    g, dx,                                       # pointers: g (N*C, OD, OH, OW) contiguous; dx (N*C, D, H, W)
    total, D, H, W, OD, OH, OW, divisor,         # sizes (total = N * C * D * H * W); divisor_override or 0
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DIV_MODE: tl.constexpr, F64: tl.constexpr,
    I64: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = _offsets(BLOCK, I64)
    m = offs < total
    iw = offs % W
    t = offs // W
    ih = t % H
    t = t // H
    iz = t % D
    nc = t // D
    obase = nc * OD * OH * OW
    if F64:
        acc = tl.zeros([BLOCK], tl.float64)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for a0 in range(KD):
        zd = iz + PD - (KD - 1 - a0)
        od = zd // SD
        okd = m & (zd >= 0) & (zd % SD == 0) & (od < OD)
        for i0 in range(KH):
            zh = ih + PH - (KH - 1 - i0)
            oh = zh // SH
            okh = okd & (zh >= 0) & (zh % SH == 0) & (oh < OH)
            for j0 in range(KW):
                zw = iw + PW - (KW - 1 - j0)
                ow = zw // SW
                ok = okh & (zw >= 0) & (zw % SW == 0) & (ow < OW)
                div = _avg_divisor(od, oh, ow, D, H, W, divisor, KD, KH, KW, SD, SH, SW, PD, PH, PW, DIV_MODE)
                gv = tl.load(g + obase + (od * OH + oh) * OW + ow, mask=ok, other=0.0).to(acc.dtype)
                acc += tl.where(ok, gv / div.to(acc.dtype), 0.0)
    tl.store(dx + offs, acc.to(dx.dtype.element_ty), mask=m)


@triton.jit
def adaptive_pool_fwd(
    x, y, idx,                                   # pointers: x (N, C, H, W) strided; y, idx (N*C, OH, OW) contiguous
    hs, he, ws, we,                              # int32 window start/end per output row and column (host tables)
    total, C, W, OH, OW,                         # sizes (total = N * C * OH * OW)
    sN, sC, sH, sW,                              # x strides in elements
    MAX: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, LOWEST: tl.constexpr, F64: tl.constexpr,
    I64: tl.constexpr, BLOCK: tl.constexpr,
):
    """Adaptive pooling: window [hs[oh], he[oh]) x [ws[ow], we[ow]) of at most KH x KW elements per output."""
    offs = _offsets(BLOCK, I64)
    m = offs < total
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    nc = t // OH
    base = x + (nc // C) * sN + (nc % C) * sC
    h0 = tl.load(hs + oh, mask=m, other=0)
    h1 = tl.load(he + oh, mask=m, other=0)
    w0 = tl.load(ws + ow, mask=m, other=0)
    w1 = tl.load(we + ow, mask=m, other=0)
    if MAX:
        best = tl.full([BLOCK], LOWEST, x.dtype.element_ty)
        arg = tl.full([BLOCK], -1, tl.int64)
    elif F64:
        acc = tl.zeros([BLOCK], tl.float64)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for i in range(KH):
        ih = h0 + i
        okh = m & (ih < h1)
        for j in range(KW):
            iw = w0 + j
            ok = okh & (iw < w1)
            if MAX:
                v = tl.load(base + ih * sH + iw * sW, mask=ok, other=LOWEST)
                take = ok & ((v > best) | (v != v) | (arg < 0))
                best = tl.where(take, v, best)
                arg = tl.where(take, ih * W + iw, arg)
            else:
                acc += tl.load(base + ih * sH + iw * sW, mask=ok, other=0.0).to(acc.dtype)
    if MAX:
        tl.store(y + offs, best, mask=m)
        tl.store(idx + offs, arg, mask=m)
    else:
        tl.store(y + offs, (acc / ((h1 - h0) * (w1 - w0)).to(acc.dtype)).to(y.dtype.element_ty), mask=m)


@triton.jit
def adaptive_pool_bwd(
    g, idx, dx,                                  # pointers: g, idx (N*C, OH, OW) contiguous; dx (N*C, H, W)
    hs, he, ws, we, hlo, hhi, wlo, whi,          # output windows, and per input row/column the outputs covering it
    total, H, W, OH, OW, RH, RW,                 # sizes; RH, RW: most outputs covering one input row / column
    MAX: tl.constexpr, F64: tl.constexpr, I64: tl.constexpr, BLOCK: tl.constexpr,
):
    """Each input element gathers, in output order, the gradients of the windows that contain it (average: divided
    by the window size; max: where the window's argmax is this element)."""
    offs = _offsets(BLOCK, I64)
    m = offs < total
    iw = offs % W
    t = offs // W
    ih = t % H
    nc = t // H
    me = ih * W + iw
    obase = nc * OH * OW
    lo_h = tl.load(hlo + ih, mask=m, other=0)
    hi_h = tl.load(hhi + ih, mask=m, other=0)
    lo_w = tl.load(wlo + iw, mask=m, other=0)
    hi_w = tl.load(whi + iw, mask=m, other=0)
    if F64:
        acc = tl.zeros([BLOCK], tl.float64)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for a in range(0, RH):
        oh = lo_h + a
        okh = m & (oh < hi_h)
        kh = tl.load(he + oh, mask=okh, other=1) - tl.load(hs + oh, mask=okh, other=0)
        for b in range(0, RW):
            ow = lo_w + b
            ok = okh & (ow < hi_w)
            o = obase + oh * OW + ow
            if MAX:
                hit = ok & (tl.load(idx + o, mask=ok, other=-1) == me)
                acc += tl.load(g + o, mask=hit, other=0.0).to(acc.dtype)
            else:
                kw = tl.load(we + ow, mask=ok, other=1) - tl.load(ws + ow, mask=ok, other=0)
                gv = tl.load(g + o, mask=ok, other=0.0).to(acc.dtype)
                acc += tl.where(ok, gv / (kh * kw).to(acc.dtype), 0.0)
    tl.store(dx + offs, acc.to(dx.dtype.element_ty), mask=m)
