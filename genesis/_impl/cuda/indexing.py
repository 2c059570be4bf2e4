"""Indexing primitives of the CUDA backend: gather, scatter, advanced indexing, nonzero, sort, unique,
searchsorted and the device-side index check."""

from __future__ import annotations

import math

import numpy as np

from genesis import dtypes
from genesis._impl.cuda import device_checks, graphs
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import arange, cast, cat, contiguous, copy_, from_numpy, full, to_numpy
from genesis._impl.cuda.elementwise import binary, unary, where
from genesis._impl.cuda.kernels import index as ik
from genesis._impl.cuda.launch import (
    _bstrides,
    _coalesce,
    _contig,
    _dense_layout,
    _ew,
    _i32,
    _istr,
    _new,
    _next_pow2,
    _psig,
    _ptr,
    _scalar_sig,
    _split_rank4,
    _tile,
    complex_view,
    real_view,
)
from genesis._impl.cuda.reductions import cumulative
from genesis.memo import remember
from genesis.ndarray import NDArray, broadcast_shapes, check_same_device, contiguous_strides, full_indices

_GATHER = td.Kernel(ik.gather_kernel)
_SCATTER = td.Kernel(ik.scatter_kernel)


def _index_launch(kernel: td.Kernel, shape: tuple[int, ...], first: NDArray, first_strides: list[int],
                  second: NDArray | int | float, second_strides: list[int], idx: NDArray, idx_strides: list[int],
                  dim_stride: int, consts: tuple, second_dtype: dtypes.dtype) -> None:
    """Launch gather (first=out, second=src) or scatter (first=dst, second=src) over ``shape``.

    The launch plan (dims coalesced, split into rank-4 pieces, tiles, the kernel's specialization) is worked out
    once per layout (shape, strides, dtypes, pointer alignments) and kept: an embedding or index_select called
    every step pays only the launch."""
    if not math.prod(shape):
        return
    rt.ensure_device(idx.device.index)
    tensor = isinstance(second, NDArray)
    ptrs = [_ptr(first), _ptr(second), _ptr(idx)] if tensor else [_ptr(first), _ptr(idx)]
    key = (kernel, shape, tuple(first_strides), tuple(second_strides), tuple(idx_strides), dim_stride, consts,
           first.dtype, second.dtype if tensor else second_dtype, idx.dtype, tuple(p & 15 for p in ptrs),
           rt.state.device)
    plan = _INDEX_PLANS.get(key)
    if plan is None:
        plan = remember(_INDEX_PLANS, key, _index_plan(kernel, shape, first, first_strides, second, second_strides,
                                                       idx, idx_strides, dim_stride, consts, second_dtype, ptrs))
    if tensor:
        p0, p1, p2 = ptrs
        for go, grid, (o0, o1, o2), tail in plan:
            go(grid, 1, 1, p0 + o0, p1 + o1, p2 + o2, *tail)
    else:
        p0, p2 = ptrs
        value = _scalar_sig(second, second_dtype)[1]
        for go, grid, (o0, o2), tail in plan:
            go(grid, 1, 1, p0 + o0, value, p2 + o2, *tail)


_INDEX_PLANS: dict[tuple, list] = {}


def _index_plan(kernel: td.Kernel, shape: tuple[int, ...], first: NDArray, first_strides: list[int],
                second: NDArray | int | float, second_strides: list[int], idx: NDArray, idx_strides: list[int],
                dim_stride: int, consts: tuple, second_dtype: dtypes.dtype, ptrs: list[int]) -> list[tuple]:
    """``_index_launch``'s pieces: (launcher, grid, pointer offsets in bytes, the arguments after the pointers)."""
    tensor = isinstance(second, NDArray)
    tensors = [first, second, idx] if tensor else [first, idx]
    strides = [first_strides, second_strides, idx_strides] if tensor else [first_strides, idx_strides]
    cshape, cstrides = _coalesce(shape, [list(s) for s in strides])
    pieces = []
    for shape4, strides4, tptrs in _split_rank4(cshape, cstrides, ptrs, [t.dtype.itemsize for t in tensors]):
        R1, R2, C = shape4[1], shape4[2], shape4[3]
        n_rows = shape4[0] * R1 * R2
        block_r, block_c, warps = _tile(n_rows, C, 4)
        n_cblocks = (C + block_c - 1) // block_c
        if tensor:
            fs, ss, is_ = strides4
            fp, sp, ip = tptrs
            stype = _psig(second, sp)
        else:
            fs, is_ = strides4
            fp, ip = tptrs
            ss = [0, 0, 0, 0]
            stype = _scalar_sig(second, second_dtype)[0]
        # A row length known to be a multiple of 16 keeps the column mask constant over 16 lanes, so the loads and
        # stores stay vectorized (without it every bf16 element was a load of its own).
        types = [_psig(first, fp), stype, _psig(idx, ip), "i32", _i32(C), "i32", "i32",
                 "i32"]
        tail = [n_rows, C, R1, R2, n_cblocks]
        for st in (fs, ss, is_):
            types += [_istr(v) for v in st]
            tail += list(st)
        types.append(_istr(dim_stride))
        tail.append(dim_stride)
        row_index = is_[3] == 0  # one index per row: the indexed rows are read with wide contiguous loads
        go = kernel.launcher(tuple(types), consts + (row_index, block_r, block_c), warps)
        offsets = tuple(q - p for q, p in zip(tptrs, ptrs))
        pieces.append((go, ((n_rows + block_r - 1) // block_r) * n_cblocks, offsets, tuple(tail)))
    return pieces


def _pos_strides(x: NDArray, shape: tuple[int, ...], dim: int | None) -> list[int]:
    return [0 if d == dim or (x.shape[d] == 1 and n != 1) else x.strides[d] for d, n in enumerate(shape)]


def gather(x: NDArray, dim: int, index: NDArray) -> NDArray:
    check_same_device("gather", x, index)
    out = _new(index.shape, x.dtype, x.device)
    if x.ndim == 0:
        return _ew("copy", 1, out, (x,))
    _index_launch(_GATHER, index.shape, out, list(out.strides), x, _pos_strides(x, index.shape, dim), index,
                  list(index.strides), x.strides[dim], (), x.dtype)
    return out


def index_select(x: NDArray, dim: int, index: NDArray) -> NDArray:
    check_same_device("index_select", x, index)
    if x.dtype.category == 3 and x.ndim:  # complex: the real view's rows, parts and all
        return complex_view(index_select(real_view(x), dim, index))
    if x.ndim == 0:
        return gather(x, 0, index.reshape(()) if index.ndim else index)
    shape = x.shape[:dim] + (index.size,) + x.shape[dim + 1:]
    out = _new(shape, x.dtype, x.device)
    flat = index.reshape((index.size,))
    istr = [0] * len(shape)
    istr[dim] = flat.strides[0] if flat.ndim else 0
    _index_launch(_GATHER, shape, out, list(out.strides), x, _pos_strides(x, shape, dim), flat, istr,
                  x.strides[dim], (), x.dtype)
    return out


def _flat_offsets(x: NDArray, indices: tuple, shape: tuple[int, ...] | None = None) -> NDArray:
    """int64 element offsets (relative to x's first element) for one index array per dim."""
    off = None
    for d, ix in enumerate(indices):
        if x.strides[d] == 0 or x.shape[d] == 1:
            continue
        term = binary("mul", ix, x.strides[d])
        off = term if off is None else binary("add", off, term)
    if off is None:
        shp = broadcast_shapes("index", *[i.shape for i in indices]) if shape is None else shape
        off = full(shp, 0, dtypes.int64, x.device)
    return off


def index(x: NDArray, indices: tuple) -> NDArray:
    check_same_device("index", x, *[i for i in indices if i is not None])
    if x.dtype.category == 3:  # complex: index the real view, taking both parts of each element
        return complex_view(index(real_view(x), tuple(indices) + (None,)))
    advanced = [d for d, i in enumerate(indices) if i is not None]
    if len(advanced) == 1:
        # One index tensor (x[idx], x[:, idx]): its dims take its place, as index_select's dim does, so no offset
        # per element is built (that array would be as large as the result).
        d = advanced[0]
        ix = indices[d]
        return index_select(x, d, ix).reshape(x.shape[:d] + ix.shape + x.shape[d + 1:])
    full_ix = full_indices(x.shape, indices)
    shape = broadcast_shapes("index", *[i.shape for i in full_ix])
    off = _flat_offsets(x, full_ix, shape)
    if off.shape != shape:
        off = contiguous(off.expand(shape))
    out = _new(shape, x.dtype, x.device)
    zeros = [0] * len(shape)
    _index_launch(_GATHER, shape, out, list(out.strides), x, zeros, off, _bstrides(off, shape), 1, (), x.dtype)
    return out


_ATOMIC_DTYPES = frozenset((dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int32,
                            dtypes.int64))


def _host_fallback_put(x: NDArray, offsets: NDArray, values: NDArray, accumulate: bool) -> None:
    # Atomics exist for 16/32/64-bit floats and 32/64-bit ints only; other dtypes accumulate on the host.
    base = x if _contig(x) else contiguous(x)
    host = to_numpy(base).reshape(-1).copy()
    offs = to_numpy(offsets).reshape(-1)
    vals = np.broadcast_to(to_numpy(values), offsets.shape).reshape(-1)
    np.add.at(host, offs, vals) if accumulate else host.__setitem__(offs, vals)
    copy_(x, from_numpy(host.reshape(x.shape), x.dtype, x.device))


def index_put_(x: NDArray, indices: tuple, values: NDArray, accumulate: bool) -> NDArray:
    check_same_device("index_put_", x, values, *indices)
    shape = broadcast_shapes("index_put_", values.shape, *[i.shape for i in indices])
    if x.ndim == 0:
        return copy_(x, values.reshape(()) if values.size == 1 else values) if values.size else x
    if values.buffer is x.buffer:
        values = contiguous(values)
    if x.dtype.category == 3:  # complex: write both parts of each element through the real views
        if values.dtype is not x.dtype:
            values = cast(values, x.dtype)
        # Each index gains a unit last dim, and the parts' dim its own index (0, 1): all broadcast to (..., 2).
        parts = arange(0, 2, 1, dtypes.int64, x.device)
        index_put_(real_view(x), tuple(i.unsqueeze(i.ndim) for i in indices) + (parts,), real_view(values),
                   accumulate)
        return x
    if not _contig(x):
        # Offsets are computed for a contiguous layout of x, written back through the view afterwards.
        tmp = contiguous(x)
        index_put_(tmp, indices, values, accumulate)
        return copy_(x, tmp)
    off = _flat_offsets(x, indices, shape)
    if accumulate and x.dtype not in _ATOMIC_DTYPES:
        _host_fallback_put(x, off, values, True)
        return x
    zeros = [0] * len(shape)
    if accumulate:
        _index_launch(_SCATTER, shape, x, zeros, values, _bstrides(values, shape), off, _bstrides(off, shape), 1,
                      (1, 1), x.dtype)
        return x
    # Plain assignment with repeated indices: the last write in index order wins, as in a sequential loop (and on
    # the CPU). An atomic max of each write's position picks the winner; the others go to a spill slot.
    n = math.prod(shape)
    dev = x.device
    pos = arange(0, n, 1, dtypes.int64, dev).reshape(shape)
    winner = full((x.size,), -1, dtypes.int64, dev)
    off_strides = _bstrides(off, shape)
    _index_launch(_SCATTER, shape, winner, zeros, pos, list(pos.strides), off, off_strides, 1, (2, 1), dtypes.int64)
    won = _new(shape, dtypes.int64, dev)
    _index_launch(_GATHER, shape, won, list(won.strides), winner, zeros, off, off_strides, 1, (), dtypes.int64)
    target = where(binary("eq", won, pos), off if off.shape == shape else contiguous(off.expand(shape)), x.size)
    spill = _new((x.size + 1,), x.dtype, dev)
    flat = x.reshape((x.size,))
    copy_(spill.narrow(0, 0, x.size), flat)
    _index_launch(_SCATTER, shape, spill, zeros, values, _bstrides(values, shape), target, list(target.strides), 1,
                  (0, 1), x.dtype)
    copy_(flat, spill.narrow(0, 0, x.size))
    return x


def scatter(x: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
    check_same_device("scatter", x, index, src)
    return _scatter_into(contiguous(x), dim, index, src, mode)


def scatter_(out: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
    check_same_device("scatter_", out, index, src)
    if not _contig(out):
        return copy_(out, _scatter_into(contiguous(out), dim, index, src, mode))
    return _scatter_into(out, dim, index, src, mode)


def _scatter_into(out: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
    """``scatter_`` into the contiguous ``out`` (devices already checked)."""
    x = out
    if index.size == 0:
        return out
    if x.ndim == 0:
        return _ew("copy", 1, out, (src,), x.dtype) if mode == "set" else binary("add", out, src, out)
    if isinstance(src, NDArray):
        if src.ndim != index.ndim or any(index.shape[d] > src.shape[d] or (d != dim and index.shape[d] > x.shape[d])
                                         for d in range(index.ndim)):
            raise RuntimeError(f"scatter(): Expected index {list(index.shape)} to be smaller than self "
                               f"{list(x.shape)} apart from dimension {dim} and to be smaller size than src "
                               f"{list(src.shape)}")
    add = mode == "add"
    if add and x.dtype not in _ATOMIC_DTYPES:
        return _scatter_host(out, dim, index, src, add)
    shape = index.shape
    dst_pos = [0 if d == dim else out.strides[d] for d in range(len(shape))]
    if isinstance(src, NDArray):
        _index_launch(_SCATTER, shape, out, dst_pos, src, _pos_strides(src, shape, None), index,
                      list(index.strides), out.strides[dim], (int(add), 1), x.dtype)
    else:
        _index_launch(_SCATTER, shape, out, dst_pos, src, [0] * len(shape), index, list(index.strides),
                      out.strides[dim], (int(add), 2), x.dtype)
    return out


def index_add_(x: NDArray, dim: int, index: NDArray, src: NDArray) -> NDArray:
    """``x.index_select(dim, index) += src`` in x's memory: the scatter kernel with the index broadcast along the
    other dims (the mirror of ``index_select``), adding with atomics; no offset array is built."""
    check_same_device("index_add_", x, index, src)
    if not _contig(x):
        return copy_(x, index_add_(contiguous(x), dim, index, src))
    if x.ndim == 0 or x.dtype not in _ATOMIC_DTYPES:
        indices = tuple(index if d == dim else None for d in range(x.ndim))
        return index_put_(x, full_indices(x.shape, indices), src, True)
    if src.buffer is x.buffer:
        src = contiguous(src)
    flat = index.reshape((index.size,))
    istr = [0] * src.ndim
    istr[dim] = flat.strides[0]
    dst_pos = [0 if d == dim else x.strides[d] for d in range(src.ndim)]
    _index_launch(_SCATTER, src.shape, x, dst_pos, src, list(src.strides), flat, istr, x.strides[dim], (1, 1),
                  x.dtype)
    return x


def _scatter_host(out: NDArray, dim: int, index: NDArray, src: NDArray | float, add: bool) -> NDArray:
    """The scatter on the host, for dtypes without device atomics, written back into ``out``."""
    host = to_numpy(out).copy()
    idx = to_numpy(index)
    vals = to_numpy(src) if isinstance(src, NDArray) else np.full(idx.shape, src, host.dtype)
    vals = vals[tuple(slice(0, n) for n in idx.shape)]
    coords = list(np.indices(idx.shape))
    coords[dim] = idx
    if add:
        np.add.at(host, tuple(coords), vals)
    else:
        host[tuple(coords)] = vals
    return copy_(out, from_numpy(host, out.dtype, out.device))


def scatter_reduce(x: NDArray, dim: int, index: NDArray, src: NDArray, reduce: str, include_self: bool) -> NDArray:
    """``torch.scatter_reduce`` out of place: sum and mean through atomic adds, amax and amin by grouping the
    elements per target place (two stable sorts, then one write per place), prod one slice of ``index`` at a time
    (a slice never writes one place twice)."""
    check_same_device("scatter_reduce", x, index, src)
    for d, n in enumerate(index.shape):
        src = src.narrow(d, 0, n)
    if index.size == 0:
        return contiguous(x)
    if reduce == "sum" and include_self:
        return _scatter_into(contiguous(x), dim, index, src, "add")
    if reduce in ("amax", "amin") and include_self:
        return _scatter_extreme(contiguous(x), dim, index, src, reduce)
    # How many elements each place receives: the mean divides by it, and without self the old values go.
    ones = full(index.shape, 1, dtypes.int64, x.device)
    hits = _scatter_into(full(x.shape, 0, dtypes.int64, x.device), dim, index, ones, "add")
    touched = binary("gt", hits, 0)
    if reduce in ("sum", "mean"):
        base = x if include_self else where(touched, full((), 0, x.dtype, x.device), x)
        total = _scatter_into(contiguous(base), dim, index, src, "add")
        if reduce == "sum":
            return total
        count = binary("add", hits, 1) if include_self else where(touched, hits, full((), 1, dtypes.int64, x.device))
        if x.dtype.category == 2:
            return binary("div", total, cast(count, x.dtype))
        return binary("floor_divide", total, cast(count, x.dtype))
    identity = _reduce_identity(reduce, x.dtype)
    start = contiguous(x) if include_self else where(touched, full((), identity, x.dtype, x.device), x)
    if reduce == "prod":
        for j in range(index.shape[dim]):
            piece = _scatter_into(full(x.shape, identity, x.dtype, x.device), dim, index.narrow(dim, j, 1),
                                  src.narrow(dim, j, 1), "set")
            start = binary("mul", start, piece)
        return start
    return _scatter_extreme(start, dim, index, src, reduce)


def _reduce_identity(reduce: str, dtype: dtypes.dtype) -> int | float | bool:
    """The value that leaves a place unchanged under ``reduce``: 1, or the lowest (highest) value of ``dtype``."""
    if reduce == "prod":
        return True if dtype is dtypes.bool_ else 1
    lowest = reduce == "amax"
    if dtype.category >= 2:
        return -math.inf if lowest else math.inf
    if dtype is dtypes.bool_:
        return not lowest
    info = np.iinfo(np.dtype(dtype.name))
    return int(info.min if lowest else info.max)


def _scatter_extreme(result: NDArray, dim: int, index: NDArray, src: NDArray, reduce: str) -> NDArray:
    """The contiguous ``result`` with the amax (amin) of the ``src`` elements that ``index`` sends to each place
    folded in. Each group of elements with one target is ordered so that its extreme comes last (a NaN sorts last,
    so it wins, as NaN propagates), and the last of each group is written."""
    shape = result.shape
    strides = contiguous_strides(shape)
    target = binary("mul", index, strides[dim])  # the flat position in ``result`` of each element of ``src``
    for k, n in enumerate(index.shape):
        if k != dim:
            along = arange(0, n, 1, dtypes.int64, index.device)
            target = binary("add", target, binary("mul", along.reshape(tuple(n if j == k else 1
                                                                             for j in range(index.ndim))), strides[k]))
    target = contiguous(target).reshape((index.size,))
    values = contiguous(src).reshape((index.size,))
    if reduce == "amax":
        key = values
    else:  # the bitwise not reverses the order of integers (and bools) without overflowing
        key = unary("neg" if values.dtype.category >= 2 else "logical_not" if values.dtype is dtypes.bool_
                    else "bitwise_not", values)
    by_key = sort(key, 0, False, True)[1]
    order = index_select(by_key, 0, sort(index_select(target, 0, by_key), 0, False, True)[1])
    grouped = index_select(target, 0, order)
    n = grouped.size
    last = cat([binary("ne", grouped.narrow(0, 1, n - 1), grouped.narrow(0, 0, n - 1)),
                full((1,), True, dtypes.bool_, index.device)], 0)
    winners = index_select(order, 0, nonzero(last).reshape((-1,)))
    at = index_select(target, 0, winners)  # each place once
    flat = result.reshape((result.size,))
    best = binary("maximum" if reduce == "amax" else "minimum", index_select(flat, 0, at),
                  index_select(values, 0, winners))
    index_put_(flat, (at,), best, False)
    return result


def nonzero(x: NDArray) -> NDArray:
    mask = x if x.dtype is dtypes.bool_ else binary("ne", x, 0 if x.dtype.category < 2 else 0.0)
    flat = contiguous(mask).reshape((mask.size,)) if not _contig(mask) else mask.reshape((mask.size,))
    counts = cumulative("cumsum", cast(flat, dtypes.int64), 0) if flat.size else flat
    n = int(to_numpy(counts.narrow(0, flat.size - 1, 1))[0]) if flat.size else 0
    out = _new((n, x.ndim), dtypes.int64, x.device)
    if n == 0:
        return out
    lin = _new((n,), dtypes.int64, x.device)
    # Position i goes to slot counts[i] - 1 where the mask is set: a scatter of arange through the scan.
    slots = binary("sub", counts, 1)
    ar = arange(0, flat.size, 1, dtypes.int64, x.device)
    masked_slots = where(flat, slots, full((), n, dtypes.int64, x.device))
    spill = _new((n + 1,), dtypes.int64, x.device)
    _index_launch(_SCATTER, (flat.size,), spill, [0], ar, [1], masked_slots, [1], 1, (0, 1), dtypes.int64)
    copy_(lin, spill.narrow(0, 0, n))
    rem = lin
    for d in range(x.ndim - 1, -1, -1):
        col = out.as_strided((n,), (x.ndim,), d)
        size = x.shape[d]
        copy_(col, binary("remainder", rem, size))
        rem = binary("floor_divide", rem, size)
    return out


_SORT = td.Kernel(ik.sort_rows_kernel)


def sort(x: NDArray, dim: int, descending: bool, stable: bool) -> tuple[NDArray, NDArray]:
    """Stable sort along ``dim``, on the GPU. Rows of types of 32 bits or narrower sort by 64-bit keys (the value's
    order image, then the position): rows of up to 4096 elements in registers (one row per program), longer rows
    by a bitonic sort in global memory (``_sort_long``). 64-bit types sort as two such sorts (``_sort_wide``)."""
    if x.dtype.category == 3:
        raise RuntimeError("Sort does not support complex dtypes on CUDA")
    if not x.ndim or not x.size:
        values = _new(x.shape, x.dtype, x.device)
        copy_(values, x)
        return values, full(x.shape, 0, dtypes.int64, x.device)
    xt = _dim_last(x, dim)
    values, order = _sort_wide(xt, descending) if x.dtype.itemsize == 8 else _sort_rows(xt, descending)
    return _dim_back(values, dim), _dim_back(order, dim)


def _sort_rows(xt: NDArray, descending: bool) -> tuple[NDArray, NDArray]:
    """Stable sort of the contiguous rows of ``xt`` (a type of 32 bits or narrower): values and positions. Rows
    that fit one tile sort one per program; others, and rows too few to occupy the GPU, merge sorted tiles."""
    K = xt.shape[-1]
    R = xt.size // K
    P = _next_pow2(K)
    tile = _sort_tile(R, P, xt.device.index)
    if tile < P:
        return _sort_long(xt, descending, tile)
    values, order = _new(xt.shape, xt.dtype, xt.device), _new(xt.shape, dtypes.int64, xt.device)
    p, q, r = _ptr(xt), _ptr(values), _ptr(order)
    go = _SORT.launcher((_psig(xt, p), _psig(values, q), _psig(order, r), "i32"), (bool(descending), P),
                        _tile_warps(P))
    rt.ensure_device(xt.device.index)
    go(R, 1, 1, p, q, r, K)
    return values, order


def _sort_tile(R: int, P: int, device: int) -> int:
    """The keys a program sorts in registers for ``R`` rows of ``P`` (a power of two) keys: at most ``_SORT_ROW``,
    halved down to ``_SORT_MIN_TILE`` while the tiles are too few to give every processor two (one program sorting
    4096 keys takes about 100 us on an H200: a few such rows alone would leave the GPU idle that long)."""
    tile = min(P, _SORT_ROW)
    sms = rt.multiprocessor_count(device)
    while tile > _SORT_MIN_TILE and R * P // tile < 2 * sms:
        tile //= 2
    return tile


def _tile_warps(tile: int) -> int:
    return 8 if tile > 1024 else 4 if tile > 256 else 2


def _sort_wide(xt: NDArray, descending: bool) -> tuple[NDArray, NDArray]:
    """Stable sort of the contiguous rows of ``xt`` of a 64-bit type, as a radix sort of two 32-bit digits: the
    rows' order by the low words of their keys (``split_keys64_kernel``), then that order stably re-sorted by the
    high words."""
    n = xt.size
    hi, lo = _new(xt.shape, dtypes.int32, xt.device), _new(xt.shape, dtypes.int32, xt.device)
    p, q, r = _ptr(xt), _ptr(hi), _ptr(lo)
    go = _SPLIT64.launcher((_psig(xt, p), _psig(hi, q), _psig(lo, r), "i64"), (bool(descending), 1024), 4)
    rt.ensure_device(xt.device.index)
    go((n + 1023) // 1024, 1, 1, p, q, r, n)
    last = xt.ndim - 1
    by_low = _sort_rows(lo, False)[1]
    by_high = _sort_rows(gather(hi, last, by_low), False)[1]
    order = gather(by_low, last, by_high)
    return gather(xt, last, order), order


_SORT_ROW = 4096  # the longest row that sort_rows_kernel sorts (and the largest tile of longer rows' sort)
_SORT_MIN_TILE = 1024  # the smallest tile that few rows are split into (below it the merges' launches cost more)
_SPLIT64 = td.Kernel(ik.split_keys64_kernel)
_SORT_TILES = td.Kernel(ik.sort_tiles_kernel)
_BITONIC = td.Kernel(ik.bitonic_stage_kernel)
_SORT_TILE_KEYS = td.Kernel(ik.sort_tile_keys_kernel)
_STAGE_BLOCK = 1024  # pairs per program of a bitonic stage


def _dim_last(x: NDArray, dim: int) -> NDArray:
    """``x`` with ``dim`` moved last, contiguous: the rows that sort and topk work on."""
    xt = x if dim == x.ndim - 1 else x.transpose(dim, x.ndim - 1)
    return xt if _contig(xt) else contiguous(xt)


def _dim_back(y: NDArray, dim: int) -> NDArray:
    """The rows made by ``_dim_last`` put back with their last dim at ``dim`` (contiguous)."""
    return y if dim == y.ndim - 1 else contiguous(y.transpose(dim, y.ndim - 1))


def _sort_long(xt: NDArray, descending: bool, tile: int) -> tuple[NDArray, NDArray]:
    """Stable sort of the contiguous rows of ``xt`` by merging sorted tiles of ``tile`` keys (a power of two below
    the padded row length P): a bitonic sort of the rows' 64-bit keys (the value's order image, then the position:
    unique keys, so the order is stable), padded to P with keys that sort last. Tiles are first sorted in
    registers; each merge of two sorted runs into one of length L then takes one stage per halving from L down to
    twice the tile in global memory, and the stages within a tile in registers. A row of 150k elements (P = 2^18)
    in tiles of 4096 takes 28 launches."""
    K = xt.shape[-1]
    R = xt.size // K
    P = _next_pow2(K)
    dev = xt.device
    keys = _new((R * P,), dtypes.int64, dev)  # read by the kernels as unsigned 64-bit integers
    values, order = _new(xt.shape, xt.dtype, dev), _new(xt.shape, dtypes.int64, dev)
    p, kp, q, r = _ptr(xt), _ptr(keys), _ptr(values), _ptr(order)
    xsig = _psig(xt, p)
    tiles, pairs = R * P // tile, R * P // 2
    grid = (pairs + _STAGE_BLOCK - 1) // _STAGE_BLOCK
    stage = ("*u64:16", "i64", "i64")
    flip = _BITONIC.launcher(stage, (True, _STAGE_BLOCK), 4)
    half = _BITONIC.launcher(stage, (False, _STAGE_BLOCK), 4)
    finish = ("*u64:16", xsig, _psig(values, q), _psig(order, r), "i32", "i64")
    warps = _tile_warps(tile)
    rt.ensure_device(dev.index)
    _SORT_TILES.launcher((xsig, "*u64:16", "i32", "i64"), (bool(descending), tile), warps)(tiles, 1, 1, p, kp, K, P)
    run = 2 * tile  # the length of the runs the next merge makes
    while run <= P:
        flip(grid, 1, 1, kp, pairs, run // 2)
        j = run // 4
        while j >= tile:
            half(grid, 1, 1, kp, pairs, j)
            j //= 2
        go = _SORT_TILE_KEYS.launcher(finish, (run == P, tile), warps)
        go(tiles, 1, 1, kp, p, q, r, K, P)
        run *= 2
    return values, order


def topk(x: NDArray, k: int, dim: int, largest: bool) -> tuple[NDArray, NDArray]:
    """The first ``k`` along ``dim`` of a stable sort (ties: the lower index first). For ``k`` up to 32 in rows the
    GPU sort takes, ``k`` selections of the smallest sort key (no sort). Rows longer than the GPU sort takes, with
    ``k`` at most half of that, stay on the GPU in rounds: each round sorts the row in chunks and keeps
    each chunk's first ``k`` (a vocabulary of 150k and k = 50 leaves 1,900 candidates after one round)."""
    K = x.shape[dim]
    if 0 < k <= _SELECT_K and K <= _SORT_ROW and x.dtype.itemsize <= 4 and x.size:
        return _select(x, k, dim, largest)
    if K > _SORT_ROW and 2 * k <= _SORT_ROW and x.dtype.itemsize <= 4 and x.size:
        moved = _dim_last(x, dim)
        values, indices = _topk_rows(moved.reshape((moved.size // K, K)), k, largest)
        shape = moved.shape[:-1] + (k,)
        return _dim_back(values.reshape(shape), dim), _dim_back(indices.reshape(shape), dim)
    values, indices = sort(x, dim, largest, True)
    if k == K:
        return values, indices
    return contiguous(values.narrow(dim, 0, k)), contiguous(indices.narrow(dim, 0, k))


_TOPK = td.Kernel(ik.topk_rows_kernel)
_SELECT_K = 32  # the largest k that topk selects one by one (rows of up to _SORT_ROW elements) instead of sorting


def _select(x: NDArray, k: int, dim: int, largest: bool) -> tuple[NDArray, NDArray]:
    """topk of rows that fit one program, as ``k`` selections of the first key of the sort (one row per program)."""
    xt = _dim_last(x, dim)
    K = xt.shape[-1]
    shape = xt.shape[:-1] + (k,)
    values, order = _new(shape, x.dtype, x.device), _new(shape, dtypes.int64, x.device)
    p, q, r = _ptr(xt), _ptr(values), _ptr(order)
    block = _next_pow2(K)
    go = _TOPK.launcher((_psig(xt, p), _psig(values, q), _psig(order, r), "i32", "i32"), (bool(largest), block),
                        4 if block <= 1024 else 8)
    rt.ensure_device(x.device.index)
    go(xt.size // K, 1, 1, p, q, r, K, k)
    return _dim_back(values, dim), _dim_back(order, dim)


def _topk_rows(x: NDArray, k: int, largest: bool) -> tuple[NDArray, NDArray]:
    """topk along the last dim of the contiguous (R, K) ``x``, K > _SORT_ROW >= 2k: one round of chunk sorts, then
    the same over the candidates (or one sort once they fit a row). The padding sorts after every element, and
    stable sorts over chunks in order keep equal values in index order."""
    R, K = x.shape
    n = -(-K // _SORT_ROW)
    if x.dtype.category >= 2:
        pad = -math.inf if largest else math.inf
    else:
        info = np.iinfo(np.dtype(x.dtype.name))
        pad = int(info.min if largest else info.max)
    padded = full((R, n * _SORT_ROW), pad, x.dtype, x.device)
    copy_(padded.narrow(1, 0, K), x)
    if k <= _SELECT_K:
        values, order = _select(padded.reshape((R * n, _SORT_ROW)), k, 1, largest)
    else:
        values, order = sort(padded.reshape((R * n, _SORT_ROW)), 1, largest, True)
    starts = binary("mul", arange(0, n, 1, dtypes.int64, x.device), _SORT_ROW).reshape((1, n, 1))
    positions = binary("add", order.narrow(1, 0, k).reshape((R, n, k)), starts)  # indices into the row
    values = contiguous(values.narrow(1, 0, k)).reshape((R, n * k))
    positions = contiguous(positions).reshape((R, n * k))
    if n * k > _SORT_ROW:
        values, picked = _topk_rows(values, k, largest)
    elif k <= _SELECT_K:
        values, picked = _select(values, k, 1, largest)
    else:
        values, picked = sort(values, 1, largest, True)
        values, picked = contiguous(values.narrow(1, 0, k)), contiguous(picked.narrow(1, 0, k))
    return values, gather(positions, 1, picked)


def unique(x: NDArray, return_inverse: bool, return_counts: bool) -> tuple[NDArray, NDArray | None, NDArray | None]:
    """Sorted unique values, on the GPU (one read of the number of values found sizes the result). NaNs count as one
    value (as numpy and the CPU path)."""
    n = x.size
    if x.dtype.category == 3:
        raise NotImplementedError(f"\"unique\" not implemented for '{x.dtype.name}' on cuda")
    if n > 1:
        return _unique_gpu(x, n, return_inverse, return_counts)
    host = to_numpy(x).reshape(-1)
    key = host.astype(np.float32) if x.dtype is dtypes.bfloat16 else host
    values, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    values = host[first]
    inv = from_numpy(inverse.reshape(x.shape).astype(np.int64), dtypes.int64, x.device) if return_inverse else None
    cnt = from_numpy(counts.astype(np.int64), dtypes.int64, x.device) if return_counts else None
    return from_numpy(values, x.dtype, x.device), inv, cnt


def _unique_gpu(x: NDArray, n: int, return_inverse: bool,
                return_counts: bool) -> tuple[NDArray, NDArray | None, NDArray | None]:
    dev = x.device
    flat = x.reshape((n,)) if _contig(x) else contiguous(x).reshape((n,))
    values, order = sort(flat, 0, False, True)
    cur, prev = values.narrow(0, 1, n - 1), values.narrow(0, 0, n - 1)
    new_value = binary("ne", cur, prev)
    if x.dtype.category == 2:
        both_nan = binary("logical_and", unary("isnan", cur), unary("isnan", prev))
        new_value = binary("logical_and", new_value, unary("logical_not", both_nan))
    starts = full((n,), True, dtypes.bool_, dev)
    copy_(starts.narrow(0, 1, n - 1), new_value)
    group = binary("sub", cumulative("cumsum", cast(starts, dtypes.int64), 0), 1)  # group id of each sorted element
    m = int(to_numpy(group.narrow(0, n - 1, 1))[0]) + 1
    # The first element of each group goes to its slot; the others to a spill slot past the end.
    spill = _new((m + 1,), x.dtype, dev)
    target = where(starts, group, m)
    _index_launch(_SCATTER, (n,), spill, [0], values, [1], target, [1], 1, (0, 1), x.dtype)
    uniq = contiguous(spill.narrow(0, 0, m))
    inverse = counts = None
    if return_inverse:
        inverse = _new((n,), dtypes.int64, dev)
        _index_launch(_SCATTER, (n,), inverse, [0], group, [1], order, [1], 1, (0, 1), dtypes.int64)
        inverse = inverse.reshape(x.shape)
    if return_counts:
        counts = full((m,), 0, dtypes.int64, dev)
        _index_launch(_SCATTER, (n,), counts, [0], 1, [0], group, [1], 1, (1, 2), dtypes.int64)
    return uniq, inverse, counts


_SEARCH = td.Kernel(ik.searchsorted_kernel)


def searchsorted(seq: NDArray, values: NDArray, right: bool) -> NDArray:
    check_same_device("searchsorted", seq, values)
    out = _new(values.shape, dtypes.int64, values.device)
    if out.size == 0:
        return out
    seq = seq if _contig(seq) else contiguous(seq)
    vals = values if _contig(values) else contiguous(values)
    K = seq.shape[-1] if seq.ndim else 1
    V = vals.shape[-1] if vals.ndim else 1
    rows_per_seq = 0 if seq.ndim <= 1 else 1
    p, q, r = _ptr(seq), _ptr(vals), _ptr(out)
    steps = max(1, K.bit_length() + 1)
    go = _SEARCH.launcher((_psig(seq, p), _psig(vals, q), _psig(out, r), "i32", "i32", "i32", "i32"),
                          (right, steps, 256), 4)
    rt.ensure_device(values.device.index)
    go((out.size + 255) // 256, 1, 1, p, q, r, out.size, K, rows_per_seq, V)
    return out


_CHECK = td.Kernel(ik.check_index_kernel)
_CHECK_BLOCK = 1024


_UNIT = td.Kernel(ik.unit_interval_kernel)


def check_unit_interval(x: NDArray, error: type[Exception], message: str) -> None:
    """Report ``message`` at the next synchronization (see ``device_checks``; here under ``GENESIS_SYNC_CHECKS=1``)
    if an element of the floating array ``x`` lies outside [0, 1] or is NaN: one read-only launch."""
    if x.size == 0:
        return
    rt.ensure_device(x.device.index)
    x = x if _contig(x) or _dense_layout(x) else contiguous(x)  # any dense order: the check reads it flat
    p = _ptr(x)
    go = _UNIT.launcher((_psig(x, p), "*i64", "i64", "i64"), (_CHECK_BLOCK,), 4)
    go((x.size + _CHECK_BLOCK - 1) // _CHECK_BLOCK, 1, 1, p, device_checks.flag_pointer(), x.size,
       device_checks.code(error, message))
    if device_checks.sync_checks and not graphs.capturing:
        rt.current_stream().synchronize()


def check_index(x: NDArray, low: int, high: int, ignore: int | None, error: type[Exception], message: str) -> NDArray:
    """The checked (wrapped, made safe) copy of ``x``; a bad value is reported at the next synchronization (see
    ``device_checks``), or here under ``GENESIS_SYNC_CHECKS=1`` outside graph capture."""
    out = _new(x.shape, x.dtype, x.device)
    if out.size == 0:
        return out
    rt.ensure_device(x.device.index)
    x = x if _contig(x) else contiguous(x)
    p, q = _ptr(x), _ptr(out)
    go = _CHECK.launcher((_psig(x, p), _psig(out, q), "*i64", "i64", "i64", "i64", "i64", "i64"),
                         (ignore is not None, _CHECK_BLOCK), 4)
    go((out.size + _CHECK_BLOCK - 1) // _CHECK_BLOCK, 1, 1, p, q, device_checks.flag_pointer(), out.size, low, high,
       0 if ignore is None else ignore, device_checks.code(error, message))
    if device_checks.sync_checks and not graphs.capturing:
        rt.current_stream().synchronize()  # raises the recorded error with the CPU's class and message
    return out
