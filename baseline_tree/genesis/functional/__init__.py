"""The function layer: Genesis's tensor operations as functions of Tensors.

Primitives (``Function`` subclasses with forward and backward) live in the submodules; this module holds the
argument handling shared by the Tensor methods and the ``genesis.*`` functions, and the composite ops written once
on top of the primitives (their gradients follow automatically).
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Callable, Sequence

from genesis import amp, dtypes
from genesis import cuda as _cuda
from genesis import memory_format as _mf
from genesis.functional.elementwise import (
    Abs,
    Add,
    Atan2,
    Cast,
    Cos,
    Div,
    Erf,
    Exp,
    Exp2,
    Expm1,
    Gelu,
    GeluTanh,
    Log,
    Log1p,
    Log2,
    Maximum,
    Minimum,
    Mul,
    Neg,
    NoGradBinary,
    NoGradUnary,
    Pow,
    RDiv,
    Reciprocal,
    Relu,
    Remainder,
    RoundedDiv,
    RPow,
    Rsqrt,
    RSub,
    Sigmoid,
    Silu,
    Sin,
    Softplus,
    Sqrt,
    Sub,
    Tan,
    Tanh,
    Where,
    ZeroGradUnary,
)
from genesis.functional.index import (
    Gather,
    Index,
    IndexAdd,
    IndexPut,
    IndexSelect,
    Scatter,
    Sort,
    ViewBackwardFill,
)
from genesis.functional.linalg import Matmul
from genesis.functional.reduce import ArgReduce, Cumprod, Cumsum, Extremum, MaxWithIndices, Prod, Softmax, Sum
from genesis.functional.shape import (
    Cat,
    Clone,
    Expand,
    Permute,
    Reshape,
    Squeeze,
    ToMemoryFormat,
    Transpose,
    Unsqueeze,
    View,
    ViewOf,
)
from genesis.ndarray import (
    NDArray,
    broadcast_shapes,
    full_indices,
    infer_shape,
    normalize_dim,
    normalize_dims,
    view_strides,
)
from genesis.ndarray import cat as cat_nd
from genesis.tensor import Tensor
from genesis.tensor import tensor as _from_data

Number = (int, float, bool)


def _check_tensor(op: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")


def _as_operand(op: str, other: Any, like: Tensor) -> Any:
    """A second operand: Tensors and Python numbers pass; lists and numpy arrays become tensors."""
    if isinstance(other, (Tensor, int, float, bool)):
        return other
    if hasattr(other, "item") and getattr(other, "ndim", 1) == 0:
        return other.item()
    try:
        return _from_data(other, device=like.device)
    except (TypeError, ValueError):
        raise TypeError(f"{op}(): unsupported operand type {type(other).__name__}") from None


# ------------------------------------------------------------------ arithmetic

def add(input: Any, other: Any, alpha: float = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting and type promotion."""
    if not isinstance(input, Tensor):
        return add(other, input) if alpha == 1 else add(Tensor._scalar_like(input, other), other, alpha)
    if not isinstance(other, (Tensor, int, float)):
        other = _as_operand("add", other, input)
    if alpha != 1:
        other = other * alpha
    return Add.apply(input, other)


def sub(input: Any, other: Any, alpha: float = 1) -> Tensor:
    """``input - alpha * other``."""
    for operand in (input, other):
        if isinstance(operand, bool) or isinstance(operand, Tensor) and operand.dtype is dtypes.bool_:
            raise RuntimeError("sub: subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    if not isinstance(input, Tensor):
        return RSub.apply(other * alpha if alpha != 1 else other, input)
    other = _as_operand("sub", other, input)
    if alpha != 1:
        other = other * alpha
    return Sub.apply(input, other)


def mul(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        return Mul.apply(other, input)
    if not isinstance(other, (Tensor, int, float)):
        other = _as_operand("mul", other, input)
    return Mul.apply(input, other)


def div(input: Any, other: Any, rounding_mode: str | None = None) -> Tensor:
    """True division, or rounded with ``rounding_mode`` "trunc" / "floor" (no gradient through rounding)."""
    if rounding_mode not in (None, "trunc", "floor"):
        raise ValueError(
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
    int_result = _result_dtype(input, other).category < 2
    if int_result:
        q = NoGradBinary.apply(input, other, "floor_divide")
        # Integer trunc division: floor, then correct toward zero where the signs differ and a remainder is left.
        r = NoGradBinary.apply(input, other, "remainder")
        fix = logical_and(r != 0, (input < 0) != (other < 0 if isinstance(other, Tensor) else other < 0))
        return where(fix, q + 1, q)
    return RoundedDiv.apply(input, other, "trunc")


def _result_dtype(a: Tensor, b: Any) -> dtypes.dtype:
    if isinstance(b, Tensor):
        return dtypes.result_type(a.dtype, a.ndim, b.dtype, b.ndim)
    return dtypes.result_type_scalar(a.dtype, b)


def true_divide(input: Any, other: Any) -> Tensor:
    return div(input, other)


def floor_divide(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        input = Tensor._scalar_like(input, other)
    other = _as_operand("floor_divide", other, input)
    if _result_dtype(input, other).category < 2:
        if isinstance(other, Tensor):
            if (other == 0).any().item():
                raise RuntimeError("floor_divide: ZeroDivisionError (integer division by zero)")
        elif other == 0:
            raise RuntimeError("floor_divide: ZeroDivisionError (integer division by zero)")
        return NoGradBinary.apply(input, other, "floor_divide")
    return RoundedDiv.apply(input, other, "floor")


def remainder(input: Any, other: Any) -> Tensor:
    """Python-style modulus: the result has the sign of the divisor."""
    if not isinstance(input, Tensor):
        input = Tensor._scalar_like(input, other)
    other = _as_operand("remainder", other, input)
    if _result_dtype(input, other).category < 2:
        if isinstance(other, Tensor) and (other == 0).any().item() or (not isinstance(other, Tensor) and other == 0):
            raise RuntimeError("remainder: ZeroDivisionError (integer modulo by zero)")
        return NoGradBinary.apply(input, other, "remainder")
    return Remainder.apply(input, other)


def fmod(input: Tensor, other: Any) -> Tensor:
    """C-style remainder: the result has the sign of the dividend."""
    return input - div(input, other, rounding_mode="trunc") * other


def pow(input: Any, exponent: Any) -> Tensor:
    if not isinstance(input, Tensor):
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


def neg(input: Tensor) -> Tensor:
    return Neg.apply(input)


negative = neg


def _reject_bool(op: str, x: Tensor) -> None:
    """torch implements some integer-safe ops for every dtype except bool."""
    if x.dtype is dtypes.bool_:
        raise NotImplementedError(f"{op}: not implemented for 'bool'")


def abs(input: Tensor) -> Tensor:
    _reject_bool("abs", input)
    if input.dtype.category < 2:
        return NoGradUnary.apply(input, "abs")
    return Abs.apply(input)


def reciprocal(input: Tensor) -> Tensor:
    return Reciprocal.apply(input)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    _check_tensor("maximum", other)
    if input.dtype.category < 2 and other.dtype.category < 2:
        return NoGradBinary.apply(input, other, "maximum")
    return Maximum.apply(input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    _check_tensor("minimum", other)
    if input.dtype.category < 2 and other.dtype.category < 2:
        return NoGradBinary.apply(input, other, "minimum")
    return Minimum.apply(input, other)


def atan2(input: Tensor, other: Tensor) -> Tensor:
    return Atan2.apply(input, other)


# ------------------------------------------------------------------ math

def exp(x: Tensor) -> Tensor:
    (x,) = amp.autocast_args("exp", x)
    return Exp.apply(x)


def exp2(x: Tensor) -> Tensor:
    return Exp2.apply(x)


def expm1(x: Tensor) -> Tensor:
    return Expm1.apply(x)


def log(x: Tensor) -> Tensor:
    (x,) = amp.autocast_args("log", x)
    return Log.apply(x)


def log2(x: Tensor) -> Tensor:
    return Log2.apply(x)


def log10(x: Tensor) -> Tensor:
    return Log.apply(x) * (1 / math.log(10.0))


def log1p(x: Tensor) -> Tensor:
    return Log1p.apply(x)


def sqrt(x: Tensor) -> Tensor:
    return Sqrt.apply(x)


def rsqrt(x: Tensor) -> Tensor:
    return Rsqrt.apply(x)


def square(x: Tensor) -> Tensor:
    if x.dtype is dtypes.bool_:
        x = x.to(dtypes.int64)
    return Mul.apply(x, x)


def sin(x: Tensor) -> Tensor:
    return Sin.apply(x)


def cos(x: Tensor) -> Tensor:
    return Cos.apply(x)


def tan(x: Tensor) -> Tensor:
    return Tan.apply(x)


def tanh(x: Tensor) -> Tensor:
    return Tanh.apply(x)


def sigmoid(x: Tensor) -> Tensor:
    return Sigmoid.apply(x)


def relu(x: Tensor) -> Tensor:
    if x.dtype is dtypes.bool_:
        raise RuntimeError("relu: Boolean inputs not supported for relu")
    if x.dtype.category < 2:
        return NoGradUnary.apply(x, "relu")
    return Relu.apply(x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU, exact (``x * Phi(x)``) or with the tanh approximation."""
    if approximate == "none":
        return Gelu.apply(x)
    if approximate == "tanh":
        return GeluTanh.apply(x)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got '{approximate}'")


def silu(x: Tensor) -> Tensor:
    return Silu.apply(x)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold`` (torch's softplus)."""
    if beta == 1.0 and threshold == 20.0:
        return Softplus.apply(x)
    scaled = x * beta
    return where(scaled > threshold, x, Softplus.apply(scaled) / beta)


def erf(x: Tensor) -> Tensor:
    return Erf.apply(x)


def _rounding(op: str):
    def fn(x: Tensor) -> Tensor:
        if op != "sign":
            _reject_bool(op, x)
        if x.dtype.category < 2 and op != "sign":
            return x.clone()
        return ZeroGradUnary.apply(x, op)

    fn.__name__ = op
    fn.__doc__ = f"Elementwise {op} (gradient zero, as in torch)."
    return fn


sign = _rounding("sign")
floor = _rounding("floor")
ceil = _rounding("ceil")
trunc = _rounding("trunc")


def round(x: Tensor, decimals: int = 0) -> Tensor:
    """Round half to even, optionally to ``decimals`` places."""
    if decimals == 0:
        return _rounding("round")(x)
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"round: decimals={decimals} not implemented for '{x.dtype.name}'")
    scale = 10.0 ** decimals
    return _rounding("round")(x * scale) / scale


def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Clamp into [min, max]; bounds are numbers or tensors; the gradient passes where the input is inside."""
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
    # Conditions are written so NaN fails them: a NaN input stays NaN, as in torch.
    out = x
    if min is not None:
        lo = min if isinstance(min, Tensor) else Tensor._scalar_like(min, x)
        out = where(out < lo, lo.to(_result_dtype(x, min)) if isinstance(min, Tensor) else min, out)
        if isinstance(min, Tensor) and out.dtype is not _result_dtype(x, min):
            out = out.to(_result_dtype(x, min))
    if max is not None:
        out = where(out > max, max, out)
    if x.dtype.is_floating_point and x.requires_grad:
        # torch passes no gradient through NaN inputs of clamp.
        out = where(isnan(x), x.detach(), out)
    if out.dtype is not x.dtype and not isinstance(min, Tensor) and not isinstance(max, Tensor):
        target = x.dtype
        for bound in (min, max):
            if bound is not None:
                target = dtypes.result_type_scalar(target, bound)
        out = out.to(target)
    return out


clip = clamp


def clamp_min(x: Tensor, min: Any) -> Tensor:
    """``clamp(x, min=min)``."""
    return clamp(x, min=min)


def clamp_max(x: Tensor, max: Any) -> Tensor:
    """``clamp(x, max=max)``."""
    return clamp(x, max=max)


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``."""
    return input + weight * (end - input)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Tensor:
    """Elementwise select: ``input`` where ``condition`` is true, else ``other`` (numbers or tensors)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition.dtype is not dtypes.bool_:
        if condition.dtype is dtypes.uint8:
            condition = condition.to(dtypes.bool_)
        else:
            raise RuntimeError(f"where: expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{condition.dtype}")
    return Where.apply(condition, input, other)


def isnan(x: Tensor) -> Tensor:
    return NoGradUnary.apply(x, "isnan")


def isinf(x: Tensor) -> Tensor:
    return NoGradUnary.apply(x, "isinf")


def isfinite(x: Tensor) -> Tensor:
    if x.dtype.category < 2:
        return ones_like_bool(x)
    return logical_not(logical_or(isnan(x), isinf(x)))


def zeros_like_detached(x: Tensor) -> Tensor:
    """Zeros with the shape, dtype and device of ``x`` (no history)."""
    return Tensor._wrap(NDArray.full(x.shape, 0, x.dtype, x.device))


def ones_like_bool(x: Tensor) -> Tensor:
    return Tensor._wrap(NDArray.full(x.shape, True, dtypes.bool_, x.device))


def nan_to_num(x: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """Replace NaN with ``nan`` and infinities with the given values (default: the dtype's finite extremes)."""
    if x.dtype.category < 2:
        return x.clone()
    big = finfo_max(x.dtype)
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    out = where(isnan(x), nan, x)
    out = where(out == math.inf, posinf, out)
    return where(out == -math.inf, neginf, out)


def finfo_max(d: dtypes.dtype) -> float:
    return {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
            "float64": 1.7976931348623157e308}[d.name]


# ------------------------------------------------------------------ comparison and logic

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
    for t in (input, other):
        if isinstance(t, Tensor) and t.dtype.is_floating_point or isinstance(t, float):
            dt = t.dtype.name if isinstance(t, Tensor) else "float"
            raise NotImplementedError(f"{op}: not implemented for '{dt}' (integer or bool tensors only)")
    return NoGradBinary.apply(input, other, op)


def bitwise_and(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_and", input, other)


def bitwise_or(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_or", input, other)


def bitwise_xor(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_xor", input, other)


def bitwise_not(input: Tensor) -> Tensor:
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"bitwise_not: not implemented for '{input.dtype.name}' (integer or bool tensors "
                                  "only)")
    return NoGradUnary.apply(input, "bitwise_not")


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements."""
    if input.shape != other.shape:
        return False
    return bool(eq(input, other).all().item())


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise (infinities equal to themselves)."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose: {input.dtype} did not match {other.dtype}")
    if input.dtype.category < 2:
        return eq(input, other)
    close = eq(input, other)
    diff = (input - other).abs()
    finite = logical_and(isfinite(input), isfinite(other))
    close = logical_or(close, logical_and(finite, diff <= atol + rtol * other.abs()))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    return close


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


# ------------------------------------------------------------------ reductions

def _reduce_dims(op: str, dim: Any, ndim: int) -> tuple[int, ...]:
    """Normalized reduction dims; like torch, an empty list of dims means every dim."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return normalize_dims(op, dim, ndim)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    (input,) = amp.autocast_args("sum", input)
    dims = _reduce_dims("sum", dim, input.ndim)
    return Sum.apply(input, dims, keepdim, dtypes.to_dtype(dtype) if dtype is not None else None)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
            f"Got: {input.dtype.name}"
        )
    dims = _reduce_dims("mean", dim, input.ndim)
    count = math.prod(input.shape[d] for d in dims)
    total = Sum.apply(input, dims, keepdim, None)
    return total / count if count else total * math.nan


def prod(input: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    (input,) = amp.autocast_args("prod", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    dims = normalize_dims("prod", dim, input.ndim)
    return Prod.apply(input, dims, keepdim)


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    dims = normalize_dims("amax", None if dim == () else dim, input.ndim)
    return Extremum.apply(input, dims, keepdim, "amax")


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    dims = normalize_dims("amin", None if dim == () else dim, input.ndim)
    return Extremum.apply(input, dims, keepdim, "amin")


class MinMaxResult(tuple):
    """(values, indices) pair with attribute access, as torch.return_types."""

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]


def _max_min(op: str, input: Tensor, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, Tensor):
        return maximum(input, dim) if op == "max" else minimum(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return Extremum.apply(input, tuple(range(input.ndim)), False, "amax" if op == "max" else "amin")
    d = normalize_dim(op, dim, input.ndim)
    return MinMaxResult(MaxWithIndices.apply(input, d, keepdim, op))


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """Largest element, or with ``dim`` the (values, indices) along it, or with a tensor the elementwise maximum."""
    return _max_min("max", input, dim, keepdim)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return _max_min("min", input, dim, keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    if input.numel() == 0 and dim is None:
        raise IndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
    d = None if dim is None else normalize_dim("argmax", dim, input.ndim)
    return ArgReduce.apply(input, d, keepdim, "argmax")


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    if input.numel() == 0 and dim is None:
        raise IndexError("argmin(): Expected reduction dim to be specified for input.numel() == 0.")
    d = None if dim is None else normalize_dim("argmin", dim, input.ndim)
    return ArgReduce.apply(input, d, keepdim, "argmin")


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Variance with Bessel's ``correction`` (default 1; ``unbiased=False`` means 0)."""
    if correction is None:
        correction = 0 if unbiased is False else 1
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"var: std and var only support floating point inputs, got {input.dtype.name}")
    dims = _reduce_dims("var", dim, input.ndim)
    n = math.prod(input.shape[d] for d in dims)
    centered = input - mean(input, dims, keepdim=True)
    total = Sum.apply(centered * centered, dims, keepdim, None)
    # torch divides by max(0, n - correction): too few samples give inf (or nan for an all-zero sum).
    return total / builtins.max(0, n - correction)


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    return _root(var(input, dim, unbiased, keepdim, correction=correction), 2)


def _root(x: Tensor, p: float) -> Tensor:
    """``x ** (1 / p)`` with a zero gradient where ``x == 0`` (torch's convention for std and norms at zero)."""
    zero = x == 0
    safe = where(zero, 1.0, x)
    return where(zero, 0.0, sqrt(safe) if p == 2 else safe ** (1.0 / p))


def var_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple[Tensor, Tensor]:
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Vector p-norm over ``dim`` (all elements by default): 2 / "fro", 1, inf, -inf, 0 or any real p."""
    (input,) = amp.autocast_args("norm", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"norm: Expected a floating point tensor as input, got {input.dtype.name}")
    dims = _reduce_dims("norm", dim, input.ndim)
    if p in ("fro", 2, 2.0):
        return _root(sum(input * input, dims, keepdim), 2)
    if p == 1:
        return sum(input.abs(), dims, keepdim)
    if p == math.inf:
        return amax(input.abs(), dims, keepdim)
    if p == -math.inf:
        return amin(input.abs(), dims, keepdim)
    if p == 0:
        return sum((input != 0).to(input.dtype), dims, keepdim)
    if isinstance(p, str):
        raise ValueError(f"norm: unsupported norm type {p!r}")
    return _root(sum(input.abs() ** p, dims, keepdim), p)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` computed stably by subtracting the maximum first."""
    dims = normalize_dims("logsumexp", dim, input.ndim)
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    if input.numel() == 0:
        # An empty sum is 0 and its log -inf; there is no maximum to subtract.
        return log(sum(exp(input), dims, keepdim))
    m = amax(input, dims, keepdim=True).detach()
    m = where(isinf(m), 0.0, m)
    out = log(sum(exp(input - m), dims, keepdim=True)) + m
    return out if keepdim else out.squeeze(dims)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    (input,) = amp.autocast_args("softmax", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"softmax: not implemented for '{input.dtype.name}'")
    return Softmax.apply(input, normalize_dim("softmax", dim, input.ndim), False)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    (input,) = amp.autocast_args("log_softmax", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"log_softmax: not implemented for '{input.dtype.name}'")
    return Softmax.apply(input, normalize_dim("log_softmax", dim, input.ndim), True)


def cumsum(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    (input,) = amp.autocast_args("cumsum", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    return Cumsum.apply(input, normalize_dim("cumsum", dim, input.ndim), dtype is None)


def cumprod(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    return Cumprod.apply(input, normalize_dim("cumprod", dim, input.ndim), dtype is None)


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    dims = normalize_dims("all", dim, input.ndim)
    return Tensor._wrap(input.ndarray.reduce("all", dims, keepdim))


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    dims = normalize_dims("any", dim, input.ndim)
    return Tensor._wrap(input.ndarray.reduce("any", dims, keepdim))


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    return sum(input != 0, dim)


# ------------------------------------------------------------------ shapes and views

def _shape_args(op: str, shape: tuple) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:
        return tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{op}(): shape must be a sequence of ints, got {shape}") from None


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """A view when the strides allow one (sharing memory and version counter, as torch), else a copy."""
    nd = input.ndarray
    target = infer_shape("reshape", _shape_args("reshape", shape), nd.size)
    if view_strides(nd.shape, nd.strides, target) is not None:
        return View.apply(input, target, "reshape")
    return Reshape.apply(input, target)


def view(input: Tensor, *shape: Any) -> Tensor:
    if len(shape) == 1 and (isinstance(shape[0], dtypes.dtype)):
        raise RuntimeError("view(dtype) is not supported by Genesis; use .to(dtype) to convert")
    return View.apply(input, _shape_args("view", shape), "view")


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if input.ndim == 0:
        return reshape(input, 1)
    s = normalize_dim("flatten", start_dim, input.ndim)
    e = normalize_dim("flatten", end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape[:s] + (math.prod(input.shape[s:e + 1]),) + input.shape[e + 1:]
    return reshape(input, shape)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = normalize_dim("unflatten", dim, input.ndim)
    sizes = infer_shape("unflatten", sizes, input.shape[d])
    return reshape(input, input.shape[:d] + tuple(sizes) + input.shape[d + 1:])


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    dims = None if dim is None else normalize_dims("squeeze", dim, input.ndim)
    return Squeeze.apply(input, dims)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return Unsqueeze.apply(input, dim)


def permute(input: Tensor, *dims: Any) -> Tensor:
    dims = _shape_args("permute", dims)
    if len(dims) != input.ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}"
        )
    return Permute.apply(input, dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    if input.ndim == 0:
        normalize_dim("transpose", dim0, 0)
        normalize_dim("transpose", dim1, 0)
        return input
    return Transpose.apply(input, dim0, dim1)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [normalize_dim("movedim", d, input.ndim) for d in src]
    dst = [normalize_dim("movedim", d, input.ndim) for d in dst]
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim
swapaxes = transpose
swapdims = transpose


def ravel(input: Tensor) -> Tensor:
    """The flattened tensor (a view when the layout allows one)."""
    return reshape(input, -1)


def t(input: Tensor) -> Tensor:
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def expand(input: Tensor, *shape: Any) -> Tensor:
    return Expand.apply(input, _shape_args("expand", shape))


def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    return Expand.apply(input, tuple(shape), "broadcast_to")


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    shape = broadcast_shapes("broadcast_tensors", *(t.shape for t in tensors))
    return tuple(broadcast_to(t, shape) for t in tensors)


def view_of(input: Tensor, make_view: Callable[[NDArray], NDArray]) -> Tensor:
    """A differentiable view given by a function of the NDArray (used by slicing, narrow, diagonal ...)."""
    return ViewOf.apply(input, make_view)


def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    d = normalize_dim("narrow", dim, input.ndim)
    start = int(start)
    n = input.shape[d]
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return view_of(input, lambda x: x.narrow(d, start, length))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    d = normalize_dim("select", dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension {d}"
        )
    key = (slice(None),) * d + (index,)
    return view_of(input, lambda x: x.basic_index(key))


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return view_of(input, lambda x: x.diagonal(offset, dim1, dim2))


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Sliding windows of ``size`` with ``step`` along ``dimension`` as a new last dim (Tensor.unfold)."""
    return view_of(input, lambda x: x.unfold(dimension, size, step))


def contiguous(input: Tensor, memory_format: _mf.memory_format = _mf.contiguous_format) -> Tensor:
    """``input`` if it is dense in ``memory_format`` (row-major by default, or channels_last), else such a copy."""
    if memory_format is _mf.contiguous_format:
        return input if input.is_contiguous() else Clone.apply(input)
    _mf.check("contiguous", memory_format)
    if memory_format is _mf.preserve_format:
        if input.is_contiguous():
            return input
        raise RuntimeError("contiguous(): preserve memory format is unsupported by the contiguous operator")
    strides = _mf.strides(tuple(input.shape), memory_format)
    return input if input.is_contiguous(memory_format=memory_format) else ToMemoryFormat.apply(input, strides=strides)


def clone(input: Tensor, memory_format: _mf.memory_format = _mf.preserve_format) -> Tensor:
    """A copy of ``input``; ``preserve_format`` keeps a channels_last layout, other formats set the copy's layout."""
    fmt = _mf.check("clone", memory_format)
    if fmt is _mf.preserve_format:
        fmt = _mf.suggest(tuple(input.shape), input.stride())
    if fmt is _mf.contiguous_format:
        return Clone.apply(input)
    return ToMemoryFormat.apply(input, strides=_mf.strides(tuple(input.shape), fmt))


def _check_cat(op: str, tensors: Sequence[Tensor], dim: int) -> tuple[list[Tensor], int]:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    # torch skips 1-D empty tensors in cat (legacy behaviour).
    nonempty = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] if op == "cat" else tensors
    ref = nonempty[0] if nonempty else tensors[0]
    if ref.ndim == 0:
        raise RuntimeError(f"{op}(): zero-dimensional tensor (at position 0) cannot be concatenated")
    d = normalize_dim(op, dim, ref.ndim)
    for i, t in enumerate(nonempty):
        if t.ndim != ref.ndim:
            raise RuntimeError(f"{op}(): Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}")
        if t.device is not ref.device:
            raise RuntimeError(f"{op}(): Expected all tensors to be on the same device, but found {ref.device} "
                               f"and {t.device}")
        for k in range(ref.ndim):
            if k != d and t.shape[k] != ref.shape[k]:
                raise RuntimeError(
                    f"{op}(): Sizes of tensors must match except in dimension {d}. Expected size {ref.shape[k]} but "
                    f"got size {t.shape[k]} for tensor number {i} in the list."
                )
    return (nonempty or tensors[:1]), d


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors along an existing dim; dtypes are promoted as in torch."""
    if not isinstance(tensors, Tensor):
        tensors = list(tensors)
    kept, d = _check_cat("cat", tensors, dim)
    dt = kept[0].dtype
    for t in kept[1:]:
        dt = dtypes.promote_types(dt, t.dtype)
    tensors = [t.to(dt) for t in tensors]
    if len(tensors) == 1:
        return tensors[0].clone()
    return Cat.apply(d, *tensors)


concat = cat
concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Stack same-shape tensors along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    d = normalize_dim("stack", dim, tensors[0].ndim + 1)
    return cat([t.unsqueeze(d) for t in tensors], d)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    return cat([t.reshape(1, -1) if t.ndim == 1 else t for t in tensors], 0)


def split(input: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into chunks of a given size (the last may be smaller) or of the listed sizes."""
    d = normalize_dim("split", dim, input.ndim)
    n = input.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"split: split_size can only be 0 if dimension size is 0, but got {size}")
        # An empty dim still splits into one empty piece, as in torch.
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size and n else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(input, d, start, s))
        start += s
    return tuple(out)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input.shape[normalize_dim("chunk", dim, input.ndim)]
    if n == 0:
        # torch returns `chunks` empty pieces of an empty dim.
        return split(input, [0] * chunks, dim)
    return split(input, -(-n // chunks), dim)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``n`` nearly equal parts (an int) or at the given indices (a sequence), as torch."""
    d = normalize_dim("tensor_split", dim, input.ndim)
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {sections}")
        base, extra = divmod(n, sections)
        return split(input, [base + 1] * extra + [base] * (sections - extra), d)
    # Piece k is input[indices[k-1]:indices[k]] along dim, with Python slice semantics (so pieces may be empty).
    bounds = [0] + [int(i) for i in indices_or_sections] + [None]
    lead = (slice(None),) * d
    return tuple(getitem(input, lead + (slice(a, b),)) for a, b in zip(bounds, bounds[1:]))


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = normalize_dim("unbind", dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input.shape[d]))


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile the tensor ``sizes[i]`` times along each dim (torch's Tensor.repeat)."""
    sizes = _shape_args("repeat", sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError("repeat: Number of dimensions of repeat dims can not be smaller than number of dimensions "
                           f"of tensor ({len(sizes)} < {input.ndim})")
    if builtins.any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat: repeats can not be negative, got {list(sizes)}")
    x = input.reshape((1,) * (len(sizes) - input.ndim) + input.shape)
    # Interleave a new size-r axis before each dim, expand, then merge: (r0, n0, r1, n1, ...) -> (r0*n0, ...).
    expanded_shape, view_shape = [], []
    for r, n in zip(sizes, x.shape):
        view_shape += [1, n]
        expanded_shape += [r, n]
    out = x.reshape(view_shape).expand(expanded_shape)
    return out.reshape([r * n for r, n in zip(sizes, x.shape)])


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    dims = tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times (an int or one count per element) along ``dim``.

    With only a tensor of counts, ``repeat_interleave(counts)`` repeats each index ``i`` ``counts[i]`` times.
    """
    if repeats is None:
        return repeat_interleave(arange_like(input.numel(), input), input.reshape(-1), 0)
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = normalize_dim("repeat_interleave", dim, input.ndim)
    n = input.shape[d]
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError(f"repeat_interleave: repeats can not be negative, got {repeats}")
        x = input.unsqueeze(d + 1)
        shape = list(x.shape)
        shape[d + 1] = repeats
        out_shape = list(input.shape)
        out_shape[d] = n * repeats
        return x.expand(shape).reshape(out_shape)
    counts = repeats if isinstance(repeats, Tensor) else input.new_tensor(repeats, dtype=dtypes.int64)
    if counts.numel() == 1:
        return repeat_interleave(input, int(counts.item()), d)
    if counts.shape != (n,):
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.shape[0]} and input.size({d}) = {n}")
    # Output position p takes element i where cumsum(counts)[i - 1] <= p < cumsum(counts)[i].
    ends = cumsum(counts, 0)
    total = int(ends[-1].item()) if n else 0
    index = searchsorted(ends, arange_like(total, counts), right=True)
    return index_select(input, d, index)


def arange_like(n: int, like: Tensor) -> Tensor:
    return Tensor._wrap(like.device.backend.arange(0, n, 1, dtypes.int64, like.device))


def flip(input: Tensor, dims: Any) -> Tensor:
    dims = normalize_dims("flip", dims, input.ndim)
    out = input
    for d in dims:
        n = input.shape[d]
        index = Tensor._wrap(input.device.backend.arange(n - 1, -1, -1, dtypes.int64, input.device))
        out = index_select(out, d, index)
    return out if dims else input.clone()


def fliplr(input: Tensor) -> Tensor:
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    return flip(input, 0)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Rotate elements by ``shifts`` along ``dims`` (the flattened tensor when dims is None)."""
    if dims is None:
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    out = input
    for s, d in zip(shifts, dims):
        d = normalize_dim("roll", d, input.ndim)
        n = input.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return out


def _band_mask(x: Tensor, diagonal: int, upper: bool) -> Tensor:
    rows, cols = x.shape[-2], x.shape[-1]
    r = arange_like(rows, x).unsqueeze(1)
    c = arange_like(cols, x).unsqueeze(0)
    return (c - r >= diagonal) if upper else (c - r <= diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return where(_band_mask(input, diagonal, True), input, _zero_of(input))


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return where(_band_mask(input, diagonal, False), input, _zero_of(input))


def _zero_of(x: Tensor) -> bool | int:
    """A Python zero that keeps ``x``'s dtype under promotion (False for bool tensors)."""
    return False if x.dtype is dtypes.bool_ else 0


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D input: a square matrix with it on the ``diagonal``; 2-D input: that diagonal as a vector."""
    if input.ndim == 2:
        return diagonal_copy(input, diagonal)
    if input.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    n = input.shape[0] + (diagonal if diagonal >= 0 else -diagonal)
    out = Tensor._wrap(NDArray.full((n, n), 0, input.dtype, input.device))
    rows = arange_like(input.shape[0], input) + (0 if diagonal >= 0 else -diagonal)
    cols = arange_like(input.shape[0], input) + (diagonal if diagonal >= 0 else 0)
    return index_put(out, (rows, cols), input)


def diagonal_copy(input: Tensor, offset: int = 0) -> Tensor:
    return diagonal(input, offset).clone()


def trace(input: Tensor) -> Tensor:
    return diagonal(input).sum()


# ------------------------------------------------------------------ indexing

def _to_index_tensor(op: str, index: Any, like: Tensor, error: type[Exception] = RuntimeError) -> Tensor:
    """An int64 index tensor on ``like``'s device; ``error`` (torch's type for ``op``) for non-integer indices."""
    if not isinstance(index, Tensor):
        index = like.new_tensor(index, dtype=dtypes.int64)
    if index.dtype.category != 1:
        raise error(f"{op}(): Expected dtype int64 for index, but got {index.dtype}")
    if index.device is not like.device:
        raise RuntimeError(f"{op}(): Expected all tensors to be on the same device, but found {like.device} and "
                           f"{index.device}")
    return index if index.dtype is dtypes.int64 else index.to(dtypes.int64)


def _check_bounds(op: str, index: Tensor, size: int, dim: int, negative: bool = True,
                  error: type[Exception] = IndexError) -> Tensor:
    """Wrap negative indices and raise ``error`` naming the offending index if any is out of range.

    ``negative=False`` for ops where torch refuses negative indices (gather, scatter, index_select, index_add);
    ``error`` is the exception type torch raises for that op.
    """
    if index.numel() == 0:
        return index
    if index.device.type == "cuda" and _cuda.is_current_stream_capturing():
        return index  # a graph being captured cannot read device values: indices are trusted, as in torch
    # Both extremes in one host transfer: on a GPU each read of a result waits for the device.
    nd = index.ndarray
    dims = tuple(range(nd.ndim))
    lo, hi = (int(v) for v in cat_nd([nd.reduce("amin", dims, True).reshape((1,)),
                                       nd.reduce("amax", dims, True).reshape((1,))], 0).numpy())
    if lo < (-size if negative else 0) or hi >= size:
        bad = hi if hi >= size else lo
        raise error(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")
    if lo < 0:
        index = where(index < 0, index + size, index)
    return index


def _normalize_key(key: Any) -> tuple:
    """The key as a tuple; like torch, a list holding sequences, tensors, slices, None or ... is a tuple too."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and len(key) < 32 and builtins.any(
            isinstance(k, (list, tuple, slice, Tensor)) or k is None or k is Ellipsis for k in key):
        return tuple(key)
    return (key,)


def _is_basic(key: tuple) -> bool:
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, int) and not isinstance(k, bool):
            continue
        if hasattr(k, "__index__") and not isinstance(k, (Tensor, bool, list)) and not hasattr(k, "shape"):
            continue
        return False
    return True


def _split_key(x: Tensor, key: tuple) -> tuple[tuple, list[tuple[int, Tensor]]]:
    """Separate a mixed key into a basic view key and advanced entries (dim in the view, int64 index)."""
    items = []
    for k in key:
        if isinstance(k, Tensor):
            if k.device is not x.device:
                # As torch: CPU indices may index a tensor on any device; other mixes are an error.
                if k.device.type != "cpu":
                    raise RuntimeError(f"index: indices should be either on cpu or on the same device as the "
                                       f"indexed tensor ({x.device}), got indices on {k.device}")
                k = k.to(x.device)
            items.append(k)
        elif isinstance(k, (list, tuple)) or hasattr(k, "__array__") and not isinstance(k, (int, float)):
            t = _from_data(k, device=x.device)
            items.append(t if t.dtype is dtypes.bool_ else t.to(dtypes.int64))
        elif isinstance(k, bool):
            items.append(_from_data(k, device=x.device))
        elif isinstance(k, (int, slice)) or k is None or k is Ellipsis:
            items.append(k)
        elif hasattr(k, "__index__"):
            items.append(k.__index__())
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                f"(got {type(k).__name__})"
            )
    consumed = 0
    for k in items:
        if isinstance(k, Tensor):
            consumed += k.ndim if k.dtype is dtypes.bool_ else 1
        elif k is not None and k is not Ellipsis:
            consumed += 1
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    basic, advanced = [], []
    view_dim = 0
    for k in items:
        if k is Ellipsis:
            n = x.ndim - consumed
            basic += [slice(None)] * n
            view_dim += n
            consumed = x.ndim
        elif k is None:
            basic.append(None)
            view_dim += 1
        elif isinstance(k, int):
            basic.append(k)
        elif isinstance(k, slice):
            basic.append(k)
            view_dim += 1
        elif k.dtype is dtypes.bool_:
            if k.ndim == 0:
                basic.append(None)
                advanced.append((view_dim, k.new_tensor([0] if k.item() else [], dtype=dtypes.int64)))
                view_dim += 1
                continue
            start = len([b for b in basic if b is not None])
            for j, n in enumerate(k.shape):
                if x.shape[start + j] != n:
                    raise IndexError(f"The shape of the mask {list(k.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(x.shape)} at index {start + j}")
            coords = nonzero(k)
            for j in range(k.ndim):
                basic.append(slice(None))
                advanced.append((view_dim, coords[:, j]))
                view_dim += 1
        else:
            if k.dtype.category != 1:
                raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {k.dtype}")
            basic.append(slice(None))
            advanced.append((view_dim, k.to(dtypes.int64)))
            view_dim += 1
    return tuple(basic), advanced


def _advanced_indices(view: Tensor, advanced: list[tuple[int, Tensor]]) -> tuple:
    try:
        shape = broadcast_shapes("index", *(t.shape for _, t in advanced))
    except RuntimeError:
        shapes = ", ".join(str(list(t.shape)) for _, t in advanced)
        raise IndexError(f"index: shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{shapes}") from None
    indices: list = [None] * view.ndim
    for d, t in advanced:
        t = _check_bounds("index", t, view.shape[d], d)
        indices[d] = t.ndarray.expand(shape)
    return tuple(indices)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` with torch's semantics: basic keys give views, tensors/lists/masks give copies."""
    key = _normalize_key(key)
    if _is_basic(key):
        key = tuple(k.__index__() if not isinstance(k, (int, slice)) and k is not None and k is not Ellipsis else k
                    for k in key)
        return view_of(x, lambda a: a.basic_index(key))
    basic, advanced = _split_key(x, key)
    view = view_of(x, lambda a: a.basic_index(basic)) if basic else x
    return Index.apply(view, _advanced_indices(view, advanced))


def index_tensor(x: Tensor, indices: tuple) -> Tensor:
    """``x[indices]`` for NDArray-level indices (one entry per dim, None or broadcast int64 arrays)."""
    return Index.apply(x, indices)


def index_put(x: Tensor, indices: tuple, values: Any, accumulate: bool = False) -> Tensor:
    """Out-of-place ``x[indices] = values``; indices are NDArrays/None per dim or a tuple of index Tensors."""
    if not isinstance(values, Tensor):
        values = Tensor._wrap(NDArray.scalar(values, x.dtype, x.device))
    _check_same_dtype("index_put", x, values)
    if builtins.any(isinstance(i, Tensor) for i in indices):
        tensors = [_to_index_tensor("index_put", i, x) for i in indices]
        shape = broadcast_shapes("index_put", *(t.shape for t in tensors))
        checked = [_check_bounds("index_put", t, x.shape[d], d) for d, t in enumerate(tensors)]
        indices = tuple(t.ndarray.expand(shape) for t in checked) + (None,) * (x.ndim - len(tensors))
    return IndexPut.apply(x, indices, values, accumulate)


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value`` in place for every key ``getitem`` takes, differentiable with respect to both.

    Without a graph the value is written through the view the key's basic part selects (with ``index_put_`` for
    advanced parts). With a graph the assignment is an out-of-place ``index_put`` at the flat positions of the
    selected elements, whose result ``x`` takes over.
    """
    key = _normalize_key(key)
    if not isinstance(value, Tensor):
        value = x.new_tensor(value, dtype=x.dtype) if not isinstance(value, (int, float, bool)) else value
    if isinstance(value, Tensor) and value.device is not x.device:
        if value.ndim:
            raise RuntimeError(f"setitem: expected value on {x.device}, got a tensor on {value.device}")
        value = value.to(x.device)
    if _is_basic(key):
        key = tuple(k.__index__() if not isinstance(k, (int, slice)) and k is not None and k is not Ellipsis else k
                    for k in key)
        target, indices = x.ndarray.basic_index(key), None
        target_shape = target.shape
    else:
        basic, advanced = _split_key(x, key)
        target = x.ndarray.basic_index(basic) if basic else x.ndarray
        indices = _advanced_indices(Tensor._wrap(target), advanced)
        target_shape = _indexed_shape(target.shape, indices)
        if isinstance(value, Tensor) and value.dtype is not x.dtype:
            raise RuntimeError(f"setitem: Index put requires the source and destination dtypes match, got "
                               f"{x.dtype.name} for the destination and {value.dtype.name} for the source.")
    if isinstance(value, Tensor):
        value = _value_for(value, target_shape)
    if not (_grad_on() and (x.requires_grad or isinstance(value, Tensor) and value.requires_grad)):
        x._check_inplace("setitem")
        if math.prod(target_shape) == 0:
            return
        if indices is None:
            target.copy_(value.ndarray if isinstance(value, Tensor) else value)
        else:
            values = value.ndarray if isinstance(value, Tensor) else NDArray.scalar(value, x.dtype, x.device)
            values = values.astype(x.dtype).expand(target_shape, "setitem")
            target.backend.index_put_(target, full_indices(target.shape, indices), values, False)
        x._bump_version()
        return
    coords = Tensor._wrap(x.device.backend.arange(0, x.numel(), 1, dtypes.int64, x.device)).reshape(x.shape)
    positions = getitem(coords, key).reshape(-1)
    values = value.to(x.dtype) if isinstance(value, Tensor) else x.new_tensor(value, dtype=x.dtype)
    values = values.expand(target_shape).reshape(-1)
    x._assign_inplace(index_put(x.reshape(-1), (positions,), values).reshape(x.shape))


def _indexed_shape(shape: tuple[int, ...], indices: tuple) -> tuple[int, ...]:
    """Shape of ``x[indices]`` for one entry per dim (None or index arrays of one broadcast shape)."""
    advanced = [d for d, ix in enumerate(indices) if ix is not None]
    index_shape = tuple(indices[advanced[0]].shape)
    plain = tuple(shape[d] for d, ix in enumerate(indices) if ix is None)
    if advanced == list(range(advanced[0], advanced[-1] + 1)):
        return plain[:advanced[0]] + index_shape + plain[advanced[0]:]
    return index_shape + plain


def _value_for(value: Tensor, target_shape: tuple[int, ...]) -> Tensor:
    """The assigned value with extra leading size-1 dims dropped; RuntimeError if it cannot broadcast."""
    shape = tuple(value.shape)
    while len(shape) > len(target_shape) and shape[0] == 1:
        shape = shape[1:]
    ok = len(shape) <= len(target_shape) and builtins.all(
        v in (1, t) for v, t in zip(reversed(shape), reversed(target_shape)))
    if not ok:
        raise RuntimeError(f"setitem: shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast "
                           f"to indexing result of shape {list(target_shape)}")
    return value.reshape(shape) if shape != tuple(value.shape) else value


def _grad_on() -> bool:
    from genesis.autograd import is_grad_enabled

    return is_grad_enabled()


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    d = normalize_dim("gather", dim, input.ndim)
    index = _to_index_tensor("gather", index, input)
    if index.ndim != input.ndim and not (index.ndim <= 1 and input.ndim <= 1):
        raise RuntimeError(f"gather(): Index tensor must have the same number of dimensions as input tensor "
                           f"(index {list(index.shape)}, input {list(input.shape)})")
    for k in range(index.ndim):
        if k != d and index.shape[k] > input.shape[k]:
            raise RuntimeError(f"gather(): Size does not match at dimension {k} expected index {list(index.shape)} "
                               f"to be smaller than self {list(input.shape)} apart from dimension {d}")
    index = _check_bounds("gather", index, input.shape[d] if input.ndim else 1, d, False, RuntimeError)
    return Gather.apply(input, d, index)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = normalize_dim("take_along_dim", dim, input.ndim)
    if indices.ndim != input.ndim:
        raise RuntimeError(f"take_along_dim(): input and indices should have the same number of dimensions, but got "
                           f"{input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    # Every dim but `dim` broadcasts between input and indices.
    shape = list(broadcast_shapes("take_along_dim", _with_size(input.shape, d, 1), _with_size(indices.shape, d, 1)))
    shape_in, shape_idx = list(shape), list(shape)
    shape_in[d], shape_idx[d] = input.shape[d], indices.shape[d]
    return gather(input.expand(shape_in), d, indices.expand(shape_idx))


def _with_size(shape: tuple[int, ...], dim: int, size: int) -> tuple[int, ...]:
    return shape[:dim] + (size,) + shape[dim + 1:]


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened input at ``index`` (negative indices count from the end), shaped as ``index``."""
    index = _to_index_tensor("take", index, input)
    flat = _check_bounds("take", index.reshape(-1), input.numel(), 0)
    return gather(input.reshape(-1), 0, flat).reshape(index.shape)


def zeros_scatter(shape: tuple[int, ...], dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Zeros of ``shape`` with ``src`` scatter-added at ``index`` along ``dim`` (gather's gradient)."""
    zeros = Tensor._wrap(NDArray.full(shape, 0, src.dtype, src.device))
    return Scatter.apply(zeros, dim, index, src, "add")


def _scatter(op: str, input: Tensor, dim: int, index: Tensor, src: Any, mode: str) -> Tensor:
    d = normalize_dim(op, dim, input.ndim)
    index = _to_index_tensor(op, index, input)
    if isinstance(src, Tensor) and index.ndim != src.ndim and index.numel():
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as src tensor")
    index = _check_bounds(op, index, input.shape[d] if input.ndim else 1, d, False, RuntimeError)
    if isinstance(src, Tensor):
        _check_same_dtype(op, input, src)
        for k in range(index.ndim):
            if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > input.shape[k]):
                raise RuntimeError(f"{op}(): Expected index {list(index.shape)} to be no larger than self "
                                   f"{list(input.shape)} apart from dimension {d} and to be no larger than src "
                                   f"{list(src.shape)}")
    if isinstance(src, Tensor) and index.shape != src.shape:
        src = src[tuple(slice(0, n) for n in index.shape)]
    return Scatter.apply(input, d, index, src, mode)


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, value: Any = None, reduce: str | None = None
            ) -> Tensor:
    """Out-of-place scatter of ``src`` (tensor) or ``value`` (number) into ``input`` at ``index`` along ``dim``."""
    if src is None:
        src = value
    if reduce == "add":
        return scatter_add(input, dim, index, src)
    if reduce is not None:
        raise RuntimeError(f"scatter: reduce argument must be either add or multiply, got {reduce}")
    return _scatter("scatter", input, dim, index, src, "set")


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return _scatter("scatter_add", input, dim, index, src, "add")


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    d = normalize_dim("index_select", dim, input.ndim)
    index = _to_index_tensor("index_select", index, input)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    index = _check_bounds("index_select", index.reshape(-1), input.shape[d] if input.ndim else 1, d, False)
    if input.ndim == 0:
        return input.clone()
    return IndexSelect.apply(input, d, index)


def _check_same_dtype(op: str, input: Tensor, source: Tensor) -> None:
    """torch's index and scatter writes refuse a source of another dtype rather than casting it."""
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): self ({input.dtype.name}) and source ({source.dtype.name}) must have the same "
                           "scalar type")


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha: float = 1) -> Tensor:
    d = normalize_dim("index_add", dim, input.ndim)
    index = _to_index_tensor("index_add", index, input)
    index = _check_bounds("index_add", index.reshape(-1), input.shape[d], d, False, RuntimeError)
    expected = input.shape[:d] + (index.shape[0],) + input.shape[d + 1:]
    if source.shape != expected:
        raise RuntimeError(f"index_add(): source shape {list(source.shape)} does not match the expected "
                           f"{list(expected)}")
    _check_same_dtype("index_add", input, source)
    return IndexAdd.apply(input, d, index, source, alpha)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    d = normalize_dim("index_copy", dim, input.ndim)
    index = _to_index_tensor("index_copy", index, input)
    index = _check_bounds("index_copy", index.reshape(-1), input.shape[d], d)
    _check_same_dtype("index_copy", input, source)
    indices = tuple(index.ndarray if k == d else None for k in range(input.ndim))
    return IndexPut.apply(input, indices, source, False)


def index_fill(input: Tensor, dim: int, index: Tensor, value: float) -> Tensor:
    d = normalize_dim("index_fill", dim, input.ndim)
    index = _to_index_tensor("index_fill", index, input, IndexError).reshape(-1)
    index = _check_bounds("index_fill", index, input.shape[d], d)
    indices = tuple(index.ndarray if k == d else None for k in range(input.ndim))
    return IndexPut.apply(input, indices, Tensor._wrap(NDArray.scalar(value, input.dtype, input.device)), False)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_fill: expected a bool mask, got "
                           f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        if not value.requires_grad:
            value = value.item()
    broadcast_shapes("masked_fill", input.shape, mask.shape)
    out = where(mask, value if isinstance(value, Tensor) else value, input)
    if out.shape != input.shape:
        raise RuntimeError(f"masked_fill: mask of shape {list(mask.shape)} cannot be broadcast to the input's shape "
                           f"{list(input.shape)}")
    return out.to(input.dtype) if out.dtype is not input.dtype else out


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    shape = broadcast_shapes("masked_select", input.shape, mask.shape)
    return getitem(input.expand(shape), mask.expand(shape))


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    shape = broadcast_shapes("masked_scatter", input.shape, mask.shape)
    coords = nonzero(mask.expand(shape), as_tuple=True)
    n = coords[0].shape[0] if coords else 0
    return index_put(input.expand(shape).clone(), coords, source.reshape(-1)[:n])


def nonzero(input: Tensor, as_tuple: bool = False) -> Any:
    out = Tensor._wrap(input.device.backend.nonzero(input.ndarray))
    if as_tuple:
        return tuple(out[:, j] for j in range(input.ndim)) if input.ndim else (out.reshape(-1),)
    return out


def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)


class SortResult(MinMaxResult):
    pass


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> SortResult:
    d = normalize_dim("sort", dim, input.ndim)
    return SortResult(Sort.apply(input, d, descending, stable))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    return sort(input, dim, descending, stable)[1]


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> SortResult:
    d = normalize_dim("topk", dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k out of range (k = {k}, size along dim {d} = {n})")
    values, indices = sort(input, d, descending=largest, stable=True)
    return SortResult((narrow(values, d, 0, k), narrow(indices, d, 0, k)) if input.ndim else (values, indices))


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> SortResult:
    d = normalize_dim("kthvalue", dim, input.ndim)
    values, indices = sort(input, d, stable=True)
    v, i = select(values, d, k - 1), select(indices, d, k - 1)
    return SortResult((v.unsqueeze(d), i.unsqueeze(d)) if keepdim else (v, i))


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """Lower median (torch semantics); with ``dim`` returns (values, indices)."""
    if dim is None:
        flat = input.reshape(-1)
        value = sort(flat.detach())[0][(flat.shape[0] - 1) // 2]
        if not flat.requires_grad:
            return value
        # As torch, the gradient is shared evenly by the elements equal to the median; the sum adds exact zeros.
        ties = flat == value
        return value + where(ties, flat - value, 0.0).sum() / ties.sum()
    d = normalize_dim("median", dim, input.ndim)
    return kthvalue(input, (input.shape[d] - 1) // 2 + 1, d, keepdim)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None) -> Any:
    """Sorted unique elements of the flattened tensor (or unique slices along ``dim``), optionally with inverse
    indices and counts."""
    if dim is not None:
        values, inverse, counts = _unique_dim(input.detach(), normalize_dim("unique", dim, input.ndim))
    else:
        values, inverse, counts = (Tensor._wrap(a) if a is not None else None for a in
                                   input.device.backend.unique(input.ndarray, return_inverse, return_counts))
    result = [values]
    if return_inverse:
        result.append(inverse.reshape(input.shape) if dim is None else inverse)
    if return_counts:
        result.append(counts)
    return result[0] if len(result) == 1 else tuple(result)


def _unique_dim(input: Tensor, d: int) -> tuple[Tensor, Tensor, Tensor]:
    """Unique slices along dim ``d`` in lexicographic order, with the inverse index and counts of each."""
    x = movedim(input, d, 0)
    n = x.shape[0]
    rows = x.reshape(n, -1)
    # Lexicographic order of the rows: stable sorts by each column, from the last column to the first.
    order = arange_like(n, input)
    for j in range(rows.shape[1] - 1, -1, -1):
        order = order[rows[order, j].argsort(stable=True)]
    ordered = rows[order]
    starts = cat([ones_like_bool(ordered[:1, 0]), (ordered[1:] != ordered[:-1]).any(1)]) if n else ordered[:, 0] > 0
    group = starts.cumsum(0) - 1  # group of each sorted row
    values = movedim(x[order[starts]], 0, d)
    inverse = zeros_like_detached(group).scatter(0, order, group)
    counts = zeros_like_detached(group[starts]).index_add(0, group, ones_like_bool(group).to(dtypes.int64))
    return values, inverse, counts


def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None) -> Tensor:
    if side is not None:
        right = side == "right"
    if not isinstance(values, Tensor):
        values = _from_data(values, device=sorted_sequence.device)
    if sorted_sequence.ndim > 1 and sorted_sequence.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(f"searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                           f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(sorted_sequence.shape)} and input value tensor {list(values.shape)}")
    values = values.to(sorted_sequence.dtype)
    out = Tensor._wrap(sorted_sequence.device.backend.searchsorted(sorted_sequence.ndarray, values.ndarray, right))
    return out.to(dtypes.int32) if out_int32 else out


def bucketize(input: Tensor, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dim of ``num_classes`` (inferred as max + 1 when -1)."""
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("one_hot: Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel() and (int(tensor.min().item()) < 0 or int(tensor.max().item()) >= num_classes):
        raise RuntimeError(f"one_hot: Class values must be non-negative and smaller than num_classes={num_classes}")
    classes = arange_like(num_classes, tensor)
    return (tensor.unsqueeze(-1) == classes).to(dtypes.int64)


# ------------------------------------------------------------------ linear algebra

def matmul(input: Tensor, other: Tensor) -> Tensor:
    _check_tensor("matmul", other)
    input, other = amp.autocast_args("matmul", input, other)
    return Matmul.apply(input, other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes must match, got {input.shape[0]} and {mat2.shape[0]}")
    return matmul(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a 2D matrix and a 1D vector, got {input.ndim}D and {vec.ndim}D")
    return matmul(input, vec)


def dot(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] "
                           "to have the same number of elements, but got "
                           f"{input.shape[0]} and {other.shape[0]} elements respectively")
    return matmul(input, other)


inner = dot


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected 1D tensors, got {input.ndim}D and {vec2.ndim}D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, beta: float = 1, alpha: float = 1) -> Tensor:
    input, mat1, mat2 = amp.autocast_args("addmm", input, mat1, mat2)
    prod_ = mm(mat1, mat2)
    return input * beta + prod_ * alpha if (alpha, beta) != (1, 1) else input + prod_


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, beta: float = 1, alpha: float = 1) -> Tensor:
    input, batch1, batch2 = amp.autocast_args("baddbmm", input, batch1, batch2)
    prod_ = bmm(batch1, batch2)
    return input * beta + prod_ * alpha if (alpha, beta) != (1, 1) else input + prod_


def einsum(equation: str, *operands: Any) -> Tensor:
    from genesis.functional.linalg import einsum as _einsum

    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return _einsum(equation, *operands)


__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "true_divide",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "neg",
    "abs",
    "reciprocal",
    "maximum",
    "minimum",
    "atan2",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "square",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "silu",
    "softplus",
    "erf",
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "clamp",
    "lerp",
    "where",
    "isnan",
    "isinf",
    "isfinite",
    "nan_to_num",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "equal",
    "isclose",
    "allclose",
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "var",
    "std",
    "var_mean",
    "norm",
    "logsumexp",
    "softmax",
    "log_softmax",
    "cumsum",
    "cumprod",
    "all",
    "any",
    "count_nonzero",
    "reshape",
    "view",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "movedim",
    "moveaxis",
    "swapaxes",
    "swapdims",
    "ravel",
    "t",
    "expand",
    "broadcast_to",
    "broadcast_tensors",
    "narrow",
    "select",
    "diagonal",
    "unfold",
    "contiguous",
    "clone",
    "cat",
    "stack",
    "hstack",
    "vstack",
    "split",
    "chunk",
    "tensor_split",
    "unbind",
    "repeat",
    "tile",
    "repeat_interleave",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "triu",
    "tril",
    "diag",
    "diagonal_copy",
    "trace",
    "gather",
    "take_along_dim",
    "take",
    "scatter",
    "scatter_add",
    "index_select",
    "index_add",
    "index_copy",
    "index_put",
    "index_fill",
    "masked_fill",
    "masked_select",
    "masked_scatter",
    "nonzero",
    "argwhere",
    "sort",
    "argsort",
    "topk",
    "kthvalue",
    "median",
    "unique",
    "searchsorted",
    "bucketize",
    "one_hot",
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
    "outer",
    "addmm",
    "baddbmm",
    "einsum",
    "negative",
    "clip",
    "clamp_min",
    "clamp_max",
    "concat",
    "concatenate",
    "inner",
    "ger",
]

# Elementwise math beyond the basics (inverse trigonometric, special functions, ...), in a module of its own.
from genesis.functional import math_extra as _math_extra  # noqa: E402
from genesis.functional.math_extra import *  # noqa: E402, F403

__all__ += _math_extra.__all__

# Composite statistics, products and shape ops (their own modules; imported last, as they use the ops above).
from genesis.functional.extra_misc import *  # noqa: E402, F403
from genesis.functional.extra_misc import __all__ as _extra_misc_all  # noqa: E402
from genesis.functional.extra_ops import *  # noqa: E402, F403
from genesis.functional.extra_ops import __all__ as _extra_ops_all  # noqa: E402
from genesis.functional.extra_shape import *  # noqa: E402, F403
from genesis.functional.extra_shape import __all__ as _extra_shape_all  # noqa: E402

__all__ += [name for name in _extra_ops_all + _extra_shape_all + _extra_misc_all if name not in __all__]
