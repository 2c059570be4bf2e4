"""Reflect, replicate and circular padding of up to three trailing dims, forward and backward, from per-axis tables.

Both kernels walk a 6-d iteration space (A0, A1, D, H, W, B): D, H, W are the padded axes (size 1 where fewer are
padded), A0, A1 the plain leading dims and B a plain trailing one (the channels of a channels_last array, so that
consecutive programs touch consecutive memory in that layout too). The host computes once per (size, amounts, mode)
each output position's source ``src[o]`` and, for each input position, the sorted list of output positions that read
it (``first[i]``, ``count[i]`` into ``outs``; replicate's edges are read by up to ``pad + 1`` outputs, reflect's and
circular's elements by at most three).

The backward gathers: every input element sums, in output order, the gradients of the outputs in its lists, so it
needs no atomics and is bitwise reproducible. Sums run in float32 (float64 for float64).

Bytes: forward reads each output's source (the input, about once) and writes the output; backward reads the output
gradient once and writes the input gradient; the tables are O(D + H + W) int32.
"""

import triton
import triton.language as tl

from genesis._impl.cuda.kernels.nn_pool import _offsets


@triton.jit
def _split(offs, A1, D, H, W, B):
    """(a0, a1, d, h, w, b) coordinates of flat positions over a contiguous (A0, A1, D, H, W, B) space."""
    b = offs % B
    t = offs // B
    w = t % W
    t = t // W
    h = t % H
    t = t // H
    d = t % D
    t = t // D
    return t // A1, t % A1, d, h, w, b


@triton.jit
def pad_fwd(
    x, y,                                  # pointers: x strided; y contiguous over (A0, A1, OD, OH, OW, B)
    src_d, src_h, src_w,                   # source position (int32) of every output position along D, H, W
    total, A1, OD, OH, OW, B,              # sizes (total = number of outputs)
    s0, s1, sD, sH, sW, sB,                # x strides in elements
    I64: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = _offsets(BLOCK, I64)
    m = offs < total
    a0, a1, od, oh, ow, b = _split(offs, A1, OD, OH, OW, B)
    i_d = tl.load(src_d + od, mask=m, other=0)
    i_h = tl.load(src_h + oh, mask=m, other=0)
    i_w = tl.load(src_w + ow, mask=m, other=0)
    addr = a0 * s0 + a1 * s1 + i_d * sD + i_h * sH + i_w * sW + b * sB
    tl.store(y + offs, tl.load(x + addr, mask=m, other=0), mask=m)


@triton.jit
def pad_bwd(
    g, dx,                                 # pointers: g strided over (A0, A1, OD, OH, OW, B); dx contiguous
    first_d, count_d, outs_d,              # per input position along D: its output positions outs[first:first+count]
    first_h, count_h, outs_h,              # ... along H
    first_w, count_w, outs_w,              # ... along W
    total, A1, D, H, W, B,                 # sizes (total = number of input elements)
    s0, s1, sD, sH, sW, sB,                # g strides in elements
    RD: tl.constexpr, RH: tl.constexpr, RW: tl.constexpr,  # the longest list along each axis (constant trip counts)
    F64: tl.constexpr, I64: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = _offsets(BLOCK, I64)
    m = offs < total
    a0, a1, i_d, i_h, i_w, b = _split(offs, A1, D, H, W, B)
    base = a0 * s0 + a1 * s1 + b * sB
    fd = tl.load(first_d + i_d, mask=m, other=0)
    nd = tl.load(count_d + i_d, mask=m, other=0)
    fh = tl.load(first_h + i_h, mask=m, other=0)
    nh = tl.load(count_h + i_h, mask=m, other=0)
    fw = tl.load(first_w + i_w, mask=m, other=0)
    nw = tl.load(count_w + i_w, mask=m, other=0)
    if F64:
        acc = tl.zeros([BLOCK], tl.float64)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for j in range(0, RD):
        ok_d = m & (j < nd)
        od = tl.load(outs_d + fd + j, mask=ok_d, other=0)
        for k in range(0, RH):
            ok_h = ok_d & (k < nh)
            oh = tl.load(outs_h + fh + k, mask=ok_h, other=0)
            for q in range(0, RW):
                ok = ok_h & (q < nw)
                ow = tl.load(outs_w + fw + q, mask=ok, other=0)
                acc += tl.load(g + base + od * sD + oh * sH + ow * sW, mask=ok, other=0.0).to(acc.dtype)
    tl.store(dx + offs, acc.to(dx.dtype.element_ty), mask=m)
