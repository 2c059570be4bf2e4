"""Unary elementwise ops: negation and absolute value, exponentials and logarithms, roots, trigonometric
functions, activations (sigmoid, relu, gelu, silu; softplus and hardshrink are ``genesis.ops.activations`` nodes),
rounding and sign helpers (complex numbers: ``genesis.ops.complex``). ``Unary`` is the primitive family behind most
of them: a subclass names the backend op and writes its local derivative.
"""

from __future__ import annotations

import math
from typing import Callable

from genesis import dtypes
from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray
from genesis.ops._args import _reject_integers, check_floating_kernel, check_tensors, zeros_like_detached
from genesis.ops.activations import Hardshrink, Softplus, activation
from genesis.ops.arithmetic import Mul, negated
from genesis.ops.autocast import autocast_args
from genesis.ops.compare import NoGradUnary, isfinite, lt, where
from genesis.ops.complex import complex_abs, conj, view_as_complex, view_as_real
from genesis.tensor import Tensor


class Unary(Primitive):
    """Unary op; subclasses set ``op`` and write ``derivative(x, out)`` (the local derivative as Tensors).

    An activation with a fused gradient kernel names it in ``backward_op``: a binary backend op ``(grad, x)`` that
    computes ``grad * derivative(x)`` in one pass. It serves backward when no graph is recorded; with
    ``create_graph`` the differentiable ``derivative`` runs instead, so higher derivatives stay exact.
    """

    op = ""
    saves_output = False  # backward reads the output only: the in-place op writes its input's memory directly
    backward_op = ""
    # An activation whose gradient torch computes in one kernel from the output (tanh_backward ...): the node class
    # that computes it so, for real dtypes (see _OutputGradient).
    gradient: type[_OutputGradient] | None = None

    @classmethod
    def forward(cls, ctx, x: NDArray, out: NDArray | None = None) -> NDArray:
        # ``out``: the array to write (``x`` itself for a recorded in-place op of an output-saving class).
        if x.dtype.category < 2 and cls.op not in _INT_SAFE:
            if cls.op in _FLOAT_ONLY:
                raise NotImplementedError(f"{cls.op}: not implemented for '{dtypes.SCALAR_TYPE_NAMES[x.dtype]}'")
            x = x.astype(dtypes.get_default_dtype())
        out = x.unary(cls.op, out)
        if ctx.needs_input_grad:  # empty when nothing is recorded
            ctx.save_for_backward(out if cls.saves_output else x)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        if cls.backward_op and not is_grad_enabled():
            (saved,) = ctx.saved_arrays()
            return grad.ndarray.binary(cls.backward_op, saved)
        (saved,) = ctx.saved_tensors
        if cls.gradient is not None and not saved.dtype.is_complex:
            if is_grad_enabled():
                return cls.gradient.apply(grad, saved)
            return cls.gradient.kernel(grad.ndarray, saved.ndarray)
        return grad * conj(cls.derivative(saved))  # conj: torch's convention for complex gradients


_INT_SAFE = frozenset(("neg", "abs", "sign", "relu", "floor", "ceil", "round", "trunc"))


# Activations torch computes for floating inputs only (integer inputs raise rather than promote).
_FLOAT_ONLY = frozenset(("gelu", "gelu_tanh", "silu"))


class Neg(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        if x.dtype is dtypes.bool_:
            raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        return x.unary("neg")

    @staticmethod
    def backward(ctx, grad):
        return negated(grad)


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


def _tanh_grad(grad: NDArray, out: NDArray) -> NDArray:
    """torch's ``tanh_backward``: ``grad * (1 - out^2)``, half precision computed in float32 and rounded once."""
    if out.dtype in (dtypes.float16, dtypes.bfloat16):
        wide = out.astype(dtypes.float32)
        return (grad.astype(dtypes.float32) * (1 - wide * wide)).astype(out.dtype)
    return grad * (1 - out * out)


def _sigmoid_grad(grad: NDArray, out: NDArray) -> NDArray:
    """torch's ``sigmoid_backward``: ``grad * (1 - out) * out`` in this order, bfloat16 computed in float32 and
    rounded once (float16, as torch's kernel, step by step in its own precision)."""
    if out.dtype is dtypes.bfloat16:
        wide = out.astype(dtypes.float32)
        return (grad.astype(dtypes.float32) * (1 - wide) * wide).astype(out.dtype)
    return grad * (1 - out) * out


class _OutputGradient(Primitive):
    """The gradient of an activation that saves its output, ``kernel(grad, out)``, as a recorded node with torch's
    derivatives: itself for ``grad`` and ``output_derivative(gg, grad, out)`` for the output."""

    kernel: Callable[[NDArray, NDArray], NDArray]
    output_derivative: Callable[[Tensor, Tensor, Tensor], Tensor]

    @classmethod
    def forward(cls, ctx, grad: NDArray, out: NDArray) -> NDArray:
        ctx.save_for_backward(grad, out)
        return cls.kernel(grad, out)

    @classmethod
    def backward(cls, ctx, gg):
        grad, out = ctx.saved_tensors
        return cls.apply(gg, out), cls.output_derivative(gg, grad, out)


class TanhBackward(_OutputGradient):
    """torch's ``tanh_backward``; the output's derivative ``gg * (-2 * out * grad)``."""

    kernel = staticmethod(_tanh_grad)
    output_derivative = staticmethod(lambda gg, grad, out: gg * (-2 * out * grad))


class SigmoidBackward(_OutputGradient):
    """torch's ``sigmoid_backward``; the output's derivative ``gg * grad * (1 - 2 * out)``."""

    kernel = staticmethod(_sigmoid_grad)
    output_derivative = staticmethod(lambda gg, grad, out: gg * grad * (-2 * out + 1))


class Tanh(Unary):
    op, saves_output, gradient = "tanh", True, TanhBackward

    @staticmethod
    def derivative(out):
        return 1 - out * out


class Sigmoid(Unary):
    op, saves_output, gradient = "sigmoid", True, SigmoidBackward

    @staticmethod
    def derivative(out):
        return out * (1 - out)


class Relu(Unary):
    op, saves_output, backward_op = "relu", True, "relu_backward"

    @classmethod
    def backward(cls, ctx, grad):
        if not is_grad_enabled():  # the fused pass (torch's threshold_backward)
            return super().backward(ctx, grad)
        (out,) = ctx.saved_tensors
        return ReluBackward.apply(grad, out)


class ReluBackward(Primitive):
    """relu's gradient as a recorded node (torch's ``threshold_backward``): ``grad`` where relu's output is
    positive, 0 elsewhere (a select: a NaN gradient where relu is flat stays 0). Its own derivative is itself for
    ``grad`` and zero for the output, which reaches the layers below as a zero gradient, not none, as in torch:
    a bias under a gradient penalty gets a zero gradient that an optimizer steps with."""

    @staticmethod
    def forward(ctx, grad: NDArray, out: NDArray) -> NDArray:
        ctx.save_for_backward(out)
        return grad.binary("relu_backward", out)

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return ReluBackward.apply(grad, out), zeros_like_detached(out)


def output_saving() -> dict[str, type[Unary]]:
    """The Unary classes whose backward reads only their output (``saves_output``), by kernel, wherever they are
    defined: their in-place ops write the tensor's memory directly even when a graph records them
    (``genesis.ops.inplace.kernel_method``)."""
    found, stack = {}, [Unary]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.saves_output:
            found[cls.op] = cls
    return found


class LeakyRelu(Primitive):
    """``x`` where positive, ``negative_slope * x`` elsewhere: one elementwise kernel each way."""

    @staticmethod
    def forward(ctx, x: NDArray, negative_slope: float) -> NDArray:
        ctx.save_for_backward(x)
        ctx.slope = negative_slope
        return x.backend.leaky_relu(x, negative_slope)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return LeakyReluBackward.apply(grad, x, ctx.slope), None


class LeakyReluBackward(Primitive):
    """leaky_relu's gradient (torch's ``leaky_relu_backward``): ``grad`` where ``x > 0``, ``negative_slope * grad``
    elsewhere. Its derivative is itself for ``grad`` and zero for ``x``: a recorded double backward hands the layers
    below a zero gradient, not none, as torch does."""

    @staticmethod
    def forward(ctx, grad: NDArray, x: NDArray, negative_slope: float) -> NDArray:
        ctx.save_for_backward(x)
        ctx.slope = negative_slope
        return grad.backend.leaky_relu_backward(grad, x, negative_slope)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return LeakyReluBackward.apply(grad, x, ctx.slope), zeros_like_detached(x), None


def leaky_relu(x: Tensor, negative_slope: float) -> Tensor:
    """``torch.nn.functional.leaky_relu``'s math: one node for real floating ``x``, tensor ops for complex ``x``;
    torch's kernel refuses integers and bools."""
    check_floating_kernel("leaky_relu", "leaky_relu_cpu", x)
    if x.dtype.is_floating_point and not x.dtype.is_complex:
        return LeakyRelu.apply(x, float(negative_slope))
    return where(x > 0, x, x * negative_slope)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Leaky ReLU with a learned slope per channel (dim 1) or a single one (``nn.functional.prelu``); the input and
    the weight of one floating dtype, as torch's kernel."""
    check_tensors("prelu", input=input, weight=weight)
    input, weight = autocast_args("prelu", input, weight)
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {dtypes.SCALAR_TYPE_NAMES[input.dtype]} and "
                           f"{dtypes.SCALAR_TYPE_NAMES[weight.dtype]}")
    check_floating_kernel("prelu", "prelu_cpu", input)
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    if weight.numel() != 1:
        if input.ndim == 0:
            raise RuntimeError("prelu: Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim > 1 else 1
        if weight.numel() != channels:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers "
                               f"= {weight.numel()} and channel size = {channels}.")
        shape = [1] * input.ndim
        shape[1] = weight.numel()
        weight = weight.reshape(shape)
    else:  # one slope for every element: the output keeps the input's shape (a 0-d input stays 0-d)
        weight = weight.reshape(())
    return where(input > 0, input, input * weight)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """0 where ``|x| <= lambd``, ``x`` elsewhere (``nn.functional.hardshrink``; NaN stays NaN), one node."""
    return activation(Hardshrink, "hardshrink", "hardshrink_cpu", input, lambd)


class Gelu(Unary):
    op, backward_op = "gelu", "gelu_backward"

    @staticmethod
    def derivative(x):
        cdf = 0.5 * (1 + (x * (1 / math.sqrt(2.0))).erf())
        pdf = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
        return cdf + x * pdf


class GeluTanh(Unary):
    op, backward_op = "gelu_tanh", "gelu_tanh_backward"

    @staticmethod
    def derivative(x):
        k = math.sqrt(2 / math.pi)
        inner = k * (x + 0.044715 * x * x * x)
        t = inner.tanh()
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)


class Silu(Unary):
    op, backward_op = "silu", "silu_backward"

    @staticmethod
    def derivative(x):
        s = x.sigmoid()
        return s * (1 + x * (1 - s))


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
    """Piecewise-constant unary ops (sign, floor, ceil, round, trunc): gradient zero (zeros, even for an infinite or
    NaN gradient), as in torch. A subclass per op carries torch's node name."""

    @staticmethod
    def forward(ctx, x: NDArray, op: str) -> NDArray:
        return x.unary(op)

    @staticmethod
    def backward(ctx, grad):
        return zeros_like_detached(grad), None


class Sign(ZeroGradUnary):
    """``sign``."""


class Floor(ZeroGradUnary):
    """``floor``."""


class Ceil(ZeroGradUnary):
    """``ceil``."""


class Trunc(ZeroGradUnary):
    """``trunc``."""


class Round(ZeroGradUnary):
    """``round`` (half to even)."""


_ROUNDING_NODES: dict[str, type[ZeroGradUnary]] = {"sign": Sign, "floor": Floor, "ceil": Ceil, "trunc": Trunc,
                                                   "round": Round}


class Cast(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dtype: dtypes.dtype) -> NDArray:
        ctx.dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.dtype), None


def neg(input: Tensor) -> Tensor:
    return Neg.apply(input)


negative = neg


def _reject_bool(op: str, x: Tensor) -> None:
    """torch implements some integer-safe ops for every dtype except bool."""
    if x.dtype is dtypes.bool_:
        raise NotImplementedError(f"{op}: not implemented for 'Bool'")


def abs(input: Tensor) -> Tensor:
    _reject_bool("abs", input)
    if input.dtype.category < 2:
        return NoGradUnary.apply(input, "abs")
    if input.dtype.is_complex:
        return complex_abs(input)
    return Abs.apply(input)


def reciprocal(input: Tensor) -> Tensor:
    return Reciprocal.apply(input)


def exp(input: Tensor) -> Tensor:
    (input,) = autocast_args("exp", input)
    return Exp.apply(input)


def exp2(input: Tensor) -> Tensor:
    return Exp2.apply(input)


def expm1(input: Tensor) -> Tensor:
    return Expm1.apply(input)


def log(input: Tensor) -> Tensor:
    (input,) = autocast_args("log", input)
    return Log.apply(input)


def log2(input: Tensor) -> Tensor:
    return Log2.apply(input)


def log10(input: Tensor) -> Tensor:
    return Log.apply(input) * (1 / math.log(10.0))


def log1p(input: Tensor) -> Tensor:
    return Log1p.apply(input)


def sqrt(input: Tensor) -> Tensor:
    return Sqrt.apply(input)


def rsqrt(input: Tensor) -> Tensor:
    return Rsqrt.apply(input)


def square(input: Tensor) -> Tensor:
    if input.dtype is dtypes.bool_:
        input = input.to(dtypes.int64)
    return Mul.apply(input, input)


def sin(input: Tensor) -> Tensor:
    return Sin.apply(input)


def cos(input: Tensor) -> Tensor:
    return Cos.apply(input)


def tan(input: Tensor) -> Tensor:
    return Tan.apply(input)


def tanh(input: Tensor) -> Tensor:
    return Tanh.apply(input)


def sigmoid(input: Tensor) -> Tensor:
    return Sigmoid.apply(input)


def relu(input: Tensor) -> Tensor:
    if input.dtype is dtypes.bool_:
        raise RuntimeError("relu: Boolean inputs not supported for relu")
    if input.dtype.category < 2:
        return NoGradUnary.apply(input, "relu")
    return Relu.apply(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """GELU, exact (``x * Phi(x)``) or with the tanh approximation."""
    if approximate == "none":
        return Gelu.apply(input)
    if approximate == "tanh":
        return GeluTanh.apply(input)
    raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got '{approximate}'")


def silu(input: Tensor) -> Tensor:
    return Silu.apply(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold`` (torch's softplus), one node."""
    return activation(Softplus, "softplus", "softplus_cpu", input, beta, threshold)


def erf(input: Tensor) -> Tensor:
    return Erf.apply(input)


def _rounding(op: str):
    def fn(input: Tensor) -> Tensor:
        if op != "sign":
            _reject_bool(op, input)
        if input.dtype.category < 2 and op != "sign":
            return input.clone()
        return _ROUNDING_NODES[op].apply(input, op)

    fn.__name__ = op
    fn.__qualname__ = op  # the module-level name it is bound to, so documentation tools find it
    fn.__doc__ = f"Elementwise {op} (gradient zero, as in torch)."
    return fn


sign = _rounding("sign")


floor = _rounding("floor")


ceil = _rounding("ceil")


trunc = _rounding("trunc")


def round(input: Tensor, decimals: int = 0) -> Tensor:
    """Round half to even, optionally to ``decimals`` places."""
    if decimals == 0:
        return _rounding("round")(input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"round: decimals={decimals} not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    scale = 10.0 ** decimals
    return _rounding("round")(input * scale) / scale


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """Replace NaN with ``nan`` and infinities with the given values (default: the dtype's finite extremes)."""
    if input.dtype.category < 2:
        return input.clone()
    if input.dtype.category == 3:  # the real and imaginary parts each, as torch
        return view_as_complex(nan_to_num(view_as_real(input), nan, posinf, neginf))
    big = _finfo_max(input.dtype)
    posinf = big if posinf is None else _in_dtype(posinf, input)
    neginf = -big if neginf is None else _in_dtype(neginf, input)
    return NanToNum.apply(input, _in_dtype(nan, input), posinf, neginf)


class NanToNum(Primitive):
    """NaN, +inf and -inf replaced by the given numbers; the gradient flows where the input is finite."""

    @staticmethod
    def forward(ctx, x: NDArray, nan: float | NDArray, posinf: float | NDArray, neginf: float | NDArray) -> NDArray:
        ctx.save_for_backward(x)
        return x.backend.nan_to_num(x, nan, posinf, neginf)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(isfinite(x), grad, 0.0), None, None, None


def _in_dtype(value: float, like: Tensor) -> float | NDArray:
    """A replacement value of ``nan_to_num`` as torch converts it: rounded to ``like``'s dtype, where a number beyond
    its range becomes an infinity (a 0-d array of that dtype then, not an error)."""
    value, limit = float(value), _finfo_max(like.dtype)
    if not math.isfinite(value) or -limit <= value <= limit:
        return value
    return NDArray.scalar(value, dtypes.float64, like.device).astype(like.dtype)


def _finfo_max(d: dtypes.dtype) -> float:
    return dtypes.finfo(d).max


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
    """``sign`` extended to complex numbers (``z / |z|``, 0 at 0); for real tensors the same as :func:`sign`."""
    if input.dtype.is_complex:
        r = complex_abs(input)
        return where(r == 0, 0j, input / where(r == 0, 1.0, r))
    return sign(input)


def positive(input: Tensor) -> Tensor:
    """Returns ``input`` itself (unary plus); bool tensors are rejected as in torch."""
    if input.dtype is dtypes.bool_:
        raise RuntimeError("positive: The `+` operator, on a bool tensor is not supported.")
    return input


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians; integer inputs promote to the default float dtype."""
    if input.dtype.is_complex:
        raise RuntimeError("deg2rad is not supported for complex tensors.")
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    return input * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees; integer inputs promote to the default float dtype."""
    if input.dtype.is_complex:
        raise RuntimeError("rad2deg is not supported for complex tensors.")
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    return input * (180.0 / math.pi)
