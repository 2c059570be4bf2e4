"""Indexing Triton kernels: gather (take) and scatter (put, put-add with atomics), and the index check.

Both walk a 2-D tile over the coalesced index shape (as ``ew_strided``). ``gather`` reads
``src[pos_offset + index * src_dim_stride]``: with the gathered dim's position stride set to 0 this is
``torch.gather``; with the index broadcast along the other dims it is ``index_select``; with a precomputed flat
offset and zero position strides it is advanced indexing (``take``). ``scatter`` is the mirror image for
``scatter``/``index_put_``/``index_add``, accumulating with atomics.
"""

import triton
import triton.language as tl

from genesis._impl.cuda.kernels.elementwise import _operand, _tile_offsets


@triton.jit
def _rows(pid, n_cblocks, n_rows, C, R1, R2, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pr = pid // n_cblocks
    pc = pid - pr * n_cblocks
    rows = pr * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pc * BLOCK_C + tl.arange(0, BLOCK_C)
    r2 = rows % R2
    t = rows // R2
    r1 = (t % R1).to(tl.int64)
    r0 = (t // R1).to(tl.int64)
    mask = (rows < n_rows)[:, None] & (cols < C)[None, :]
    return r0, r1, r2.to(tl.int64), cols, mask, rows < n_rows


@triton.jit
def _index(idx, r0, r1, r2, cols, is0, is1, is2, isc, mask, rmask, ROW_INDEX: tl.constexpr):
    if ROW_INDEX:
        # The index is constant along the columns: load it once per row, so the data access stays contiguous.
        i = tl.load(idx + (r0 * is0 + r1 * is1 + r2 * is2), mask=rmask, other=0)[:, None]
    else:
        i = tl.load(idx + _tile_offsets(r0, r1, r2, cols, is0, is1, is2, isc), mask=mask, other=0)
    return i


@triton.jit
def gather_kernel(out, src, idx, n_rows, C, R1, R2, n_cblocks,
                  os0, os1, os2, osc, ss0, ss1, ss2, ssc, is0, is1, is2, isc, s_dim,
                  ROW_INDEX: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r0, r1, r2, cols, mask, rmask = _rows(tl.program_id(0), n_cblocks, n_rows, C, R1, R2, BLOCK_R, BLOCK_C)
    i = _index(idx, r0, r1, r2, cols, is0, is1, is2, isc, mask, rmask, ROW_INDEX)
    v = tl.load(src + _tile_offsets(r0, r1, r2, cols, ss0, ss1, ss2, ssc) + i * s_dim, mask=mask)
    tl.store(out + _tile_offsets(r0, r1, r2, cols, os0, os1, os2, osc), v, mask=mask)


@triton.jit
def scatter_kernel(dst, src, idx, n_rows, C, R1, R2, n_cblocks,
                   ds0, ds1, ds2, dsc, ss0, ss1, ss2, ssc, is0, is1, is2, isc, d_dim,
                   ADD: tl.constexpr, SRC_MODE: tl.constexpr, ROW_INDEX: tl.constexpr, BLOCK_R: tl.constexpr,
                   BLOCK_C: tl.constexpr):
    r0, r1, r2, cols, mask, rmask = _rows(tl.program_id(0), n_cblocks, n_rows, C, R1, R2, BLOCK_R, BLOCK_C)
    i = _index(idx, r0, r1, r2, cols, is0, is1, is2, isc, mask, rmask, ROW_INDEX)
    v = _operand(src, _tile_offsets(r0, r1, r2, cols, ss0, ss1, ss2, ssc), mask, SRC_MODE)
    p = dst + _tile_offsets(r0, r1, r2, cols, ds0, ds1, ds2, dsc) + i * d_dim
    v = v.to(dst.dtype.element_ty)
    if ADD == 1:
        tl.atomic_add(p, v, mask=mask, sem="relaxed")
    elif ADD == 2:
        tl.atomic_max(p, v, mask=mask, sem="relaxed")
    else:
        tl.store(p, v, mask=mask)


@triton.jit
def check_index_kernel(x, out, flag, n, low, high, ignore, code, HAS_IGNORE: tl.constexpr, BLOCK: tl.constexpr):
    # out = x with negatives in [low, 0) wrapped by +high; a value outside [low, high) (other than ignore) is
    # replaced by a safe one (0, or ignore) and recorded in flag[0:3] = (code, value, high). Every bad lane writes
    # the same three slots and one of them wins: the host only needs one offending value.
    # Bytes: n index elements read and written; the flag (mapped host memory) only on a bad value.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0).to(tl.int64)
    bad = (v < low) | (v >= high)
    if HAS_IGNORE:
        bad = bad & (v != ignore)
        safe = ignore
    else:
        safe = 0
    fixed = tl.where(bad, safe, tl.where((v < 0) & (v >= low), v + high, v))
    tl.store(out + offs, fixed.to(out.dtype.element_ty), mask=m)
    bad = bad & m
    slot = tl.zeros([BLOCK], tl.int64)
    tl.store(flag + 1 + slot, v, mask=bad)
    tl.store(flag + 2 + slot, slot + high, mask=bad)
    tl.store(flag + slot, slot + code, mask=bad)


@triton.jit
def unit_interval_kernel(x, flag, n, code, BLOCK: tl.constexpr):
    # Records code in flag[0] where an element of x lies outside [0, 1] (NaN fails both comparisons): a read-only
    # check of n elements in x's own dtype.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0)
    bad = ((v >= 0) & (v <= 1)) == 0
    bad = bad & m
    slot = tl.zeros([BLOCK], tl.int64)
    tl.store(flag + 1 + slot, slot, mask=bad)
    tl.store(flag + 2 + slot, slot, mask=bad)
    tl.store(flag + slot, slot + code, mask=bad)


@triton.jit
def pivot_order_kernel(pivots, order, n, m, BLOCK: tl.constexpr):
    # order[b, :] = the row order that the 1-based LAPACK pivots[b, :n] apply to m rows (row i of P^T A is row
    # order[i] of A): getrf's swaps replayed in registers, one program per matrix.
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    current = rows.to(tl.int64)
    for i in range(0, n):
        p = tl.load(pivots + b * n + i).to(tl.int64) - 1
        at_i = tl.sum(tl.where(rows == i, current, 0))
        at_p = tl.sum(tl.where(rows == p, current, 0))
        current = tl.where(rows == i, at_p, tl.where(rows == p, at_i, current))
    tl.store(order + b * m + rows, current, mask=rows < m)


@triton.jit
def searchsorted_kernel(seq, values, out, n_values, K, rows_per_seq, v_per_row, RIGHT: tl.constexpr,
                        STEPS: tl.constexpr, BLOCK: tl.constexpr):
    # Contiguous seq (R, K) and values (R, V) (R = 1 broadcasts seq); binary search per value.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_values
    v = tl.load(values + offs, mask=m)
    row = (offs // v_per_row).to(tl.int64) * rows_per_seq
    lo = tl.zeros([BLOCK], tl.int64)
    hi = tl.zeros([BLOCK], tl.int64) + K
    for _ in tl.static_range(STEPS):
        active = lo < hi
        mid = (lo + hi) // 2
        s = tl.load(seq + row * K + tl.minimum(mid, K - 1), mask=m & active)
        if RIGHT:
            go_right = s <= v
        else:
            go_right = s < v
        lo = tl.where(active & go_right, mid + 1, lo)
        hi = tl.where(active & ~go_right, mid, hi)
    tl.store(out + offs, lo, mask=m)


@triton.jit
def _sort_keys(v, cols, m, DESCENDING: tl.constexpr):
    """Each element as a 64-bit key: an order-preserving 32-bit image of its value (complemented for a descending
    order), then its position, so that ordering the keys orders the values and breaks ties by position. NaN counts
    as the largest value and -0.0 equals 0.0, as in torch; lanes past the row sort after every element."""
    if v.dtype.is_floating():
        f = v.to(tl.float32)
        f = tl.where(f == 0, 0.0, f)
        bits = f.to(tl.uint32, bitcast=True)
        bits = tl.where(f != f, 0x7FC00000, bits).to(tl.uint32)
        key = tl.where((bits >> 31) != 0, bits ^ 0xFFFFFFFF, bits | 0x80000000)
    elif v.dtype.is_int_signed():
        key = (v.to(tl.int32) ^ -2147483648).to(tl.uint32, bitcast=True)
    else:
        key = v.to(tl.uint32)
    if DESCENDING:
        key = key ^ 0xFFFFFFFF  # (xor rather than ~: the same bits, and Triton's interpreter inverts no unsigned)
    key = tl.where(m, key, 0xFFFFFFFF).to(tl.uint32)
    return (key.to(tl.uint64) << 32) | cols.to(tl.uint64)


@triton.jit
def sort_rows_kernel(x, values, indices, K, DESCENDING: tl.constexpr, BLOCK: tl.constexpr):
    # One contiguous row per program, sorted stably in registers: one bitonic sort of the rows' keys.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < K
    packed = tl.sort(_sort_keys(tl.load(x + row * K + cols, mask=m), cols, m, DESCENDING))
    order = (packed & 0xFFFFFFFF).to(tl.int64)
    tl.store(indices + row * K + cols, order, mask=m)
    tl.store(values + row * K + cols, tl.load(x + row * K + order, mask=m), mask=m)


@triton.jit
def split_keys64_kernel(x, hi, lo, n, DESCENDING: tl.constexpr, BLOCK: tl.constexpr):
    # 64-bit elements as two int32 sort keys: the high and low words of the value's order-preserving 64-bit image
    # (complemented for a descending order; NaN the largest, -0.0 equal to 0.0), each with its top bit flipped so
    # that signed int32 order is the words' unsigned order. Sorting stably by the low words, then by the high
    # ones, sorts the values. Bytes: 8 read and 8 written per element.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    if v.dtype.is_floating():
        v = tl.where(v == 0, 0.0, v)
        bits = v.to(tl.uint64, bitcast=True)
        bits = tl.where(v != v, 0x7FF8000000000000, bits).to(tl.uint64)
        key = tl.where((bits >> 63) != 0, bits ^ 0xFFFFFFFFFFFFFFFF, bits | 0x8000000000000000)
    else:
        key = v.to(tl.uint64, bitcast=True) ^ 0x8000000000000000
    if DESCENDING:
        key = key ^ 0xFFFFFFFFFFFFFFFF
    high = ((key >> 32).to(tl.uint32) ^ 0x80000000).to(tl.int32, bitcast=True)
    low = ((key & 0xFFFFFFFF).to(tl.uint32) ^ 0x80000000).to(tl.int32, bitcast=True)
    tl.store(hi + offs, high, mask=m)
    tl.store(lo + offs, low, mask=m)


@triton.jit
def sort_tiles_kernel(x, keys, K, P, DESCENDING: tl.constexpr, BLOCK: tl.constexpr):
    # The first pass of a long row's sort: the row's keys (see _sort_keys), padded to P (a power of two) with keys
    # that sort after every element, sorted ascending in tiles of BLOCK. Bytes: the row read, 8 P written.
    pid = tl.program_id(0).to(tl.int64)
    tiles = P // BLOCK
    row = pid // tiles
    cols = (pid - row * tiles) * BLOCK + tl.arange(0, BLOCK)
    m = cols < K
    tl.store(keys + row * P + cols, tl.sort(_sort_keys(tl.load(x + row * K + cols, mask=m), cols, m, DESCENDING)))


@triton.jit
def bitonic_stage_kernel(keys, n_pairs, J, FLIP: tl.constexpr, BLOCK: tl.constexpr):
    # One compare-exchange stage of a bitonic merge over blocks of 2 J keys: each key of a block's lower half meets
    # the key J further (a half-cleaner) or, with FLIP, its mirror in the upper half (the stage that merges two
    # ascending runs); the lesser key goes first. Bytes: 16 read and 16 written per pair.
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = p < n_pairs
    block = p // J
    t = p - block * J
    lo = block * 2 * J + t
    if FLIP:
        hi = block * 2 * J + 2 * J - 1 - t
    else:
        hi = lo + J
    a = tl.load(keys + lo, mask=m)
    b = tl.load(keys + hi, mask=m)
    tl.store(keys + lo, tl.minimum(a, b), mask=m)
    tl.store(keys + hi, tl.maximum(a, b), mask=m)


@triton.jit
def sort_tile_keys_kernel(keys, x, values, indices, K, P, LAST: tl.constexpr, BLOCK: tl.constexpr):
    # A merge's stages across tiles leave each tile of BLOCK keys holding its final keys as a bitonic sequence: the
    # merge's remaining stages, all within the tile, run in registers. After the last merge the keys become the
    # outputs: each key's position (its low 32 bits) to indices and the element there to values, for the first K of
    # each row (the padding sorts last).
    pid = tl.program_id(0).to(tl.int64)
    tiles = P // BLOCK
    row = pid // tiles
    cols = (pid - row * tiles) * BLOCK + tl.arange(0, BLOCK)
    packed = tl.bitonic_merge(tl.load(keys + row * P + cols))
    if LAST:
        m = cols < K
        order = (packed & 0xFFFFFFFF).to(tl.int64)
        tl.store(indices + row * K + cols, order, mask=m)
        tl.store(values + row * K + cols, tl.load(x + row * K + order, mask=m), mask=m)
    else:
        tl.store(keys + row * P + cols, packed)


@triton.jit
def topk_rows_kernel(x, values, indices, K, k, DESCENDING: tl.constexpr, BLOCK: tl.constexpr):
    # The first k of each contiguous row's stable sort, by k selections of the smallest key (each taken key is
    # then replaced by the largest one): k reductions cost less than the bitonic sort when k is small.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < K
    packed = _sort_keys(tl.load(x + row * K + cols, mask=m), cols, m, DESCENDING)
    taken = packed | 0xFFFFFFFFFFFFFFFF  # all ones
    for j in range(0, k):
        best = tl.min(packed, 0)
        pos = (best & 0xFFFFFFFF).to(tl.int64)
        tl.store(indices + row * k + j, pos)
        tl.store(values + row * k + j, tl.load(x + row * K + pos))
        packed = tl.where(packed == best, taken, packed)
