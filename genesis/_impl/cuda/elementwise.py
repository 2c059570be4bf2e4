"""Elementwise primitives of the CUDA backend: ``unary`` and ``binary`` ops by name, ``where``, ``clamp`` and
``lerp`` (complex arrays go to ``complex.py``)."""

from __future__ import annotations

import math

import numpy as np

from genesis import dtypes
from genesis._impl.contract import COMPARISON_OPS
from genesis._impl.cuda import complex as cx
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous, copy_, to_numpy
from genesis._impl.cuda.kernels import activation as ak
from genesis._impl.cuda.kernels import elementwise as ek
from genesis._impl.cuda.launch import (
    _CONTIG_CFG,
    _contig,
    _dense_layout,
    _ew,
    _i32,
    _new,
    _new_like,
    _psig,
    _ptr,
    _tile,
)
from genesis._impl.cuda.reductions import reduce
from genesis.ndarray import NDArray, broadcast_shapes, check_same_device

_TRIANGLE = td.Kernel(ek.triangle_kernel)
_BOOL_UNARY = frozenset(("isnan", "isinf", "logical_not", "signbit"))
# Gradient ops whose result torch lays out as the saved tensor (their second operand), not as the gradient.
_SAVED_FIRST = frozenset(("relu_backward",))


def unary(op: str, x: NDArray, out: NDArray | None = None) -> NDArray:
    if x.dtype.category == 3:
        return cx.unary(op, x, out)
    if out is None:
        out = _new_like(x, dtypes.bool_ if op in _BOOL_UNARY else x.dtype)
    return _ew(op, 1, out, (x,))


def binary(op: str, a: NDArray, b: NDArray | int | float | bool | complex, out: NDArray | None = None
           ) -> NDArray:
    if a.dtype.category == 3:
        return cx.binary(op, a, b, out)
    if out is None:
        dt = a.dtype
        if b.__class__ is NDArray:
            if b.device is not a.device:
                check_same_device(op, a, b)
            shape = a.shape if a.shape == b.shape else broadcast_shapes(op, a.shape, b.shape)
            if b.dtype is not dt:  # floats of two widths: the kernel reads each in its dtype, computes in the wider
                dt = dtypes.result_type(a.dtype, a.ndim, b.dtype, b.ndim)
        else:
            shape = a.shape
        dt = dtypes.bool_ if op in COMPARISON_OPS else dt
        if op in _SAVED_FIRST and b.__class__ is NDArray and shape == b.shape:
            out = _new_like(b, dt, a)  # laid out as the saved tensor, as torch's threshold_backward
        elif shape == a.shape:
            out = _new_like(a, dt, b if b.__class__ is NDArray else None)
        elif b.__class__ is NDArray and shape == b.shape:  # a broadcast against b: laid out as b
            out = _new_like(b, dt)
        else:
            out = _new(shape, dt, a.device)
    if op in ("floor_divide", "remainder") and a.dtype.category < 2 and out.size:  # nothing divided: no error
        _check_nonzero_divisor(op, b)
    return _ew(op, 2, out, (a, b), a.dtype)


def _check_nonzero_divisor(op: str, b: NDArray | int | float | bool) -> None:
    # Integer division by zero is an error (as on the CPU); checking a tensor divisor synchronizes with the GPU.
    if isinstance(b, NDArray):
        zero = b.size and bool(to_numpy(reduce("any", binary("eq", b, 0), tuple(range(b.ndim)), False)))
    else:
        zero = b == 0
    if zero:
        raise RuntimeError(f"{op}: ZeroDivisionError (integer division by zero)")


def leaky_relu(x: NDArray, negative_slope: float) -> NDArray:
    return _ew("leaky_relu", 2, _new_like(x, x.dtype), (x, float(negative_slope)), x.dtype)


def leaky_relu_backward(grad: NDArray, x: NDArray, negative_slope: float) -> NDArray:
    check_same_device("leaky_relu_backward", grad, x)
    return _ew("leaky_relu_backward", 3, _new_like(x, grad.dtype, grad), (grad, x, float(negative_slope)),
               grad.dtype)


_ACTIVATION = td.Kernel(ak.activation_kernel)


def activation(op: str, x: NDArray, params: tuple) -> NDArray:
    """One kernel over ``x`` walked flat: laid out densely in any order, else copied to row-major first; the
    result is laid out as ``x`` (a channels_last network stays channels_last)."""
    if not (_contig(x) or _dense_layout(x)):
        x = contiguous(x)
    return _activation(op, _new_like(x, x.dtype), x, None, params)


def activation_backward(op: str, grad: NDArray, x: NDArray, params: tuple) -> NDArray:
    """One kernel, ``grad`` read laid out as ``x`` or as one element broadcast (the gradient of a sum); other
    layouts are copied to row-major first."""
    check_same_device(f"{op}_backward", grad, x)
    one = not any(grad.strides)
    if not (_contig(x) or _dense_layout(x)) or not one and grad.strides != x.strides:
        x = x if _contig(x) else contiguous(x)
        grad = grad if one or _contig(grad) else contiguous(grad)
    return _activation(op, _new_like(x, grad.dtype), x, grad, params, one)


def _activation(op: str, out: NDArray, x: NDArray, grad: NDArray | None, params: tuple, one: bool = False
                ) -> NDArray:
    """Launch ``activation_kernel`` over ``out`` and ``x`` (and ``grad``: laid out alike, or with ``one`` a single
    element broadcast)."""
    n = out.size
    if n == 0:
        return out
    if rt.state.device != out.device.index:
        rt.set_device(out.device.index)
    scalar = "fp64" if x.dtype is dtypes.float64 else "fp32"
    po, px = _ptr(out), _ptr(x)
    pg = 0 if grad is None else _ptr(grad)
    big = n >= 2**31 - 65536
    types = (_psig(out, po), _psig(x, px), "i32" if grad is None else _psig(grad, pg), "i64" if big else "i32",
             scalar, scalar, scalar)
    block, warps = _CONTIG_CFG[out.dtype.itemsize]
    go = _ACTIVATION.launcher(types, (op, grad is not None, one, block, big), warps)
    p0, p1, p2 = (tuple(float(p) for p in params) + (0.0, 0.0, 0.0))[:3]
    go((n + block - 1) // block, 1, 1, po, px, pg, n, p0, p1, p2)
    return out


def _halves(x: NDArray, dim: int) -> tuple[NDArray, NDArray]:
    """The two halves of ``x`` along ``dim``, as views."""
    half = x.shape[dim] // 2
    shape = x.shape[:dim] + (half,) + x.shape[dim + 1:]
    return (NDArray(x.buffer, shape, x.strides, x.offset, x.dtype, x.device),
            NDArray(x.buffer, shape, x.strides, x.offset + half * x.strides[dim], x.dtype, x.device))


def glu(x: NDArray, dim: int) -> NDArray:
    """One launch over the two halves (views of ``x``)."""
    a, b = _halves(x, dim)
    return _ew("glu", 2, _new(a.shape, x.dtype, x.device), (a, b), x.dtype)


def glu_backward(grad: NDArray, x: NDArray, dim: int) -> NDArray:
    """Two launches, each writing its half of the result in place."""
    check_same_device("glu_backward", grad, x)
    a, b = _halves(x, dim)
    out = _new(x.shape, grad.dtype, x.device)
    grad_a, grad_b = _halves(out, dim)
    _ew("glu_grad_a", 2, grad_a, (grad, b), grad.dtype)
    _ew("glu_grad_b", 3, grad_b, (grad, a, b), grad.dtype)
    return out


def where(cond: NDArray, a: NDArray | float, b: NDArray | float) -> NDArray:
    check_same_device("where", cond, a, b)
    shapes = [cond.shape] + [t.shape for t in (a, b) if isinstance(t, NDArray)]
    shape = broadcast_shapes("where", *shapes)
    dt = a.dtype if isinstance(a, NDArray) else b.dtype
    if dt.category == 3:
        return cx.where(cond, a, b)
    return _ew("where", 3, _new(shape, dt, cond.device), (cond, a, b), dt)


def masked_fill_(x: NDArray, mask: NDArray, value: float | int | bool) -> NDArray:
    """``x = where(mask, value, x)`` in x's own memory: one select kernel (each element read, then written)."""
    check_same_device("masked_fill_", x, mask)
    if x.dtype.category == 3:
        return copy_(x, cx.where(mask, value, x))
    return _ew("where", 3, x, (mask, value, x), x.dtype)


def add_scaled(a: NDArray, b: NDArray, alpha: float, out: NDArray | None = None) -> NDArray:
    if out is None:
        check_same_device("add", a, b)
        shape = a.shape if a.shape == b.shape else broadcast_shapes("add", a.shape, b.shape)
        if shape == a.shape:
            out = _new_like(a, a.dtype, b)
        elif shape == b.shape:
            out = _new_like(b, a.dtype)
        else:
            out = _new(shape, a.dtype, a.device)
    return _ew("add_scaled", 3, out, (a, b, float(alpha)), a.dtype)


def clamp(x: NDArray, lo: float | None, hi: float | None) -> NDArray:
    if lo is None:
        return binary("minimum", x, float(hi))
    if hi is None:
        return binary("maximum", x, float(lo))
    return _ew("clamp", 3, _new_like(x, x.dtype), (x, float(lo), float(hi)), x.dtype)


def clamp_backward(grad: NDArray, x: NDArray, lo: float | None, hi: float | None) -> NDArray:
    check_same_device("clamp_backward", grad, x)
    out = grad
    for op, bound in (("clamp_min_backward", lo), ("clamp_max_backward", hi)):
        if bound is not None:
            # torch compares x with the bound cast to x's dtype.
            bound = float(np.array(bound, dtype=dtypes.to_numpy(x.dtype)))
            out = _ew(op, 3, _new_like(x, grad.dtype, grad), (out, x, bound), grad.dtype)
    return out


def lerp(start: NDArray, end: NDArray, weight: NDArray | float) -> NDArray:
    check_same_device("lerp", start, end, weight)
    shapes = [start.shape, end.shape] + ([weight.shape] if weight.__class__ is NDArray else [])
    shape = broadcast_shapes("lerp", *shapes)
    if shape == start.shape:
        out = _new_like(start, start.dtype, end if end.shape == shape else None)
    else:
        out = _new(shape, start.dtype, start.device)
    w = weight if weight.__class__ is NDArray else float(weight)
    return _ew("lerp", 3, out, (start, end, w), start.dtype)


def nan_to_num(x: NDArray, nan: float | NDArray, posinf: float | NDArray, neginf: float | NDArray) -> NDArray:
    """Three selects, each mask read from ``x`` itself."""
    out = x.binary("eq", math.inf).where(posinf, x)
    out = x.binary("eq", -math.inf).where(neginf, out)
    return x.unary("isnan").where(nan, out)


def triangle(x: NDArray, k: int, upper: bool) -> NDArray:
    """tril / triu of the last two dims, broadcast over the leading ones: one pass that reads only the kept
    elements (a non-contiguous input is made contiguous first; the result is contiguous, as torch's)."""
    xc = x if _contig(x) else contiguous(x)
    out = _new(x.shape, x.dtype, x.device)
    R, C = x.shape[-2], x.shape[-1]
    n_rows = x.size // C if C else 0
    if n_rows:
        block_r, block_c, warps = _tile(n_rows, C, x.dtype.itemsize)
        n_cblocks = (C + block_c - 1) // block_c
        p, q = _ptr(xc), _ptr(out)
        go = _TRIANGLE.launcher((_psig(xc, p), _psig(out, q), "i32", _i32(C), "i32",
                                 "i64", "i32"), (upper, block_r, block_c), warps)
        rt.ensure_device(x.device.index)
        go((n_rows + block_r - 1) // block_r * n_cblocks, 1, 1, p, q, n_rows, C, R, k, n_cblocks)
    return out
