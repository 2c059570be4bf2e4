"""Multi-tensor kernels: per-tensor norms, in-place scale, fill and clamp, and copies, each over a whole list.

They share the multi-tensor layout of ``nn_adamw`` (see its docstring): one grid covers every tensor of a list; the
host passes the first tensor as a typed pointer and, per tensor, its element offset from that first tensor and its
size, and per program the tensor it serves and that tensor's first program.

Norms take two launches and no atomics, so the result is the same bits on every run: ``multi_norm_partials`` writes
one partial per program (sum of ``|x|^p``, or the max / min of ``|x|``), and ``multi_norm_finish`` (one program per
tensor) reduces that tensor's partials in order and applies the root. Partials are float32 (float64 for float64
tensors); a nan anywhere in a tensor makes its max / min norm nan, as in torch.
"""

import triton
import triton.language as tl

from genesis._impl.cuda.kernels.nn_adamw import _base, _block


@triton.jit
def _nanmax(v, axis: tl.constexpr):
    """max over ``axis`` that returns nan when any element is nan (``tl.max`` may drop nans)."""
    m = tl.max(tl.where(v == v, v, float("-inf")), axis)
    return tl.where(tl.max((v != v).to(tl.int32), axis) > 0, float("nan"), m)


@triton.jit
def _nanmin(v, axis: tl.constexpr):
    m = tl.min(tl.where(v == v, v, float("inf")), axis)
    return tl.where(tl.max((v != v).to(tl.int32), axis) > 0, float("nan"), m)


@triton.jit
def _pow(a, p):
    """``a ** p`` for ``a >= 0`` (0 ** p is 0 for p > 0 and inf for p < 0, through log2(0) = -inf)."""
    return tl.exp2(tl.cast(p, a.dtype) * tl.log2(a))


@triton.jit
def multi_norm_partials(
    x, partials,                                 # pointers: the first tensor; (programs,) float32 or float64
    offsets, sizes, block_tensor, block_first,   # int64 (1, T) element offsets; int64 (T,); int32 (programs,), (T,)
    T, p,
    ORD: tl.constexpr, BLOCK: tl.constexpr, AX: tl.constexpr,
):
    # ORD: "l2" sum x^2, "l1" sum |x|, "max" / "min" of |x|, "l0" count of non-zeros, "lp" sum |x|^p.
    # Bytes: read every element once, write one partial per BLOCK elements.
    t, offs, n, _ = _block(block_tensor, block_first, sizes, BLOCK)
    ok = offs < n
    a = tl.abs(tl.load(_base(x, offsets, 0, T, t, AX) + offs, mask=ok, other=0.0).to(partials.dtype.element_ty))
    if ORD == "l2":
        part = tl.sum(a * a, 0)
    elif ORD == "l1":
        part = tl.sum(a, 0)
    elif ORD == "max":
        part = _nanmax(a, 0)                     # masked lanes hold 0, which never exceeds |x|
    elif ORD == "min":
        part = _nanmin(tl.where(ok, a, float("inf")), 0)
    elif ORD == "l0":
        part = tl.sum((a != 0).to(partials.dtype.element_ty), 0)
    else:
        part = tl.sum(tl.where(ok, _pow(a, p), 0.0), 0)
    tl.store(partials + tl.program_id(0), part)


@triton.jit
def multi_norm_finish(
    partials, out,                               # pointers: partials as above; out (T,) float32 or float64
    sizes, block_first,                          # int64 (T,); int32 (T,)
    p,
    ORD: tl.constexpr, BLOCK: tl.constexpr, RBLOCK: tl.constexpr,
):
    # One program per tensor: reduce its ceil(n / BLOCK) partials (none for an empty tensor), then the root.
    t = tl.program_id(0)
    first = tl.load(block_first + t)
    count = (tl.load(sizes + t) + BLOCK - 1) // BLOCK
    acc = tl.zeros([RBLOCK], partials.dtype.element_ty)
    if ORD == "min":
        acc = acc + float("inf")
    for start in range(0, count, RBLOCK):
        idx = start + tl.arange(0, RBLOCK)
        ok = idx < count
        v = tl.load(partials + first + idx, mask=ok, other=0.0)
        if ORD == "min":
            v = tl.where(ok, v, float("inf"))
        if ORD == "max":
            acc = tl.where((acc != acc) | (v != v), float("nan"), tl.maximum(acc, v))
        elif ORD == "min":
            acc = tl.where((acc != acc) | (v != v), float("nan"), tl.minimum(acc, v))
        else:
            acc = acc + v
    if ORD == "max":
        total = _nanmax(acc, 0)
    elif ORD == "min":
        total = _nanmin(acc, 0)
    else:
        total = tl.sum(acc, 0)
    if ORD == "l2":
        total = tl.sqrt(total)
    elif ORD == "lp":
        total = _pow(total, 1.0 / p)
    tl.store(out + t, total.to(out.dtype.element_ty))


@triton.jit
def _wide(v, F64: tl.constexpr):
    """The arithmetic type of an element: float64 for float64 tensors, else float32."""
    if F64:
        return v.to(tl.float64)
    else:
        return v.to(tl.float32)


@triton.jit
def multi_scale(
    x, scale,                                    # pointers: the first tensor; a 0-d scale of any floating dtype
    offsets, sizes, block_tensor, block_first,   # as multi_norm_partials
    T,
    F64: tl.constexpr, BLOCK: tl.constexpr, AX: tl.constexpr,
):
    # x *= scale in place, the scale read on the device (no host sync). Bytes: read and write every element once.
    t, offs, n, _ = _block(block_tensor, block_first, sizes, BLOCK)
    ptr = _base(x, offsets, 0, T, t, AX) + offs
    ok = offs < n
    s = _wide(tl.load(scale), F64)
    v = _wide(tl.load(ptr, mask=ok, other=0.0), F64)
    tl.store(ptr, (v * s).to(x.dtype.element_ty), mask=ok)


@triton.jit
def multi_fill(
    x,                                           # pointer: the first tensor
    offsets, sizes, block_tensor, block_first,   # as multi_norm_partials
    T, value,
    BLOCK: tl.constexpr, AX: tl.constexpr,
):
    # x = value in place. Bytes: write every element once.
    t, offs, n, _ = _block(block_tensor, block_first, sizes, BLOCK)
    ptr = _base(x, offsets, 0, T, t, AX) + offs
    tl.store(ptr, tl.broadcast_to(tl.cast(value, x.dtype.element_ty), [BLOCK]), mask=offs < n)


@triton.jit
def multi_clamp(
    x,                                           # pointer: the first tensor
    offsets, sizes, block_tensor, block_first,   # as multi_norm_partials
    T, lo, hi,
    HAS_LO: tl.constexpr, HAS_HI: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, AX: tl.constexpr,
):
    # x = min(max(x, lo), hi) in place; a nan stays nan (comparisons with nan are false). Bytes: read and write once.
    t, offs, n, _ = _block(block_tensor, block_first, sizes, BLOCK)
    ptr = _base(x, offsets, 0, T, t, AX) + offs
    ok = offs < n
    v = _wide(tl.load(ptr, mask=ok, other=0.0), F64)
    if HAS_LO:
        lo_ = tl.cast(lo, v.dtype)  # the bound rounded to the arithmetic type, as torch's opmath
        v = tl.where(v < lo_, lo_, v)
    if HAS_HI:
        hi_ = tl.cast(hi, v.dtype)
        v = tl.where(v > hi_, hi_, v)
    tl.store(ptr, v.to(x.dtype.element_ty), mask=ok)


@triton.jit
def multi_copy(
    dst, src,                                    # pointers: the first tensor of each list
    offsets, sizes, block_tensor, block_first,   # as multi_norm_partials (row 0: dst, row 1: src)
    T,
    BLOCK: tl.constexpr, AX_DST: tl.constexpr, AX_SRC: tl.constexpr,
):
    # dst[t] = src[t] for every pair, converted to dst's dtype. Bytes: read src and write dst once.
    t, offs, n, _ = _block(block_tensor, block_first, sizes, BLOCK)
    d = _base(dst, offsets, 0, T, t, AX_DST) + offs
    s = _base(src, offsets, 1, T, t, AX_SRC) + offs
    ok = offs < n
    tl.store(d, tl.load(s, mask=ok).to(dst.dtype.element_ty), mask=ok)
