"""Binary arithmetic: add, sub, mul, div (true, floor, trunc), remainder, pow, maximum/minimum, atan2, clamp
and the fused-looking composites (lerp, addcmul, addcdiv), with the primitives behind them.

Forward works on NDArrays (type promotion and broadcasting happen in the NDArray layer); backward works on Tensors
so it is differentiable again (mul and sub compute on arrays when no graph of the backward is recorded). Gradients
of broadcast inputs are summed back to the input shape by ``Function.apply``'s bookkeeping, never here.
"""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

from genesis import dtypes
from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray, broadcast_shapes
from genesis.ops._args import (
    Number,
    _as_operand,
    _check_range,
    _result_dtype,
    check_tensors,
    python_number,
    zeros_like_detached,
)
from genesis.ops.compare import NoGradBinary, logical_and, logical_or, where
from genesis.ops.sparse_base import SparseBase
from genesis.tensor import Tensor


def _conj(x: Any) -> Any:
    """``x`` conjugated where it is complex: the backward of a product multiplies by the conjugate of the other factor
    (torch's convention for complex gradients); real tensors and numbers pass unchanged."""
    if x.__class__ is complex:
        return x.conjugate()
    return x.conj() if isinstance(x, Tensor) and x.dtype.category == 3 else x  # Parameters too


class Add(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float, out: NDArray | None = None) -> NDArray:
        return a.binary("add", b, out)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def negated(grad: Tensor) -> Tensor | NDArray:
    """``-grad`` for a backward: a recorded negation when the backward builds a graph, else one array op."""
    return -grad if is_grad_enabled() else grad.ndarray.unary("neg")


class Sub(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float, out: NDArray | None = None) -> NDArray:
        return a.binary("sub", b, out)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[1]:
            return grad, None
        return grad, negated(grad)


def _real_factor(x: Any) -> bool:
    """Whether a saved factor of a product is a real number or a floating array (the other factor's gradient is then
    one array product, no conjugate)."""
    return x.__class__ is NDArray and x.dtype.category == 2 or x.__class__ in (int, float, bool)


class Mul(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float, out: NDArray | None = None) -> NDArray:
        # Save an operand only when the other's gradient reads it: `y[0] = y[0] * 2` must not pin y's version.
        needs = ctx.needs_input_grad
        if needs:
            ctx.save_for_backward(a if needs[1] else None, b if needs[0] else None)
        return a.binary("mul", b, out)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        if not is_grad_enabled() and grad.ndarray.dtype.category == 2:
            # No graph of the backward: each gradient is one array product (the factors' dtypes as the forward's).
            a, b = ctx.saved_arrays()
            if (not needs[0] or _real_factor(b)) and (not needs[1] or _real_factor(a)):
                g = grad.ndarray
                return g.binary("mul", b) if needs[0] else None, g.binary("mul", a) if needs[1] else None
        a, b = ctx.saved_tensors
        return (grad * _conj(b) if needs[0] else None,
                grad * _conj(a) if needs[1] else None)


class Div(Primitive):
    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        return a.binary("div", b)

    @staticmethod
    def backward(ctx, grad):
        a, b = _conj(ctx.saved_tensors[0]), _conj(ctx.saved_tensors[1])
        grad_a = grad / b if ctx.needs_input_grad[0] else None
        # torch's staging: (a / b) / b stays finite where b * b would overflow (half precision, large b)
        grad_b = -grad * (a / b / b) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class RoundedDiv(Primitive):
    """``a / b`` rounded with ``op`` ("floor" or "trunc"): piecewise constant, so both gradients are zero (torch)."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float, op: str) -> NDArray:
        if op == "floor":  # torch's floor division (through fmod): exact where floor(a / b) rounds, NaN for inf / b
            return a.binary("floor_divide", b)
        return a.binary("div", b).unary(op)

    @staticmethod
    def backward(ctx, grad):
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
        x = _conj(ctx.saved_tensors[0])
        return -grad * (_conj(ctx.value) / x / x), None  # staged as Div's: no overflow of x * x


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
        # As torch: 0 where a^2 + b^2 is 0 (at the origin, or where it underflows), not 0/0 = NaN.
        recip = where(denom == 0, 0.0, 1.0 / denom)
        return grad * b * recip, grad * -a * recip


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


class Fmod(Primitive):
    """C's ``fmod`` of floats: ``a - trunc(a / b) * b`` with the sign of ``a``, computed exactly as ``|a| mod |b|``
    (the remainder of operands of one sign is C's fmod) carrying ``a``'s sign bit, so -0.0 stays -0.0."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray | float) -> NDArray:
        if ctx.needs_input_grad and ctx.needs_input_grad[1]:
            ctx.save_for_backward(a, b)
        magnitude = b.unary("abs") if isinstance(b, NDArray) else abs(b)
        return a.unary("abs").binary("remainder", magnitude).binary("copysign", a)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[1]:
            return grad, None
        a, b = ctx.saved_tensors
        return grad, -grad * (a / b).trunc()


#: The Functions of binary ops whose in-place form can compute straight into its tensor while a graph records it
#: (``genesis.ops.inplace.binary_method``): their backward needs no old value of that tensor.
IN_PLACE_WRITERS = {"add": Add, "sub": Sub, "mul": Mul}


class AddScaled(Primitive):
    """``a + alpha * b`` rounded once, as torch's ``add`` with ``alpha`` (one fused multiply-add), for tensors of one
    floating dtype."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray, alpha: float) -> NDArray:
        if ctx.needs_input_grad:
            ctx.alpha = alpha
        return a.backend.add_scaled(a, b, alpha)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad * ctx.alpha if ctx.needs_input_grad[1] else None, None


class SubScaled(AddScaled):
    """``a - alpha * b``, recorded as torch's ``sub`` (``SubBackward0``); called with ``-alpha``."""


def densified(op: str, input: Tensor, other: Any) -> Any:
    """``other`` as the strided tensor it stands for where it is sparse and ``input`` is strided: torch adds (and
    subtracts) a sparse tensor into a strided one of the same size only (no broadcasting), and multiplies one into a
    strided tensor in place, the results strided. Anything else is returned as it is."""
    if not isinstance(other, SparseBase) or isinstance(input, SparseBase):
        return other
    if op != "mul" and tuple(input.shape) != tuple(other.shape):
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(input.shape)} while other has size {list(other.shape)} (FYI: dense-sparse addition "
                           "does not currently support broadcasting)")
    return other.to_dense()


def fuses_scale(input: Tensor, other: Any) -> bool:
    """Whether ``input + alpha * other`` runs as one fused multiply-add: floating tensors on one device."""
    return (isinstance(other, Tensor) and input.dtype.category == 2 and other.dtype.category == 2
            and other.device is input.device)


def _in_common_dtype(op: str, input: Tensor, other: Tensor) -> tuple[Tensor, Tensor]:
    """``input`` and ``other`` in their result dtype (the fused kernel takes one dtype; widening is exact), their
    shapes checked under ``op``'s name before the kernel."""
    broadcast_shapes(op, input.shape, other.shape)
    dtype = dtypes.result_type(input.dtype, input.ndim, other.dtype, other.ndim)
    return (input if input.dtype is dtype else input.to(dtype)), (other if other.dtype is dtype else other.to(dtype))


def scaled_operand(input: Tensor, other: Any, alpha: float) -> Any:
    """``alpha * other`` for ``input + alpha * other``, computed in the dtype of the sum: torch scales inside the
    kernel, so a bfloat16 ``other`` added to a float32 ``input`` is not rounded to bfloat16 once more first."""
    if (isinstance(other, Tensor) and other.dtype is not input.dtype and other.dtype.category == 2
            and input.dtype.category == 2):
        dtype = dtypes.result_type(input.dtype, input.ndim, other.dtype, other.ndim)
        if dtype is not other.dtype:
            other = other.to(dtype)
    return other * alpha


#: torch's deprecated overloads that take the scale before the tensors, still common in hand-written optimizers
#: (``exp_avg.mul_(beta1).add_(1 - beta1, grad)``, ``p.data.addcdiv_(-step_size, exp_avg, denom)``): the arguments
#: of the old order and of today's, as torch's warning names them.
_SCALE_FIRST = {"alpha": ("Number alpha, Tensor other", "Tensor other, *, Number alpha = 1"),
                "value": ("Number value, Tensor tensor1, Tensor tensor2",
                          "Tensor tensor1, Tensor tensor2, *, Number value = 1")}


def warn_scale_first(op: str, scale: str, stacklevel: int = 3) -> None:
    """torch's UserWarning for ``op`` called with its deprecated scale-first overload (``scale`` "alpha" or
    "value")."""
    old, new = _SCALE_FIRST[scale]
    warnings.warn(f"This overload of {op} is deprecated:\n\t{op}({old})\nConsider using one of the following "
                  f"signatures instead:\n\t{op}({new})", UserWarning, stacklevel=stacklevel)


def _number_like(x: Any) -> bool:
    """Whether torch's argument parser takes ``x`` as a Number: a Python number, or a 0-dim tensor that requires no
    gradient."""
    return not isinstance(x, Tensor) or (x.ndim == 0 and not x.requires_grad)


def alpha_argument(op: str, other: Any, alpha: Any) -> tuple[Any, Any]:
    """``(other, alpha)`` of ``op(..., other, alpha)`` (``add``, ``sub`` and their in-place forms) whose ``alpha`` is
    a tensor. torch takes a 0-dim tensor that requires no gradient as the number it holds (``alpha=-lr *
    trust_ratio``); a tensor ``alpha`` beside a number ``other`` is the deprecated ``op(alpha, other)``, accepted with
    its warning; any other tensor is refused."""
    if not _number_like(other) or _number_like(alpha):
        if not _number_like(alpha):
            raise TypeError(f"{op}(): argument 'alpha' must be Number, not Tensor")
        return other, alpha.item()
    warn_scale_first(op, "alpha", stacklevel=4)
    return alpha, other.item() if isinstance(other, Tensor) else other


def value_first(op: str, value: Any, tensor1: Any, rest: tuple) -> tuple[Any, Any, Any]:
    """``(tensor1, tensor2, value)`` of torch's deprecated ``op(value, tensor1, tensor2)`` (``addcmul``,
    ``addcdiv`` and their in-place forms), whose positional arguments arrive one place to the right."""
    if len(rest) != 1 or isinstance(value, Tensor):
        raise TypeError(f"{op}() takes 3 positional arguments but {3 + len(rest)} were given")
    warn_scale_first(op, "value")
    return tensor1, rest[0], value


def add(input: Any, other: Any, alpha: float = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting and type promotion; torch's deprecated ``add(input, alpha,
    other)`` is accepted with its warning."""
    if alpha.__class__ is not int and isinstance(alpha, Tensor):
        other, alpha = alpha_argument("add", other, alpha)
    if not isinstance(input, Tensor):
        return add(other, input) if alpha == 1 else add(Tensor._scalar_like(input, other), other, alpha)
    if other.__class__ is not Tensor:  # a plain tensor, the common case, takes neither conversion
        if not isinstance(other, (Tensor, int, float)):
            other = _as_operand("add", other, input)
        other = densified("add", input, other)
    if alpha.__class__ is not int or alpha != 1:  # the default alpha takes none of these checks
        result = _result_dtype(input, other)
        if alpha.__class__ is not int:
            check_alpha(result, alpha)
        if alpha != 1 and result is dtypes.bool_:
            alpha = bool(alpha)  # a bool sum is a logical or: any alpha but 0 keeps the other operand as it is
    if alpha != 1:
        if fuses_scale(input, other):
            return AddScaled.apply(*_in_common_dtype("add", input, other), float(alpha))
        other = scaled_operand(input, other, alpha)
    return Add.apply(input, other)


def check_alpha(dtype: dtypes.dtype, alpha: Any) -> None:
    """torch's checks of ``add``/``sub``'s ``alpha`` against the dtype of the result: a bool only for bool results, a
    float not for integer ones, a complex number only for complex ones."""
    if isinstance(alpha, bool) and dtype is not dtypes.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if dtype.category < 2 and not isinstance(alpha, int):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if isinstance(alpha, complex) and not dtype.is_complex:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")


def check_sub_operands(op: str, input: Any, other: Any) -> None:
    """torch's refusal of a subtraction with a bool operand (a tensor or a Python bool), in or out of place."""
    input_bool = isinstance(input, bool) or isinstance(input, Tensor) and input.dtype is dtypes.bool_
    other_bool = isinstance(other, bool) or isinstance(other, Tensor) and other.dtype is dtypes.bool_
    if input_bool and other_bool:
        raise RuntimeError(f"{op}: Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                           "or `logical_xor()` operator instead.")
    if input_bool or other_bool:
        raise RuntimeError(f"{op}: Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def sub(input: Any, other: Any, alpha: float = 1) -> Tensor:
    """``input - alpha * other``; torch's deprecated ``sub(input, alpha, other)`` is accepted with its warning."""
    if alpha.__class__ is not int and isinstance(alpha, Tensor):
        other, alpha = alpha_argument("sub", other, alpha)
    check_sub_operands("sub", input, other)
    if not isinstance(input, Tensor):
        return RSub.apply(other * alpha if alpha != 1 else other, input)
    if other.__class__ is not Tensor:  # a plain tensor, the common case, takes neither conversion
        other = densified("sub", input, _as_operand("sub", other, input))
    if alpha.__class__ is not int:
        check_alpha(_result_dtype(input, other), alpha)
    if alpha != 1:
        if fuses_scale(input, other):
            return SubScaled.apply(*_in_common_dtype("sub", input, other), -float(alpha))
        other = scaled_operand(input, other, alpha)
    return Sub.apply(input, other)


def rsub(input: Tensor, other: Any, alpha: float = 1) -> Tensor:
    """``other - alpha * input`` (torch's ``rsub``: ``sub`` with the operands swapped)."""
    if not isinstance(other, Tensor):
        other = Tensor._scalar_like(python_number(other), input)
    return sub(other, input, alpha)


def mul(input: Any, other: Any) -> Tensor:
    """The elementwise product with broadcasting and type promotion; a strided tensor times a sparse one is sparse,
    as torch's."""
    if not isinstance(input, Tensor):
        return Mul.apply(other, input)
    if not isinstance(other, (Tensor, int, float)):
        other = _as_operand("mul", other, input)
    if isinstance(other, SparseBase) and not isinstance(input, SparseBase):
        return other.mul(input)
    return Mul.apply(input, other)


def div(input: Any, other: Any, rounding_mode: str | None = None) -> Tensor:
    """True division, or rounded with ``rounding_mode`` "trunc" / "floor" (no gradient through rounding)."""
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
        )
    if not isinstance(input, Tensor):
        if rounding_mode is None:
            return RDiv.apply(other, input)
        input = Tensor._scalar_like(input, other)
    other = _as_operand("div", other, input)
    if rounding_mode is None:
        return Div.apply(input, other)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    result = _result_dtype(input, other)
    if result.category < 2 and not result.is_signed:  # unsigned: no operand is negative, trunc is floor
        return NoGradBinary.apply(input, other, "floor_divide")
    if result.category < 2:
        q = NoGradBinary.apply(input, other, "floor_divide")
        # Integer trunc division: floor, then correct toward zero where the signs differ and a remainder is left.
        r = NoGradBinary.apply(input, other, "remainder")
        fix = logical_and(r != 0, (input < 0) != (other < 0 if isinstance(other, Tensor) else other < 0))
        return where(fix, q + 1, q)
    return RoundedDiv.apply(input, other, "trunc")


def true_divide(input: Any, other: Any) -> Tensor:
    return div(input, other)


def _check_divisor(op: str, input: Tensor, other: Tensor | Number, what: str) -> None:
    """RuntimeError for an integer divisor of zero; for a tensor it is a device-side check (see ``_check_range``):
    ``other == 0`` as integers must lie in [0, 1)."""
    message = f"{op}: {what}"
    if input.numel() == 0 or (isinstance(other, Tensor) and other.numel() == 0):
        return  # nothing is divided (torch returns the empty result)
    if isinstance(other, Tensor):
        _check_range((other == 0).to(dtypes.int8), 0, 1, RuntimeError, message)
    elif other == 0:
        raise RuntimeError(message)


def floor_divide(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        input = Tensor._scalar_like(input, other)
    other = _as_operand("floor_divide", other, input)
    if _result_dtype(input, other).category < 2:
        _check_divisor("floor_divide", input, other, "ZeroDivisionError (integer division by zero)")
        return NoGradBinary.apply(input, other, "floor_divide")
    return RoundedDiv.apply(input, other, "floor")


def remainder(input: Any, other: Any) -> Tensor:
    """Python-style modulus: the result has the sign of the divisor."""
    if not isinstance(input, Tensor):
        input = Tensor._scalar_like(input, other)
    other = _as_operand("remainder", other, input)
    if _result_dtype(input, other).category < 2:
        _check_divisor("remainder", input, other, "ZeroDivisionError (integer modulo by zero)")
        return NoGradBinary.apply(input, other, "remainder")
    return Remainder.apply(input, other)


def fmod(input: Tensor, other: Any) -> Tensor:
    """C-style remainder: the result has the sign of the dividend."""
    other = _as_operand("fmod", other, input)
    if isinstance(other, Tensor):  # checked as fmod: the integer path computes it from other ops
        broadcast_shapes("fmod", input.shape, other.shape)
    dt = _result_dtype(input, other)
    input = input if input.dtype is dt else input.to(dt)  # a bool or integer dividend computes in the promoted dtype
    if dt.category < 2:
        return input - div(input, other, rounding_mode="trunc") * other
    return Fmod.apply(input, other)


def pow(input: Any, exponent: Any) -> Tensor:
    if not isinstance(input, Tensor):
        input = python_number(input)
        if isinstance(input, Number):
            return RPow.apply(exponent, input)
        input = Tensor._scalar_like(input, exponent)
    exponent = _as_operand("pow", exponent, input)
    if (
        isinstance(exponent, int) and not isinstance(exponent, bool) and exponent < 0
        and input.dtype.category < 2
    ):
        raise RuntimeError(f"pow: Integers to negative integer powers are not allowed (exponent {exponent})")
    if isinstance(exponent, (int, float)) and exponent == 2 and input.dtype.is_floating_point:
        return Mul.apply(input, input)
    return Pow.apply(input, exponent)


def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` computed and returned in float64, whatever the input dtypes."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected at least one Tensor argument, got two numbers")
    base = input.to(dtypes.float64) if isinstance(input, Tensor) else float(input)
    return pow(base, exponent.to(dtypes.float64) if isinstance(exponent, Tensor) else float(exponent))


def maximum(input: Tensor, other: Tensor) -> Tensor:
    check_tensors("maximum", input=input, other=other)
    if input.dtype.category < 2 and other.dtype.category < 2:
        return NoGradBinary.apply(input, other, "maximum")
    return Maximum.apply(input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    check_tensors("minimum", input=input, other=other)
    if input.dtype.category < 2 and other.dtype.category < 2:
        return NoGradBinary.apply(input, other, "minimum")
    return Minimum.apply(input, other)


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point (other, input), elementwise; integer and bool tensors give the default float dtype."""
    if _result_dtype(input, other).category < 2:
        dt = dtypes.get_default_dtype()
        input, other = input.to(dt), other.to(dt) if isinstance(other, Tensor) else float(other)
    return Atan2.apply(input, other)


arctan2 = atan2


class Clamp(Primitive):
    """``min(max(x, lo), hi)`` for number bounds (None: unbounded): one kernel forward, one or two backward. The
    gradient passes where ``lo <= x <= hi``, never through NaN (torch's ``clamp_backward``)."""

    @staticmethod
    def forward(ctx, x: NDArray, lo: float | None, hi: float | None) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
            ctx.bounds = (lo, hi)
        return x.backend.clamp(x, lo, hi)

    @staticmethod
    def backward(ctx, grad):
        lo, hi = ctx.bounds
        if is_grad_enabled():  # create_graph: the mask applied with differentiable tensor ops
            (x,) = ctx.saved_tensors
            inside = None if lo is None else x >= lo
            if hi is not None:
                inside = x <= hi if inside is None else logical_and(inside, x <= hi)
            return where(inside, grad, 0.0), None, None
        (x,) = ctx.saved_arrays()
        return x.backend.clamp_backward(grad.ndarray, x, lo, hi), None, None


class ClampMin(Clamp):
    """``clamp_min``: its own node name, as torch's (``ClampMinBackward0``)."""


class ClampMax(Clamp):
    """``clamp_max``: its own node name, as torch's (``ClampMaxBackward0``)."""


class ClampTensors(Primitive):
    """``clamp`` with tensor bounds (None: unbounded) of the input's dtype, broadcast: a NaN input or bound gives NaN
    (torch's clamp kernel); the gradients are torch's ``clamp_backward_min_max``: the input's where
    ``lo <= x <= hi``, a bound's where it was taken (``hi`` also wherever ``hi < lo``)."""

    @staticmethod
    def forward(ctx, x: NDArray, lo: NDArray | None, hi: NDArray | None) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, lo, hi)
        out = x
        for bound, op in ((lo, "lt"), (hi, "gt")):
            if bound is not None:
                take = out.binary(op, bound)
                if bound.dtype.is_floating_point:
                    take = take.binary("logical_or", bound.unary("isnan"))
                out = take.where(bound, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, lo, hi = ctx.saved_tensors
        if lo is not None and hi is not None:
            return (where(logical_and(x >= lo, x <= hi), grad, 0.0), where(logical_and(x < lo, lo < hi), grad, 0.0),
                    where(logical_or(x > hi, hi < lo), grad, 0.0))
        if lo is not None:
            return where(x >= lo, grad, 0.0), where(x < lo, grad, 0.0), None
        return where(x <= hi, grad, 0.0), None, where(x > hi, grad, 0.0)


class ClampMinTensors(ClampTensors):
    """``clamp_min`` with a tensor bound (torch's ``ClampMinBackward1``)."""


class ClampMaxTensors(ClampTensors):
    """``clamp_max`` with a tensor bound (torch's ``ClampMaxBackward1``)."""


_TENSOR_BOUNDS_NODES = {Clamp: ClampTensors, ClampMin: ClampMinTensors, ClampMax: ClampMaxTensors}


def _number(bound: Any) -> bool:
    return bound is None or bound.__class__ in (int, float)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Clamp into [min, max]; bounds are numbers or tensors; the gradient passes where the input is inside."""
    return _clamped(input, min, max, Clamp)


def _clamped(input: Tensor, min: Any, max: Any, node: type[Clamp]) -> Tensor:
    """``clamp``, recorded as ``node`` where a floating input has number bounds (else as tensor ops)."""
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
    if input.dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    min, max = python_number(min), python_number(max)
    if input.dtype.category == 2 and _number(min) and _number(max):
        return node.apply(input, None if min is None else float(min), None if max is None else float(max))
    bounds = [b if isinstance(b, Tensor) or b is None else Tensor._scalar_like(b, input) for b in (min, max)]
    dt, ndim = input.dtype, input.ndim
    for b in bounds:
        if b is not None:
            dt, ndim = dtypes.result_type(dt, ndim, b.dtype, b.ndim), builtins.max(ndim, b.ndim)
    broadcast_shapes("clamp", input.shape, *(b.shape for b in bounds if b is not None))
    x, lo, hi = (b if b is None or b.dtype is dt else b.to(dt) for b in (input, *bounds))
    return _TENSOR_BOUNDS_NODES[node].apply(x, lo, hi)


clip = clamp


def clamp_min(input: Tensor, min: Any) -> Tensor:
    """``clamp(input, min=min)``."""
    return _clamped(input, min, None, ClampMin)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    """``clamp(input, max=max)``."""
    return _clamped(input, None, max, ClampMax)


class Lerp(Primitive):
    """``start + weight * (end - start)`` in one kernel (from ``end`` where ``|weight| >= 0.5``, as torch, so that
    ``weight = 1`` gives ``end`` exactly), for a tensor ``weight``."""

    @staticmethod
    def forward(ctx, start: NDArray, end: NDArray, weight: NDArray) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(weight, *((start, end) if ctx.needs_input_grad[2] else ()))
        return start.backend.lerp(start, end, weight)

    @staticmethod
    def backward(ctx, grad):
        weight, *ends = ctx.saved_tensors
        grad_weight = grad * (ends[1] - ends[0]) if ends else None
        return grad * (1 - weight), grad * weight, grad_weight


class LerpScalar(Primitive):
    """``lerp`` with a number weight (torch's ``LerpBackward0``; a tensor weight's node is ``LerpBackward1``)."""

    @staticmethod
    def forward(ctx, start: NDArray, end: NDArray, weight: float) -> NDArray:
        if ctx.needs_input_grad:
            ctx.weight = weight
        return start.backend.lerp(start, end, weight)

    @staticmethod
    def backward(ctx, grad):
        return grad * (1 - ctx.weight), grad * ctx.weight, None


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``; floating (or complex) tensors of one dtype, as torch (a 0-d tensor weight
    may have another dtype)."""
    check_tensors("lerp", input=input, end=end)
    broadcast_shapes("lerp", input.shape, end.shape, *((weight.shape,) if isinstance(weight, Tensor) else ()))
    dt = input.dtype
    for name, other in (("end", end), ("weight", weight)):  # torch checks the dtypes first, then its kernel's
        if isinstance(other, Tensor) and other.dtype is not dt and (name == "end" or other.ndim):
            raise RuntimeError(f"expected dtype {dtypes.CPP_TYPE_NAMES.get(dt, dt.name)} for `{name}` but got dtype "
                               f"{dtypes.CPP_TYPE_NAMES.get(other.dtype, other.dtype.name)}")
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f'"lerp_kernel_scalar" not implemented for \'{dtypes.SCALAR_TYPE_NAMES[dt]}\'')
    if dt.is_complex or isinstance(weight, complex):
        return input + weight * (end - input)
    if isinstance(weight, Tensor):
        return Lerp.apply(input, end, weight.to(dt) if weight.dtype is not dt else weight)
    return LerpScalar.apply(input, end, float(weight))


def _half_operands(input: Tensor, tensor1: Tensor, tensor2: Tensor) -> bool:
    """Three operands of one float16/bfloat16 dtype: torch's pointwise kernels compute them in float32 and round
    once."""
    return input.dtype in (dtypes.float16, dtypes.bfloat16) and tensor1.dtype is input.dtype is tensor2.dtype


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *value_first_args: Tensor, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (broadcast) in torch's order, ``value * tensor1`` first. Half precision
    as torch's kernel: in float32, the last step one fused multiply-add (computed in float64, where the exact
    product fits, rounded to float32), then rounded to the dtype once. torch's deprecated ``addcmul(input, value,
    tensor1, tensor2)`` is accepted with its warning."""
    if value_first_args:
        tensor1, tensor2, value = value_first("addcmul", tensor1, tensor2, value_first_args)
    broadcast_shapes("addcmul", input.shape, tensor1.shape, tensor2.shape)
    if all(t.dtype is dtypes.bool_ for t in (input, tensor1, tensor2)):
        raise NotImplementedError("addcmul: \"addcmul_cpu_out\" not implemented for 'Bool'")
    if all(t.dtype.category < 2 for t in (input, tensor1, tensor2)) and not isinstance(value, bool):
        value = int(value)  # torch's kernel reads the value in the integer dtype: 0.5 scales by 0
    if not _half_operands(input, tensor1, tensor2):
        return input + (tensor1 * value if value != 1 else tensor1) * tensor2
    scaled = tensor1.float() * value if value != 1 else tensor1.float()
    return (input.double() + scaled.double() * tensor2.double()).float().to(input.dtype)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *value_first_args: Tensor, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcast); integer division is refused as in torch. torch's deprecated
    ``addcdiv(input, value, tensor1, tensor2)`` is accepted with its warning."""
    if value_first_args:
        tensor1, tensor2, value = value_first("addcdiv", tensor1, tensor2, value_first_args)
    broadcast_shapes("addcdiv", input.shape, tensor1.shape, tensor2.shape)
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
                           "tensor2), for all dtypes.")
    # (value * tensor1) / tensor2: torch's order, so that the roundings agree; half precision in float32, rounded once.
    if _half_operands(input, tensor1, tensor2):
        return addcdiv(input.float(), tensor1.float(), tensor2.float(), value=value).to(input.dtype)
    return input + (tensor1 * value if value != 1 else tensor1) / tensor2
