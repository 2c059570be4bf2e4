"""Complex arrays on the CUDA backend: the elementwise ops of complex64/complex128 and the ``complex_op`` primitive.

A complex array is interleaved storage, as in torch and numpy (complex64 holds two float32 per element). Most work
runs the real kernels on the real view ``(..., 2)`` (``launch.real_view``) or on the parts (``launch.part``):
additions, negation, ``where``, comparisons, ``abs`` (``hypot`` of the parts), ``angle`` (``atan2``). Products,
quotients, ``exp``, ``reciprocal`` and ``conj`` read both parts of an element at once (``kernels/complex.py``).
``elementwise.unary`` / ``binary`` / ``where`` hand complex arrays here; sums, products of matrices, casts, copies
and indexing handle them in their own modules through the same views.
"""

from __future__ import annotations

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous, copy_, fill_complex
from genesis._impl.cuda.kernels import complex as ck
from genesis._impl.cuda.launch import (
    _contig,
    _ew,
    _new,
    _ptr,
    complex_unsupported,
    complex_view,
    part,
    real_view,
)
from genesis.ndarray import NDArray, broadcast_shapes, check_same_device

_KERNEL_OPS = frozenset(("mul", "div", "exp", "reciprocal", "conj"))
_LINEAR_OPS = frozenset(("add", "sub"))
_BLOCK = 512  # complex elements per program (4 KiB of complex64 in, as much out)
_COMPLEX = td.Kernel(ck.complex_ew)


def _operand(x: NDArray, shape: tuple[int, ...]) -> tuple[NDArray, int]:
    """``x`` as a kernel operand of an output of ``shape``: (array, mode) with mode 1 (contiguous, the output's
    shape) or 3 (one element); broadcast or strided arrays are copied to that layout first."""
    if x.size == 1:
        return x, 3
    if x.shape != shape:
        x = x.expand(shape)
    return (x, 1) if _contig(x) else (contiguous(x), 1)


def _launch(op: str, out: NDArray, a: NDArray, b: NDArray | complex | None) -> NDArray:
    """Run ``kernels/complex.py``'s ``op`` over ``a`` (and ``b``: an array or a number) into ``out``."""
    n = out.size
    if n == 0:
        return out
    dst = out if _contig(out) else _new(out.shape, out.dtype, out.device)
    rt.ensure_device(out.device.index)
    a, ma = _operand(a, out.shape)
    real = out.dtype.to_real
    scalar = "fp64" if real is dtypes.float64 else "fp32"
    b_re = b_im = 0.0
    if isinstance(b, NDArray):
        b, mb = _operand(b, out.shape)
    else:
        if b is not None:
            b_re, b_im = float(b.real), float(b.imag)
        b, mb = a, 2  # no array: b's parts travel as scalars (or are unused)
    po, pa, pb = _ptr(dst), _ptr(a), _ptr(b)
    types = tuple(f"*{scalar}:16" if p % 16 == 0 else f"*{scalar}" for p in (po, pa, pb)) + (
        scalar, scalar, "i64" if n >= 2**31 - _BLOCK else "i32")
    nin = 1 if op in ("exp", "reciprocal", "conj") else 2
    go = _COMPLEX.launcher(types, (op, nin, ma, mb, _BLOCK, n >= 2**31 - _BLOCK), 4)
    go((n + _BLOCK - 1) // _BLOCK, 1, 1, po, pa, pb, b_re, b_im, n)
    return out if dst is out else copy_(out, dst)


def _as_array(value: NDArray | complex | float | int | bool, like: NDArray) -> NDArray:
    """``value`` as a complex array of ``like``'s dtype (a number becomes a 0-dim array)."""
    if isinstance(value, NDArray):
        return value
    out = _new((), like.dtype, like.device)
    return fill_complex(out, value)


def _output(shape: tuple[int, ...], dtype: dtypes.dtype, like: NDArray, out: NDArray | None) -> NDArray:
    if out is not None:
        return out
    return _new(shape, dtype, like.device)


def _last(x: NDArray, k: int) -> NDArray:
    """Slice ``k`` of the last dim (of size 2) of ``x``, without that dim."""
    return x.narrow(-1, k, 1).squeeze((x.ndim - 1,))


def binary(op: str, a: NDArray, b: NDArray | complex | float | int | bool, out: NDArray | None = None) -> NDArray:
    """``a op b`` for a complex array ``a`` and an array of its dtype or a number: + - * / == !=."""
    if isinstance(b, NDArray):
        check_same_device(op, a, b)
        shape = a.shape if a.shape == b.shape else broadcast_shapes(op, a.shape, b.shape)
    else:
        shape = a.shape
    if op in _LINEAR_OPS:
        out = _output(shape, a.dtype, a, out)
        if isinstance(b, NDArray):
            _ew(op, 2, real_view(out), (real_view(a), real_view(b)))
            return out
        b = complex(b)  # a number moves the real part, then the imaginary one
        _ew(op, 2, part(out, 0), (part(a, 0), b.real), out.dtype.to_real)
        _ew(op, 2, part(out, 1), (part(a, 1), b.imag), out.dtype.to_real)
        return out
    if op in ("mul", "div"):
        return _launch(op, _output(shape, a.dtype, a, out), a, b)
    if op in ("eq", "ne"):
        # Equal where both parts are equal: compare the real views, then join the parts' answers.
        both = _ew(op, 2, _new(shape + (2,), dtypes.bool_, a.device), (real_view(a), real_view(_as_array(b, a))))
        join = "logical_and" if op == "eq" else "logical_or"
        return _ew(join, 2, _output(shape, dtypes.bool_, a, out), (_last(both, 0), _last(both, 1)))
    raise complex_unsupported(op, a.dtype)


def unary(op: str, x: NDArray, out: NDArray | None = None) -> NDArray:
    """``op`` of a complex array: neg, exp, reciprocal, isnan, isinf."""
    if op == "neg":
        out = _output(x.shape, x.dtype, x, out)
        _ew("neg", 1, real_view(out), (real_view(x),))
        return out
    if op in ("exp", "reciprocal"):
        return _launch(op, _output(x.shape, x.dtype, x, out), x, None)
    if op in ("isnan", "isinf"):
        # True where either part is NaN (infinite).
        parts = _ew(op, 1, _new(x.shape + (2,), dtypes.bool_, x.device), (real_view(x),))
        return _ew("logical_or", 2, _output(x.shape, dtypes.bool_, x, out), (_last(parts, 0), _last(parts, 1)))
    raise complex_unsupported(op, x.dtype)


def where(cond: NDArray, a: NDArray | complex, b: NDArray | complex) -> NDArray:
    """``a`` where ``cond`` else ``b`` for complex arrays ``a``, ``b`` of one dtype (or numbers): the real kernel over
    the real views, with the condition broadcast over the parts."""
    like = a if isinstance(a, NDArray) else b
    a, b = _as_array(a, like), _as_array(b, like)
    check_same_device("where", cond, a, b)
    shape = broadcast_shapes("where", cond.shape, a.shape, b.shape)
    c = NDArray(cond.buffer, cond.shape + (1,), cond.strides + (0,), cond.offset, cond.dtype, cond.device)
    out = _new(shape, a.dtype, cond.device)
    _ew("where", 3, real_view(out), (c, real_view(a), real_view(b)), out.dtype.to_real)
    return out


def complex_op(op: str, x: NDArray) -> NDArray:
    """The ``complex_op`` primitive: views (``view_as_real``, ``view_as_complex``, ``real``, ``imag``), ``conj``,
    ``abs`` (``hypot`` of the parts, as torch) and ``angle`` (``atan2(imag, real)``)."""
    if op == "view_as_real":
        return real_view(x)
    if op == "view_as_complex":
        return complex_view(x)
    if op == "real":
        return part(x, 0)
    if op == "imag":
        return part(x, 1)
    if op == "conj":
        return _launch("conj", _new(x.shape, x.dtype, x.device), x, None)
    if op == "abs":
        return _ew("hypot", 2, _new(x.shape, x.dtype.to_real, x.device), (part(x, 0), part(x, 1)))
    if op == "angle":
        return _ew("atan2", 2, _new(x.shape, x.dtype.to_real, x.device), (part(x, 1), part(x, 0)))
    raise ValueError(f"complex_op: unknown op {op!r}")
