"""Nearest and bilinear resampling of (N, C, H, W) arrays, forward and backward, from per-axis source tables.

The host computes, once per (sizes, mode, align_corners, scale), each output row's source rows ``i0``, ``i1`` and
weight ``l1`` (``l0 = 1 - l1``; nearest: ``i1 = i0``, ``l1 = 0``) exactly as torch does, and for each input row the
range ``[lo, hi)`` of output rows that read it. The forward blends up to four source pixels per output
(torch's order of operations). The backward gathers: each input pixel sums, in output order, the weighted gradients
of the outputs in its ranges, so it is bitwise reproducible and needs no atomics.

Both run in (BC, BH, BW) tiles of one sample (no integer division per element; the tables are read once per row
and column of a tile) over any strides, so channels_last arrays are read and written in place.

Bytes: forward reads the input (once from memory; nearest x2 re-reads each element for its 2 x 2 outputs from the
cache) and writes N C OH OW elements; backward reads the output gradient about once per covering axis pair and
writes N C H W elements; the tables are O(H + W) int32/float.
"""

import triton
import triton.language as tl

from genesis._impl.cuda.kernels.nn_pool import _tile_coords


@triton.jit
def upsample_fwd(
    x, y,                                  # pointers: x (N, C, H, W); y (N, C, OH, OW)
    h0, h1, hl, w0, w1, wl,                # per-output-row / -column source indices (int32) and weights l1
    C, OH, OW, CB, HB, WB,                 # sizes; CB, HB, WB: tiles along C, OH, OW
    sN, sC, sH, sW,                        # x strides in elements
    yN, yC, yH, yW,                        # y strides in elements
    NEAREST: tl.constexpr, F64: tl.constexpr, BC: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
):
    """One (BC, BH, BW) tile of outputs per program: the tables are read once per row and column of the tile, the
    outputs are stored contiguously along the fastest dim of y (W, or C for channels_last)."""
    n, c, _, oh, ow, m = _tile_coords(C, 1, CB, HB, WB, BC, BH, BW)
    mh = oh < OH
    mw = ow < OW
    m = m & mh & mw
    base = x + n * sN + c * sC
    a0 = tl.load(h0 + oh, mask=mh, other=0)
    b0 = tl.load(w0 + ow, mask=mw, other=0)
    if NEAREST:
        out = tl.load(base + a0 * sH + b0 * sW, mask=m, other=0.0)
    else:
        a1 = tl.load(h1 + oh, mask=mh, other=0)
        b1 = tl.load(w1 + ow, mask=mw, other=0)
        if F64:
            lh1 = tl.load(hl + oh, mask=mh, other=0.0).to(tl.float64)
            lw1 = tl.load(wl + ow, mask=mw, other=0.0).to(tl.float64)
        else:
            lh1 = tl.load(hl + oh, mask=mh, other=0.0).to(tl.float32)
            lw1 = tl.load(wl + ow, mask=mw, other=0.0).to(tl.float32)
        lh0, lw0 = 1.0 - lh1, 1.0 - lw1
        v00 = tl.load(base + a0 * sH + b0 * sW, mask=m, other=0.0).to(lh1.dtype)
        v01 = tl.load(base + a0 * sH + b1 * sW, mask=m, other=0.0).to(lh1.dtype)
        v10 = tl.load(base + a1 * sH + b0 * sW, mask=m, other=0.0).to(lh1.dtype)
        v11 = tl.load(base + a1 * sH + b1 * sW, mask=m, other=0.0).to(lh1.dtype)
        out = lh0 * (lw0 * v00 + lw1 * v01) + lh1 * (lw0 * v10 + lw1 * v11)
    tl.store(y + n * yN + c * yC + oh * yH + ow * yW, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def _weight(i0, i1, l1, me, ok, T):
    """The weight with which the output of sources ``(i0, i1)`` and weight ``l1`` reads input position ``me``."""
    lw = tl.load(l1, mask=ok, other=0.0).to(T)
    return tl.where(tl.load(i0, mask=ok, other=-1) == me, 1.0 - lw, 0.0) + \
        tl.where(tl.load(i1, mask=ok, other=-1) == me, lw, 0.0)


@triton.jit
def upsample_bwd(
    g, dx,                                 # pointers: g (N, C, OH, OW); dx (N, C, H, W)
    h0, h1, hl, hlo, hhi, w0, w1, wl, wlo, whi,   # tables: per output row/column and per input row/column ranges
    C, H, W, OH, OW, CB, HB, WB,           # sizes; CB, HB, WB: tiles along C, H, W
    gN, gC, gH, gW,                        # g strides in elements
    dN, dC, dH, dW,                        # dx strides in elements
    F64: tl.constexpr, RH: tl.constexpr, RW: tl.constexpr,   # RH, RW: the most outputs reading one input row / col
    BC: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
):
    """One (BC, BH, BW) tile of input gradients per program: each element sums, in output order, the weighted
    gradients of the outputs of its row and column ranges (weights from per-row and per-column table reads)."""
    n, c, _, ih, iw, m = _tile_coords(C, 1, CB, HB, WB, BC, BH, BW)
    mh = ih < H
    mw = iw < W
    m = m & mh & mw
    gbase = g + n * gN + c * gC
    lo_h = tl.load(hlo + ih, mask=mh, other=0)
    hi_h = tl.load(hhi + ih, mask=mh, other=0)
    lo_w = tl.load(wlo + iw, mask=mw, other=0)
    hi_w = tl.load(whi + iw, mask=mw, other=0)
    if F64:
        acc = tl.zeros([BC, BH, BW], tl.float64)
    else:
        acc = tl.zeros([BC, BH, BW], tl.float32)
    for a in range(RH):
        oh = lo_h + a
        okh = mh & (oh < hi_h)
        wh = _weight(h0 + oh, h1 + oh, hl + oh, ih, okh, acc.dtype)
        for b in range(RW):
            ow = lo_w + b
            okw = mw & (ow < hi_w)
            ww = _weight(w0 + ow, w1 + ow, wl + ow, iw, okw, acc.dtype)
            ok = m & okh & okw
            gv = tl.load(gbase + oh * gH + ow * gW, mask=ok, other=0.0).to(acc.dtype)
            acc += tl.where(ok, gv * (wh * ww), 0.0)
    tl.store(dx + n * dN + c * dC + ih * dH + iw * dW, acc.to(dx.dtype.element_ty), mask=m)
