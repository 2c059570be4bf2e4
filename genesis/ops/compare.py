"""Comparisons, logic and bitwise ops, ``where`` and ``nonzero``, float classification (isnan, isinf, ...),
closeness tests and predicates on tensors and dtypes. None of them has a gradient but ``where``.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from genesis import dtypes
from genesis.autograd import Primitive
from genesis.ndarray import NDArray, broadcast_shapes
from genesis.ops._args import _as_operand, _result_dtype, check_tensors, ones_like_bool, python_number
from genesis.tensor import Tensor


class Where(Primitive):
    @staticmethod
    def forward(ctx, cond: NDArray, a: NDArray | float, b: NDArray | float) -> NDArray:
        ctx.save_for_backward(cond)
        return cond.where(a, b)

    @staticmethod
    def backward(ctx, grad):
        (cond,) = ctx.saved_tensors
        grad_a = where(cond, grad, 0.0) if ctx.needs_input_grad[1] else None
        grad_b = where(cond, 0.0, grad) if ctx.needs_input_grad[2] else None
        return None, grad_a, grad_b


class NoGradBinary(Primitive):
    """Binary ops without a useful gradient (comparisons, logic, bitwise, floor_divide, remainder's rounding)."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float, op: str) -> NDArray:
        return a.binary(op, b)


class NoGradUnary(Primitive):
    """Unary ops with boolean or integer results (isnan, isinf, logical_not, bitwise_not)."""

    @staticmethod
    def forward(ctx, x: NDArray, op: str) -> NDArray:
        return x.unary(op)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Tensor:
    """Elementwise select: ``input`` where ``condition`` is true, else ``other`` (numbers or tensors)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    input, other = python_number(input), python_number(other)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition.dtype is not dtypes.bool_:
        if condition.dtype is dtypes.uint8:
            condition = condition.to(dtypes.bool_)
        else:
            raise RuntimeError(f"where: expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{condition.dtype}")
    return Where.apply(condition, input, other)


def _compare(op: str, input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        input = Tensor._scalar_like(input, other)
    return NoGradBinary.apply(input, _as_operand(op, other, input), op)


def eq(input: Any, other: Any) -> Tensor:
    return _compare("eq", input, other)


def ne(input: Any, other: Any) -> Tensor:
    return _compare("ne", input, other)


def lt(input: Any, other: Any) -> Tensor:
    return _compare("lt", input, other)


def le(input: Any, other: Any) -> Tensor:
    return _compare("le", input, other)


def gt(input: Any, other: Any) -> Tensor:
    return _compare("gt", input, other)


def ge(input: Any, other: Any) -> Tensor:
    return _compare("ge", input, other)


greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def logical_and(input: Tensor, other: Any) -> Tensor:
    return _compare("logical_and", input, other)


def logical_or(input: Tensor, other: Any) -> Tensor:
    return _compare("logical_or", input, other)


def logical_xor(input: Tensor, other: Any) -> Tensor:
    return _compare("logical_xor", input, other)


def logical_not(input: Tensor) -> Tensor:
    return NoGradUnary.apply(input, "logical_not")


def _bitwise(op: str, input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        input = Tensor._scalar_like(input, other)
    other = _as_operand(op, other, input)
    dtype = _result_dtype(input, other)
    if dtype.category >= 2:
        raise NotImplementedError(f"{op}: not implemented for '{dtypes.SCALAR_TYPE_NAMES[dtype]}' (integer or bool "
                                  "tensors only)")
    return NoGradBinary.apply(input, other, op)


def bitwise_and(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_and", input, other)


def bitwise_or(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_or", input, other)


def bitwise_xor(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_xor", input, other)


class Shift(Primitive):
    """``a << b`` or ``a >> b`` on integers, as torch's shifts: bits moved past the width are lost, and a shift by a
    negative amount or by the width or more gives 0 (``>>`` of a negative signed value: -1). No gradient.

    Built from existing primitives: ``a << s`` is ``a * 2**s`` wrapping in ``a``'s dtype, ``a >> s`` is
    ``floor(a / 2**s)`` computed in int64 (floor division is the arithmetic shift of negative values).
    """

    @staticmethod
    def forward(ctx, a: NDArray, s: NDArray, left: bool) -> NDArray:
        bits = a.dtype.itemsize * 8
        # The largest shift a power of two in int64 can express: 2**63 overflows, so signed >> by bits - 1 fills.
        last = bits if not a.dtype.is_signed or left else bits - 1
        s = s.astype(dtypes.int64)
        in_range = s.binary("ge", 0).binary("logical_and", s.binary("lt", last))
        safe = in_range.where(s, 0)
        if left:
            # 2**(bits - 1) is the dtype's top bit: int64's would overflow the power, so it is written directly.
            top = -(1 << (bits - 1)) if a.dtype.is_signed else 1 << (bits - 1)
            power = safe.binary("eq", bits - 1).where(top, safe.binary("minimum", bits - 2).rbinary("pow", 2))
            return in_range.where(a.binary("mul", power.astype(a.dtype)), 0).astype(a.dtype)
        shifted = a.astype(dtypes.int64).binary("floor_divide", safe.rbinary("pow", 2))
        fill = a.binary("lt", 0).where(-1, 0)
        return in_range.where(shifted, fill).astype(a.dtype)


def _shift(op: str, input: Any, other: Any, left: bool) -> Tensor:
    if not isinstance(input, Tensor):
        input = Tensor._scalar_like(input, other)
    other = _as_operand(op, other, input)
    dtype = _result_dtype(input, other)
    if dtype.category >= 2:
        raise NotImplementedError(f"{op}: not implemented for '{dtypes.SCALAR_TYPE_NAMES[dtype]}' (integer or bool "
                                  "tensors only)")
    if not isinstance(other, Tensor):
        other = Tensor._wrap(NDArray.scalar(other, dtypes.int64, input.device))
    broadcast_shapes(op, input.shape, other.shape)
    return Shift.apply(input.to(dtype), other, left)


def bitwise_left_shift(input: Any, other: Any) -> Tensor:
    """``input << other`` elementwise on integer (or bool) tensors; bits shifted past the width are lost."""
    return _shift("bitwise_left_shift", input, other, left=True)


def bitwise_right_shift(input: Any, other: Any) -> Tensor:
    """``input >> other`` elementwise on integer (or bool) tensors: an arithmetic shift for signed dtypes."""
    return _shift("bitwise_right_shift", input, other, left=False)


def bitwise_not(input: Tensor) -> Tensor:
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"bitwise_not: not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}' "
                                  "(integer or bool tensors only)")
    return NoGradUnary.apply(input, "bitwise_not")


def isnan(input: Tensor) -> Tensor:
    return NoGradUnary.apply(input, "isnan")


def isinf(input: Tensor) -> Tensor:
    return NoGradUnary.apply(input, "isinf")


def isfinite(input: Tensor) -> Tensor:
    if input.dtype.category < 2:
        return ones_like_bool(input)
    return logical_not(logical_or(isnan(input), isinf(input)))


def isposinf(input: Tensor) -> Tensor:
    """True where the element is +inf (real tensors only, as torch)."""
    if input.dtype.is_complex:
        raise RuntimeError("isposinf does not support complex inputs.")
    return eq(input, math.inf)


def isneginf(input: Tensor) -> Tensor:
    """True where the element is -inf (real tensors only, as torch)."""
    if input.dtype.is_complex:
        raise RuntimeError("isneginf does not support complex inputs.")
    return eq(input, -math.inf)


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements."""
    check_tensors("equal", input=input, other=other)
    if input.shape != other.shape:
        return False
    return bool(eq(input, other).all().item())


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``input == other`` or ``|input - other| <= atol + |rtol * other|`` with a finite difference, elementwise (torch's
    formula, integers included: large integers a tolerance apart count as close)."""
    check_tensors("isclose", input=input, other=other)
    broadcast_shapes("isclose", input.shape, other.shape)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose: {dtypes.SCALAR_TYPE_NAMES[input.dtype]} did not match "
                           f"{dtypes.SCALAR_TYPE_NAMES[other.dtype]}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tol:g}")
    close = eq(input, other)
    if equal_nan and input.dtype.category >= 2:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    if input.dtype is dtypes.bool_:
        input, other = input.to(dtypes.get_default_dtype()), other.to(dtypes.get_default_dtype())
    allowed = atol + (rtol * other).abs()
    actual = (input - other).abs()
    return logical_or(close, logical_and(isfinite(actual), actual <= allowed))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    check_tensors("allclose", input=input, other=other)
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def nonzero(input: Tensor, as_tuple: bool = False) -> Any:
    """The indices of the nonzero elements: one row per element (``as_tuple``: one index tensor per dim). As torch
    (and numpy), ``as_tuple`` reads a 0-d tensor as a one-element 1-D one: ``(tensor([0]),)`` when it is nonzero."""
    if as_tuple and not input.ndim:
        input = input.unsqueeze(0)
    out = Tensor._wrap(input.device.backend.nonzero(input.ndarray))
    if as_tuple:
        return tuple(out[:, j] for j in range(input.ndim))
    return out


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """:func:`nonzero` with exactly ``size`` rows: the first ``size`` indices, padded with ``fill_value`` rows."""
    if isinstance(size, builtins.bool) or not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = nonzero(input)[:size]
    if found.shape[0] == size:
        return found
    pad = Tensor._wrap(found.ndarray.backend.full((size - found.shape[0], input.ndim), fill_value, found.dtype,
                                                  found.device))
    return Tensor._wrap(found.ndarray.backend.cat([found.ndarray, pad.ndarray], 0))


def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape."""
    check_tensors("is_same_size", input=input, other=other)
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input: Tensor) -> bool:
    """The truth value of a one-element tensor."""
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


def is_signed(input: Tensor) -> bool:
    """Whether the dtype holds negative numbers (every dtype but uint8 and bool)."""
    return input.dtype not in (dtypes.uint8, dtypes.bool_)


def can_cast(from_: dtypes.dtype, to: dtypes.dtype) -> bool:
    """Whether torch's casting rules allow ``from_`` to ``to`` (never to a lower kind: complex to float, float to
    int, int to bool)."""
    return dtypes.to_dtype(from_).category <= dtypes.to_dtype(to).category
