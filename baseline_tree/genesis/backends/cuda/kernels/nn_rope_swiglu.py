"""Fused SwiGLU (``silu(gate) * up``) and rotary position embeddings, forward and backward.

SwiGLU sees gate, up and the output as (M, H) matrices with their own row strides and unit column stride, so the
halves of a packed (M, 2H) projection are read in place. Forward bytes: read 2*M*H, write M*H; backward: read
3*M*H, write 2*M*H (torch's composite moves about twice as much through its intermediates).

RoPE rotates the two halves of each head-dim row together (HF's ``rotate_half`` layout):
``out = x * cos + rotate_half(x) * sin``. The inverse rotation, ``x * cos - rotate_half(x * sin)``, is the
gradient (and the inverse for equal-half tables). x is a contiguous (S0, S1, S2, D) array; the cos/sin tables are
read through strides per leading dim (0 where broadcast), so tables of (T, D) positions serve every batch and head
without being expanded. Bytes: read and write x once (2*numel), plus the table rows.
"""

import triton
import triton.language as tl


@triton.jit
def _sigmoid(v):
    return 1.0 / (1.0 + tl.exp(-v))


@triton.jit
def swiglu_fwd(
    gate, up, out,                   # pointers: (M, H) views with unit column stride
    H, s_gate, s_up, s_out,          # row length and row strides
    BLOCK_H: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    m = cols < H
    g = tl.load(gate + row * s_gate + cols, mask=m, other=0.0).to(tl.float32)
    u = tl.load(up + row * s_up + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(out + row * s_out + cols, (g * _sigmoid(g) * u).to(out.dtype.element_ty), mask=m)


@triton.jit
def swiglu_bwd(
    dy, gate, up, dgate, dup,        # pointers: dy, dgate, dup contiguous (M, H); gate, up (M, H) views
    H, s_gate, s_up,                 # row length and input row strides
    BLOCK_H: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    m = cols < H
    d = tl.load(dy + row * H + cols, mask=m, other=0.0).to(tl.float32)
    g = tl.load(gate + row * s_gate + cols, mask=m, other=0.0).to(tl.float32)
    u = tl.load(up + row * s_up + cols, mask=m, other=0.0).to(tl.float32)
    sg = _sigmoid(g)
    # d silu(g) / dg = sigmoid(g) * (1 + g * (1 - sigmoid(g)))
    tl.store(dgate + row * H + cols, (d * u * sg * (1.0 + g * (1.0 - sg))).to(dgate.dtype.element_ty), mask=m)
    tl.store(dup + row * H + cols, (d * g * sg).to(dup.dtype.element_ty), mask=m)


@triton.jit
def rope_kernel(
    x, cos, sin, out,                # pointers: x, out contiguous (S0, S1, S2, D); cos, sin strided tables
    R, S1, S2, c0, c1, c2,           # rows (S0 * S1 * S2), leading sizes, table strides of the leading dims
    HALF: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, INVERSE: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_D)
    rm = rows < R
    m = rm[:, None] & (cols < HALF)[None, :]
    r64 = rows.to(tl.int64)
    i2 = r64 % S2
    i1 = (r64 // S2) % S1
    i0 = r64 // (S2 * S1)
    xo = (r64 * (2 * HALF))[:, None] + cols[None, :]
    to = (i0 * c0 + i1 * c1 + i2 * c2)[:, None] + cols[None, :]
    x1 = tl.load(x + xo, mask=m, other=0.0).to(tl.float32)
    x2 = tl.load(x + xo + HALF, mask=m, other=0.0).to(tl.float32)
    # Tables are rounded to x's dtype first, as the composite ``x * cos.to(x.dtype)`` does.
    ty = x.dtype.element_ty
    ca = tl.load(cos + to, mask=m, other=0.0).to(ty).to(tl.float32)
    cb = tl.load(cos + to + HALF, mask=m, other=0.0).to(ty).to(tl.float32)
    sa = tl.load(sin + to, mask=m, other=0.0).to(ty).to(tl.float32)
    sb = tl.load(sin + to + HALF, mask=m, other=0.0).to(ty).to(tl.float32)
    if INVERSE:
        y1 = x1 * ca + x2 * sb
        y2 = x2 * cb - x1 * sa
    else:
        y1 = x1 * ca - x2 * sa
        y2 = x2 * cb + x1 * sb
    tl.store(out + xo, y1.to(out.dtype.element_ty), mask=m)
    tl.store(out + xo + HALF, y2.to(out.dtype.element_ty), mask=m)
