"""Elementwise Triton kernels of complex arrays: products, quotients, ``exp``, ``reciprocal`` and ``conj``.

A complex array is stored interleaved (real, imaginary; complex64 as two float32), so every pointer here is the real
dtype's, and element ``i`` of a contiguous operand is the pair at ``2 i``, ``2 i + 1``: the kernel loads a
``(BLOCK, 2)`` tile (one wide access per element) and splits it into the two parts. Additions, negations, copies,
``where``, ``abs`` (``hypot``) and ``angle`` (``atan2``) need no kernel of their own: they run the real elementwise
kernels on the real views (``launch.real_view``, ``launch.part``).

Operand modes (compile-time): 1 a contiguous array of the output's shape, 2 a runtime scalar (its parts ``b_re``,
``b_im``), 3 one element broadcast from a pointer. Bytes moved per element: 16 (complex64) or 32 (complex128) for a
binary op of two arrays, 8 or 16 for a unary one, plus the output.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from genesis._impl.cuda.kernels.elementwise import block_offsets


@triton.jit
def _load_pair(p, offs, mask, M: tl.constexpr):
    if M == 3:
        offs = offs * 0
    two = tl.arange(0, 2)
    v = tl.load(p + offs[:, None] * 2 + two[None, :], mask=mask[:, None])
    return tl.split(v)


@triton.jit
def _div(ar, ai, br, bi):
    # numpy's and c10::complex's quotient (Smith's algorithm): divide by the larger part of the divisor first, so
    # |b|^2 never overflows or underflows; a zero divisor gives infinities or NaN as a / 0 does.
    abs_r = tl.abs(br)
    abs_i = tl.abs(bi)
    big_r = abs_r >= abs_i
    zero = (abs_r == 0) & (abs_i == 0)
    safe_r = tl.where(zero | ~big_r, 1.0, br)  # the branches not taken must not divide by zero
    safe_i = tl.where(big_r, 1.0, bi)
    rat_r = bi / safe_r  # |b_im / b_re| <= 1
    scl_r = 1.0 / (br + bi * rat_r)
    rat_i = br / safe_i  # |b_re / b_im| < 1
    scl_i = 1.0 / (bi + br * rat_i)
    yr = tl.where(big_r, (ar + ai * rat_r) * scl_r, (ar * rat_i + ai) * scl_i)
    yi = tl.where(big_r, (ai - ar * rat_r) * scl_r, (ai * rat_i - ar) * scl_i)
    yr = tl.where(zero, ar / abs_r, yr)
    yi = tl.where(zero, ai / abs_i, yi)
    return yr, yi


@triton.jit
def _compute(ar, ai, br, bi, OP: tl.constexpr):
    if OP == "mul":
        yr = ar * br - ai * bi
        yi = ar * bi + ai * br
    elif OP == "div":
        yr, yi = _div(ar, ai, br, bi)
    elif OP == "reciprocal":
        yr, yi = _div(tl.full(ar.shape, 1.0, ar.dtype), tl.zeros_like(ar), ar, ai)
    elif OP == "exp":
        # exp(x + iy) = e^x (cos y + i sin y); libdevice's cos and sin are accurate to a few ulp for any y
        if ar.dtype.is_fp64():
            e = libdevice.exp(ar)
        else:
            e = tl.exp(ar)
        yr = e * libdevice.cos(ai)
        yi = e * libdevice.sin(ai)
    else:  # conj
        tl.static_assert(OP == "conj", "unknown complex op")
        yr = ar
        yi = ai * -1.0  # Triton's -x is 0 - x, which turns +0.0 into +0.0 (torch: -0.0)
    return yr, yi


@triton.jit
def complex_ew(out, a, b, b_re, b_im, n,
               OP: tl.constexpr, NIN: tl.constexpr, MA: tl.constexpr, MB: tl.constexpr, BLOCK: tl.constexpr,
               I64: tl.constexpr):
    # out, a, b: pointers to the real dtype of contiguous interleaved complex arrays; b_re, b_im: b's parts in
    # mode 2; n: complex elements. BLOCK elements per program.
    offs, mask = block_offsets(n, BLOCK, I64)
    ar, ai = _load_pair(a, offs, mask, MA)
    if NIN == 2:
        if MB == 2:
            br = tl.zeros_like(ar) + b_re
            bi = tl.zeros_like(ar) + b_im
        else:
            br, bi = _load_pair(b, offs, mask, MB)
    else:
        br = ar
        bi = ai
    yr, yi = _compute(ar, ai, br, bi, OP)
    two = tl.arange(0, 2)
    y = tl.join(yr, yi).to(out.dtype.element_ty)
    tl.store(out + offs[:, None] * 2 + two[None, :], y, mask=mask[:, None])
