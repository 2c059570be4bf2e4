"""Reduction primitives of the CUDA backend: reductions over dims, arg-reductions, scans and softmax."""

from __future__ import annotations

import math

import numpy as np

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import cast, contiguous, full
from genesis._impl.cuda.kernels import reduce as rk
from genesis._impl.cuda.launch import (
    _PTR,
    _PTR16,
    _contig,
    _ew,
    _i32,
    _istr,
    _new,
    _next_pow2,
    _psig,
    _ptr,
    _scalar_sig,
    complex_unsupported,
    complex_view,
    real_view,
)
from genesis.memo import remember
from genesis.ndarray import NDArray, view_strides

_RROWS = td.Kernel(rk.reduce_rows)
_RCOLS = td.Kernel(rk.reduce_cols)
_TILE = 4096  # elements per program of a row reduction (swept on an H200: 4096 beats 2048 and 8192)
_TILE_COLS = 8192  # elements per program of a column reduction (8192 beats 4096 there)


def _identity(op: str, dtype: dtypes.dtype) -> int | float:
    if op in ("sum", "mean", "any", "sumsq"):
        return 0
    if op in ("prod", "all"):
        return 1
    big = op == "amin"
    if dtype.category == 2:
        return math.inf if big else -math.inf
    if dtype is dtypes.bool_:
        return 1 if big else 0
    info = np.iinfo(dtype.name)
    return int(info.max) if big else int(info.min)


def _acc_dtype(op: str, dtype: dtypes.dtype) -> dtypes.dtype:
    if op in ("any", "all") or dtype is dtypes.bool_:
        return dtypes.int32
    if dtype in (dtypes.float16, dtypes.bfloat16):
        return dtypes.float32
    return dtype


def _col_blocks(M: int, K: int, itemsize: int, sms: int, tile: int = _TILE_COLS) -> tuple[int, int, int, int, int]:
    """Tiles of ``tile`` elements for a column reduction of a (K, M) view: ``(block_n, block_k, programs along M,
    splits of K, elements of K per split)``, K split over programs when the columns are too few to fill the
    device."""
    block_n = min(_next_pow2(M), 256 if itemsize >= 4 else 512)
    block_k = min(max(1, tile // block_n), _next_pow2(K))
    grid_n = (M + block_n - 1) // block_n
    n_split = max(1, min((K + block_k - 1) // block_k, (4 * sms + grid_n - 1) // grid_n))
    kps = ((K + n_split - 1) // n_split + block_k - 1) // block_k * block_k
    return block_n, block_k, grid_n, (K + kps - 1) // kps, kps


def _row_blocks(M: int, K: int, sms: int, tile: int = _TILE) -> tuple[int, int, int, int, int]:
    """Tiles of ``tile`` elements for a row reduction of an (M, K) view: ``(block_m, block_k, programs along M,
    splits of K, elements of K per split)``, long rows split over programs when the rows are too few to fill the
    device."""
    block_k = min(_next_pow2(K), tile)
    block_m = min(max(1, tile // block_k), _next_pow2(M))
    grid_m = (M + block_m - 1) // block_m
    n_split = 1
    if grid_m < 2 * sms and K >= 8 * block_k:
        n_split = min((K + block_k - 1) // block_k, (4 * sms + grid_m - 1) // grid_m)
    kps = ((K + n_split - 1) // n_split + block_k - 1) // block_k * block_k
    return block_m, block_k, grid_m, (K + kps - 1) // kps, kps


def _plan_2d(op: str, dtype: dtypes.dtype, out_dtype: dtypes.dtype, M: int, K: int, sm: int, sk: int,
             x_aligned: bool, scale: float | None = None) -> tuple:
    """The launches of ``out[m] = op over k of x[m*sm + k*sk]`` (x of ``dtype``, out of ``out_dtype``, contiguous, M
    elements) as ``(launcher, grid_x, grid_y, arguments after the two pointers, partials)``, where ``partials`` is
    None or ``(shape, dtype, plan)``: a scratch array the launch writes instead of ``out``, then reduced into ``out``
    by ``plan``. ``mean`` multiplies by ``scale`` (default 1 / K) once, in the launch that writes ``out``."""
    if op == "mean" and scale is None:
        scale = 1.0 / K
    ident = _identity(op, dtype)
    ity, ival = _scalar_sig(ident, dtype)
    if ity == "i64" and dtype is dtypes.uint8:
        ity = "i32"
    sty, sval = ("fp64" if dtype is dtypes.float64 else "fp32"), (1.0 if scale is None else scale)
    sms = rt.multiprocessor_count()
    xsig = _PTR16[dtype] if x_aligned else _PTR[dtype]
    if sk != 1 and sm == 1 and M > 1:
        # Reduced axis outer, kept axis contiguous: column reduction, split over K when the columns are few.
        block_n, block_k, grid_n, n_split, kps = _col_blocks(M, K, dtype.itemsize, sms)
        dst_dtype = out_dtype if n_split == 1 else _acc_dtype(op, dtype)
        kop = op if n_split == 1 or op != "mean" else "sum"  # partial sums; the merge applies the scale
        go = _RCOLS.launcher((xsig, _PTR16[dst_dtype], "i32", _i32(M), _istr(sk),
                              "1", "i32", ity, sty), (kop, block_k, block_n), 4)
        partials = None if n_split == 1 else \
            ((n_split, M), dst_dtype, _plan_2d(_merge_op(op), dst_dtype, out_dtype, M, n_split, 1, M, True, scale))
        return go, grid_n, n_split, (K, M, sk, 1, kps, ival, sval), partials
    block_m, block_k, grid_m, n_split, kps = _row_blocks(M, K, sms)
    dst_dtype = out_dtype if n_split == 1 else _acc_dtype(op, dtype)
    kop = op if n_split == 1 or op != "mean" else "sum"
    warps = 8 if block_m * block_k >= 4096 else 4
    go = _RROWS.launcher((xsig, _PTR16[dst_dtype], "i32", _i32(K), _istr(sm), _istr(sk), _i32(kps), "i32", ity, sty),
                         (kop, block_m, block_k), warps)
    partials = None if n_split == 1 else \
        ((M, n_split), dst_dtype, _plan_2d(_merge_op(op), dst_dtype, out_dtype, M, n_split, n_split, 1, True, scale))
    return go, grid_m, n_split, (M, K, sm, sk, kps, n_split, ival, sval), partials


def _run_2d(plan: tuple, p: int, out: NDArray) -> None:
    """Launch ``plan`` (from ``_plan_2d``) over the array at pointer ``p`` into ``out``."""
    go, gx, gy, rest, partials = plan
    if partials is None:
        go(gx, gy, 1, p, _ptr(out), *rest)
        return
    shape, dtype, merge = partials
    dst = _new(shape, dtype, out.device)
    go(gx, gy, 1, p, _ptr(dst), *rest)
    _run_2d(merge, _ptr(dst), out)


def _merge_op(op: str) -> str:
    return {"any": "amax", "all": "amin", "sumsq": "sum"}.get(op, op)


_PLANS: dict[tuple, tuple | None] = {}


_VROWS = td.Kernel(rk.var_rows)
_VCOLS = td.Kernel(rk.var_cols)
_VMERGE = td.Kernel(rk.var_merge)


def variance(x: NDArray, dims: tuple[int, ...], correction: float, keepdim: bool, root: bool) -> NDArray:
    """Welford's variance (or with ``root`` the standard deviation) over ``dims`` in one pass over the array, half
    types accumulated in float32 and rounded once; long rows split over programs and merged by a second launch."""
    key = ("var", x.dtype, x.shape, x.strides, dims, keepdim, correction, root, _ptr(x) & 15, x.device.index)
    plan = _PLANS.get(key, False)
    if plan is False:
        plan = remember(_PLANS, key, _variance_plan(x, dims, correction, keepdim, root))
    if plan is None:  # no dims or an empty array: the two-pass arithmetic gives torch's nan / empty results
        n = math.prod(x.shape[d] for d in dims)
        work = x.astype(dtypes.float32) if x.dtype in (dtypes.float16, dtypes.bfloat16) else x
        centered = work - work.sum(dims, True) / n
        out = (centered * centered).sum(dims, keepdim) / max(0, n - correction)
        return (out.unary("sqrt") if root else out).astype(x.dtype)
    shape, order, go, grid, args, merge = plan
    out = _new(shape, x.dtype, x.device)
    if rt.state.device != x.device.index:
        rt.set_device(x.device.index)
    if order is not None:
        x = contiguous(x.permute(order))
    if merge is None:
        go(grid[0], grid[1], 1, _ptr(x), _ptr(out), 0, *args)
        return out
    part_shape, merge_go, merge_grid, merge_args = merge
    part = _new(part_shape, dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32, x.device)
    go(grid[0], grid[1], 1, _ptr(x), 0, _ptr(part), *args)
    merge_go(merge_grid, 1, 1, _ptr(part), _ptr(out), *merge_args)
    return out


def _variance_plan(x: NDArray, dims: tuple[int, ...], correction: float, keepdim: bool, root: bool) -> tuple | None:
    """``(out shape, permutation to copy x into first or None, launcher, grid, arguments after the three pointers,
    merge)``; ``merge`` is None or ``(partials' shape, launcher, grid, arguments after the two pointers)``."""
    kept = [d for d in range(x.ndim) if d not in dims]
    M = math.prod(x.shape[d] for d in kept)
    K = math.prod(x.shape[d] for d in dims)
    if not dims or M == 0 or K == 0:
        return None
    ms = view_strides(tuple(x.shape[d] for d in kept), tuple(x.strides[d] for d in kept), (M,)) if kept else (0,)
    ks = view_strides(tuple(x.shape[d] for d in dims), tuple(x.strides[d] for d in dims), (K,))
    order = None
    if ms is None or ks is None:
        order, aligned, sm, sk = kept + list(dims), True, K, 1
    else:
        aligned, sm, sk = _ptr(x) % 16 == 0, ms[0] if M > 1 else K, ks[0] if K > 1 else 1
    f64 = x.dtype is dtypes.float64
    fty = "fp64" if f64 else "fp32"
    acc = dtypes.float64 if f64 else dtypes.float32
    den = float(max(0, K - correction))
    sms = rt.multiprocessor_count()
    xsig = _PTR16[x.dtype] if aligned else _PTR[x.dtype]
    if sk != 1 and sm == 1 and M > 1:
        # Three accumulators per lane: tiles of half a plain sum's.
        block_n, block_k, gx, n_split, kps = _col_blocks(M, K, x.dtype.itemsize, sms, _TILE_COLS // 2)
        go = _VCOLS.launcher((xsig, _PTR16[x.dtype], _PTR16[acc], "i32", _i32(M), _istr(sk), "i32", "i32", fty),
                             (root, n_split > 1, f64, block_k, block_n), 4)
        args = (K, M, sk, kps, n_split, den)
    else:
        block_m, block_k, gx, n_split, kps = _row_blocks(M, K, sms, _TILE // 2)
        go = _VROWS.launcher((xsig, _PTR16[x.dtype], _PTR16[acc], "i32", _i32(K), _istr(sm), _istr(sk), _i32(kps),
                              "i32", fty), (root, n_split > 1, f64, block_m, block_k), 8)
        args = (M, K, sm, sk, kps, n_split, den)
    merge = None
    if n_split > 1:
        block_p = _next_pow2(n_split)
        block_mm = max(1, min(_next_pow2(M), 2048 // block_p))
        merge_go = _VMERGE.launcher((_PTR16[acc], _PTR16[x.dtype], "i32", "i32", fty), (root, block_mm, block_p), 4)
        merge = ((3, M, n_split), merge_go, (M + block_mm - 1) // block_mm, (M, n_split, den))
    return _out_shape(x, dims, keepdim), order, go, (gx, n_split), args, merge


def reduce(op: str, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
    if x.dtype.category == 3:
        if op != "sum":
            raise complex_unsupported(op, x.dtype)
        # The sum of the parts: the real view's last dim (the parts) is never reduced.
        return complex_view(reduce("sum", real_view(x), dims, keepdim))
    # The layout analysis and the launch parameters are cached per (op, dtype, shape, strides, dims, alignment).
    p = _ptr(x)
    key = (op, x.dtype, x.shape, x.strides, dims, keepdim, p & 15, x.device.index)
    plan = _PLANS.get(key, False)
    if plan is False:
        plan = remember(_PLANS, key, _reduce_plan(op, x, dims, keepdim))
    if plan is None:
        return _reduce_edge(op, x, dims, keepdim)
    shape, out_dtype, order, steps = plan
    out = _new(shape, out_dtype, x.device)
    if rt.state.device != x.device.index:
        rt.set_device(x.device.index)
    if order is not None:  # dims that do not merge into one (M, K) view: a copy with the reduced dims last
        x = contiguous(x.permute(order))
        p = _ptr(x)
    _run_2d(steps, p, out)
    return out


def _out_shape(x: NDArray, dims: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    return tuple(n for d, n in enumerate(x.shape) if d not in dims)


def _reduce_plan(op: str, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> tuple | None:
    """``(out shape, out dtype, permutation to copy x into first or None, _plan_2d's plan)``, or None for the cases
    ``_reduce_edge`` runs: no dims, an empty output or an empty reduction."""
    out_dtype = _out_dtype(op, x.dtype)
    shape = _out_shape(x, dims, keepdim)
    kept = [d for d in range(x.ndim) if d not in dims]
    red = list(dims)
    M = math.prod(x.shape[d] for d in kept)
    K = math.prod(x.shape[d] for d in red)
    if not dims or M == 0 or K == 0:
        return None
    ms = view_strides(tuple(x.shape[d] for d in kept), tuple(x.strides[d] for d in kept), (M,)) if kept else (0,)
    ks = view_strides(tuple(x.shape[d] for d in red), tuple(x.strides[d] for d in red), (K,)) if red else (0,)
    if ms is None or ks is None:
        order, aligned, sm, sk = kept + red, True, K, 1
    else:
        order, aligned = None, _ptr(x) % 16 == 0
        sm, sk = ms[0] if M > 1 else K, ks[0] if K > 1 else 1
    return shape, out_dtype, order, _plan_2d(op, x.dtype, out_dtype, M, K, sm, sk, aligned)


def _out_dtype(op: str, dtype: dtypes.dtype) -> dtypes.dtype:
    """A reduction's result dtype: bool for any/all (uint8 stays), the accumulation dtype for sumsq (float32 for
    half types), else the input's."""
    if op in ("any", "all"):
        return dtype if dtype is dtypes.uint8 else dtypes.bool_
    return _acc_dtype(op, dtype) if op == "sumsq" else dtype


def _reduce_edge(op: str, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
    out_dtype = _out_dtype(op, x.dtype)
    if not dims:
        wide = cast(x, out_dtype)
        return wide if op != "sumsq" else wide.binary("mul", wide)
    out = _new(_out_shape(x, dims, keepdim), out_dtype, x.device)
    if out.size == 0:
        return out
    if op in ("amax", "amin"):
        raise IndexError(f"{op}(): Expected reduction dim {dims[0]} to have non-zero size.")
    fill = math.nan if op == "mean" else _identity(op, out_dtype)  # the mean of nothing is 0 / 0, as torch's
    return _ew("copy", 1, out, (fill,), out_dtype)


_ARG = td.Kernel(rk.arg_reduce_rows)
_ARG_CFG = (1024, 8)  # (elements per program, warps) of arg-reductions (1024 beat 2048 and 4096 on an H200)


def arg_reduce(op: str, x: NDArray, dim: int, keepdim: bool) -> NDArray:
    return _arg_reduce(op, x, dim, keepdim, False)[1]


def extremum_with_index(op: str, x: NDArray, dim: int, keepdim: bool) -> tuple[NDArray, NDArray]:
    """``max``/``min`` along ``dim`` with the position of the first extremum (NaN the extremum), in one pass."""
    return _arg_reduce("argmax" if op == "max" else "argmin", x, dim, keepdim, True)


def _arg_reduce(op: str, x: NDArray, dim: int, keepdim: bool, values: bool) -> tuple[NDArray | None, NDArray]:
    """(the extrema when ``values``, else None; their positions) along ``dim``, with a launch plan cached per
    layout."""
    if x.ndim == 0:
        return (cast(x, x.dtype) if values else None), full((), 0, dtypes.int64, x.device)
    if x.shape[dim] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size.")
    p = _ptr(x)
    key = ("arg", op, values, x.dtype, x.shape, x.strides, dim, keepdim, p & 15, x.device.index)
    plan = _PLANS.get(key)
    if plan is None:
        plan = remember(_PLANS, key, _arg_plan(op, x, dim, keepdim, values, p))
    shape, order, go, grid, tail = plan
    out = _new(shape, dtypes.int64, x.device)
    best = _new(shape, x.dtype, x.device) if values else None
    if out.size == 0:
        return best, out
    if order is not None:
        x = contiguous(x.permute(order))
        p = _ptr(x)
    rt.ensure_device(x.device.index)
    q = _ptr(out)
    go(grid, 1, 1, p, q, _ptr(best) if values else q, *tail)
    return best, out


def _arg_plan(op: str, x: NDArray, dim: int, keepdim: bool, values: bool, p: int) -> tuple:
    """``(out shape, permutation to copy x into first or None, launcher, grid, arguments after the pointers)``."""
    kept = [d for d in range(x.ndim) if d != dim]
    shape = tuple(1 if d == dim else n for d, n in enumerate(x.shape)) if keepdim else \
        tuple(x.shape[d] for d in kept)
    M, K = math.prod(x.shape[d] for d in kept), x.shape[dim]
    ms = view_strides(tuple(x.shape[d] for d in kept), tuple(x.strides[d] for d in kept), (M,)) if kept else (0,)
    if ms is None:  # the kept dims do not merge: reduce a contiguous copy with the reduced dim last
        order, xsig, sm, sk = kept + [dim], _PTR16[x.dtype], K, 1
    else:
        order, xsig, sm, sk = None, _psig(x, p), ms[0] if M > 1 else K, x.strides[dim] if K > 1 else 1
    tile, big_warps = _ARG_CFG
    block_k = min(_next_pow2(K), tile)
    block_m = min(max(1, tile // block_k), _next_pow2(M))
    warps = big_warps if block_m * block_k >= 2048 else 4
    go = _ARG.launcher((xsig, "*i64:16", _PTR16[x.dtype] if values else "*i64:16", "i32", _i32(K), _istr(sm),
                        _istr(sk)), (op == "argmax", values, block_m, block_k), warps)
    return shape, order, go, (M + block_m - 1) // block_m, (M, K, sm, sk)


_SCAN_ROWS = td.Kernel(rk.scan_rows)
_SCAN_COLS = td.Kernel(rk.scan_cols)


def cumulative(op: str, x: NDArray, dim: int) -> NDArray:
    out_dtype = x.dtype  # the layer above chose the dtype (torch would widen integers)
    if x.ndim == 0:
        return cast(x, out_dtype)
    out = _new(x.shape, out_dtype, x.device)
    if out.size == 0:
        return out
    rt.ensure_device(x.device.index)
    x = x if _contig(x) else contiguous(x)
    K = x.shape[dim]
    inner = math.prod(x.shape[dim + 1:])
    outer = math.prod(x.shape[:dim])
    p, q = _ptr(x), _ptr(out)
    if inner == 1:
        block_k = min(_next_pow2(K), 1024)
        block_m = min(max(1, 1024 // block_k), _next_pow2(outer))
        go = _SCAN_ROWS.launcher((_psig(x, p), _psig(out, q), "i32", _i32(K)), (op, block_m, block_k), 4)
        go((outer + block_m - 1) // block_m, 1, 1, p, q, outer, K)
    else:
        block_n = min(_next_pow2(inner), 512)
        n_blocks = (inner + block_n - 1) // block_n
        go = _SCAN_COLS.launcher((_psig(x, p), _psig(out, q), "i32", _i32(inner), "i32"), (op, block_n), 4)
        go(n_blocks * outer, 1, 1, p, q, K, inner, n_blocks)
    return out


_SOFTMAX = td.Kernel(rk.softmax_rows)
_SOFTMAX64 = td.Kernel(rk.softmax_rows64)


def softmax(x: NDArray, dim: int, log: bool, safe: bool) -> NDArray:
    if x.ndim == 0:  # one row of one element (1, or 0 when safe and -inf; NaN from -inf otherwise, as torch)
        return softmax(x.reshape((1,)), 0, log, safe).reshape(())
    last = x.ndim - 1
    xt = x if dim == last else x.transpose(dim, last)
    xt = xt if _contig(xt) else contiguous(xt)
    out = _new(xt.shape, x.dtype, x.device)
    K = xt.shape[-1]
    M = xt.size // K if K else 0
    if M and K:
        rt.ensure_device(x.device.index)
        p, q = _ptr(xt), _ptr(out)
        sig = (_psig(xt, p), _psig(out, q), "i32", _i32(K))
        if x.dtype is dtypes.float64:
            go = _SOFTMAX64.launcher(sig, (log, min(_next_pow2(K), 1024), safe), 4)
        elif K <= 8192:
            block = _next_pow2(K)
            go = _SOFTMAX.launcher(sig, (log, block, True, safe), 4 if block <= 1024 else 8 if block <= 4096 else 16)
        else:
            go = _SOFTMAX.launcher(sig, (log, 2048, False, safe), 8)
        go(M, 1, 1, p, q, M, K)
    if dim != last:
        out = contiguous(out.transpose(dim, last))
    return out


def logsumexp(x: NDArray, dims: tuple[int, ...]) -> NDArray:
    """The maximum, the sum of the shifted exponentials, their log shifted back: five launches."""
    m = reduce("amax", x, dims, True)
    m = m.unary("isinf").where(0.0, m)
    return reduce("sum", x.binary("sub", m).unary("exp"), dims, True).unary("log").binary("add", m)
