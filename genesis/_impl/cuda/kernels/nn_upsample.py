"""Nearest and bilinear resampling of (N, C, H, W) arrays, forward and backward, from per-axis source tables.

The host computes, once per (sizes, mode, align_corners, scale), each output row's source rows ``i0``, ``i1`` and
weight ``l1`` (``l0 = 1 - l1``; nearest: ``i1 = i0``, ``l1 = 0``) exactly as torch does, and for each input row the
range ``[lo, hi)`` of output rows that read it. The forward blends up to four source pixels per output
(torch's order of operations). The backward gathers: each input pixel sums, in output order, the weighted gradients
of the outputs in its ranges, so it is bitwise reproducible and needs no atomics.

Bytes: forward reads the input (about once) and writes N C OH OW elements; backward reads the output gradient about
once per covering axis pair and writes N C H W elements; the tables are O(H + W) int32/float.
"""

import triton
import triton.language as tl

from genesis._impl.cuda.kernels.nn_pool import _offsets


@triton.jit
def upsample_fwd(
    x, y,                                  # pointers: x (N, C, H, W) strided; y (N, C, OH, OW) contiguous
    h0, h1, hl, w0, w1, wl,                # per-output-row / -column source indices (int32) and weights l1
    total, C, OH, OW,                      # sizes (total = N * C * OH * OW)
    sN, sC, sH, sW,                        # x strides in elements
    NEAREST: tl.constexpr, F64: tl.constexpr, I64: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = _offsets(BLOCK, I64)
    m = offs < total
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    nc = t // OH
    base = x + (nc // C) * sN + (nc % C) * sC
    a0 = tl.load(h0 + oh, mask=m, other=0)
    b0 = tl.load(w0 + ow, mask=m, other=0)
    if NEAREST:
        out = tl.load(base + a0 * sH + b0 * sW, mask=m, other=0.0)
    else:
        a1 = tl.load(h1 + oh, mask=m, other=0)
        b1 = tl.load(w1 + ow, mask=m, other=0)
        if F64:
            lh1 = tl.load(hl + oh, mask=m, other=0.0).to(tl.float64)
            lw1 = tl.load(wl + ow, mask=m, other=0.0).to(tl.float64)
        else:
            lh1 = tl.load(hl + oh, mask=m, other=0.0).to(tl.float32)
            lw1 = tl.load(wl + ow, mask=m, other=0.0).to(tl.float32)
        lh0, lw0 = 1.0 - lh1, 1.0 - lw1
        v00 = tl.load(base + a0 * sH + b0 * sW, mask=m, other=0.0).to(lh1.dtype)
        v01 = tl.load(base + a0 * sH + b1 * sW, mask=m, other=0.0).to(lh1.dtype)
        v10 = tl.load(base + a1 * sH + b0 * sW, mask=m, other=0.0).to(lh1.dtype)
        v11 = tl.load(base + a1 * sH + b1 * sW, mask=m, other=0.0).to(lh1.dtype)
        out = lh0 * (lw0 * v00 + lw1 * v01) + lh1 * (lw0 * v10 + lw1 * v11)
    tl.store(y + offs, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def upsample_bwd(
    g, dx,                                 # pointers: g (N*C, OH, OW) contiguous; dx (N*C, H, W) contiguous
    h0, h1, hl, hlo, hhi, w0, w1, wl, wlo, whi,   # tables: per output row/column and per input row/column ranges
    total, H, W, OH, OW, RH, RW,           # sizes; RH, RW: the longest range of output rows / columns per input
    F64: tl.constexpr, I64: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = _offsets(BLOCK, I64)
    m = offs < total
    iw = offs % W
    t = offs // W
    ih = t % H
    gbase = g + (t // H) * OH * OW
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
        lh = tl.load(hl + oh, mask=okh, other=0.0).to(acc.dtype)
        wh = tl.where(tl.load(h0 + oh, mask=okh, other=-1) == ih, 1.0 - lh, 0.0) + \
            tl.where(tl.load(h1 + oh, mask=okh, other=-1) == ih, lh, 0.0)
        for b in range(0, RW):
            ow = lo_w + b
            ok = okh & (ow < hi_w)
            lw = tl.load(wl + ow, mask=ok, other=0.0).to(acc.dtype)
            ww = tl.where(tl.load(w0 + ow, mask=ok, other=-1) == iw, 1.0 - lw, 0.0) + \
                tl.where(tl.load(w1 + ow, mask=ok, other=-1) == iw, lw, 0.0)
            gv = tl.load(gbase + oh * OW + ow, mask=ok, other=0.0).to(acc.dtype)
            acc += tl.where(ok, gv * (wh * ww), 0.0)
    tl.store(dx + offs, acc.to(dx.dtype.element_ty), mask=m)


@triton.jit
def nearest2x_fwd(
    x, y,                                  # pointers: x (R, W) contiguous rows (R = N C H); y (2 R, 2 W) contiguous
    total, W,                              # sizes: total = R * W input elements
    I64: tl.constexpr, BLOCK: tl.constexpr,
):
    """Nearest x2 in both dims: each input element is written to its 2 x 2 block of outputs, as two stores of
    adjacent pairs (one per output row), so the input is read once and every store is coalesced."""
    offs = _offsets(BLOCK, I64)
    m = offs < total
    v = tl.load(x + offs, mask=m, other=0.0)
    r = offs // W
    out = (4 * r * W + 2 * (offs - r * W))[:, None] + tl.arange(0, 2)[None, :]  # row 2r, columns 2w and 2w + 1
    pair = tl.broadcast_to(v[:, None], (BLOCK, 2))
    m2 = tl.broadcast_to(m[:, None], (BLOCK, 2))
    tl.store(y + out, pair, mask=m2)
    tl.store(y + out + 2 * W, pair, mask=m2)


@triton.jit
def nearest2x_bwd(
    g, dx,                                 # pointers: g (2 R, 2 W) contiguous; dx (R, W) contiguous
    total, W,                              # sizes: total = R * W input elements
    F64: tl.constexpr, I64: tl.constexpr, BLOCK: tl.constexpr,
):
    """The gradient of ``nearest2x_fwd``: each input element sums its 2 x 2 block of output gradients in output
    order (row 2r then row 2r + 1), in float32 (float64 for float64), without atomics."""
    offs = _offsets(BLOCK, I64)
    m = offs < total
    r = offs // W
    o = 4 * r * W + 2 * (offs - r * W)
    if F64:
        acc = tl.load(g + o, mask=m, other=0.0).to(tl.float64)
    else:
        acc = tl.load(g + o, mask=m, other=0.0).to(tl.float32)
    acc += tl.load(g + o + 1, mask=m, other=0.0).to(acc.dtype)
    acc += tl.load(g + o + 2 * W, mask=m, other=0.0).to(acc.dtype)
    acc += tl.load(g + o + 2 * W + 1, mask=m, other=0.0).to(acc.dtype)
    tl.store(dx + offs, acc.to(dx.dtype.element_ty), mask=m)
