"""Deterministic embedding backward: ``dW[v] = sum of dy[i] over positions i with index[i] == v``, in position order.

Float atomics would add the rows of a repeated index in whatever order the hardware runs them. Instead:
  1. ``embedding_rank`` gives every position its place in the stable sort of the indices,
     ``rank(i) = #{j : index[j] < index[i]} + #{j < i : index[j] == index[i]}`` (tiles of comparisons; the indices
     of one batch are few, a few thousand to some tens of thousands), and writes the sorted order of positions and,
     at the first position of each run of equal indices, the run's length.
  2. ``embedding_segment_sum``: one program per sorted position that starts a run sums that run's gradient rows, in
     position order, a tile of rows at a time, and writes the weight row once.
Rows no index refers to keep the zeros they were allocated with.

Bytes: the comparisons read the n indices n / BLOCK_I times (from cache); the sums read the n gradient rows once and
write one row per distinct index (plus zeroing the V x D gradient first).
"""

import triton
import triton.language as tl


@triton.jit
def embedding_rank(
    idx, order, run,                       # pointers: idx (n,) int64; order, run (n,) int32 outputs
    n,                                     # number of positions
    BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr,
):
    i = tl.program_id(0) * BLOCK_I + tl.arange(0, BLOCK_I)
    mi = i < n
    ki = tl.load(idx + i, mask=mi, other=0)
    less = tl.zeros([BLOCK_I], tl.int32)
    before = tl.zeros([BLOCK_I], tl.int32)
    equal = tl.zeros([BLOCK_I], tl.int32)
    for j0 in range(0, n, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        mj = (j < n)[None, :]
        kj = tl.load(idx + j, mask=j < n, other=0)[None, :]
        same = mj & (kj == ki[:, None])
        less += tl.sum((mj & (kj < ki[:, None])).to(tl.int32), 1)
        before += tl.sum((same & (j[None, :] < i[:, None])).to(tl.int32), 1)
        equal += tl.sum(same.to(tl.int32), 1)
    rank = less + before
    tl.store(order + rank, i, mask=mi)
    tl.store(run + rank, tl.where(before == 0, equal, 0), mask=mi)


@triton.jit
def embedding_segment_sum(
    g, idx, order, run, dw,                # pointers: g (n, D) rows; idx (n,); order, run (n,) int32; dw (V, D)
    D, stride_g,                           # row length and g's row stride
    BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr, F64: tl.constexpr,
):
    s = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mc = cols < D
    length = tl.load(run + s)
    if F64:
        acc = tl.zeros([BLOCK_D], tl.float64)
    else:
        acc = tl.zeros([BLOCK_D], tl.float32)
    for t0 in range(0, length, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        mt = t < length
        pos = tl.load(order + s + t, mask=mt, other=0).to(tl.int64)
        rows = tl.load(g + pos[:, None] * stride_g + cols[None, :], mask=mt[:, None] & mc[None, :], other=0.0)
        acc += tl.sum(rows.to(acc.dtype), 0)
    if length > 0:
        key = tl.load(idx + tl.load(order + s).to(tl.int64))
        tl.store(dw + key * D + cols, acc.to(dw.dtype.element_ty), mask=mc)
