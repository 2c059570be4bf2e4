"""Fused cross-entropy over large vocabularies: no probabilities are ever materialized.

The forward walks each row of the (M, V) logits in BLOCK_V chunks with an online log-sum-exp (per-lane running max
and rescaled sum with one exponential per element, float32 whatever the logits' dtype), picks the target logit
and, for label smoothing, sums the logits. Per row it writes the loss and the log-sum-exp (8 bytes); it reads the
logits once: M*V*itemsize bytes. The launcher marks V as a multiple of 16 when it is one (vectorized loads).

With label smoothing ``e`` over V classes the row loss is ``(1 - e) * (lse - x[t]) + e * (lse - mean(x))`` (torch's
definition); rows whose target equals ``ignore_index`` give 0. The forward also checks each target: one outside
[0, V) (other than ``ignore_index``) is recorded in the device error flag (``device_checks``) and read safely as
class 0, so no separate check kernel runs. A second, one-program kernel reduces the rows (sum, or mean over the
non-ignored rows) into the loss in its output dtype and keeps the count for the backward.

The backward recomputes ``softmax = exp(x - lse)`` chunk by chunk and writes
``dlogits = dloss_row * (softmax - (1 - e) * onehot(t) - e / V)`` in the logits' dtype: it reads the logits and
writes the gradient once (2*M*V*itemsize bytes). Its grid is (rows, chunks), so every chunk is an independent program.
"""

import triton
import triton.language as tl


@triton.jit
def cross_entropy_fwd(
    x, target, loss, lse, flag,        # pointers: x (M, V) logits; target (M,) int64; loss (M,); lse (M,) float32;
                                       # flag: the int64 error slots (code, value, size)
    V, ignore_index, smoothing, code,  # sizes and options; code: what a bad target records
    BLOCK_V: tl.constexpr, SMOOTH: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    base = row * V
    mx = tl.zeros([BLOCK_V], tl.float32) - float("inf")
    s = tl.zeros([BLOCK_V], tl.float32)
    total = tl.zeros([BLOCK_V], tl.float32)
    for k0 in range(0, V, BLOCK_V):
        cols = k0 + tl.arange(0, BLOCK_V)
        m = cols < V
        v = tl.load(x + base + cols, mask=m, other=-float("inf")).to(tl.float32)
        # One exponential per element (the exp unit, not memory, limits this loop): with e = exp(-|v - mx|), a new
        # maximum rescales the sum by e and adds 1, any other value adds e. A -inf logit (or padding) adds nothing;
        # the first finite value of a lane has v - mx = inf, so e = 0 and the sum becomes 1.
        d = v - mx
        e = tl.exp(-tl.abs(d))
        s = tl.where(v == -float("inf"), s, tl.where(d > 0, s * e + 1.0, s + e))
        mx = tl.maximum(mx, v)
        if SMOOTH:
            total += tl.where(m, v, 0.0)
    gm = tl.max(mx, 0)
    sum_exp = tl.sum(s * tl.exp(tl.where(mx == -float("inf"), -float("inf"), mx - gm)), 0)
    row_lse = gm + tl.log(sum_exp)
    t = tl.load(target + row)
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= V))
    tl.store(flag + 1, t, mask=bad)
    tl.store(flag + 2, t * 0 + V, mask=bad)
    tl.store(flag, t * 0 + code, mask=bad)
    picked = tl.load(x + base + tl.where(valid & ~bad, t, 0)).to(tl.float32)
    out = row_lse - picked
    if SMOOTH:
        out = (1.0 - smoothing) * out + smoothing * (row_lse - tl.sum(total, 0) / V)
    tl.store(loss + row, tl.where(valid, out, 0.0).to(loss.dtype.element_ty))
    tl.store(lse + row, row_lse)


@triton.jit
def cross_entropy_reduce(
    rows, target, out, count,          # pointers: rows (M,) float32 row losses; target (M,) int64; out, count (1,)
    M, ignore_index,                   # sizes and options
    MEAN: tl.constexpr, BLOCK: tl.constexpr,
):
    # One program: out = sum(rows), divided by the number of rows whose target is not ignore_index with MEAN (nan
    # when there is none, as torch); that number goes to count (float32) for the backward. Reads 12 bytes per row.
    acc = tl.zeros([BLOCK], tl.float32)
    n = tl.zeros([BLOCK], tl.float32)
    for r0 in range(0, M, BLOCK):
        offs = r0 + tl.arange(0, BLOCK)
        m = offs < M
        acc += tl.load(rows + offs, mask=m, other=0.0)
        if MEAN:
            t = tl.load(target + offs, mask=m, other=ignore_index)
            n += tl.where(t != ignore_index, 1.0, 0.0)
    total = tl.sum(acc, 0)
    if MEAN:
        c = tl.sum(n, 0)
        tl.store(count, c)
        total = total / c
    tl.store(out, total.to(out.dtype.element_ty))


@triton.jit
def cross_entropy_bwd(
    x, target, lse, dloss, count, dx,  # pointers: x, dx (M, V); target (M,) int64; lse (M,) float32; dloss: the
                                       # loss gradient (one per row, or one for all: stride 0); count (1,) float32
    V, ignore_index, smoothing,        # sizes and options
    dloss_stride,                      # dloss's stride (0 for a reduced loss)
    BLOCK_V: tl.constexpr, DIVIDE: tl.constexpr,
):
    # DIVIDE: a mean's gradient, divided by the number of non-ignored rows.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_V + tl.arange(0, BLOCK_V)
    m = cols < V
    base = row * V
    t = tl.load(target + row)
    g = tl.load(dloss + row * dloss_stride).to(tl.float32)
    if DIVIDE:
        g = g / tl.load(count)
    # A where, not a product: the inf or nan of an all-ignored mean never reaches the gradient.
    g = tl.where(t != ignore_index, g, 0.0)
    v = tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32)
    p = tl.exp(v - tl.load(lse + row))
    d = p - smoothing / V - tl.where(cols == t, 1.0 - smoothing, 0.0)
    tl.store(dx + base + cols, (d * g).to(dx.dtype.element_ty), mask=m)
