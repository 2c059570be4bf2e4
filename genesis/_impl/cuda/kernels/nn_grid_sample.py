"""``grid_sample`` of (N, C, H, W) arrays at (N, Ho, Wo, 2) grids, bilinear or nearest, forward and backward.

Each program takes a block of output points of one image: it turns their grid coordinates into source positions
once (unnormalized, then the padding rule: zeros, border or reflection, as torch's
``grid_sampler_compute_source_index``) and walks the channels in blocks, reading the four corners (or the nearest
pixel) of every point. The arithmetic is torch's CUDA kernel's, in float32 (float64 for float64 arrays): the
corners' weights, their order of summation, a non-finite or far-away coordinate sent to -100 (outside every image),
nearest rounding half to even. The backward scatters the input's gradient with atomic adds (into a float32 or
float64 buffer) and sums the grid's gradient over the channels, times the derivative of the coordinate transform
(torch's ``*_set_grad`` rules: zero where border or reflection clips).

Bytes: forward reads the grid and up to four input values per point and channel, writes N C Ho Wo elements;
backward reads the output gradient, the grid and (for the grid's gradient) the same input values, and adds up to four
values per point and channel into the input's gradient.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _source(coord, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    # (source position, its derivative by the grid coordinate); PAD 0 zeros, 1 border, 2 reflection.
    fsize = size.to(coord.dtype)
    if ALIGN:
        x = (coord + 1) / 2 * (fsize - 1)
        grad = (fsize - 1) / 2 + tl.zeros_like(coord)
    else:
        x = ((coord + 1) * fsize - 1) / 2
        grad = fsize / 2 + tl.zeros_like(coord)
    nan = x != x  # NaN stays outside: the clips below would turn it into a pixel
    if PAD == 2:
        if ALIGN:
            low, span = tl.zeros_like(coord), fsize - 1
        else:
            low, span = tl.zeros_like(coord) - 0.5, fsize
        shifted = x - low
        sign = tl.where(shifted < 0, -1.0, 1.0).to(coord.dtype)
        shifted = tl.abs(shifted)
        safe_span = tl.where(span > 0, span, 1.0)
        extra = libdevice.fmod(shifted, safe_span)
        flips = tl.floor(shifted / safe_span)
        even = (flips - 2 * tl.floor(flips / 2)) == 0
        x = tl.where(even, extra + low, safe_span - extra + low)
        grad = grad * tl.where(even, sign, -sign)
        x = tl.where(span > 0, x, 0.0)
        grad = tl.where(span > 0, grad, 0.0)
    if PAD != 0:  # clip into [0, size - 1]
        inside = (x > 0) & (x < fsize - 1)
        grad = tl.where(inside, grad, 0.0)
        x = tl.minimum(tl.maximum(x, 0.0), fsize - 1)
    far = nan | (x != x) | (tl.abs(x) > 2147483646.0)  # NaN, inf or beyond int range: read as outside
    x = tl.where(far, -100.0, x)
    return x, grad


@triton.jit
def _point(grid, n, p, P, H, W, PAD: tl.constexpr, ALIGN: tl.constexpr, F64: tl.constexpr, BLOCK_P: tl.constexpr):
    pm = p < P
    gx = tl.load(grid + (n * P + p) * 2, mask=pm, other=0)
    gy = tl.load(grid + (n * P + p) * 2 + 1, mask=pm, other=0)
    if F64:
        gx, gy = gx.to(tl.float64), gy.to(tl.float64)
    else:
        gx, gy = gx.to(tl.float32), gy.to(tl.float32)
    ix, gix_mult = _source(gx, W, PAD, ALIGN)
    iy, giy_mult = _source(gy, H, PAD, ALIGN)
    return pm, ix, iy, gix_mult, giy_mult


@triton.jit
def _nearest(pm, ix, iy, H, W):
    """The mask and offset of the pixel nearest each point (round half to even, as torch)."""
    xn = libdevice.rint(ix).to(tl.int64)
    yn = libdevice.rint(iy).to(tl.int64)
    return pm & (xn >= 0) & (xn < W) & (yn >= 0) & (yn < H), yn * W + xn


@triton.jit
def _corners(pm, ix, iy, H, W):
    """The bilinear weights along x and y of each point's four neighbours, and their masks and offsets (nw, ne,
    sw, se)."""
    x0f = tl.floor(ix)
    y0f = tl.floor(iy)
    x0, y0 = x0f.to(tl.int64), y0f.to(tl.int64)
    x1, y1 = x0 + 1, y0 + 1
    wx0, wx1 = x0f + 1 - ix, ix - x0f
    wy0, wy1 = y0f + 1 - iy, iy - y0f
    inx0, inx1 = (x0 >= 0) & (x0 < W), (x1 >= 0) & (x1 < W)
    iny0, iny1 = (y0 >= 0) & (y0 < H), (y1 >= 0) & (y1 < H)
    m_nw, m_ne, m_sw, m_se = pm & inx0 & iny0, pm & inx1 & iny0, pm & inx0 & iny1, pm & inx1 & iny1
    o_nw, o_ne, o_sw, o_se = y0 * W + x0, y0 * W + x1, y1 * W + x0, y1 * W + x1
    return wx0, wx1, wy0, wy1, m_nw, m_ne, m_sw, m_se, o_nw, o_ne, o_sw, o_se


@triton.jit
def grid_sample_fwd(x, grid, out, C, H, W, P, NEAREST: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr,
                    F64: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    # x (N, C, H, W) and out (N, C, P) contiguous; grid (N, P, 2) contiguous; program (point block, image).
    n = tl.program_id(1).to(tl.int64)
    p = tl.program_id(0).to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    pm, ix, iy, _gx, _gy = _point(grid, n, p, P, H, W, PAD, ALIGN, F64, BLOCK_P)
    hw = H.to(tl.int64) * W
    if NEAREST:
        mn, on = _nearest(pm, ix, iy, H, W)
    else:
        wx0, wx1, wy0, wy1, m_nw, m_ne, m_sw, m_se, o_nw, o_ne, o_sw, o_se = _corners(pm, ix, iy, H, W)
        w_nw, w_ne, w_sw, w_se = wx0 * wy0, wx1 * wy0, wx0 * wy1, wx1 * wy1
    for c0 in range(0, C, BLOCK_C):
        cs = c0 + tl.arange(0, BLOCK_C)
        cm = cs < C
        base = x + (n * C + cs[None, :]) * hw
        if NEAREST:
            acc = tl.load(base + on[:, None], mask=mn[:, None] & cm[None, :], other=0)
        else:
            v = tl.load(base + o_nw[:, None], mask=m_nw[:, None] & cm[None, :], other=0).to(ix.dtype)
            acc = v * w_nw[:, None]
            v = tl.load(base + o_ne[:, None], mask=m_ne[:, None] & cm[None, :], other=0).to(ix.dtype)
            acc += v * w_ne[:, None]
            v = tl.load(base + o_sw[:, None], mask=m_sw[:, None] & cm[None, :], other=0).to(ix.dtype)
            acc += v * w_sw[:, None]
            v = tl.load(base + o_se[:, None], mask=m_se[:, None] & cm[None, :], other=0).to(ix.dtype)
            acc += v * w_se[:, None]
        tl.store(out + (n * C + cs[None, :]) * P + p[:, None], acc.to(out.dtype.element_ty),
                 mask=pm[:, None] & cm[None, :])


@triton.jit
def grid_sample_bwd(gout, x, grid, gx_out, ggrid, C, H, W, P, NEEDS_INPUT: tl.constexpr, NEEDS_GRID: tl.constexpr,
                    NEAREST: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr, F64: tl.constexpr,
                    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    # gout (N, C, P), x (N, C, H, W), grid (N, P, 2) contiguous; gx_out (N, C, H, W) float32/float64 zeros (atomic
    # adds); ggrid (N, P, 2) in the grid's dtype.
    n = tl.program_id(1).to(tl.int64)
    p = tl.program_id(0).to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    pm, ix, iy, gix_mult, giy_mult = _point(grid, n, p, P, H, W, PAD, ALIGN, F64, BLOCK_P)
    hw = H.to(tl.int64) * W
    gix = tl.zeros_like(ix)
    giy = tl.zeros_like(iy)
    if NEAREST:
        mn, on = _nearest(pm, ix, iy, H, W)
    else:
        wx0, wx1, wy0, wy1, m_nw, m_ne, m_sw, m_se, o_nw, o_ne, o_sw, o_se = _corners(pm, ix, iy, H, W)
    for c0 in range(0, C, BLOCK_C):
        cs = c0 + tl.arange(0, BLOCK_C)
        cm = cs < C
        g = tl.load(gout + (n * C + cs[None, :]) * P + p[:, None], mask=pm[:, None] & cm[None, :], other=0)
        g = g.to(ix.dtype)
        base = (n * C + cs[None, :]) * hw
        if NEAREST:
            if NEEDS_INPUT:
                tl.atomic_add(gx_out + base + on[:, None], g, mask=mn[:, None] & cm[None, :], sem="relaxed")
        else:
            if NEEDS_INPUT:
                tl.atomic_add(gx_out + base + o_nw[:, None], g * (wx0 * wy0)[:, None],
                              mask=m_nw[:, None] & cm[None, :], sem="relaxed")
                tl.atomic_add(gx_out + base + o_ne[:, None], g * (wx1 * wy0)[:, None],
                              mask=m_ne[:, None] & cm[None, :], sem="relaxed")
                tl.atomic_add(gx_out + base + o_sw[:, None], g * (wx0 * wy1)[:, None],
                              mask=m_sw[:, None] & cm[None, :], sem="relaxed")
                tl.atomic_add(gx_out + base + o_se[:, None], g * (wx1 * wy1)[:, None],
                              mask=m_se[:, None] & cm[None, :], sem="relaxed")
            if NEEDS_GRID:
                v = tl.load(x + base + o_nw[:, None], mask=m_nw[:, None] & cm[None, :], other=0).to(ix.dtype) * g
                gx_acc = -v * wy0[:, None]
                gy_acc = -v * wx0[:, None]
                v = tl.load(x + base + o_ne[:, None], mask=m_ne[:, None] & cm[None, :], other=0).to(ix.dtype) * g
                gx_acc += v * wy0[:, None]
                gy_acc -= v * wx1[:, None]
                v = tl.load(x + base + o_sw[:, None], mask=m_sw[:, None] & cm[None, :], other=0).to(ix.dtype) * g
                gx_acc -= v * wy1[:, None]
                gy_acc += v * wx0[:, None]
                v = tl.load(x + base + o_se[:, None], mask=m_se[:, None] & cm[None, :], other=0).to(ix.dtype) * g
                gx_acc += v * wy1[:, None]
                gy_acc += v * wx1[:, None]
                gix += tl.sum(gx_acc, 1)
                giy += tl.sum(gy_acc, 1)
    if NEEDS_GRID:
        tl.store(ggrid + (n * P + p) * 2, (gix * gix_mult).to(ggrid.dtype.element_ty), mask=pm)
        tl.store(ggrid + (n * P + p) * 2 + 1, (giy * giy_mult).to(ggrid.dtype.element_ty), mask=pm)
