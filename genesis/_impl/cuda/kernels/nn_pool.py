"""Max and average pooling over (N, C, D, H, W) windows, forward and backward (2-d pooling runs with D = 1), and
adaptive pooling of (N, C, H, W) input (windows from host tables, ``start = floor(i * in / out)``,
``end = ceil((i + 1) * in / out)``).

One program computes ``BLOCK`` outputs (forward) or ``BLOCK`` input gradients (backward). 2-d max pooling into
contiguous output runs ``max_pool2d_planes_fwd``: programs over (plane, block of the plane), so an output finds its
plane without dividing. The backward kernels gather: each input element visits the windows that can contain it (at
most ``KD * KH * KW`` of them) in a fixed order and sums their contributions, so the gradient is bitwise
reproducible and needs no atomics.

Max: padding is implicit -inf (the lowest value for integers); the first maximum wins, NaN propagates (torch's
rule); the index is the flat position in the (D, H, W) plane. Average: sums and divisors in float32 (float64 for
float64, int64 for int64 input: integer division as torch); the divisor is ``DIV_MODE`` 0: ``divisor``
(divisor_override), 1: the window clipped to the padded input (count_include_pad), 2: the window clipped to the
input.

Bytes: max forward reads each window's elements (the input once for non-overlapping windows) and writes the values
and int64 indices; max backward reads the indices and output gradient of every window covering an input element and
writes the input gradient; average pooling reads/writes the same without indices.
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
def _out_coords_cl(offs, C, OD, OH, OW):
    """``_out_coords`` of positions laid out channels_last: (N, OD, OH, OW, C) in memory."""
    c = offs % C
    t = offs // C
    ow = t % OW
    t = t // OW
    oh = t % OH
    t = t // OH
    od = t % OD
    return t // OD, c, od, oh, ow


@triton.jit
def _grad_positions(offs, C, D, H, W, OD, OH, OW, CL: tl.constexpr):
    """Input-gradient positions of the backward kernels: (iz, ih, iw) in their (D, H, W) plane, and where the outputs
    of their plane start in the output gradient with the stride between two of them (output (od, oh, ow) sits at
    ``obase + ((od * OH + oh) * OW + ow) * ostep``): C for channels_last (N, D, H, W, C), 1 for contiguous."""
    if CL:
        n, c, iz, ih, iw = _out_coords_cl(offs, C, D, H, W)
        return iz, ih, iw, n * OD * OH * OW * C + c, C
    else:
        iw = offs % W
        t = offs // W
        ih = t % H
        t = t // H
        iz = t % D
        return iz, ih, iw, (t // D) * OD * OH * OW, 1


@triton.jit
def _window_max(base, od, oh, ow, m, D, H, W, sD, sH, sW,
                KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr,
                SW: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DD: tl.constexpr,
                DH: tl.constexpr, DW: tl.constexpr, LOWEST: tl.constexpr, I64: tl.constexpr, DEPTH: tl.constexpr,
                BLOCK: tl.constexpr):
    """The maximum of each output's window in the plane at ``base`` (strides sD, sH, sW) and its flat position in
    the (D, H, W) plane (-1 where the window is empty). Without ``DEPTH`` the plane is 2-d (od, D, sD unused)."""
    best = tl.full([BLOCK], LOWEST, base.dtype.element_ty)
    arg = tl.full([BLOCK], -1, tl.int64 if I64 else tl.int32)  # widened to int64 by the store
    for a in range(KD):
        if DEPTH:
            iz = od * SD - PD + a * DD
            okd = m & (iz >= 0) & (iz < D)
        else:
            iz = 0
            okd = m
        for i in range(KH):
            ih = oh * SH - PH + i * DH
            okh = okd & (ih >= 0) & (ih < H)
            for j in range(KW):
                iw = ow * SW - PW + j * DW
                ok = okh & (iw >= 0) & (iw < W)
                v = tl.load(base + iz * sD + ih * sH + iw * sW, mask=ok, other=LOWEST)
                # First maximum wins; a NaN replaces any value (torch's rule); the first valid element seeds.
                take = ok & ((v > best) | (v != v) | (arg < 0))
                best = tl.where(take, v, best)
                arg = tl.where(take, (iz * H + ih) * W + iw, arg)
    return best, arg


@triton.jit
def max_pool_fwd(
    x, y, idx,                                   # pointers: x (N, C, D, H, W) strided; y, idx dense outputs
    total, C, D, H, W, OD, OH, OW,               # sizes (total = N * C * OD * OH * OW)
    sN, sC, sD, sH, sW,                          # x strides in elements
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
    LOWEST: tl.constexpr, I64: tl.constexpr, INDICES: tl.constexpr, CL: tl.constexpr, BLOCK: tl.constexpr,
):
    # INDICES: also store each window's argmax into idx (only when backward or the caller needs them).
    # CL: y and idx are laid out channels_last (N, OD, OH, OW, C), else contiguous; x is read through its strides.
    offs = _offsets(BLOCK, I64)
    m = offs < total
    if CL:
        n, c, od, oh, ow = _out_coords_cl(offs, C, OD, OH, OW)
    else:
        n, c, od, oh, ow = _out_coords(offs, C, OD, OH, OW)
    best, arg = _window_max(x + n * sN + c * sC, od, oh, ow, m, D, H, W, sD, sH, sW, KD, KH, KW, SD, SH, SW, PD,
                            PH, PW, DD, DH, DW, LOWEST, I64, True, BLOCK)
    tl.store(y + offs, best, mask=m)
    if INDICES:
        tl.store(idx + offs, arg, mask=m)


@triton.jit
def max_pool2d_planes_fwd(
    x, y, idx,                                   # pointers: x (N, C, H, W) strided; y, idx (N, C, OH, OW) contiguous
    C, H, W, OH, OW,                             # sizes
    sN, sC, sH, sW,                              # x strides in elements
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
    DH: tl.constexpr, DW: tl.constexpr,
    LOWEST: tl.constexpr, I64: tl.constexpr, INDICES: tl.constexpr, BLOCK: tl.constexpr,
):
    """2-d ``max_pool_fwd`` into contiguous output: program (p, i) computes outputs [i BLOCK, (i + 1) BLOCK) of plane
    p = (n, c), whose start in x it finds once; each output divides once (its row and column)."""
    p = tl.program_id(0)
    if I64:
        p = p.to(tl.int64)
    r = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = r < OH * OW
    oh = r // OW
    ow = r - oh * OW
    best, arg = _window_max(x + (p // C) * sN + (p % C) * sC, 0, oh, ow, m, 1, H, W, 0, sH, sW, 1, KH, KW, 1, SH,
                            SW, 0, PH, PW, 1, DH, DW, LOWEST, I64, False, BLOCK)
    o = p * (OH * OW) + r
    tl.store(y + o, best, mask=m)
    if INDICES:
        tl.store(idx + o, arg, mask=m)


@triton.jit
def max_pool_bwd(
    g, idx, dx,                                  # pointers: g, idx (N, C, OD, OH, OW) and dx (N, C, D, H, W), dense
    total, C, D, H, W, OD, OH, OW,               # sizes (total = N * C * D * H * W)
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
    F64: tl.constexpr, I64: tl.constexpr, CL: tl.constexpr, BLOCK: tl.constexpr,
):
    # CL: all three arrays laid out channels_last (N, D, H, W, C), else contiguous.
    offs = _offsets(BLOCK, I64)
    m = offs < total
    iz, ih, iw, obase, ostep = _grad_positions(offs, C, D, H, W, OD, OH, OW, CL)
    me = (iz * H + ih) * W + iw
    if F64:
        acc = tl.zeros([BLOCK], tl.float64)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    # Windows in increasing output order: the kernel offset runs backwards.
    for a0 in range(KD):
        zd = iz + PD - (KD - 1 - a0) * DD
        od = zd // SD
        okd = m & (zd >= 0) & (zd % SD == 0) & (od < OD)
        for i0 in range(KH):
            zh = ih + PH - (KH - 1 - i0) * DH
            oh = zh // SH
            okh = okd & (zh >= 0) & (zh % SH == 0) & (oh < OH)
            for j0 in range(KW):
                zw = iw + PW - (KW - 1 - j0) * DW
                ow = zw // SW
                ok = okh & (zw >= 0) & (zw % SW == 0) & (ow < OW)
                o = obase + ((od * OH + oh) * OW + ow) * ostep
                hit = ok & (tl.load(idx + o, mask=ok, other=-1) == me)
                acc += tl.load(g + o, mask=hit, other=0.0).to(acc.dtype)
    tl.store(dx + offs, acc.to(dx.dtype.element_ty), mask=m)


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
    I64: tl.constexpr, CL: tl.constexpr, BLOCK: tl.constexpr,
):
    # CL: y laid out channels_last (N, OD, OH, OW, C), else contiguous.
    offs = _offsets(BLOCK, I64)
    m = offs < total
    if CL:
        n, c, od, oh, ow = _out_coords_cl(offs, C, OD, OH, OW)
    else:
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
    g, dx,                                       # pointers: g (N, C, OD, OH, OW) and dx (N, C, D, H, W), dense
    total, C, D, H, W, OD, OH, OW, divisor,      # sizes (total = N * C * D * H * W); divisor_override or 0
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, DIV_MODE: tl.constexpr, F64: tl.constexpr,
    I64: tl.constexpr, CL: tl.constexpr, BLOCK: tl.constexpr,
):
    # CL: g and dx laid out channels_last (N, D, H, W, C), else contiguous.
    offs = _offsets(BLOCK, I64)
    m = offs < total
    iz, ih, iw, obase, ostep = _grad_positions(offs, C, D, H, W, OD, OH, OW, CL)
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
                gv = tl.load(g + obase + ((od * OH + oh) * OW + ow) * ostep, mask=ok, other=0.0).to(acc.dtype)
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
