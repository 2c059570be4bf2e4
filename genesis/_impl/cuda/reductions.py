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
    _contig,
    _ew,
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
from genesis.ndarray import NDArray, view_strides

_RROWS = td.Kernel(rk.reduce_rows)
_RCOLS = td.Kernel(rk.reduce_cols)
_TILE = 4096  # elements per program of a row reduction (swept on an H200: 4096 beats 2048 and 8192)
_TILE_COLS = 8192  # elements per program of a column reduction (8192 beats 4096 there)


def _identity(op: str, dtype: dtypes.dtype) -> int | float:
    if op in ("sum", "any"):
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


def _as_2d(x: NDArray, kept: list[int], red: list[int]) -> tuple[NDArray, int, int, int, int]:
    """View x as (M kept, K reduced) with strides (sm, sk); copy to contiguous when the dims do not merge."""
    M = math.prod(x.shape[d] for d in kept)
    K = math.prod(x.shape[d] for d in red)
    ms = view_strides(tuple(x.shape[d] for d in kept), tuple(x.strides[d] for d in kept), (M,)) if kept else (0,)
    ks = view_strides(tuple(x.shape[d] for d in red), tuple(x.strides[d] for d in red), (K,)) if red else (0,)
    if ms is None or ks is None:
        x = contiguous(x.permute(kept + red))
        return x, M, K, K, 1
    return x, M, K, ms[0] if M > 1 else K, ks[0] if K > 1 else 1


def _reduce_2d(op: str, x: NDArray, M: int, K: int, sm: int, sk: int, out: NDArray) -> None:
    """out[m] = op over k of x[m*sm + k*sk] (out contiguous, M elements)."""
    ident = _identity(op, x.dtype)
    ity, ival = _scalar_sig(ident, x.dtype)
    if ity == "i64" and x.dtype is dtypes.uint8:
        ity = "i32"
    sms = rt.multiprocessor_count()
    p = _ptr(x)
    if sk != 1 and sm == 1 and M > 1:
        # Reduced axis outer, kept axis contiguous: column reduction, split over K when the columns are few.
        block_n = min(_next_pow2(M), 256 if x.dtype.itemsize >= 4 else 512)
        block_k = min(max(1, _TILE_COLS // block_n), _next_pow2(K))
        grid_n = (M + block_n - 1) // block_n
        n_split = max(1, min((K + block_k - 1) // block_k, (4 * sms + grid_n - 1) // grid_n))
        kps = ((K + n_split - 1) // n_split + block_k - 1) // block_k * block_k
        n_split = (K + kps - 1) // kps
        dst = out if n_split == 1 else _new((n_split, M), _acc_dtype(op, x.dtype), x.device)
        dp = _ptr(dst)
        go = _RCOLS.launcher((_psig(x, p), _psig(dst, dp), "i32", "i32:16" if M % 16 == 0 else "i32", _istr(sk),
                              "1", "i32", ity), (op, block_k, block_n), 4)
        go(grid_n, n_split, 1, p, dp, K, M, sk, 1, kps, ival)
        if n_split > 1:
            _reduce_2d(_merge_op(op), dst, M, n_split, 1, M, out)
        return
    block_k = min(_next_pow2(K), _TILE)
    block_m = min(max(1, _TILE // block_k), _next_pow2(M))
    grid_m = (M + block_m - 1) // block_m
    n_split = 1
    if grid_m < 2 * sms and K >= 8 * block_k:
        n_split = min((K + block_k - 1) // block_k, (4 * sms + grid_m - 1) // grid_m)
    kps = ((K + n_split - 1) // n_split + block_k - 1) // block_k * block_k
    n_split = (K + kps - 1) // kps
    dst = out if n_split == 1 else _new((M, n_split), _acc_dtype(op, x.dtype), x.device)
    dp = _ptr(dst)
    warps = 8 if block_m * block_k >= 4096 else 4
    go = _RROWS.launcher((_psig(x, p), _psig(dst, dp), "i32", "i32", _istr(sm), _istr(sk), "i32", "i32", ity),
                         (op, block_m, block_k), warps)
    go(grid_m, n_split, 1, p, dp, M, K, sm, sk, kps, n_split, ival)
    if n_split > 1:
        _reduce_2d(_merge_op(op), dst, M, n_split, n_split, 1, out)


def _merge_op(op: str) -> str:
    return {"any": "amax", "all": "amin"}.get(op, op)


def reduce(op: str, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
    if x.dtype.category == 3:
        if op != "sum":
            raise complex_unsupported(op, x.dtype)
        # The sum of the parts: the real view's last dim (the parts) is never reduced.
        return complex_view(reduce("sum", real_view(x), dims, keepdim))
    out_dtype = dtypes.bool_ if op in ("any", "all") and x.dtype is not dtypes.uint8 else x.dtype
    if not dims:
        return cast(x, out_dtype)
    kept = [d for d in range(x.ndim) if d not in dims]
    red = list(dims)
    shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape)) if keepdim else \
        tuple(x.shape[d] for d in kept)
    out = _new(shape, out_dtype, x.device)
    M = out.size
    K = math.prod(x.shape[d] for d in red)
    if M == 0:
        return out
    if K == 0:
        if op in ("amax", "amin"):
            raise IndexError(f"{op}(): Expected reduction dim {red[0]} to have non-zero size.")
        return _ew("copy", 1, out, (_identity(op, out_dtype),), out_dtype)
    rt.ensure_device(x.device.index)
    xx, M, K, sm, sk = _as_2d(x, kept, red)
    _reduce_2d(op, xx, M, K, sm, sk, out)
    return out


_ARG = td.Kernel(rk.arg_reduce_rows)
_ARG_CFG = (1024, 8)  # (elements per program, warps) of arg-reductions (1024 beat 2048 and 4096 on an H200)


def arg_reduce(op: str, x: NDArray, dim: int, keepdim: bool) -> NDArray:
    if x.ndim == 0:
        return full((), 0, dtypes.int64, x.device)
    if x.shape[dim] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size.")
    kept = [d for d in range(x.ndim) if d != dim]
    shape = tuple(1 if d == dim else n for d, n in enumerate(x.shape)) if keepdim else \
        tuple(x.shape[d] for d in kept)
    out = _new(shape, dtypes.int64, x.device)
    if out.size == 0:
        return out
    rt.ensure_device(x.device.index)
    xx, M, K, sm, sk = _as_2d(x, kept, [dim])
    tile, big_warps = _ARG_CFG
    block_k = min(_next_pow2(K), tile)
    block_m = min(max(1, tile // block_k), _next_pow2(M))
    p, op_ = _ptr(xx), _ptr(out)
    warps = big_warps if block_m * block_k >= 2048 else 4
    go = _ARG.launcher((_psig(xx, p), _psig(out, op_), "i32", "i32", _istr(sm), _istr(sk)),
                       (op == "argmax", block_m, block_k), warps)
    go((M + block_m - 1) // block_m, 1, 1, p, op_, M, K, sm, sk)
    return out


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
        go = _SCAN_ROWS.launcher((_psig(x, p), _psig(out, q), "i32", "i32"), (op, block_m, block_k), 4)
        go((outer + block_m - 1) // block_m, 1, 1, p, q, outer, K)
    else:
        block_n = min(_next_pow2(inner), 512)
        n_blocks = (inner + block_n - 1) // block_n
        go = _SCAN_COLS.launcher((_psig(x, p), _psig(out, q), "i32", "i32", "i32"), (op, block_n), 4)
        go(n_blocks * outer, 1, 1, p, q, K, inner, n_blocks)
    return out


_SOFTMAX = td.Kernel(rk.softmax_rows)
_SOFTMAX64 = td.Kernel(rk.softmax_rows64)


def softmax(x: NDArray, dim: int, log: bool) -> NDArray:
    if x.ndim == 0:
        return full((), 0.0 if log else 1.0, x.dtype, x.device)
    last = x.ndim - 1
    xt = x if dim == last else x.transpose(dim, last)
    xt = xt if _contig(xt) else contiguous(xt)
    out = _new(xt.shape, x.dtype, x.device)
    K = xt.shape[-1]
    M = xt.size // K if K else 0
    if M and K:
        rt.ensure_device(x.device.index)
        p, q = _ptr(xt), _ptr(out)
        sig = (_psig(xt, p), _psig(out, q), "i32", "i32")
        if x.dtype is dtypes.float64:
            go = _SOFTMAX64.launcher(sig, (log, min(_next_pow2(K), 1024)), 4)
        elif K <= 8192:
            block = _next_pow2(K)
            go = _SOFTMAX.launcher(sig, (log, block, True), 4 if block <= 1024 else 8 if block <= 4096 else 16)
        else:
            go = _SOFTMAX.launcher(sig, (log, 2048, False), 8)
        go(M, 1, 1, p, q, M, K)
    if dim != last:
        out = contiguous(out.transpose(dim, last))
    return out
