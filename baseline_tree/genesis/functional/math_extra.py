"""Elementwise math beyond the basics, as torch has it: inverse trigonometric and hyperbolic functions, special
functions (erfc, erfinv, lgamma, digamma, i0, sinc, logit, xlogy), binary functions (hypot, copysign, fmax, fmin,
float_power, logaddexp, logaddexp2, heaviside, ldexp, gcd, lcm), sign helpers and torch's alias names.

Functions with a native kernel are primitives of ``genesis.functional.elementwise``; the rest are composites of
existing ops, so their gradients follow automatically.
"""

from __future__ import annotations

import math
from typing import Any

from genesis import amp, dtypes
from genesis.functional import (
    _as_operand,
    _check_tensor,
    _result_dtype,
    abs,
    atan2,
    clamp,
    eq,
    exp2,
    ge,
    gt,
    isnan,
    le,
    log,
    log1p,
    logical_and,
    lt,
    maximum,
    ne,
    ones_like_bool,
    pow,
    remainder,
    sign,
    trunc,
    where,
)
from genesis.functional.elementwise import (
    I0,
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atanh,
    Copysign,
    Cosh,
    Digamma,
    Erfc,
    Erfinv,
    Hypot,
    Lgamma,
    NanExtremum,
    NoGradUnary,
    Sinh,
    Xlogy,
)
from genesis.tensor import Tensor

# ------------------------------------------------------------------ inverse trigonometric and hyperbolic


def asin(input: Tensor) -> Tensor:
    """Arcsine, elementwise (NaN outside [-1, 1]); integer inputs promote to the default float dtype."""
    (input,) = amp.autocast_args("asin", input)
    return Asin.apply(input)


def acos(input: Tensor) -> Tensor:
    """Arccosine, elementwise (NaN outside [-1, 1])."""
    (input,) = amp.autocast_args("acos", input)
    return Acos.apply(input)


def atan(input: Tensor) -> Tensor:
    """Arctangent, elementwise."""
    return Atan.apply(input)


def sinh(input: Tensor) -> Tensor:
    """Hyperbolic sine, elementwise."""
    (input,) = amp.autocast_args("sinh", input)
    return Sinh.apply(input)


def cosh(input: Tensor) -> Tensor:
    """Hyperbolic cosine, elementwise."""
    (input,) = amp.autocast_args("cosh", input)
    return Cosh.apply(input)


def asinh(input: Tensor) -> Tensor:
    """Inverse hyperbolic sine, elementwise."""
    return Asinh.apply(input)


def acosh(input: Tensor) -> Tensor:
    """Inverse hyperbolic cosine, elementwise (NaN below 1)."""
    return Acosh.apply(input)


def atanh(input: Tensor) -> Tensor:
    """Inverse hyperbolic tangent, elementwise (+-inf at +-1, NaN outside [-1, 1])."""
    return Atanh.apply(input)


arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh
arctan2 = atan2

# ------------------------------------------------------------------ special functions


def erfc(input: Tensor) -> Tensor:
    """Complementary error function ``1 - erf(x)``, accurate where erf is close to 1."""
    return Erfc.apply(input)


def erfinv(input: Tensor) -> Tensor:
    """Inverse error function on [-1, 1] (+-inf at +-1, NaN outside)."""
    (input,) = amp.autocast_args("erfinv", input)
    return Erfinv.apply(input)


def lgamma(input: Tensor) -> Tensor:
    """``log |Gamma(x)|``, elementwise; its derivative is digamma."""
    return Lgamma.apply(input)


def digamma(input: Tensor) -> Tensor:
    """``psi(x) = d/dx log Gamma(x)``: -inf at +0, +inf at -0, NaN at negative integers (torch)."""
    return Digamma.apply(input)


def i0(input: Tensor) -> Tensor:
    """Modified Bessel function of the first kind of order 0; its derivative is i1."""
    return I0.apply(input)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """Multivariate log-gamma of dimension ``p``: ``sum_i lgamma(x - i / 2) + p (p - 1) / 4 log(pi)``, i < p."""
    _check_tensor("mvlgamma", input)
    if p < 1:
        raise RuntimeError(f"mvlgamma: p has to be greater than or equal to 1 (got {p})")
    out = Lgamma.apply(input)
    for i in range(1, p):
        out = out + Lgamma.apply(input - i / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


def sinc(input: Tensor) -> Tensor:
    """Normalized sinc ``sin(pi x) / (pi x)``, 1 at x = 0 (where the gradient is 0)."""
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    dtype = input.dtype
    if dtype.itemsize < 4:
        input = input.float()  # half types compute in float32 and round once, as torch's kernel
    zero = input == 0
    # The quotient is taken at a safe point where x = 0 so its unused branch passes no NaN into the gradient.
    scaled = where(zero, 1.0, input) * math.pi
    return where(zero, 1.0, scaled.sin() / scaled).to(dtype)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(x / (1 - x))``; with ``eps`` the input is first clamped to [eps, 1 - eps]."""
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    if eps is not None:
        input = clamp(input, eps, 1 - eps)
    return log(input / (1 - input))


def xlogy(input: Any, other: Any) -> Tensor:
    """``input * log(other)``, 0 where ``input == 0`` unless ``other`` is NaN (the entropy convention)."""
    input, other = _float_operands("xlogy", input, other)
    return Xlogy.apply(input, other, False)


# ------------------------------------------------------------------ binary


def _float_operands(op: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    """Both operands as tensors of their promoted dtype, integers promoted to the default float dtype."""
    if not isinstance(input, Tensor):
        if not isinstance(other, Tensor):
            raise TypeError(f"{op}(): expected at least one Tensor argument, got {type(input).__name__} and "
                            f"{type(other).__name__}")
        input = Tensor._scalar_like(input, other)
    other = _as_operand(op, other, input)
    target = _result_dtype(input, other)
    if not target.is_floating_point:
        target = dtypes.get_default_dtype()
    if not isinstance(other, Tensor):
        other = Tensor._scalar_like(other, input)
    return input.to(target), other.to(target)


def _tensor_pair(op: str, input: Tensor, other: Any) -> None:
    """Ops that take two tensors only (torch rejects a Python number as the second argument)."""
    _check_tensor(op, input)
    if not isinstance(other, Tensor):
        raise TypeError(f"{op}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")


def _reject_integers(op: str, dtype: dtypes.dtype) -> None:
    if not dtype.is_floating_point:
        raise NotImplementedError(f"{op}: not implemented for '{dtype.name}'")


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input^2 + other^2)`` without intermediate overflow; floating tensors only."""
    _tensor_pair("hypot", input, other)
    dt = _result_dtype(input, other)
    _reject_integers("hypot", dt)
    return Hypot.apply(input.to(dt), other.to(dt))


def copysign(input: Tensor, other: Any) -> Tensor:
    """``|input|`` with the sign bit of ``other`` (so -0.0 and -NaN count as negative); integers promote to float."""
    _check_tensor("copysign", input)
    input, other = _float_operands("copysign", input, other)
    return Copysign.apply(input, other)


def _nan_extremum(op: str, input: Tensor, other: Tensor, larger: bool) -> Tensor:
    _tensor_pair(op, input, other)
    dt = _result_dtype(input, other)
    input, other = input.to(dt), other.to(dt)
    if not dt.is_floating_point:
        # Integers hold no NaN: plain maximum / minimum, without a gradient.
        return NanExtremum.apply(input.detach(), other.detach(), larger)
    return NanExtremum.apply(input, other, larger)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum that ignores NaN: NaN only where both are NaN (C's fmax); ties send the gradient to
    ``input``."""
    return _nan_extremum("fmax", input, other, larger=True)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum that ignores NaN: NaN only where both are NaN (C's fmin)."""
    return _nan_extremum("fmin", input, other, larger=False)


def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` computed and returned in float64, whatever the input dtypes."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected at least one Tensor argument, got two numbers")
    base = input.to(dtypes.float64) if isinstance(input, Tensor) else float(input)
    return pow(base, exponent.to(dtypes.float64) if isinstance(exponent, Tensor) else float(exponent))


def _logaddexp(op: str, input: Tensor, other: Tensor, base2: bool) -> Tensor:
    _tensor_pair(op, input, other)
    dt = _result_dtype(input, other)
    _reject_integers(op, dt)
    input, other = input.to(dt), other.to(dt)
    # max + log(1 + exp(-|a - b|)): no overflow; equal infinities (where a - b is NaN) give themselves.
    gap = -abs(input - other)
    if base2:
        out = maximum(input, other) + log1p(exp2(gap)) * (1 / math.log(2.0))
    else:
        out = maximum(input, other) + log1p(gap.exp())
    return where(logical_and(input == other, input.isinf()), input, out)


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow."""
    return _logaddexp("logaddexp", input, other, base2=False)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2^input + 2^other)`` without overflow."""
    return _logaddexp("logaddexp2", input, other, base2=True)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """Step function: 0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > 0`` (no
    gradient, as in torch)."""
    _check_tensor("heaviside", input)
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.dtype is not values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes ({input.dtype.name} "
                           f"and {values.dtype.name}).")
    input, values = input.detach(), values.detach()
    return where(input == 0, values, where(input > 0, 1, 0).to(input.dtype))


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2 ** other`` in the promoted dtype of both (integers promote to the default float dtype)."""
    _tensor_pair("ldexp", input, other)
    input, other = _float_operands("ldexp", input, other)
    return input * pow(2.0, other)


def _integer_pair(op: str, input: Tensor, other: Tensor) -> tuple[Tensor, Tensor]:
    _tensor_pair(op, input, other)
    dt = _result_dtype(input, other)
    if dt.category != 1:
        raise NotImplementedError(f"{op}: not implemented for '{dt.name}' (integer tensors only)")
    return input.detach().to(dt), other.detach().to(dt)


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Greatest common divisor of integer tensors, non-negative; ``gcd(0, 0) = 0``."""
    a, b = _integer_pair("gcd", input, other)
    a, b = abs(a), abs(b)
    shape = (a + b).shape
    a, b = a.expand(shape), b.expand(shape)
    # Euclid's algorithm on every element at once: elements already done have b == 0 and stay unchanged.
    while bool(ne(b, 0).any().item()):
        done = b == 0
        safe = where(done, 1, b)
        a, b = where(done, a, b), where(done, 0, remainder(a, safe))
    return a.contiguous()


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Least common multiple of integer tensors, non-negative; 0 where either is 0."""
    a, b = _integer_pair("lcm", input, other)
    g = gcd(a, b)
    return where(g == 0, 0, abs(a // where(g == 0, 1, g) * b))


# ------------------------------------------------------------------ signs, angles and small helpers


def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set (so for -0.0 and negative NaN too); bool result."""
    if input.dtype is dtypes.bool_:
        return input.detach() & False
    if not input.dtype.is_floating_point:
        return lt(input.detach(), 0)
    return NoGradUnary.apply(input, "signbit")


def frac(input: Tensor) -> Tensor:
    """Fractional part ``input - trunc(input)`` with the sign of the input; floating tensors only."""
    _reject_integers("frac", input.dtype)
    return input - trunc(input)


def fix(input: Tensor) -> Tensor:
    """Alias of :func:`trunc` (round toward zero)."""
    return trunc(input)


def sgn(input: Tensor) -> Tensor:
    """``sign`` extended to complex numbers; for real tensors the same as :func:`sign`."""
    return sign(input)


def positive(input: Tensor) -> Tensor:
    """Returns ``input`` itself (unary plus); bool tensors are rejected as in torch."""
    if input.dtype is dtypes.bool_:
        raise RuntimeError("positive: The `+` operator, on a bool tensor is not supported.")
    return input


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians; integer inputs promote to the default float dtype."""
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    return input * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees; integer inputs promote to the default float dtype."""
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    return input * (180.0 / math.pi)


def angle(input: Tensor) -> Tensor:
    """Argument of each (real) element: pi where negative, else 0, NaN for NaN; the gradient is zero (torch)."""
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    x = input.detach()
    out = where(isnan(x), x, (x < 0).to(x.dtype) * math.pi)
    if input.requires_grad:
        out = where(ones_like_bool(x), out, input)  # a graph node whose input gradient is zero
    return out


def isposinf(input: Tensor) -> Tensor:
    """True where the element is +inf."""
    return eq(input, math.inf)


def isneginf(input: Tensor) -> Tensor:
    """True where the element is -inf."""
    return eq(input, -math.inf)


def isreal(input: Tensor) -> Tensor:
    """True everywhere: Genesis tensors hold real numbers."""
    return ones_like_bool(input)


def real(input: Tensor) -> Tensor:
    """The real part: the tensor itself (Genesis has no complex dtypes)."""
    return input


def imag(input: Tensor) -> Tensor:
    """The imaginary part, which real tensors do not have (as torch, an error)."""
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def conj(input: Tensor) -> Tensor:
    """Complex conjugate: the tensor itself for real dtypes (as torch, no copy)."""
    return input


conj_physical = resolve_conj = resolve_neg = conj

# ------------------------------------------------------------------ comparison aliases

greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

__all__ = [
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh",
    "arccosh", "arctanh", "arctan2", "erfc", "erfinv", "lgamma", "mvlgamma", "digamma", "i0", "sinc", "logit",
    "xlogy", "hypot", "copysign", "fmax", "fmin", "float_power", "logaddexp", "logaddexp2", "heaviside", "ldexp",
    "gcd", "lcm", "signbit", "frac", "fix", "sgn", "positive", "deg2rad", "rad2deg", "greater", "greater_equal",
    "less", "less_equal", "not_equal", "angle", "isposinf", "isneginf", "isreal", "real", "imag", "conj",
    "conj_physical", "resolve_conj", "resolve_neg",
]
