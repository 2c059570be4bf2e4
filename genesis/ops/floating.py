"""The floating-point representation of values, elementwise: ``frexp`` (mantissa and exponent) and ``nextafter``
(the neighbouring representable value). Both are computed from the exponent with exact float64 arithmetic, so they
agree with C's functions bit for bit on every device, half precision included.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from genesis import dtypes
from genesis.autograd import Function
from genesis.ops._args import _result_dtype, check_tensors, zeros_like_detached
from genesis.ops.arithmetic import clamp
from genesis.ops.compare import where
from genesis.ops.math_special import _tensor_pair
from genesis.ops.unary import abs, exp2, floor, log2
from genesis.tensor import Tensor


class FrexpResult(NamedTuple):
    """(mantissa, exponent), as torch.return_types.frexp."""

    mantissa: Tensor
    exponent: Tensor


def _power_of_two(k: Tensor) -> Tensor:
    """``2^k`` for integral float64 ``k`` in [-1100, 1100], as the product of two factors each within float64's range
    (the exact value, also where 2^k itself would overflow or be subnormal, once multiplied by a value). ``exp2``
    of an integer is exact on every device; a general ``pow(2, k)`` need not be (CUDA's is off by an ulp)."""
    half = floor(k * 0.5)
    return exp2(half), exp2(k - half)


def _exponent(x: Tensor) -> Tensor:
    """The float64 exponent ``e`` with ``|x| = m 2^e``, m in [0.5, 1), of float64 ``x``; 0 for zero, inf and NaN."""
    regular = x.isfinite() & (x != 0)
    magnitude = where(regular, abs(x), 1.0)
    e = floor(log2(magnitude)) + 1
    first, second = _power_of_two(-e)
    m = magnitude * first * second
    # log2 may round up just below a power of two: bring the mantissa into [0.5, 1).
    e = where(m >= 1, e + 1, where(m < 0.5, e - 1, e))
    return where(regular, e, 0.0)


class FrexpMantissa(Function):
    """The mantissa ``x / 2^e`` given the exponent; its gradient is ``grad / 2^e`` (torch's)."""

    @staticmethod
    def forward(ctx, x: Tensor, exponent: Tensor) -> Tensor:
        ctx.save_for_backward(exponent)
        first, second = _power_of_two(-exponent.to(dtypes.float64))
        return (x.to(dtypes.float64) * first * second).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (exponent,) = ctx.saved_tensors
        return grad / exp2(exponent.to(grad.dtype)), None


def frexp(input: Tensor) -> FrexpResult:
    """Mantissa and exponent with ``input = mantissa * 2^exponent``: ``|mantissa|`` in [0.5, 1) (the input itself for
    zero, inf and NaN, whose exponent is 0), ``exponent`` int32. Floating inputs only, as torch."""
    check_tensors("frexp", input=input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    exponent = _exponent(input.detach().to(dtypes.float64))
    return FrexpResult(FrexpMantissa.apply(input, exponent), exponent.to(dtypes.int32))


class Nextafter(Function):
    """The next representable value after ``a`` toward ``b``; the gradient passes to ``a`` where it moves (where
    ``a != b``), none to ``b`` (torch's)."""

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(a, b)
        info = dtypes.finfo(a.dtype)
        digits = round(1 - math.log2(info.eps))  # significand bits, the implicit one included
        lowest = round(math.log2(info.tiny)) + 1 - digits  # exponent of the smallest subnormal
        x, y = a.to(dtypes.float64), b.to(dtypes.float64)
        e = _exponent(x)
        first, second = _power_of_two(-e)
        at_power = abs(x * first * second) == 0.5
        up = y > x
        away = (up & (x > 0)) | (~up & (x < 0))
        # One unit in the last place (half as large stepping toward zero from a power of two), at least the smallest
        # subnormal, which is also the step from zero.
        places = clamp(where(~away & at_power, e - digits - 1, e - digits), min=lowest)
        first, second = _power_of_two(where(x == 0, float(lowest), places))
        step = first * second
        out = x + where(up, step, -step)
        out = where(x.isinf(), x.sign() * info.max, out)
        out = where(x == y, y, out)
        out = where(x.isnan() | y.isnan(), math.nan, out)
        return out.to(a.dtype)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return where(a != b, grad, 0.0), zeros_like_detached(grad)


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` toward ``other``, elementwise (C's nextafter), in the promoted
    dtype of both, which must be floating. Computed from the exponent (exact, on every device)."""
    _tensor_pair("nextafter", input, other)
    dt = _result_dtype(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(f"nextafter: not implemented for '{dtypes.SCALAR_TYPE_NAMES[dt]}' (floating tensors "
                                  "only)")
    return Nextafter.apply(input.to(dt), other.to(dt))
