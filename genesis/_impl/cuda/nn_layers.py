"""Launchers of the CNN-layer kernels and the embedding gradient (``kernels/nn_pool.py``, ``nn_batchnorm.py``,
``nn_upsample.py``, ``nn_embedding.py``): check, allocate, launch.

Each implements primitives of the backend contract (``genesis._impl.contract``): pool, pool_backward, adaptive_pool,
adaptive_pool_backward, batch_norm, batch_norm_backward, group_norm, group_norm_backward, upsample, upsample_backward,
embedding_backward. Every backward here gathers or reduces in a fixed order (no float atomics): gradients are bitwise
reproducible run to run.
"""

from __future__ import annotations

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
from genesis._impl.cuda.launch import _contig, _new, _next_pow2, _psig, _ptr
from genesis._impl.cuda.reductions import reduce
from genesis.memory_format import channels_last, channels_last_3d, is_dense_in, memory_format
from genesis.ndarray import NDArray, check_same_device

_F32, _F64, _I32 = dtypes.float32, dtypes.float64, dtypes.int32
_ACC_KIND = {dtypes.float64: 1, dtypes.int64: 2}  # accumulator of average pooling (others: float32)
_CL_FORMATS = {4: channels_last, 5: channels_last_3d}
_BLOCK = 512  # elements per program of the elementwise-shaped kernels (pooling, apply passes, resampling)


def _dense(x: NDArray) -> NDArray:
    return x if _contig(x) else contiguous(x)


def _acc(dtype: dtypes.dtype) -> dtypes.dtype:
    return _F64 if dtype is _F64 else _F32


def _sig(arrays: tuple, ptrs: tuple) -> tuple[str, ...]:
    return tuple(_psig(a, p) for a, p in zip(arrays, ptrs))


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _check_float(op: str, x: NDArray) -> None:
    if x.dtype.category != 2:
        raise NotImplementedError(f"\"{op}\" not implemented for '{x.dtype.name}'")


def _lowest(dtype: dtypes.dtype) -> float | int:
    return float("-inf") if dtype.category == 2 else int(np.iinfo(dtype.name).min)


# ---------------------------------------------------------------- pooling

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


def _channels_last(x: NDArray) -> memory_format | None:
    """x's memory format when it is dense channels_last (4-d) or channels_last_3d (5-d) and not row-major, else
    None: outputs and gradients of such inputs keep the format, as torch's do."""
    fmt = _CL_FORMATS.get(x.ndim)
    if fmt is None or _contig(x) or not is_dense_in(x.shape, x.strides, fmt):
        return None
    return fmt


def _new_in(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, fmt: memory_format | None) -> NDArray:
    """A new (N, C, *spatial) array in memory format ``fmt`` (row-major for None)."""
    if fmt is None:
        return _new(shape, dtype, device)
    stored = _new((shape[0], *shape[2:], shape[1]), dtype, device)  # (N, *spatial, C) in memory
    return stored.permute((0, len(shape) - 1) + tuple(range(1, len(shape) - 1)))


def _i32(v: int) -> str:
    """The signature type of an int32 size: marked divisible by 16 when it is, so that Triton can prove rows of
    that many elements keep 16-byte alignment and vectorize the loads and stores along them."""
    return "i32:16" if v % 16 == 0 else "i32"


def _stride_types(strides: tuple[int, ...], wide: bool) -> tuple[str, ...]:
    """Signature types of element strides: unit strides become the constant 1 (so Triton vectorizes and orders
    its threads along that dim), others 32-bit unless the arrays need 64-bit offsets."""
    return tuple("1" if s == 1 else ("i64" if wide else "i32") + (":16" if s % 16 == 0 else "") for s in strides)


def _fit(n: int, cap: int, least: int = 1) -> int:
    """A power-of-two block along a dim of n elements, at most ``cap`` and at least ``least`` (or next_pow2(n)):
    the one that pads n least (ties: the larger block)."""
    top = min(_next_pow2(n), cap)
    low = min(least, top)
    blocks = [b for b in (1 << k for k in range(top.bit_length())) if b >= low]
    return min(blocks, key=lambda b: (_cdiv(n, b) * b, -b))


def _tile3(C: int, H: int, W: int, channels_last: bool) -> tuple[int, int, int]:
    """(BC, BH, BW) tile of about 1024 elements over (C, H, W): channels first when they are contiguous in
    memory, else rows of up to 64 columns."""
    if channels_last:
        bc = min(_next_pow2(C), 128)
        bw = min(_next_pow2(W), 1024 // bc)
        return bc, min(_next_pow2(H), 1024 // (bc * bw)), bw
    bw = _fit(W, 64, 16)
    bh = _fit(H, 1024 // bw)
    return min(_next_pow2(C), 1024 // (bw * bh)), bh, bw


def _five(x: NDArray, nd: int) -> tuple[int, ...]:
    """Strides of a batched (N, C, *spatial) array as (N, C, D, H, W) strides (depth stride 0 for 2-d)."""
    return tuple(x.strides[:2]) + (0,) + tuple(x.strides[2:]) if nd == 2 else tuple(x.strides)


def _max_pool(x: NDArray, y: NDArray, idx: NDArray | None, kernel: tuple, stride: tuple, padding: tuple,
              dilation: tuple, fmt: memory_format | None) -> None:
    nd = len(kernel)
    N, C = x.shape[:2]
    D, H, W = _three(x.shape[2:], 1)
    OD, OH, OW = _three(y.shape[2:], 1)
    bc, bh, bw = _tile3(C, OH, OW, fmt is not None)
    tiles = (_cdiv(C, bc), _cdiv(OH, bh), _cdiv(OW, bw))
    xs, ys = _five(x, nd), _five(y, nd)
    wide = _wide(_span(x), y.size)
    arrays = (x, y, idx if idx is not None else y)
    ptrs = tuple(_ptr(a) for a in arrays)
    types = _sig(arrays, ptrs) + ("i32",) * 10 + _stride_types(xs, wide) + _stride_types(ys, wide)
    consts = _pool_consts("max", kernel, stride, padding, dilation) + (_lowest(x.dtype), idx is not None,
                                                                       bc, bh, bw)
    go = _MAX_FWD.launcher(types, consts, 4)
    go(N * OD * math.prod(tiles), 1, 1, *ptrs, C, D, H, W, OD, OH, OW, *tiles, *xs, *ys)


def _max_pool_backward(g: NDArray, idx: NDArray, dx: NDArray, kernel: tuple, stride: tuple, padding: tuple,
                       dilation: tuple, fmt: memory_format | None) -> None:
    nd = len(kernel)
    N, C = dx.shape[:2]
    D, H, W = _three(dx.shape[2:], 1)
    OD, OH, OW = _three(g.shape[2:], 1)
    bc, bh, bw = _tile3(C, H, W, fmt is not None)
    tiles = (_cdiv(C, bc), _cdiv(H, bh), _cdiv(W, bw))
    consts = _pool_consts("max", kernel, stride, padding, dilation)
    ks, ss, ds = consts[:3], consts[3:6], consts[9:12]
    reach = tuple((k - 1) // s + 1 if d == 1 else k for k, s, d in zip(ks, ss, ds))  # windows per input, per axis
    strides = _five(g, nd) + _five(idx, nd) + _five(dx, nd)
    arrays = (g, idx, dx)
    ptrs = tuple(_ptr(a) for a in arrays)
    types = _sig(arrays, ptrs) + ("i32",) * 10 + _stride_types(strides, _wide(g.size, dx.size))
    go = _MAX_BWD.launcher(types, consts + reach + (dx.dtype is _F64, bc, bh, bw), 4)
    go(N * D * math.prod(tiles), 1, 1, *ptrs, C, D, H, W, OD, OH, OW, *tiles, *strides)


def pool(x: NDArray, mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, ceil_mode: bool,
         count_include_pad: bool, divisor_override: int | None, with_indices: bool) -> tuple[NDArray, NDArray | None]:
    check_same_device("pool", x)
    nd = len(kernel)
    if x.dtype is dtypes.bool_ or (mode == "avg" and x.dtype.category != 2 and x.dtype is not dtypes.int64):
        raise NotImplementedError(f"\"{mode}_pool{nd}d\" not implemented for '{x.dtype.name}'")
    batched = x.ndim == nd + 2
    if not batched:
        x = x.unsqueeze(0)
    N, C = x.shape[:2]
    size = x.shape[2:]
    out_size = _pool_out(size, kernel, stride, padding, dilation, ceil_mode)
    fmt = _channels_last(x) if mode == "max" else None
    y = _new_in((N, C) + out_size, x.dtype, x.device, fmt)
    idx = _new_in(y.shape, dtypes.int64, x.device, fmt) if mode == "max" and with_indices else None
    total = y.size
    if total:
        rt.ensure_device(x.device.index)
        if mode == "max":
            _max_pool(x, y, idx, kernel, stride, padding, dilation, fmt)
        else:
            D, H, W = _three(size, 1)
            OD, OH, OW = _three(out_size, 1)
            scalars = (total, C, D, H, W, OD, OH, OW)
            consts = _pool_consts(mode, kernel, stride, padding, dilation)
            arrays = (x, y)
            ptrs = tuple(_ptr(a) for a in arrays)
            go = _AVG_FWD.launcher(_sig(arrays, ptrs) + ("i64",) + ("i32",) * 8 + ("i64",) * 5,
                                   consts + (_div_mode(count_include_pad, divisor_override),
                                             _ACC_KIND.get(x.dtype, 0), _wide(x.size, total), _BLOCK), 4)
            go(_cdiv(total, _BLOCK), 1, 1, *ptrs, *scalars, divisor_override or 0, *_five(x, nd))
    if not batched:
        y = y.squeeze((0,))
        idx = idx.squeeze((0,)) if idx is not None else None
    return y, idx


def pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str, kernel: tuple, stride: tuple,
                  padding: tuple, dilation: tuple, ceil_mode: bool, count_include_pad: bool,
                  divisor_override: int | None) -> NDArray:
    nd = len(kernel)
    batched = x.ndim == nd + 2
    if not batched:
        x, grad, indices = x.unsqueeze(0), grad.unsqueeze(0), indices.unsqueeze(0) if indices is not None else None
    N, C = x.shape[:2]
    size = x.shape[2:]
    out_size = _pool_out(size, kernel, stride, padding, dilation, ceil_mode)
    fmt = _channels_last(x) if mode == "max" else None
    dx = _new_in(x.shape, x.dtype, x.device, fmt)
    total = dx.size
    if total:
        rt.ensure_device(x.device.index)
        if mode == "max":
            _max_pool_backward(grad, indices, dx, kernel, stride, padding, dilation, fmt)
        else:
            g = _dense(grad)
            scalars = (total, *_three(size, 1), *_three(out_size, 1))
            consts = _pool_consts(mode, kernel, stride, padding, dilation)
            arrays = (g, dx)
            ptrs = tuple(_ptr(a) for a in arrays)
            go = _AVG_BWD.launcher(_sig(arrays, ptrs) + ("i64",) + ("i32",) * 7,
                                   consts + (_div_mode(count_include_pad, divisor_override), x.dtype is _F64,
                                             _wide(total, g.size), _BLOCK), 4)
            go(_cdiv(total, _BLOCK), 1, 1, *ptrs, *scalars, divisor_override or 0)
    return dx if batched else dx.squeeze((0,))


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
        ptrs = tuple(_ptr(a) for a in arrays)
        go = _ADAPTIVE_FWD.launcher(_sig(arrays, ptrs) + ("i64",) + ("i32",) * 4 + ("i64",) * 4,
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
        ptrs = tuple(_ptr(a) for a in arrays)
        go = _ADAPTIVE_BWD.launcher(_sig(arrays, ptrs) + ("i64",) + ("i32",) * 6,
                                    (mode == "max", x.dtype is _F64, _wide(total, g.size), _BLOCK), 4)
        go(_cdiv(total, _BLOCK), 1, 1, *ptrs, total, H, W, OH, OW, th[5], tw[5])
    return dx


# ---------------------------------------------------------------- batch normalization

_BN_PARTIALS = td.Kernel(bk.bn_partials)
_BN_FINALIZE = td.Kernel(bk.bn_finalize)
_BN_APPLY = td.Kernel(bk.bn_apply)
_BN_BWD_FINALIZE = td.Kernel(bk.bn_bwd_finalize)


def _wide(*sizes: int) -> bool:
    """Whether flat positions over arrays of these sizes need 64-bit index arithmetic."""
    return max(sizes) >= 2 ** 31


def _span(x: NDArray) -> int:
    """One past the largest element offset a (possibly strided) view reaches: the size its offsets must fit."""
    return 1 + sum((n - 1) * abs(s) for n, s in zip(x.shape, x.strides)) if x.size else 0


_BN_TILE = 2048  # elements per tile of the batch-norm kernels (8 KB of float32: enough loads in flight per SM)


def _bn_layout(x: NDArray) -> tuple[NDArray, int, int, int]:
    """x as contiguous (N, C, S) data: (array, N, C, S)."""
    N, C = x.shape[:2]
    return _dense(x), N, C, math.prod(x.shape[2:])


def _bn_view(x: NDArray) -> tuple[NDArray, memory_format | None, int, int, int, bool]:
    """x as the batch-norm kernels read it: (array, memory format, N, C, S, rows of channels). channels_last
    (3d) input is read in place as N * S rows of C channels, and so is (N, C) input; other input as row-major
    (N, C, S) (copied when strided)."""
    N, C = x.shape[:2]
    S = math.prod(x.shape[2:])
    fmt = _channels_last(x)
    if fmt is not None:
        return x, fmt, N, C, S, True
    return _dense(x), None, N, C, S, S == 1


def _in_format(a: NDArray, fmt: memory_format | None) -> NDArray:
    """``a`` dense in memory format ``fmt`` (row-major for None): as it is when it already is, else a copy."""
    if fmt is None:
        return _dense(a)
    if is_dense_in(a.shape, a.strides, fmt):
        return a
    out = _new_in(a.shape, a.dtype, a.device, fmt)
    copy_(out, a)
    return out


def _bn_partials(xc: NDArray, g: NDArray, mean: NDArray, acc: dtypes.dtype, backward: bool, N: int, C: int,
                 S: int, cl: bool) -> tuple[NDArray, int]:
    """Per-(channel, program) partial statistics over about six programs per multiprocessor, each reading a
    piece of the input in (BR, BK) tiles of ``_BN_TILE`` elements."""
    target = 6 * rt.multiprocessor_count(xc.device.index)
    if cl:  # R = N * S rows of C channels: programs over channel blocks x row ranges
        R = N * S
        bk = min(_next_pow2(C), 128)
        br = min(_next_pow2(R), _BN_TILE // bk)
        tr = _cdiv(R, br)
        P = max(1, min(tr, _cdiv(target, _cdiv(C, bk)), 1024))
        rch, sch = _cdiv(tr, P) * br, 1
        P = ps = _cdiv(R, rch) if R else 1
        grid0 = _cdiv(C, bk)
    else:  # channel c's N x S matrix (rows C * S apart) cut into PR x PS pieces
        R = N
        bk = _fit(S, 1024, 32)
        br = min(_next_pow2(N), max(1, _BN_TILE // bk))
        tr, ts = _cdiv(N, br), _cdiv(S, bk)
        P = max(1, min(tr * ts, _cdiv(target, C), 1024))
        pr = max(1, min(tr, P))
        ps = max(1, min(ts, _cdiv(P, pr)))
        rch, sch = max(1, _cdiv(tr, pr)) * br, max(1, _cdiv(ts, ps)) * bk
        pr, ps = _cdiv(N, rch), _cdiv(S, sch)
        P = pr * ps
        grid0 = C
    if not N * S:  # nothing to reduce: one program per channel writes a zero count
        P = ps = rch = sch = 1
    part = _new((3, C, P), acc, xc.device)
    if not backward:  # the forward reads no gradient or mean
        g = mean = xc
    arrays = (xc, g, mean, part)
    ptrs = tuple(_ptr(a) for a in arrays)
    go = _BN_PARTIALS.launcher(_sig(arrays, ptrs) + ("i32", _i32(C), _i32(S), "i32", _i32(sch), "i32", "i32"),
                               (backward, cl, acc is _F64, _wide(xc.size), br, bk), 8)
    go(grid0, P, 1, *ptrs, R, C, S, rch, sch, ps, P)
    return part, P


def _bn_apply(x: NDArray, g: NDArray, coef: NDArray, out: NDArray, N: int, C: int, S: int, cl: bool,
              backward: bool) -> None:
    """One elementwise pass in (BR, BK) tiles: rows of S elements of one channel, or rows of C channels."""
    total = out.size
    if not total:
        return
    R, K = (N * S, C) if cl else (N * C, S)
    bk = min(_next_pow2(K), 256) if cl else _fit(K, 1024, 32)
    br = min(_next_pow2(R), max(1, _BN_TILE // bk))
    arrays = (x, g, coef, out)
    ptrs = tuple(_ptr(a) for a in arrays)
    go = _BN_APPLY.launcher(_sig(arrays, ptrs) + ("i32", _i32(K), _i32(C)), (backward, cl, _wide(total), br, bk), 4)
    go(_cdiv(R, br), _cdiv(K, bk), 1, *ptrs, R, K, C)


def batch_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, running_mean: NDArray | None,
               running_var: NDArray | None, training: bool, momentum: float, eps: float) -> tuple:
    check_same_device("batch_norm", x, weight, bias, running_mean, running_var)
    _check_float("batch_norm", x)
    xc, fmt, N, C, S, cl = _bn_view(x)
    acc = _acc(x.dtype)
    dev = x.device
    y = _new_in(x.shape, x.dtype, dev, fmt)
    save_mean, save_invstd = _new((C,), acc, dev), _new((C,), acc, dev)
    if not C:
        return y, save_mean, save_invstd
    rt.ensure_device(dev.index)
    coef = _new((2, C), acc, dev)
    part, P = _bn_partials(xc, xc, xc, acc, False, N, C, S, cl) if training else (coef, 1)
    has_running = running_mean is not None and running_var is not None
    assert not has_running or (_contig(running_mean) and _contig(running_var)), "running stats update in place"
    arrays = (part, _dense(weight) if weight is not None else coef, _dense(bias) if bias is not None else coef,
              running_mean if has_running else coef, running_var if has_running else coef, save_mean, save_invstd,
              coef)
    ptrs = tuple(_ptr(a) for a in arrays)
    real = "fp64" if acc is _F64 else "fp32"
    go = _BN_FINALIZE.launcher(_sig(arrays, ptrs) + ("i32", "i32", real, real),
                               (training, weight is not None, bias is not None, has_running, acc is _F64,
                                max(_next_pow2(P), 2)), 4)
    go(C, 1, 1, *ptrs, C, P, momentum, eps)
    _bn_apply(xc, xc, coef, y, N, C, S, cl, False)
    return y, save_mean, save_invstd


def batch_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, running_mean: NDArray | None,
                        running_var: NDArray | None, save_mean: NDArray, save_invstd: NDArray, training: bool,
                        eps: float, output_mask: tuple) -> tuple:
    xc, fmt, N, C, S, cl = _bn_view(x)
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
        part, P = _bn_partials(xc, g, mean, acc, True, N, C, S, cl)
        coef = _new((4, C), acc, dev)
        arrays = (part, _dense(weight) if weight is not None else coef, mean, stat, gw, gb, coef)
        ptrs = tuple(_ptr(a) for a in arrays)
        real = "fp64" if acc is _F64 else "fp32"
        go = _BN_BWD_FINALIZE.launcher(_sig(arrays, ptrs) + ("i32", "i32", real, real),
                                       (training, weight is not None, acc is _F64, max(_next_pow2(P), 2)), 4)
        go(C, 1, 1, *ptrs, C, P, float(N * S), eps)
        if dx is not None:
            _bn_apply(xc, g, coef, dx, N, C, S, cl, True)
    return dx, (gw if output_mask[1] else None), (gb if output_mask[2] else None)


# ---------------------------------------------------------------- group normalization

_GN_FWD = td.Kernel(bk.gn_fwd)
_GN_BWD = td.Kernel(bk.gn_bwd)


def _gn_blocks(C: int, S: int, G: int) -> tuple[int, int, int]:
    """(BLOCK over a group, BLOCK_S over one channel's S elements, num_warps)."""
    block = min(max(_next_pow2(C // G * S), 16), 2048)
    return block, min(max(_next_pow2(S), 16), 2048), 4 if block <= 1024 else 8


def group_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, num_groups: int,
               eps: float) -> tuple[NDArray, NDArray, NDArray]:
    check_same_device("group_norm", x, weight, bias)
    _check_float("group_norm", x)
    xc, N, C, S = _bn_layout(x)
    acc = _acc(x.dtype)
    y = _new(x.shape, x.dtype, x.device)
    mean, rstd = _new((N, num_groups), acc, x.device), _new((N, num_groups), acc, x.device)
    if N and C:
        rt.ensure_device(x.device.index)
        arrays = (xc, _dense(weight) if weight is not None else xc, _dense(bias) if bias is not None else xc, y,
                  mean, rstd)
        ptrs = tuple(_ptr(a) for a in arrays)
        block, _, warps = _gn_blocks(C, S, num_groups)
        go = _GN_FWD.launcher(_sig(arrays, ptrs) + ("i32", "i32", "i32", "fp64" if acc is _F64 else "fp32"),
                              (weight is not None, bias is not None, acc is _F64, block), warps)
        go(N * num_groups, 1, 1, *ptrs, C, S, num_groups, eps)
    return y, mean, rstd


def group_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray,
                        num_groups: int, output_mask: tuple) -> tuple:
    xc, N, C, S = _bn_layout(x)
    g = _dense(grad)
    acc = _acc(x.dtype)
    dx = _new(x.shape, x.dtype, x.device)
    part = _new((2, N, C), acc, x.device)
    if N and C:
        rt.ensure_device(x.device.index)
        arrays = (g, xc, _dense(weight) if weight is not None else xc, _dense(mean), _dense(rstd), dx, part)
        ptrs = tuple(_ptr(a) for a in arrays)
        block, block_s, warps = _gn_blocks(C, S, num_groups)
        go = _GN_BWD.launcher(_sig(arrays, ptrs) + ("i32",) * 4,
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
    fmt = _channels_last(x)
    y = _new_in((N, C, OH, OW), x.dtype, x.device, fmt)
    if y.size:
        rt.ensure_device(x.device.index)
        f64 = x.dtype is _F64
        th, tw = _tables(x.shape[2:], output_size, mode, align_corners, scales, f64, x.device)
        bc, bh, bw = _tile3(C, OH, OW, fmt is not None)
        tiles = (_cdiv(C, bc), _cdiv(OH, bh), _cdiv(OW, bw))
        arrays = (x, y, *th[:3], *tw[:3])
        ptrs = tuple(_ptr(a) for a in arrays)
        strides = x.strides + y.strides
        go = _UP_FWD.launcher(_sig(arrays, ptrs) + ("i32",) * 6 + _stride_types(strides, _wide(_span(x), y.size)),
                              (mode != "bilinear", f64, bc, bh, bw), 4)
        go(N * math.prod(tiles), 1, 1, *ptrs, C, OH, OW, *tiles, *strides)
    return y


def upsample_backward(grad: NDArray, input_size: tuple, mode: str, align_corners: bool | None,
                      scales: tuple) -> NDArray:
    N, C, H, W = input_size
    OH, OW = grad.shape[2:]
    fmt = _channels_last(grad)
    dx = _new_in(tuple(input_size), grad.dtype, grad.device, fmt)
    if dx.size:
        rt.ensure_device(grad.device.index)
        f64 = grad.dtype is _F64
        th, tw = _tables((H, W), (OH, OW), mode, align_corners, scales, f64, grad.device)
        bc, bh, bw = _tile3(C, H, W, fmt is not None)
        tiles = (_cdiv(C, bc), _cdiv(H, bh), _cdiv(W, bw))
        arrays = (grad, dx, *th[:5], *tw[:5])
        ptrs = tuple(_ptr(a) for a in arrays)
        strides = grad.strides + dx.strides
        go = _UP_BWD.launcher(_sig(arrays, ptrs) + ("i32",) * 8 + _stride_types(strides, _wide(_span(grad), dx.size)),
                              (f64, th[5], tw[5], bc, bh, bw), 4)
        go(N * math.prod(tiles), 1, 1, *ptrs, C, H, W, OH, OW, *tiles, *strides)
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
    ptrs = tuple(_ptr(a) for a in arrays)
    block_i = 32  # small blocks of positions: n / 32 programs keep every multiprocessor busy
    go = _EMB_RANK.launcher(_sig(arrays, ptrs) + ("i32",), (block_i, 128), 4)
    go(_cdiv(n, block_i), 1, 1, *ptrs, n)
    arrays = (g, idx, order, run, dw)
    ptrs = tuple(_ptr(a) for a in arrays)
    block_d = min(max(_next_pow2(D), 16), 1024)
    go = _EMB_SUM.launcher(_sig(arrays, ptrs) + ("i32", "i64"), (8, block_d, grad.dtype is _F64),
                           4 if block_d <= 512 else 8)
    go(n, _cdiv(D, block_d), 1, *ptrs, D, g.strides[0])
    return dw
