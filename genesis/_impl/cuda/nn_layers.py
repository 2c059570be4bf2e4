"""Launchers of the CNN-layer kernels and the embedding gradient (``kernels/nn_pool.py``, ``nn_batchnorm.py``,
``nn_upsample.py``, ``nn_embedding.py``): check, allocate, launch.

Each implements primitives of the backend contract (``genesis._impl.contract``): pool, pool_backward, adaptive_pool,
adaptive_pool_backward, batch_norm, batch_norm_backward, group_norm, group_norm_backward, upsample, upsample_backward,
embedding_backward. Every backward here gathers or reduces in a fixed order (no float atomics): gradients are bitwise
reproducible run to run.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous, copy_, from_numpy, full
from genesis._impl.cuda.kernels import nn_batchnorm as bk
from genesis._impl.cuda.kernels import nn_embedding as ek
from genesis._impl.cuda.kernels import nn_pool as pk
from genesis._impl.cuda.kernels import nn_upsample as uk
from genesis._impl.cuda.launch import _contig, _new, _new_channels_last, _next_pow2, _pointers
from genesis._impl.cuda.reductions import reduce
from genesis.memo import remember
from genesis.memory_format import channels_last, channels_last_3d, is_dense_in, memory_format
from genesis.ndarray import NDArray, check_same_device

_F32, _F64, _I32 = dtypes.float32, dtypes.float64, dtypes.int32
_ACC_KIND = {dtypes.float64: 1, dtypes.int64: 2}  # accumulator of average pooling (others: float32)
_BLOCK = 512  # elements per program of the elementwise-shaped kernels (adaptive pooling, apply passes)
# Outputs per program and warps of the pooling and resampling kernels (benchmark/sweep_cnn_tiles.py times them).
_POOL_BLOCK, _POOL_WARPS = 256, 4
# Outputs per program of 2-d max pooling into contiguous output (programs over planes), at most: smaller planes take
# the next power of two of their size; one warp per 32 outputs, at most four.
_POOL_PLANE_BLOCK = 128
_UP_BLOCK, _UP_WARPS = 512, 4


def _dense(x: NDArray) -> NDArray:
    return x if _contig(x) else contiguous(x)


def _acc(dtype: dtypes.dtype) -> dtypes.dtype:
    return _F64 if dtype is _F64 else _F32


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _check_float(op: str, x: NDArray) -> None:
    if x.dtype.category != 2:
        raise NotImplementedError(f"\"{op}\" not implemented for '{x.dtype.name}'")


def _lowest(dtype: dtypes.dtype) -> float | int:
    return float("-inf") if dtype.category == 2 else int(np.iinfo(dtype.name).min)


# ---------------------------------------------------------------- pooling

_MAX_PLANES_FWD = td.Kernel(pk.max_pool2d_planes_fwd)
_MAX_FWD = td.Kernel(pk.max_pool_fwd)
_MAX_BWD = td.Kernel(pk.max_pool_bwd)
_AVG_FWD = td.Kernel(pk.avg_pool_fwd)
_AVG_BWD = td.Kernel(pk.avg_pool_bwd)


def _pool_out(size: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
              ceil_mode: bool) -> tuple[int, ...]:
    out = []
    for s, k, st, p, d in zip(size, kernel, stride, padding, dilation):
        span = s + 2 * p - d * (k - 1) - 1
        o = (-(-span // st) if ceil_mode else span // st) + 1
        if ceil_mode and (o - 1) * st >= s + p:  # the last window must start inside the input or its left padding
            o -= 1
        out.append(o)
    return tuple(out)


def _three(t: tuple, fill: int) -> tuple[int, int, int]:
    """A 2-d pooling parameter as the 3-d kernels' (depth, height, width), depth ``fill``."""
    return (fill, *t) if len(t) == 2 else tuple(t)


def _pool_consts(mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> tuple:
    consts = _three(kernel, 1) + _three(stride, 1) + _three(padding, 0)
    return consts + _three(dilation, 1) if mode == "max" else consts


def _div_mode(count_include_pad: bool, divisor_override: int | None) -> int:
    return 0 if divisor_override else 1 if count_include_pad else 2


_POOL_PLANS: dict[tuple, tuple] = {}


def _pool_plan(x: NDArray, mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
               ceil_mode: bool, count_include_pad: bool, divisor_override: int | None, indices: bool) -> tuple:
    """How to pool arrays of x's shape, strides and dtype, worked out once: (kernel, channels_last output, output
    shape, whether indices are written, grid, argument types, constexprs, warps, scalar arguments, batched)."""
    nd = len(kernel)
    if x.dtype is dtypes.bool_ or (mode == "avg" and x.dtype.category != 2 and x.dtype is not dtypes.int64):
        raise NotImplementedError(f"\"{mode}_pool{nd}d\" not implemented for '{x.dtype.name}'")
    batched = x.ndim == nd + 2
    if not batched:
        x = x.unsqueeze(0)
    N, C = x.shape[:2]
    size = x.shape[2:]
    out_size = _pool_out(size, kernel, stride, padding, dilation, ceil_mode)
    cl = _pool_cl(x, mode, nd)
    shape = (N, C) + out_size
    with_idx = mode == "max" and indices
    total = math.prod(shape)
    D, H, W = _three(size, 1)
    OD, OH, OW = _three(out_size, 1)
    sN, sC = x.strides[:2]
    sD, sH, sW = (0, *x.strides[2:]) if nd == 2 else x.strides[2:]
    scalars = (total, C, D, H, W, OD, OH, OW)
    strides = (sN, sC, sD, sH, sW)
    consts = _pool_consts(mode, kernel, stride, padding, dilation)
    grid = (_cdiv(total, _POOL_BLOCK), 1)
    if mode == "avg":
        return (_AVG_FWD, cl, shape, False, grid, ("i64",) + ("i32",) * 8 + ("i64",) * 5,
                consts + (_div_mode(count_include_pad, divisor_override), _ACC_KIND.get(x.dtype, 0),
                          _wide(x.size, total), cl, _POOL_BLOCK), _POOL_WARPS,
                scalars + (divisor_override or 0,) + strides, batched)
    # 32-bit index arithmetic unless an offset into x or y can pass 2**31.
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(x.shape, x.strides))
    wide = _wide(span, total)
    block = min(_POOL_PLANE_BLOCK, _next_pow2(OH * OW))
    if nd == 2 and not cl and _cdiv(OH * OW, block) < 65536:
        index = "i64" if wide else "i32"
        return (_MAX_PLANES_FWD, cl, shape, with_idx, (N * C, _cdiv(OH * OW, block)), ("i32",) * 5 + (index,) * 4,
                consts[1:3] + consts[4:6] + consts[7:9] + consts[10:] + (_lowest(x.dtype), wide, with_idx, block),
                max(1, min(4, block // 32)), (C, H, W, OH, OW, sN, sC, sH, sW), batched)
    return (_MAX_FWD, cl, shape, with_idx, grid, ("i64",) + ("i32",) * 7 + ("i64" if wide else "i32",) * 5,
            consts + (_lowest(x.dtype), wide, with_idx, cl, _POOL_BLOCK), _POOL_WARPS, scalars + strides, batched)


def pool(x: NDArray, mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, ceil_mode: bool,
         count_include_pad: bool, divisor_override: int | None, indices: bool = True) -> tuple[NDArray, NDArray | None]:
    key = (x.shape, x.strides, x.dtype, mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad,
           divisor_override, indices, x.device.index)
    plan = _POOL_PLANS.get(key)
    if plan is None:
        plan = remember(_POOL_PLANS, key, _pool_plan(x, mode, kernel, stride, padding, dilation, ceil_mode,
                                                     count_include_pad, divisor_override, indices))
    kern, cl, shape, with_idx, grid, types, consts, warps, args, batched = plan
    new = _new_channels_last if cl else _new
    y = new(shape, x.dtype, x.device)
    idx = new(shape, dtypes.int64, x.device) if with_idx else None
    if grid[0] * grid[1]:
        rt.ensure_device(x.device.index)
        # x stands for its batched view (the same memory) when unbatched
        ptrs, sig = _pointers((x, y) if kern is _AVG_FWD else (x, y, idx if idx is not None else y))
        kern.launcher(sig + types, consts, warps)(*grid, 1, *ptrs, *args)
    return _unbatch(y, idx, batched)


def _unbatch(y: NDArray, idx: NDArray | None, batched: bool) -> tuple[NDArray, NDArray | None]:
    """Pooling's (values, indices) without the batch axis added to unbatched input."""
    if not batched:
        y = y.squeeze((0,))
        idx = idx.squeeze((0,)) if idx is not None else None
    return y, idx


def _channels_last_format(x: NDArray) -> memory_format | None:
    """channels_last (channels_last_3d for 5-d) when ``x`` is laid out so and not also plainly contiguous, else
    None: the layout in which the pooling and batch-norm kernels read ``x`` in place and write their results."""
    fmt = _CL_FORMATS.get(x.ndim)
    return fmt if fmt is not None and not _contig(x) and is_dense_in(x.shape, x.strides, fmt) else None


def _pool_cl(x: NDArray, mode: str, nd: int) -> bool:
    """Whether the pooling kernels keep channels_last: (batched) input laid out channels_last, where torch keeps it
    (max pooling in 2-d and 3-d, average pooling in 2-d); the output, its indices and the input gradient are then
    written in that layout."""
    return (mode == "max" or nd == 2) and _channels_last_format(x) is not None


def pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str, kernel: tuple, stride: tuple,
                  padding: tuple, dilation: tuple, ceil_mode: bool, count_include_pad: bool,
                  divisor_override: int | None) -> NDArray:
    nd = len(kernel)
    shape = x.shape
    if x.ndim == nd + 1:
        shape = (1,) + shape
    N, C = shape[:2]
    size = shape[2:]
    out_size = _pool_out(size, kernel, stride, padding, dilation, ceil_mode)
    cl = _pool_cl(x, mode, nd)  # the forward's layout
    fmt = _CL_FORMATS[len(shape)] if cl else None
    g = _in_format(grad, fmt)
    dx = (_new_channels_last if cl else _new)(x.shape, x.dtype, x.device)
    total = dx.size
    if total:
        rt.ensure_device(x.device.index)
        scalars = (total, *_three(size, 1), *_three(out_size, 1))
        consts = _pool_consts(mode, kernel, stride, padding, dilation)
        f64 = x.dtype is _F64
        if mode == "max":
            arrays = (g, _in_format(indices, fmt), dx)
            ptrs, sig = _pointers(arrays)
            go = _MAX_BWD.launcher(sig + ("i64",) + ("i32",) * 7,
                                   consts + (f64, _wide(total, g.size), cl, _POOL_BLOCK), _POOL_WARPS)
            go(_cdiv(total, _POOL_BLOCK), 1, 1, *ptrs, total, C, *scalars[1:])
        else:
            arrays = (g, dx)
            ptrs, sig = _pointers(arrays)
            go = _AVG_BWD.launcher(sig + ("i64",) + ("i32",) * 8,
                                   consts + (_div_mode(count_include_pad, divisor_override), f64,
                                             _wide(total, g.size), cl, _POOL_BLOCK), _POOL_WARPS)
            go(_cdiv(total, _POOL_BLOCK), 1, 1, *ptrs, total, C, *scalars[1:], divisor_override or 0)
    return dx


_ADAPTIVE_FWD = td.Kernel(pk.adaptive_pool_fwd)
_ADAPTIVE_BWD = td.Kernel(pk.adaptive_pool_bwd)
_ADAPTIVE_TABLES: dict[tuple, tuple] = {}


def _adaptive_axis(in_size: int, out_size: int, device: object) -> tuple:
    """Device tables of one axis: (start, end, lo, hi) as int32 arrays, the longest window and the most outputs
    covering one input position; cached by (sizes, device)."""
    key = (in_size, out_size, device.index)
    hit = _ADAPTIVE_TABLES.get(key)
    if hit is None:
        o = np.arange(out_size)
        start, end = (o * in_size) // out_size, -((-(o + 1) * in_size) // out_size)
        lo, hi = np.full(in_size, out_size, np.int64), np.zeros(in_size, np.int64)
        for k in range(int((end - start).max())):  # the outputs whose window holds each input position
            inside = start + k < end
            np.minimum.at(lo, (start + k)[inside], o[inside])
            np.maximum.at(hi, (start + k)[inside], o[inside] + 1)
        tables = tuple(from_numpy(a.astype(np.int32), _I32, device) for a in (start, end, lo, hi))
        hit = _ADAPTIVE_TABLES[key] = tables + (int((end - start).max()), int((hi - lo).max()))
    return hit


def adaptive_pool(x: NDArray, mode: str, output_size: tuple) -> tuple[NDArray, NDArray | None]:
    _check_float(f"adaptive_{mode}_pool2d", x)
    N, C, H, W = x.shape
    OH, OW = output_size
    y = _new((N, C, OH, OW), x.dtype, x.device)
    idx = _new(y.shape, dtypes.int64, x.device) if mode == "max" else None
    total = y.size
    if total:
        rt.ensure_device(x.device.index)
        th, tw = _adaptive_axis(H, OH, x.device), _adaptive_axis(W, OW, x.device)
        arrays = (x, y, idx if idx is not None else y, th[0], th[1], tw[0], tw[1])
        ptrs, sig = _pointers(arrays)
        go = _ADAPTIVE_FWD.launcher(sig + ("i64",) + ("i32",) * 4 + ("i64",) * 4,
                                    (mode == "max", th[4], tw[4], _lowest(x.dtype), x.dtype is _F64,
                                     _wide(x.size, total), _BLOCK), 4)
        go(_cdiv(total, _BLOCK), 1, 1, *ptrs, total, C, W, OH, OW, *x.strides)
    return y, idx


def adaptive_pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str) -> NDArray:
    N, C, H, W = x.shape
    OH, OW = grad.shape[2:]
    g = _dense(grad)
    dx = _new(x.shape, x.dtype, x.device)
    total = dx.size
    if total:
        rt.ensure_device(x.device.index)
        th, tw = _adaptive_axis(H, OH, x.device), _adaptive_axis(W, OW, x.device)
        arrays = (g, _dense(indices) if indices is not None else g, dx, *th[:2], *tw[:2], *th[2:4], *tw[2:4])
        ptrs, sig = _pointers(arrays)
        go = _ADAPTIVE_BWD.launcher(sig + ("i64",) + ("i32",) * 6,
                                    (mode == "max", x.dtype is _F64, _wide(total, g.size), _BLOCK), 4)
        go(_cdiv(total, _BLOCK), 1, 1, *ptrs, total, H, W, OH, OW, th[5], tw[5])
    return dx


# ---------------------------------------------------------------- batch normalization

_BN_PARTIALS = td.Kernel(bk.bn_partials)
_BN_FINALIZE = td.Kernel(bk.bn_finalize)
_BN_APPLY = td.Kernel(bk.bn_apply)
_BN_BWD_FINALIZE = td.Kernel(bk.bn_bwd_finalize)
_BN_PARTIALS_CL = td.Kernel(bk.bn_partials_cl)
_BN_APPLY_CL = td.Kernel(bk.bn_apply_cl)
_CL_FORMATS = {4: channels_last, 5: channels_last_3d}
_BN_TILE = 2048  # elements per (rows, channels) tile of the channels_last batch-norm kernels


def _wide(*sizes: int) -> bool:
    """Whether flat positions over arrays of these sizes need 64-bit index arithmetic."""
    return max(sizes) >= 2 ** 31


# Tiles of the row-major batch-norm kernels, chosen with benchmark/sweep_cnn_tiles.py on an H200: BLOCK elements per
# step and num_warps of the statistics pass (``_BN_WARPS``) and the elementwise pass (``_BN_APPLY_WARPS``), and
# programs per multiprocessor of the statistics pass.
_BN_BLOCK = 1024
_BN_WARPS = 4
_BN_APPLY_WARPS = 8
_BN_PROGRAMS_PER_SM = 8


def _bn_row_block(S: int) -> int | None:
    """The BLOCK of the row-major batch-norm kernels over rows of S elements where a block spans at most two rows
    (no per-element division): rows of 256 elements or more take blocks no longer than a row. None for shorter
    rows, which take flat blocks whose elements each divide by S."""
    return min(_BN_BLOCK, 1 << (S.bit_length() - 1)) if S >= 256 else None


def _rows_layout(x: NDArray) -> tuple[NDArray, int, int, int]:
    """x as contiguous (N, C, S) data: (array, N, C, S)."""
    N, C = x.shape[:2]
    return _dense(x), N, C, math.prod(x.shape[2:])


_BN_LAYOUTS: dict[tuple, tuple] = {}


def _bn_layout(x: NDArray) -> tuple[NDArray, int, int, int, memory_format | None]:
    """x as the batch-norm kernels read it: (array, N, C, S, memory format). Dense channels_last input is read in
    place (format channels_last or channels_last_3d) as N * S rows of C channels; other input as contiguous
    (N, C, S) data (copied when strided). The layout analysis is kept per (shape, strides)."""
    key = (x.shape, x.strides)
    hit = _BN_LAYOUTS.get(key)
    if hit is None:
        hit = remember(_BN_LAYOUTS, key, (x.shape[0], x.shape[1], math.prod(x.shape[2:]), _channels_last_format(x)))
    N, C, S, fmt = hit
    return (x if fmt is not None else _dense(x)), N, C, S, fmt


def _new_in(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, fmt: memory_format | None) -> NDArray:
    """A new (N, C, *spatial) array in memory format ``fmt`` (row-major for None)."""
    if fmt is None:
        return _new(shape, dtype, device)
    return _new_channels_last(shape, dtype, device)  # (N, *spatial, C) in memory


def _in_format(a: NDArray, fmt: memory_format | None) -> NDArray:
    """``a`` dense in memory format ``fmt`` (row-major for None): as it is when it already is, else a copy."""
    if fmt is None:
        return _dense(a)
    if is_dense_in(a.shape, a.strides, fmt):
        return a
    out = _new_in(a.shape, a.dtype, a.device, fmt)
    copy_(out, a)
    return out


@functools.lru_cache(maxsize=1024)
def _bn_cl_tiles(R: int, C: int, device: int) -> tuple[int, int, int, int]:
    """(BK channels, BR rows per tile, programs P over the rows, rows per program) of ``_bn_partials_cl``."""
    bk_ = min(_next_pow2(C), 128)
    br = min(_next_pow2(max(R, 1)), _BN_TILE // bk_)
    tiles = _cdiv(R, br)
    P = max(1, min(tiles, _cdiv(6 * rt.multiprocessor_count(device), _cdiv(C, bk_)), 1024))
    rch = _cdiv(tiles, P) * br
    return bk_, br, (_cdiv(R, rch) if R else 1), rch


def _scratch(C: int, P: int, coef_rows: int, acc: dtypes.dtype, device: object) -> tuple[NDArray, NDArray]:
    """The partial statistics (3, C, P) and the coefficients (coef_rows, C) of one batch-norm pass: views of one
    allocation (both live only during the pass)."""
    block = _new((C * (3 * P + coef_rows),), acc, device)
    return (block.as_strided((3, C, P), (C * P, P, 1), 0),
            block.as_strided((coef_rows, C), (C, 1), 3 * C * P))


def _bn_partials_cl(xc: NDArray, g: NDArray, mean: NDArray, acc: dtypes.dtype, backward: bool, R: int,
                    C: int, coef_rows: int) -> tuple[NDArray, int, NDArray]:
    """``_bn_partials`` for R rows of C channels (channels_last): programs over channel blocks x row ranges, about
    six per multiprocessor, each reading (BR, BK) tiles of ``_BN_TILE`` elements."""
    bk_, br, P, rch = _bn_cl_tiles(R, C, xc.device.index)
    part, coef = _scratch(C, P, coef_rows, acc, xc.device)
    if not backward:
        g = mean = xc
    arrays = (xc, g, mean, part)
    ptrs, sig = _pointers(arrays)
    go = _BN_PARTIALS_CL.launcher(sig + ("i32", "i32", "i32", "i32"),
                                  (backward, acc is _F64, _wide(xc.size), br, bk_), 8)
    go(_cdiv(C, bk_), P, 1, *ptrs, R, C, max(rch, 1), P)
    return part, P, coef


@functools.lru_cache(maxsize=1024)
def _bn_apply_cl_tiles(R: int, C: int) -> tuple[int, int]:
    """(BK channels, BR rows) of one ``_bn_apply_cl`` program."""
    bk_ = min(_next_pow2(C), 256)
    return bk_, min(_next_pow2(R), max(1, _BN_TILE // bk_))


def _bn_apply_cl(x: NDArray, g: NDArray, coef: NDArray, out: NDArray, R: int, C: int, backward: bool) -> None:
    if not out.size:
        return
    bk_, br = _bn_apply_cl_tiles(R, C)
    arrays = (x, g, coef, out)
    ptrs, sig = _pointers(arrays)
    go = _BN_APPLY_CL.launcher(sig + ("i32", "i32"), (backward, _wide(out.size), br, bk_), 4)
    go(_cdiv(R, br), _cdiv(C, bk_), 1, *ptrs, R, C)


@functools.lru_cache(maxsize=1024)
def _bn_chunks(N: int, C: int, S: int, device: int) -> tuple[bool, int, int, int]:
    """(straddle, BLOCK, chunk, programs P per channel) of ``_bn_partials``: each channel's N * S elements in P
    chunks of whole blocks, about ``_BN_PROGRAMS_PER_SM`` programs per multiprocessor in all."""
    count = N * S
    block = _bn_row_block(S)
    straddle = block is not None
    if not straddle:
        block = min(max(_next_pow2(count), 16), _BN_BLOCK)
    target = max(1, _cdiv(_BN_PROGRAMS_PER_SM * rt.multiprocessor_count(device), C))
    chunk = _cdiv(_cdiv(count, max(1, min(target, _cdiv(count, block), 1024))), block) * block
    return straddle, block, chunk, (_cdiv(count, chunk) if count else 1)


def _bn_partials(xc: NDArray, g: NDArray, mean: NDArray, acc: dtypes.dtype, backward: bool, N: int, C: int,
                 S: int, coef_rows: int) -> tuple[NDArray, int, NDArray]:
    """Per-(channel, program) partial statistics: program (c, p) takes ``chunk`` elements of channel c's N * S.
    Returns (partials (3, C, P), P, a (coef_rows, C) array for the coefficients made from them)."""
    straddle, block, chunk, P = _bn_chunks(N, C, S, xc.device.index)
    part, coef = _scratch(C, P, coef_rows, acc, xc.device)
    if not backward:  # the forward reads no gradient or mean
        g = mean = xc
    ptrs, sig = _pointers((xc, g, mean, part))
    wide = _wide(xc.size)
    index = "i64" if wide else "i32"
    go = _BN_PARTIALS.launcher(sig + (index, "i32", "i32", index, "i32"),
                               (backward, straddle, acc is _F64, wide, block), _BN_WARPS)
    go(C, P, 1, *ptrs, N * S, C, S, chunk, P)
    return part, P, coef


def _bn_apply(x: NDArray, g: NDArray, coef: NDArray, out: NDArray, C: int, S: int, backward: bool) -> None:
    total = out.size
    if not total:
        return
    arrays = (x, g, coef, out)
    ptrs, sig = _pointers(arrays)
    block = _bn_row_block(S)
    straddle = block is not None
    if not straddle:
        block = _BLOCK * 2
    go = _BN_APPLY.launcher(sig + ("i32", "i32", "i64"), (backward, straddle, _wide(total), block),
                            _BN_APPLY_WARPS)
    go(_cdiv(total, block), 1, 1, *ptrs, C, S, total)


def batch_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, running_mean: NDArray | None,
               running_var: NDArray | None, training: bool, momentum: float, eps: float) -> tuple:
    check_same_device("batch_norm", x, weight, bias, running_mean, running_var)
    _check_float("batch_norm", x)
    xc, N, C, S, fmt = _bn_layout(x)
    acc = _acc(x.dtype)
    dev = x.device
    if C:
        rt.ensure_device(dev.index)
    if training and C:  # the statistics launch first: the device reads x while the host allocates the rest
        if fmt is not None:
            part, P, coef = _bn_partials_cl(xc, xc, xc, acc, False, N * S, C, 2)
        else:
            part, P, coef = _bn_partials(xc, xc, xc, acc, False, N, C, S, 2)
    y = _new_in(x.shape, x.dtype, dev, fmt)
    stats = _new((2 * C,), acc, dev)  # the saved mean and inverse deviation, kept together for backward
    save_mean, save_invstd = stats.as_strided((C,), (1,), 0), stats.as_strided((C,), (1,), C)
    if not C:
        return y, save_mean, save_invstd
    if not training:
        coef = _new((2, C), acc, dev)
        part, P = coef, 1
    has_running = running_mean is not None and running_var is not None
    assert not has_running or (_contig(running_mean) and _contig(running_var)), "running stats update in place"
    arrays = (part, _dense(weight) if weight is not None else coef, _dense(bias) if bias is not None else coef,
              running_mean if has_running else coef, running_var if has_running else coef, save_mean, save_invstd,
              coef)
    ptrs, sig = _pointers(arrays)
    real = "fp64" if acc is _F64 else "fp32"
    go = _BN_FINALIZE.launcher(sig + ("i32", "i32", real, real),
                               (training, weight is not None, bias is not None, has_running, acc is _F64,
                                max(_next_pow2(P), 2)), 4)
    go(C, 1, 1, *ptrs, C, P, momentum, eps)
    if fmt is not None:
        _bn_apply_cl(xc, xc, coef, y, N * S, C, False)
    else:
        _bn_apply(xc, xc, coef, y, C, S, False)
    return y, save_mean, save_invstd


def batch_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, running_mean: NDArray | None,
                        running_var: NDArray | None, save_mean: NDArray, save_invstd: NDArray, training: bool,
                        eps: float, output_mask: tuple) -> tuple:
    xc, N, C, S, fmt = _bn_layout(x)
    g = _in_format(grad, fmt)
    acc = _acc(x.dtype)
    dev = x.device
    wdt = weight.dtype if weight is not None else x.dtype
    gw, gb = _new((C,), wdt, dev), _new((C,), wdt, dev)
    dx = _new_in(x.shape, x.dtype, dev, fmt) if output_mask[0] else None
    if C:
        rt.ensure_device(dev.index)
        mean = _dense(save_mean if training else running_mean)
        stat = _dense(save_invstd if training else running_var)
        if fmt is not None:
            part, P, coef = _bn_partials_cl(xc, g, mean, acc, True, N * S, C, 4)
        else:
            part, P, coef = _bn_partials(xc, g, mean, acc, True, N, C, S, 4)
        arrays = (part, _dense(weight) if weight is not None else coef, mean, stat, gw, gb, coef)
        ptrs, sig = _pointers(arrays)
        real = "fp64" if acc is _F64 else "fp32"
        go = _BN_BWD_FINALIZE.launcher(sig + ("i32", "i32", real, real),
                                       (training, weight is not None, acc is _F64, max(_next_pow2(P), 2)), 4)
        go(C, 1, 1, *ptrs, C, P, float(N * S), eps)
        if dx is not None:
            if fmt is not None:
                _bn_apply_cl(xc, g, coef, dx, N * S, C, True)
            else:
                _bn_apply(xc, g, coef, dx, C, S, True)
    return dx, (gw if output_mask[1] else None), (gb if output_mask[2] else None)


# ---------------------------------------------------------------- group normalization

_GN_FWD = td.Kernel(bk.gn_fwd)
_GN_BWD = td.Kernel(bk.gn_bwd)
_GN_PARTIALS = td.Kernel(bk.gn_partials)
_GN_APPLY = td.Kernel(bk.gn_apply)
# Fewer groups than this many per multiprocessor leave the device idle with one program per group: their rows are
# then split over several programs (statistics, then the mapping pass, which merges them).
_GN_SPLIT_PER_SM = 2
_GN_SPLIT_BLOCK = 1024


def _gn_blocks(C: int, S: int, G: int) -> tuple[int, int, int]:
    """(BLOCK over a group, BLOCK_S over one channel's S elements, num_warps)."""
    block = min(max(_next_pow2(C // G * S), 16), 2048)
    return block, min(max(_next_pow2(S), 16), 2048), 4 if block <= 1024 else 8


@functools.lru_cache(maxsize=1024)
def _gn_split(R: int, K: int, device: int) -> tuple[int, int] | None:
    """(programs P per row, elements per program) splitting R group rows of K elements, or None when the rows
    alone fill the device (or are too short to split)."""
    sms = rt.multiprocessor_count(device)
    if R >= _GN_SPLIT_PER_SM * sms or K < 8 * _GN_SPLIT_BLOCK or _cdiv(K, _GN_SPLIT_BLOCK) > 65535:
        return None
    P = min(_cdiv(8 * sms, R), _cdiv(K, 4 * _GN_SPLIT_BLOCK), 64)
    chunk = _cdiv(_cdiv(K, P), _GN_SPLIT_BLOCK) * _GN_SPLIT_BLOCK
    return _cdiv(K, chunk), chunk


def _gn_split_pass(x: NDArray, g: NDArray, weight: NDArray | None, bias: NDArray | None, out: NDArray,
                   mean: NDArray, rstd: NDArray, gpart: NDArray, C: int, S: int, G: int, split: tuple[int, int],
                   eps: float, backward: bool) -> None:
    """Group norm (or its backward, one channel per group) over rows split into P programs each: ``gn_partials``
    then ``gn_apply``."""
    P, chunk = split
    R, K = mean.size, x.size // mean.size
    acc = mean.dtype
    f64 = acc is _F64
    part = _new((3, R, P), acc, x.device)
    ptrs, sig = _pointers((x, g, mean, rstd, part))
    go = _GN_PARTIALS.launcher(sig + ("i32", "i32", "i32"), (backward, f64, _GN_SPLIT_BLOCK), 8)
    go(R, P, 1, *ptrs, K, chunk, P)
    arrays = (x, g, weight if weight is not None else x, bias if bias is not None else x, out, mean, rstd, part,
              gpart)
    ptrs, sig = _pointers(arrays)
    go = _GN_APPLY.launcher(sig + ("i32",) * 5 + ("fp64" if f64 else "fp32",),
                            (backward, weight is not None, bias is not None, C == G, f64, max(_next_pow2(P), 2),
                             _GN_SPLIT_BLOCK), 4)
    go(R, _cdiv(K, _GN_SPLIT_BLOCK), 1, *ptrs, C, S, G, K, P, eps)


def group_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, num_groups: int,
               eps: float) -> tuple[NDArray, NDArray, NDArray]:
    check_same_device("group_norm", x, weight, bias)
    _check_float("group_norm", x)
    xc, N, C, S = _rows_layout(x)
    acc = _acc(x.dtype)
    y = _new(x.shape, x.dtype, x.device)
    mean, rstd = _new((N, num_groups), acc, x.device), _new((N, num_groups), acc, x.device)
    if N and C:
        rt.ensure_device(x.device.index)
        weight = _dense(weight) if weight is not None else None
        bias = _dense(bias) if bias is not None else None
        split = _gn_split(N * num_groups, C // num_groups * S, x.device.index)
        if split is not None:
            _gn_split_pass(xc, xc, weight, bias, y, mean, rstd, xc, C, S, num_groups, split, eps, False)
            return y, mean, rstd
        arrays = (xc, weight if weight is not None else xc, bias if bias is not None else xc, y, mean, rstd)
        ptrs, sig = _pointers(arrays)
        block, _, warps = _gn_blocks(C, S, num_groups)
        go = _GN_FWD.launcher(sig + ("i32", "i32", "i32", "fp64" if acc is _F64 else "fp32"),
                              (weight is not None, bias is not None, acc is _F64, block), warps)
        go(N * num_groups, 1, 1, *ptrs, C, S, num_groups, eps)
    return y, mean, rstd


def group_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray,
                        num_groups: int, output_mask: tuple) -> tuple:
    xc, N, C, S = _rows_layout(x)
    g = _dense(grad)
    acc = _acc(x.dtype)
    dx = _new(x.shape, x.dtype, x.device)
    part = _new((2, N, C), acc, x.device)
    if N and C:
        rt.ensure_device(x.device.index)
        weight = _dense(weight) if weight is not None else None
        mean, rstd = _dense(mean), _dense(rstd)
        split = _gn_split(N * num_groups, C // num_groups * S, x.device.index) if C == num_groups else None
        if split is not None:
            _gn_split_pass(xc, g, weight, None, dx, mean, rstd, part, C, S, num_groups, split, 0.0, True)
        else:
            arrays = (g, xc, weight if weight is not None else xc, mean, rstd, dx, part)
            ptrs, sig = _pointers(arrays)
            block, block_s, warps = _gn_blocks(C, S, num_groups)
            go = _GN_BWD.launcher(sig + ("i32",) * 4,
                                  (weight is not None, acc is _F64, block, block_s), warps)
            go(N * num_groups, 1, 1, *ptrs, N, C, S, num_groups)
    wdt = weight.dtype if weight is not None else x.dtype
    sums = reduce("sum", part, (1,), False) if N else full((2, C), 0.0, acc, x.device)  # (2, C), batch order fixed
    gw = sums.narrow(0, 0, 1).reshape((C,)).astype(wdt) if output_mask[1] else None
    gb = sums.narrow(0, 1, 1).reshape((C,)).astype(wdt) if output_mask[2] else None
    return (dx if output_mask[0] else None), gw, gb


# ---------------------------------------------------------------- upsampling

_UP_FWD = td.Kernel(uk.upsample_fwd)
_UP_BWD = td.Kernel(uk.upsample_bwd)
_NEAREST2X_FWD = td.Kernel(uk.nearest2x_fwd)
_NEAREST2X_BWD = td.Kernel(uk.nearest2x_bwd)


def _nearest2x(mode: str, in_hw: tuple, out_hw: tuple) -> bool:
    """Nearest resampling by exactly 2 in both dims (source ``o >> 1``, as the tables): the dedicated kernels."""
    return mode == "nearest" and out_hw[0] == 2 * in_hw[0] and out_hw[1] == 2 * in_hw[1]
_TABLES: dict[tuple, tuple] = {}


def _source_table(in_size: int, out_size: int, mode: str, align_corners: bool, scale: float | None,
                  f64: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, l1) per output position along one axis, with torch's CPU arithmetic (float32 unless float64)."""
    o = np.arange(out_size)
    if mode in ("nearest", "nearest-exact"):
        s = np.float32(1.0 / scale) if scale else np.float32(in_size) / np.float32(out_size)
        if mode == "nearest" and out_size == in_size:
            i0 = o
        elif mode == "nearest" and out_size == 2 * in_size:
            i0 = o >> 1
        else:
            shift = np.float32(0.5 if mode == "nearest-exact" else 0.0)
            i0 = np.minimum(np.floor((o.astype(np.float32) + shift) * s).astype(np.int64), in_size - 1)
        return i0, i0, np.zeros(out_size, np.float64 if f64 else np.float32)
    T = np.float64 if f64 else np.float32
    if out_size == in_size:
        return o, o, np.zeros(out_size, T)
    if align_corners:
        s = T(in_size - 1) / T(out_size - 1) if out_size > 1 else T(0)
        src = s * o.astype(T)
    else:
        s = T(1.0 / scale) if scale else T(in_size) / T(out_size)
        src = np.maximum(s * (o.astype(T) + T(0.5)) - T(0.5), T(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    l1 = np.clip(src - i0.astype(T), T(0), T(1)).astype(T)
    return i0, i0 + (i0 < in_size - 1), l1


def _axis_tables(in_size: int, out_size: int, mode: str, align_corners: bool, scale: float | None, f64: bool,
                 device: object) -> tuple:
    """Device tables of one axis: (i0, i1, l1, lo, hi, longest range), cached by their parameters."""
    key = (in_size, out_size, mode, align_corners, scale, f64, device.index)
    hit = _TABLES.get(key)
    if hit is None:
        i0, i1, l1 = _source_table(in_size, out_size, mode, align_corners, scale, f64)
        o = np.arange(out_size)
        lo, hi = np.full(in_size, out_size, np.int64), np.zeros(in_size, np.int64)
        for src in (i0, i1):  # the output positions reading each input position form one range
            np.minimum.at(lo, src, o)
            np.maximum.at(hi, src, o + 1)
        lo = np.where(hi > 0, lo, 0)
        longest = int((hi - lo).max()) if in_size else 0
        tables = tuple(from_numpy(a.astype(np.int32), _I32, device) for a in (i0, i1))
        tables += (from_numpy(l1, _F64 if f64 else _F32, device),)
        tables += tuple(from_numpy(a.astype(np.int32), _I32, device) for a in (lo, hi))
        hit = _TABLES[key] = tables + (longest,)
    return hit


def _tables(in_hw: tuple, out_hw: tuple, mode: str, align_corners: bool, scales: tuple, f64: bool,
            device: object) -> tuple[tuple, tuple]:
    return tuple(_axis_tables(i, o, mode, bool(align_corners), s, f64, device)
                 for i, o, s in zip(in_hw, out_hw, scales))


def upsample(x: NDArray, output_size: tuple, mode: str, align_corners: bool | None, scales: tuple) -> NDArray:
    _check_float(f"upsample_{mode}2d", x)
    N, C = x.shape[:2]
    OH, OW = output_size
    y = _new((N, C, OH, OW), x.dtype, x.device)
    total = y.size
    if total:
        rt.ensure_device(x.device.index)
        if _nearest2x(mode, x.shape[2:], output_size):
            xc = _dense(x)
            ptrs, sig = _pointers((xc, y))
            wide = _wide(total)  # the output's offsets: four times the input's
            go = _NEAREST2X_FWD.launcher(sig + ("i64" if wide else "i32", "i32"), (wide, _UP_BLOCK), _UP_WARPS)
            go(_cdiv(xc.size, _UP_BLOCK), 1, 1, *ptrs, xc.size, x.shape[3])
            return y
        f64 = x.dtype is _F64
        th, tw = _tables(x.shape[2:], output_size, mode, align_corners, scales, f64, x.device)
        arrays = (x, y, *th[:3], *tw[:3])
        ptrs, sig = _pointers(arrays)
        go = _UP_FWD.launcher(sig + ("i64", "i32", "i32", "i32") + ("i64",) * 4,
                              (mode != "bilinear", f64, _wide(x.size, total), _UP_BLOCK), _UP_WARPS)
        go(_cdiv(total, _UP_BLOCK), 1, 1, *ptrs, total, C, OH, OW, *x.strides)
    return y


def upsample_backward(grad: NDArray, input_size: tuple, mode: str, align_corners: bool | None,
                      scales: tuple) -> NDArray:
    g = _dense(grad)
    N, C, H, W = input_size
    OH, OW = grad.shape[2:]
    dx = _new(tuple(input_size), grad.dtype, grad.device)
    total = dx.size
    if total:
        rt.ensure_device(grad.device.index)
        f64 = grad.dtype is _F64
        if _nearest2x(mode, (H, W), (OH, OW)):
            ptrs, sig = _pointers((g, dx))
            wide = _wide(g.size)
            go = _NEAREST2X_BWD.launcher(sig + ("i64" if wide else "i32", "i32"), (f64, wide, _UP_BLOCK), _UP_WARPS)
            go(_cdiv(total, _UP_BLOCK), 1, 1, *ptrs, total, W)
            return dx
        th, tw = _tables((H, W), (OH, OW), mode, align_corners, scales, f64, grad.device)
        arrays = (g, dx, *th[:5], *tw[:5])
        ptrs, sig = _pointers(arrays)
        go = _UP_BWD.launcher(sig + ("i64",) + ("i32",) * 6,
                              (f64, _wide(total, g.size), _UP_BLOCK // 2), _UP_WARPS)
        go(_cdiv(total, _UP_BLOCK // 2), 1, 1, *ptrs, total, H, W, OH, OW, th[5], tw[5])
    return dx


# ---------------------------------------------------------------- embedding gradient

_EMB_RANK = td.Kernel(ek.embedding_rank)
_EMB_SUM = td.Kernel(ek.embedding_segment_sum)


def embedding_backward(grad: NDArray, index: NDArray, num_weights: int) -> NDArray:
    check_same_device("embedding_backward", grad, index)
    n = index.size
    D = grad.shape[-1] if grad.ndim else 1
    dw = full((num_weights, D), 0, grad.dtype, grad.device)
    if not (n and D):
        return dw
    rt.ensure_device(grad.device.index)
    idx = _dense(index.reshape((n,)))
    g = _dense(grad.reshape((n, D)))
    order, run = _new((n,), _I32, grad.device), _new((n,), _I32, grad.device)
    arrays = (idx, order, run)
    ptrs, sig = _pointers(arrays)
    block_i = 32  # small blocks of positions: n / 32 programs keep every multiprocessor busy
    go = _EMB_RANK.launcher(sig + ("i32",), (block_i, 128), 4)
    go(_cdiv(n, block_i), 1, 1, *ptrs, n)
    arrays = (g, idx, order, run, dw)
    ptrs, sig = _pointers(arrays)
    block_d = min(max(_next_pow2(D), 16), 1024)
    go = _EMB_SUM.launcher(sig + ("i32", "i64"), (8, block_d, grad.dtype is _F64),
                           4 if block_d <= 512 else 8)
    go(n, _cdiv(D, block_d), 1, *ptrs, D, g.strides[0])
    return dw
