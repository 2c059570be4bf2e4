"""Elementwise math beyond the basics, as torch has it: inverse trigonometric and hyperbolic functions,
special functions (erfc, erfinv, lgamma, digamma, polygamma, i0, sinc, logit, xlogy) and binary functions
(hypot, copysign, fmax, fmin, logaddexp, heaviside, ldexp, gcd, lcm).

Functions with a native kernel are primitives here; the rest are composites of existing ops, so their
gradients follow automatically.
"""

from __future__ import annotations

import math
from typing import Any

from genesis import dtypes
from genesis.autograd import Function, Primitive, is_grad_enabled
from genesis.ndarray import NDArray, broadcast_shapes
from genesis.ops._args import (
    _float_operands,
    _reject_integers,
    _result_dtype,
    check_real_kernel,
    check_tensors,
    zeros_like_detached,
)
from genesis.ops.activations import Logit, activation
from genesis.ops.arithmetic import pow, remainder
from genesis.ops.autocast import autocast_args
from genesis.ops.compare import ne, where
from genesis.ops.unary import Unary, abs, exp2, floor
from genesis.tensor import Tensor


class Asin(Unary):
    op = "asin"

    @staticmethod
    def derivative(x):
        return (1 - x * x).rsqrt()


class Acos(Unary):
    op = "acos"

    @staticmethod
    def derivative(x):
        return -(1 - x * x).rsqrt()


class Atan(Unary):
    op = "atan"

    @staticmethod
    def derivative(x):
        return 1 / (1 + x * x)


class Sinh(Unary):
    op = "sinh"

    @staticmethod
    def derivative(x):
        return x.cosh()


class Cosh(Unary):
    op = "cosh"

    @staticmethod
    def derivative(x):
        return x.sinh()


class Asinh(Unary):
    op = "asinh"

    @staticmethod
    def derivative(x):
        return (x * x + 1).rsqrt()


class Acosh(Unary):
    op = "acosh"

    @staticmethod
    def derivative(x):
        return (x * x - 1).rsqrt()


class Atanh(Unary):
    op = "atanh"

    @staticmethod
    def derivative(x):
        return 1 / (1 - x * x)


class Erfc(Unary):
    op = "erfc"

    @staticmethod
    def derivative(x):
        return (-2 / math.sqrt(math.pi)) * (-x * x).exp()


class Erfinv(Unary):
    """Saves its input and computes ``erfinv`` again in backward, as torch's: the output stays free to change in
    place (``erfinv_`` included) before backward."""
    op = "erfinv"

    @staticmethod
    def derivative(x):
        out = Erfinv.apply(x)
        return (0.5 * math.sqrt(math.pi)) * (out * out).exp()


class Lgamma(Unary):
    op = "lgamma"

    @staticmethod
    def derivative(x):
        return Digamma.apply(x)


class Digamma(Unary):
    op = "digamma"

    @staticmethod
    def derivative(x):
        return Trigamma.apply(x)


class Trigamma(Unary):
    """``polygamma(1, x)``, the derivative of digamma; its own derivative is ``polygamma(2, x)``."""

    op = "trigamma"

    @staticmethod
    def derivative(x):
        return Polygamma.apply(x, 2)


# (2k)! / B_2k for k = 1..12: the Euler-Maclaurin coefficients of Cephes's Hurwitz zeta, which torch uses.
_ZETA_COEFFICIENTS = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                      -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                      1.8152105401943546773e17, -7.1661652561756670113e18)


def _hurwitz_zeta(s: int, q: Tensor) -> Tensor:
    """``zeta(s, q) = sum_k (q + k)^-s`` for an integer ``s >= 2`` and float64 ``q``, by Euler-Maclaurin summation
    as Cephes: the first N terms directly (N >= 9 and q + N >= 9), the rest from the tail integral and 12 Bernoulli
    corrections. Non-positive integers q are poles (+inf). One host read picks N."""
    finite = q.isfinite()
    low = float(where(finite, q, 0.0).amin().item()) if q.numel() else 0.0
    count = max(9, math.ceil(9 - low))
    total = zeros_like_detached(q)
    for start in range(0, count, 256):  # chunks bound the memory of far negative q
        steps = Tensor._wrap(q.device.backend.arange(start, min(count, start + 256), 1, dtypes.float64, q.device))
        total = total + (pow(q.unsqueeze(-1) + steps, -s)).sum(-1)
    w = q + count
    b = pow(w, -s)
    total = total + w * b / (s - 1) + 0.5 * b
    a, k = 1.0, 0.0
    for coefficient in _ZETA_COEFFICIENTS:
        a *= s + k
        b = b / w
        total = total + b * (a / coefficient)
        k += 1.0
        a *= s + k
        b = b / w
        k += 1.0
    pole = (q <= 0) & (q == floor(q))
    return where(pole, math.inf, total)


class Polygamma(Function):
    """``polygamma(n, x)`` for n >= 2: ``(-1)^(n+1) n! zeta(n + 1, x)``, computed in float64; its derivative is
    ``polygamma(n + 1, x)``."""

    @staticmethod
    def forward(ctx, x: Tensor, n: int) -> Tensor:
        ctx.save_for_backward(x)
        ctx.n = n
        sign = 1.0 if n % 2 else -1.0
        return (_hurwitz_zeta(n + 1, x.to(dtypes.float64)) * (sign * math.factorial(n))).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * Polygamma.apply(x, ctx.n + 1), None


class I0(Unary):
    op = "i0"

    @staticmethod
    def derivative(x):
        return I1.apply(x)


class I1(Unary):
    """Modified Bessel function of the first kind of order 1: the derivative of i0."""

    op = "i1"

    @staticmethod
    def derivative(x):
        # i1'(x) = i0(x) - i1(x) / x, with the limit 1/2 at x = 0.
        safe = where(x == 0, 1.0, x)
        return where(x == 0, 0.5, I0.apply(x) - I1.apply(safe) / safe)


class Hypot(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray) -> NDArray:
        out = a.binary("hypot", b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        return grad * a / out, grad * b / out


class Copysign(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        out = a.binary("copysign", b)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        # d/da |a| sign(b) = out / a, defined as 0 at a == 0 (torch); the sign operand gets a zero gradient.
        grad_a = grad * where(a == 0, 0.0, out / a)
        return grad_a, zeros_like_detached(grad) if ctx.needs_input_grad[1] else None


class NanExtremum(Primitive):
    """fmax / fmin: the extremum ignoring NaN (NaN only where both are NaN); ties send the gradient to ``a``."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray, larger: bool) -> NDArray:
        ctx.save_for_backward(a, b)
        ctx.larger = larger
        out = a.binary("maximum" if larger else "minimum", b)
        out = a.unary("isnan").where(b, out)
        return b.unary("isnan").where(a, out)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        a_wins = ((a >= b) if ctx.larger else (a <= b)).logical_or(b.isnan())
        return where(a_wins, grad, 0.0), where(a_wins, 0.0, grad), None


class Xlogy(Primitive):
    """``a * log(b)`` (``a * log1p(b)`` with ``log1p``), 0 where ``a == 0`` unless ``b`` is NaN."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray, log1p: bool) -> NDArray:
        ctx.save_for_backward(a, b)
        ctx.log1p = log1p
        out = a.binary("eq", 0).where(0, a.binary("mul", b.unary("log1p" if log1p else "log")))
        return b.unary("isnan").where(math.nan, out)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            # Where a == 0 outside the log's domain torch passes 0, not a NaN or infinite gradient.
            edge = -1 if ctx.log1p else 0
            grad_a = where((a == 0).logical_and(b <= edge), 0.0, Xlogy.apply(grad, b, ctx.log1p))
        if ctx.needs_input_grad[1]:
            grad_b = grad * a / (b + 1 if ctx.log1p else b)
        return grad_a, grad_b, None


class Entr(Primitive):
    """Elementwise entropy ``-x log x``: 0 at x = 0, -inf for x < 0."""

    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        ctx.save_for_backward(x)
        out = x.binary("eq", 0).where(0, x.binary("mul", x.unary("log")).unary("neg"))
        return x.binary("lt", 0).where(-math.inf, out)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * -(1 + x.log())


def asin(input: Tensor) -> Tensor:
    """Arcsine, elementwise (NaN outside [-1, 1]); integer inputs promote to the default float dtype."""
    (input,) = autocast_args("asin", input)
    return Asin.apply(input)


def acos(input: Tensor) -> Tensor:
    """Arccosine, elementwise (NaN outside [-1, 1])."""
    (input,) = autocast_args("acos", input)
    return Acos.apply(input)


def atan(input: Tensor) -> Tensor:
    """Arctangent, elementwise."""
    return Atan.apply(input)


def sinh(input: Tensor) -> Tensor:
    """Hyperbolic sine, elementwise."""
    (input,) = autocast_args("sinh", input)
    return Sinh.apply(input)


def cosh(input: Tensor) -> Tensor:
    """Hyperbolic cosine, elementwise."""
    (input,) = autocast_args("cosh", input)
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


def erfc(input: Tensor) -> Tensor:
    """Complementary error function ``1 - erf(x)``, accurate where erf is close to 1."""
    return Erfc.apply(input)


def erfinv(input: Tensor) -> Tensor:
    """Inverse error function on [-1, 1] (+-inf at +-1, NaN outside)."""
    (input,) = autocast_args("erfinv", input)
    return Erfinv.apply(input)


def lgamma(input: Tensor) -> Tensor:
    """``log |Gamma(x)|``, elementwise; its derivative is digamma."""
    return Lgamma.apply(input)


def digamma(input: Tensor) -> Tensor:
    """``psi(x) = d/dx log Gamma(x)``: -inf at +0, +inf at -0, NaN at negative integers (torch)."""
    return Digamma.apply(input)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of digamma (``polygamma(0, x)`` is digamma, ``polygamma(1, x)`` trigamma); integer
    inputs promote to the default float dtype. Poles at the non-positive integers give +-inf, as torch."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' (position 2) must be Tensor, not {type(input).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    if n == 0:
        return Digamma.apply(input)
    if n == 1:
        return Trigamma.apply(input)
    return Polygamma.apply(input, n)


def i0(input: Tensor) -> Tensor:
    """Modified Bessel function of the first kind of order 0; its derivative is i1."""
    return I0.apply(input)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """Multivariate log-gamma of dimension ``p``: ``sum_i lgamma(x - i / 2) + p (p - 1) / 4 log(pi)``, i < p."""
    check_tensors("mvlgamma", input=input)
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
    """``log(x / (1 - x))``; with ``eps`` the input is first clamped to [eps, 1 - eps] (one node, see
    ``genesis.ops.activations.Logit``)."""
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    return activation(Logit, "logit", "logit_cpu", input, -1.0 if eps is None else eps)


def xlogy(input: Any, other: Any) -> Tensor:
    """``input * log(other)``, 0 where ``input == 0`` unless ``other`` is NaN (the entropy convention)."""
    check_real_kernel("xlogy", "xlogy_cpu", input, other, bools=True)
    input, other = _float_operands("xlogy", input, other)
    return Xlogy.apply(input, other, False)


def _tensor_pair(op: str, input: Tensor, other: Any) -> None:
    """Ops that take two tensors only (torch rejects a Python number as the second argument), of shapes that
    broadcast (checked under the op's name, not those of the ops that compute it)."""
    check_tensors(op, input=input, other=other)
    broadcast_shapes(op, input.shape, other.shape)


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input^2 + other^2)`` without intermediate overflow; floating tensors only."""
    _tensor_pair("hypot", input, other)
    dt = _result_dtype(input, other)
    _reject_integers("hypot", dt)
    return Hypot.apply(input.to(dt), other.to(dt))


def copysign(input: Tensor, other: Any) -> Tensor:
    """``|input|`` with the sign bit of ``other`` (so -0.0 and -NaN count as negative); integers promote to float."""
    check_tensors("copysign", input=input)
    check_real_kernel("copysign", "copysign_cpu", input, other, bools=True)
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


class LogAddExp(Primitive):
    """``log(exp(a) + exp(b))`` (base 2 with ``base2``) in one kernel, as torch's: ``max + log1p(exp(-|a - b|))``,
    equal infinities giving themselves. The gradients are torch's ``grad / (1 + exp(b - a))`` and its mirror."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray, base2: bool) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
            ctx.base2 = base2
        return a.binary("logaddexp2" if base2 else "logaddexp", b)

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():  # create_graph: tensor ops, differentiable again
            a, b = ctx.saved_tensors
            power = exp2 if ctx.base2 else Tensor.exp

            def share(x, y):
                return grad / (power(y - x) + 1)
        else:
            a, b = ctx.saved_arrays()
            g, name = grad.ndarray, "exp2" if ctx.base2 else "exp"

            def share(x, y):
                return g / ((y - x).unary(name) + 1)
        needs = ctx.needs_input_grad
        return share(a, b) if needs[0] else None, share(b, a) if needs[1] else None, None


def _logaddexp(op: str, input: Tensor, other: Tensor, base2: bool) -> Tensor:
    _tensor_pair(op, input, other)
    dt = _result_dtype(input, other)
    _reject_integers(op, dt)
    return LogAddExp.apply(input.to(dt), other.to(dt), base2)


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow."""
    return _logaddexp("logaddexp", input, other, base2=False)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2^input + 2^other)`` without overflow."""
    return _logaddexp("logaddexp2", input, other, base2=True)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """Step function: 0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > 0`` (no
    gradient, as in torch)."""
    check_tensors("heaviside", input=input, values=values)
    if input.dtype.is_complex or values.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    broadcast_shapes("heaviside", input.shape, values.shape)
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
        raise NotImplementedError(f"{op}: not implemented for '{dtypes.SCALAR_TYPE_NAMES[dt]}' (integer tensors only)")
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
