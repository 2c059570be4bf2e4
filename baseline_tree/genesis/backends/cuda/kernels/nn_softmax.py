"""Fused softmax / log_softmax backward over the last dim of contiguous (M, K) rows.

The forward (online softmax for long rows) is ``reduce.softmax_rows``. The backward from the saved output y:
softmax ``dx = y * (dy - sum(dy * y))``, log_softmax ``dx = dy - exp(y) * sum(dy)``. Bytes: read dy and y, write
dx (3*M*K elements); one pass when the row fits in registers, else two passes over the row (y and dy read twice).
"""

import triton
import triton.language as tl


@triton.jit
def softmax_bwd(
    dy, y, dx,                       # pointers: contiguous (M, K)
    K,                               # row length
    LOG: tl.constexpr, BLOCK_K: tl.constexpr, ONE_PASS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    base = row * K
    if ONE_PASS:
        cols = tl.arange(0, BLOCK_K)
        m = cols < K
        g = tl.load(dy + base + cols, mask=m, other=0.0).to(tl.float32)
        v = tl.load(y + base + cols, mask=m, other=0.0).to(tl.float32)
        if LOG:
            d = g - tl.exp(v) * tl.sum(g, 0)
        else:
            d = v * (g - tl.sum(g * v, 0))
        tl.store(dx + base + cols, d.to(dx.dtype.element_ty), mask=m)
    else:
        acc = tl.zeros([BLOCK_K], tl.float32)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = cols < K
            g = tl.load(dy + base + cols, mask=m, other=0.0).to(tl.float32)
            if LOG:
                acc += g
            else:
                acc += g * tl.load(y + base + cols, mask=m, other=0.0).to(tl.float32)
        total = tl.sum(acc, 0)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = cols < K
            g = tl.load(dy + base + cols, mask=m, other=0.0).to(tl.float32)
            v = tl.load(y + base + cols, mask=m, other=0.0).to(tl.float32)
            if LOG:
                d = g - tl.exp(v) * total
            else:
                d = v * (g - total)
            tl.store(dx + base + cols, d.to(dx.dtype.element_ty), mask=m)
