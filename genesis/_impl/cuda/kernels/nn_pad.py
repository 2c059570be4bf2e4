"""Reflect, replicate and circular padding of up to three trailing dims, forward and backward.

Both kernels walk a 6-d iteration space (A0, A1, D, H, W, B): D, H, W are the padded axes (size 1 where fewer are
padded), A0, A1 the plain leading dims and B a plain trailing one (the channels of a channels_last array, so that
consecutive programs touch consecutive memory in that layout too). A program maps one (BR, BW) tile: BR rows of the
space's leading (A0, A1, D, H) part and BW consecutive positions of its (W, B) part, so the coordinates of a row are
worked out once per row, and a column needs no division at all when B is 1 (``B1``). The forward works out each
output's source position arithmetically. For the backward the host computes once per (size, amounts, mode) and axis
the sorted list of output positions that read each input position (``first[i]``, ``count[i]`` into ``outs``;
replicate's edges are read by up to ``pad + 1`` outputs, reflect's and circular's elements by at most three).

The backward gathers: every input element sums, in output order, the gradients of the outputs in its lists, so it
needs no atomics and is bitwise reproducible. Sums run in float32 (float64 for float64).

Bytes: forward reads each output's source (the input, about once) and writes the output; backward reads the output
gradient once and writes the input gradient; the tables are O(D + H + W) int32.
"""

import triton
import triton.language as tl


@triton.jit
def _tile(ROWS, COLS, BR: tl.constexpr, BW: tl.constexpr, I64: tl.constexpr):
    """This program's rows (BR, 1) and columns (1, BW) of a (ROWS, COLS) space, tiles numbered row-major."""
    pid = tl.program_id(0)
    tiles_w = tl.cdiv(COLS, BW)
    pr = pid // tiles_w
    pc = pid - pr * tiles_w
    if I64:
        pr = pr.to(tl.int64)
    r = pr * BR + tl.arange(0, BR)[:, None]
    j = pc * BW + tl.arange(0, BW)[None, :]
    return r, j


@triton.jit
def _rows(r, A1, D, H):
    """(a0, a1, d, h) coordinates of rows over a contiguous (A0, A1, D, H) space."""
    h = r % H
    t = r // H
    d = t % D
    t = t // D
    return t // A1, t % A1, d, h


@triton.jit
def _cols(j, B, B1: tl.constexpr):
    """(w, b) coordinates of columns over a contiguous (W, B) space (b = 0 when ``B1``: B is 1)."""
    if B1:
        w = j
        b = j * 0
    else:
        w = j // B
        b = j - w * B
    return w, b


@triton.jit
def _source(o, before, size, MODE: tl.constexpr):
    """The input position read by output position ``o`` of an axis padded by ``before`` in front: reflect (MODE 0,
    ``before < size``), replicate (1) or circular (2, ``before <= size``)."""
    i = o - before
    if MODE == 0:
        i = tl.abs(i)
        i = tl.where(i >= size, 2 * (size - 1) - i, i)
    elif MODE == 1:
        i = tl.minimum(tl.maximum(i, 0), size - 1)
    else:
        i = tl.where(i < 0, i + size, tl.where(i >= size, i - size, i))
    return i


@triton.jit
def pad_fwd(
    x, y,                                  # pointers: x strided; y contiguous over (A0, A1, OD, OH, OW, B)
    ROWS, A1, OD, OH, OW, B,               # sizes (ROWS = A0 A1 OD OH output rows of OW B elements)
    s0, s1, sD, sH, sW, sB,                # x strides in elements
    D, H, W, before_d, before_h, before_w,  # the input's padded sizes and the amounts in front
    MODE: tl.constexpr, B1: tl.constexpr, I64: tl.constexpr, BR: tl.constexpr, BW: tl.constexpr,
):
    COLS = OW * B
    r, j = _tile(ROWS, COLS, BR, BW, I64)
    a0, a1, od, oh = _rows(r, A1, OD, OH)
    ow, b = _cols(j, B, B1)
    i_d = _source(od, before_d, D, MODE)
    i_h = _source(oh, before_h, H, MODE)
    i_w = _source(ow, before_w, W, MODE)
    addr = (a0 * s0 + a1 * s1 + i_d * sD + i_h * sH) + (i_w * sW + b * sB)
    m = (r < ROWS) & (j < COLS)
    tl.store(y + r * COLS + j, tl.load(x + addr, mask=m, other=0), mask=m)


@triton.jit
def pad_bwd(
    g, dx,                                 # pointers: g strided over (A0, A1, OD, OH, OW, B); dx contiguous
    first_d, count_d, outs_d,              # per input position along D: its output positions outs[first:first+count]
    first_h, count_h, outs_h,              # ... along H
    first_w, count_w, outs_w,              # ... along W
    ROWS, A1, D, H, W, B,                  # sizes (ROWS = A0 A1 D H input rows of W B elements)
    s0, s1, sD, sH, sW, sB,                # g strides in elements
    B1: tl.constexpr, F64: tl.constexpr, I64: tl.constexpr, BR: tl.constexpr, BW: tl.constexpr,
):
    COLS = W * B
    r, j = _tile(ROWS, COLS, BR, BW, I64)
    mr = r < ROWS
    mj = j < COLS
    a0, a1, i_d, i_h = _rows(r, A1, D, H)
    i_w, b = _cols(j, B, B1)
    base = a0 * s0 + a1 * s1
    fd = tl.load(first_d + i_d, mask=mr, other=0)
    nd = tl.load(count_d + i_d, mask=mr, other=0)
    fh = tl.load(first_h + i_h, mask=mr, other=0)
    nh = tl.load(count_h + i_h, mask=mr, other=0)
    fw = tl.load(first_w + i_w, mask=mj, other=0)
    nw = tl.load(count_w + i_w, mask=mj, other=0)
    if F64:
        acc = tl.zeros([BR, BW], tl.float64)
    else:
        acc = tl.zeros([BR, BW], tl.float32)
    # Trip counts: the tile's longest lists (most tiles hold only elements read once, by their own output)
    for k_d in range(0, tl.max(nd)):
        ok_d = mr & (k_d < nd)
        od = tl.load(outs_d + fd + k_d, mask=ok_d, other=0)
        for k_h in range(0, tl.max(nh)):
            ok_h = ok_d & (k_h < nh)
            row = base + od * sD + tl.load(outs_h + fh + k_h, mask=ok_h, other=0) * sH
            for k_w in range(0, tl.max(nw)):
                ok_w = mj & (k_w < nw)
                col = tl.load(outs_w + fw + k_w, mask=ok_w, other=0) * sW + b * sB
                acc += tl.load(g + row + col, mask=ok_h & ok_w, other=0.0).to(acc.dtype)
    tl.store(dx + r * COLS + j, acc.to(dx.dtype.element_ty), mask=mr & mj)
