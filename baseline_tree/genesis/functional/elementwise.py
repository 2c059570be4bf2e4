"""Elementwise primitives with their backward, and the composites built from them.

Forward works on NDArrays (type promotion and broadcasting happen in the NDArray layer); backward works on Tensors
so it is differentiable again. Gradients of broadcast inputs are summed back to the input shape by
``Function.apply``'s bookkeeping, never here.
"""

from __future__ import annotations

import math

from genesis import dtypes
from genesis.autograd import Function
from genesis.ndarray import NDArray


class Primitive(Function):
    """A built-in op: forward receives and returns NDArrays."""

    takes_ndarrays = True


# ------------------------------------------------------------------ binary

class Add(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        return a.binary("add", b)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Sub(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        return a.binary("sub", b)

    @staticmethod
    def backward(ctx, grad):
        return grad, -grad if ctx.needs_input_grad[1] else None


class Mul(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        # Save an operand only when the other's gradient reads it: `y[0] = y[0] * 2` must not pin y's version.
        needs = ctx.needs_input_grad
        if needs:
            ctx.save_for_backward(a if needs[1] else None, b if needs[0] else None)
        return a.binary("mul", b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b if ctx.needs_input_grad[0] else None, grad * a if ctx.needs_input_grad[1] else None


class Div(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        return a.binary("div", b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad / b if ctx.needs_input_grad[0] else None
        grad_b = -grad * a / (b * b) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class RoundedDiv(Primitive):
    """``a / b`` rounded with ``op`` ("floor" or "trunc"): piecewise constant, so both gradients are zero (torch)."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float, op: str) -> NDArray:
        return a.binary("div", b).unary(op)

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import zeros_like_detached

        zeros = zeros_like_detached(grad)
        return zeros, zeros if ctx.needs_input_grad[1] else None, None


class RDiv(Primitive):
    """``value / x`` for a Python number on the left."""

    @staticmethod
    def forward(ctx, x: NDArray, value: float) -> NDArray:
        ctx.save_for_backward(x)
        ctx.value = value
        return x.rbinary("div", value)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * ctx.value / (x * x), None


class RSub(Primitive):
    """``value - x`` for a Python number on the left."""

    @staticmethod
    def forward(ctx, x: NDArray, value: float) -> NDArray:
        return x.rbinary("sub", value)

    @staticmethod
    def backward(ctx, grad):
        return -grad, None


class Pow(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        out = a.binary("pow", b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import where

        a, b, out = ctx.saved_tensors
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            if isinstance(b, (int, float)):
                grad_a = grad * b * a ** (b - 1) if b != 0 else grad * 0
            else:
                # A zero exponent has a zero derivative even at a zero base, where b * a^(b-1) would be NaN.
                grad_a = where(b == 0, 0.0, grad * b * a ** (b - 1))
        if ctx.needs_input_grad[1]:
            # d(a^b)/db = a^b * log(a), defined as 0 where a == 0 and b >= 0 (torch's convention).
            # An integer base is read in the result's precision, not the default float dtype.
            grad_b = where((a == 0).logical_and(b >= 0), 0.0, grad * out * a.to(out.dtype).log())
        return grad_a, grad_b


class RPow(Primitive):
    """``value ** x`` for a Python number on the left."""

    @staticmethod
    def forward(ctx, x: NDArray, value: float) -> NDArray:
        out = x.rbinary("pow", value)
        ctx.save_for_backward(x, out)
        ctx.value = value
        return out

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import where

        x, out = ctx.saved_tensors
        value = ctx.value
        if value > 0:
            return grad * out * math.log(value), None
        if value == 0:
            # 0^x: zero derivative for x >= 0; for x < 0 the result is inf and torch gives -inf * grad.
            return where(x >= 0, 0.0, grad * out * -math.inf), None
        return grad * math.nan, None


def _extremum_grads(ctx, grad, larger: bool):
    """Gradients of maximum/minimum as torch: ties split evenly; an operand gets nothing only where it lost.

    With a NaN neither operand lost, so both receive the gradient.
    """
    from genesis.functional import where

    a, b = ctx.saved_tensors
    shared = where(a == b, grad * 0.5, grad)
    a_lost, b_lost = (a < b, a > b) if larger else (a > b, a < b)
    return where(a_lost, 0.0, shared), where(b_lost, 0.0, shared)


class Maximum(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray) -> NDArray:
        ctx.save_for_backward(a, b)
        return a.binary("maximum", b)

    @staticmethod
    def backward(ctx, grad):
        return _extremum_grads(ctx, grad, larger=True)


class Minimum(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray) -> NDArray:
        ctx.save_for_backward(a, b)
        return a.binary("minimum", b)

    @staticmethod
    def backward(ctx, grad):
        return _extremum_grads(ctx, grad, larger=False)


class Atan2(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray) -> NDArray:
        ctx.save_for_backward(a, b)
        return a.binary("atan2", b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        denom = a * a + b * b
        return grad * b / denom, -grad * a / denom


class Where(Primitive):
    @staticmethod
    def forward(ctx, cond: NDArray, a: NDArray | float, b: NDArray | float) -> NDArray:
        ctx.save_for_backward(cond)
        return cond.where(a, b)

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import where

        (cond,) = ctx.saved_tensors
        grad_a = where(cond, grad, 0.0) if ctx.needs_input_grad[1] else None
        grad_b = where(cond, 0.0, grad) if ctx.needs_input_grad[2] else None
        return None, grad_a, grad_b


class NoGradBinary(Primitive):
    """Binary ops without a useful gradient (comparisons, logic, bitwise, floor_divide, remainder's rounding)."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float, op: str) -> NDArray:
        return a.binary(op, b)


class Remainder(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        ctx.save_for_backward(a, b)
        return a.binary("remainder", b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_b = -grad * (a / b).floor() if ctx.needs_input_grad[1] else None
        return grad, grad_b


# ------------------------------------------------------------------ unary

class Unary(Primitive):
    """Unary op; subclasses set ``op`` and write ``derivative(x, out)`` (the local derivative as Tensors)."""

    op = ""
    saves_output = False

    @classmethod
    def forward(cls, ctx, x: NDArray) -> NDArray:
        if not x.dtype.is_floating_point and cls.op not in _INT_SAFE:
            if cls.op in _FLOAT_ONLY:
                raise NotImplementedError(f"{cls.op}: not implemented for '{x.dtype.name}'")
            x = x.astype(dtypes.get_default_dtype())
        out = x.unary(cls.op)
        ctx.save_for_backward(out if cls.saves_output else x)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        (saved,) = ctx.saved_tensors
        return grad * cls.derivative(saved)


_INT_SAFE = frozenset(("neg", "abs", "sign", "relu", "floor", "ceil", "round", "trunc"))
# Activations torch computes for floating inputs only (integer inputs raise rather than promote).
_FLOAT_ONLY = frozenset(("gelu", "gelu_tanh", "silu", "softplus"))


class Neg(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        if x.dtype is dtypes.bool_:
            raise RuntimeError("neg: negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        return x.unary("neg")

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Exp(Unary):
    op, saves_output = "exp", True

    @staticmethod
    def derivative(out):
        return out


class Exp2(Unary):
    op, saves_output = "exp2", True

    @staticmethod
    def derivative(out):
        return out * math.log(2.0)


class Expm1(Unary):
    op, saves_output = "expm1", True

    @staticmethod
    def derivative(out):
        return out + 1


class Log(Unary):
    op = "log"

    @staticmethod
    def derivative(x):
        return 1 / x


class Log2(Unary):
    op = "log2"

    @staticmethod
    def derivative(x):
        return 1 / (x * math.log(2.0))


class Log1p(Unary):
    op = "log1p"

    @staticmethod
    def derivative(x):
        return 1 / (x + 1)


class Sqrt(Unary):
    op, saves_output = "sqrt", True

    @staticmethod
    def derivative(out):
        return 0.5 / out


class Rsqrt(Unary):
    op, saves_output = "rsqrt", True

    @staticmethod
    def derivative(out):
        return -0.5 * out * out * out


class Reciprocal(Unary):
    op, saves_output = "reciprocal", True

    @staticmethod
    def derivative(out):
        return -out * out


class Sin(Unary):
    op = "sin"

    @staticmethod
    def derivative(x):
        return x.cos()


class Cos(Unary):
    op = "cos"

    @staticmethod
    def derivative(x):
        return -x.sin()


class Tan(Unary):
    op, saves_output = "tan", True

    @staticmethod
    def derivative(out):
        return 1 + out * out


class Tanh(Unary):
    op, saves_output = "tanh", True

    @staticmethod
    def derivative(out):
        return 1 - out * out


class Sigmoid(Unary):
    op, saves_output = "sigmoid", True

    @staticmethod
    def derivative(out):
        return out * (1 - out)


class Relu(Unary):
    op, saves_output = "relu", True

    @classmethod
    def backward(cls, ctx, grad):
        from genesis.functional import where

        (out,) = ctx.saved_tensors
        # A select instead of multiplying by a cast mask: two kernels, not three.
        return where(out > 0, grad, 0.0)


class Gelu(Unary):
    op = "gelu"

    @staticmethod
    def derivative(x):
        cdf = 0.5 * (1 + (x * (1 / math.sqrt(2.0))).erf())
        pdf = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
        return cdf + x * pdf


class GeluTanh(Unary):
    op = "gelu_tanh"

    @staticmethod
    def derivative(x):
        k = math.sqrt(2 / math.pi)
        inner = k * (x + 0.044715 * x * x * x)
        t = inner.tanh()
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)


class Silu(Unary):
    op = "silu"

    @staticmethod
    def derivative(x):
        s = x.sigmoid()
        return s * (1 + x * (1 - s))


class Softplus(Unary):
    op = "softplus"

    @staticmethod
    def derivative(x):
        return x.sigmoid()


class Erf(Unary):
    op = "erf"

    @staticmethod
    def derivative(x):
        return (2 / math.sqrt(math.pi)) * (-x * x).exp()


class Abs(Unary):
    op = "abs"

    @staticmethod
    def derivative(x):
        return x.sign()


class ZeroGradUnary(Primitive):
    """Piecewise-constant unary ops (sign, floor, ceil, round, trunc): gradient zero, as in torch."""

    @staticmethod
    def forward(ctx, x: NDArray, op: str) -> NDArray:
        ctx.shape_dtype = (x.shape, x.dtype)
        return x.unary(op)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0, None


class NoGradUnary(Primitive):
    """Unary ops with boolean or integer results (isnan, isinf, logical_not, bitwise_not)."""

    @staticmethod
    def forward(ctx, x: NDArray, op: str) -> NDArray:
        return x.unary(op)


class Cast(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dtype: dtypes.dtype) -> NDArray:
        ctx.dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.dtype), None


# ------------------------------------------------------------------ inverse trigonometric, hyperbolic and special

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
    op, saves_output = "erfinv", True

    @staticmethod
    def derivative(out):
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
    """``polygamma(1, x)``, the derivative of digamma (its own derivative is not implemented)."""

    op = "trigamma"

    @staticmethod
    def derivative(x):
        raise NotImplementedError("polygamma: the derivative of polygamma(1, x) is not implemented")


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
        from genesis.functional import where

        safe = where(x == 0, 1.0, x)
        return where(x == 0, 0.5, I0.apply(x) - I1.apply(safe) / safe)


# ------------------------------------------------------------------ binary special functions

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
        from genesis.functional import where, zeros_like_detached

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
        from genesis.functional import where

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
        from genesis.functional import where

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
