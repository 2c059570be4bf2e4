"""Counter-based random numbers (Philox 4x32-10, ``tl.rand``/``tl.randn``/``tl.randint4x``).

Element ``i`` of a draw from stream ``(seed, offset)`` uses counter ``offset + i``: the same seed and offset give the
same numbers on every run and for every launch configuration. A kernel captured in a CUDA graph reads the base of
its counters from device memory (``FROM_DEVICE``: counter ``*base + offset + i``), which the graph's owner sets before
each replay, so every replay draws new numbers.
"""

import triton
import triton.language as tl


@triton.jit
def random_kernel(out, n, seed, offset, base, low, span, DIST: tl.constexpr, ONE_BELOW: tl.constexpr,
                  FROM_DEVICE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if FROM_DEVICE:
        offset = tl.load(base) + offset
    c = offset + offs
    if DIST == "uniform":
        # Round in float32, then keep the result strictly below 1 in the output dtype.
        y = tl.minimum(tl.rand(seed, c), ONE_BELOW)
    elif DIST == "normal":
        y = tl.randn(seed, c)
    else:
        r0, r1, _, _ = tl.randint4x(seed, c)
        u = (r0.to(tl.uint64) << 32) | r1.to(tl.uint64)
        y = low + (u % span).to(tl.int64)
    tl.store(out + offs, y.to(out.dtype.element_ty), mask=m)


@triton.jit
def dropout_kernel(x, out, n, seed, offset, base, p, scale, FROM_DEVICE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = x[i] * scale where uniform(seed, offset + i) >= p, else 0 (x, out contiguous), computed in float32,
    or in float64 for float64 data (``scale`` is then a float64 argument).

    The mask is never stored: the backward pass runs this kernel on the gradient with the same stream.
    """
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if FROM_DEVICE:
        offset = tl.load(base) + offset
    keep = tl.rand(seed, offset + offs) >= p
    v = tl.load(x + offs, mask=m, other=0.0)
    if v.dtype.is_fp64():
        y = v * scale
    else:
        y = v.to(tl.float32) * scale
    tl.store(out + offs, tl.where(keep, y, 0.0).to(out.dtype.element_ty), mask=m)
