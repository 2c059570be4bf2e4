"""Reductions: sum, mean, prod, extrema (with or without indices), variance and norms, logsumexp, softmax,
all/any, and their NaN-ignoring variants.
"""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, NamedTuple

from genesis import dtypes
from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray, normalize_dim, normalize_dims
from genesis.ops.arithmetic import maximum, minimum
from genesis.ops.autocast import autocast_args, one_op
from genesis.ops.compare import isnan, where
from genesis.ops.complex import imag, real
from genesis.ops.gather_scatter import zeros_scatter
from genesis.ops.unary import exp, log, sqrt
from genesis.tensor import Tensor


def _expand_back(grad, shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool):
    """Broadcast a reduced gradient back to the input shape."""
    if not keepdim and grad.ndim:  # a 0-d gradient (of a full reduction) expands to any shape as it is
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


class Sum(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool, dtype: dtypes.dtype | None) -> NDArray:
        ctx.meta = (x.shape, dims, keepdim)
        return x.sum(dims, keepdim, dtype)

    @staticmethod
    def backward(ctx, grad):
        shape, dims, keepdim = ctx.meta
        return _expand_back(grad, shape, dims, keepdim), None, None, None


class Mean(Primitive):
    """The mean over ``dims`` in one graph node: the backend's ``mean`` reduction for real floating inputs (the sum
    scaled by 1 / count in the accumulation dtype and rounded once, as torch), else the sum over the count (an empty
    reduction is nan, as in torch)."""

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
        count = math.prod(x.shape[d] for d in dims)
        ctx.meta = (x.shape, dims, keepdim, count)
        if count and dims and x.dtype.category == 2:
            return x.reduce("mean", dims, keepdim)
        total = x.sum(dims, keepdim, None)
        return total / count if count else total * math.nan

    @staticmethod
    def backward(ctx, grad):
        shape, dims, keepdim, count = ctx.meta
        grad = _expand_back(grad, shape, dims, keepdim)
        return grad / count if count else grad * math.nan, None, None  # an empty input: an empty gradient


class Prod(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
        out = x.reduce("prod", dims, keepdim)
        ctx.save_for_backward(x, out)
        ctx.meta = (dims, keepdim)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims, keepdim = ctx.meta
        grad = _expand_back(grad, x.shape, dims, keepdim)
        out = _expand_back(out, x.shape, dims, keepdim)
        zero = x == 0
        # The product of the other elements: out / x, or with zeros computed directly (one zero: the rest; more: 0).
        # One formula for both, so the device is never asked whether x has zeros.
        others = where(zero, 1.0, x).prod(dim=dims, keepdim=True).expand(x.shape)
        n_zero = zero.to(x.dtype).sum(dim=dims, keepdim=True).expand(x.shape)
        partial = where(zero, where(n_zero == 1, others, 0.0), out / where(zero, 1.0, x))
        return grad * partial, None, None


class Extremum(Primitive):
    """amax / amin: the gradient is shared evenly among the elements equal to the extremum."""

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool, op: str) -> NDArray:
        if x.size == 0 and builtins.any(x.shape[d] == 0 for d in dims):
            empty = next(d for d in dims if x.shape[d] == 0)
            raise IndexError(f"{op}(): Expected reduction dim {empty} to have non-zero size.")
        out = x.reduce(op, dims, keepdim)
        ctx.save_for_backward(x, out)
        ctx.meta = (dims, keepdim)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims, keepdim = ctx.meta
        mask = (x == _expand_back(out, x.shape, dims, keepdim)).to(grad.dtype)
        count = mask.sum(dim=dims, keepdim=True)
        return _expand_back(grad, x.shape, dims, keepdim) * mask / count, None, None, None


class MaxWithIndices(Primitive):
    """max/min along one dim returning (values, indices); the gradient goes to the returned index."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, keepdim: bool, op: str) -> tuple[NDArray, NDArray]:
        if x.ndim and x.shape[dim] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size (input shape {x.shape})")
        if x.dtype is dtypes.bool_:  # bool has no order in every backend's reductions; uint8 orders it the same way
            values, indices = x.backend.extremum_with_index(op, x.astype(dtypes.uint8), dim, keepdim)
            values = values.astype(dtypes.bool_)
        else:
            values, indices = x.backend.extremum_with_index(op, x, dim, keepdim)
        ctx.meta = (x.shape, dim, keepdim)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        (indices,) = ctx.saved_tensors
        shape, dim, keepdim = ctx.meta
        if not shape:
            return grad, None, None, None
        if not keepdim:
            grad, indices = grad.unsqueeze(dim), indices.unsqueeze(dim)
        return zeros_scatter(shape, dim, indices, grad), None, None, None


# The classes above under the names torch gives their nodes (one node class per subclass): the reduction over
# every element and the one over chosen dims are separate torch ops (``SumBackward0`` / ``SumBackward1``...).
class SumDims(Sum):
    """``sum(dim)`` (torch's ``SumBackward1``)."""


class MeanDims(Mean):
    """``mean(dim)`` (torch's ``MeanBackward1``)."""


class ProdDim(Prod):
    """``prod(dim)`` (torch's ``ProdBackward1``)."""


class Amax(Extremum):
    """``amax``."""


class Amin(Extremum):
    """``amin``."""


class MaxAll(Extremum):
    """``max()`` of every element (torch's ``MaxBackward1``)."""


class MinAll(Extremum):
    """``min()`` of every element (torch's ``MinBackward1``)."""


class Max(MaxWithIndices):
    """``max(dim)`` (torch's ``MaxBackward0``)."""


class Min(MaxWithIndices):
    """``min(dim)`` (torch's ``MinBackward0``)."""


class ArgReduce(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int | None, keepdim: bool, op: str) -> NDArray:
        if dim is None:
            flat = x.reshape((-1,))
            out = x.backend.arg_reduce(op, flat, 0, False)
            return out.reshape((1,) * x.ndim) if keepdim else out
        if x.ndim == 0:
            return NDArray.full((), 0, dtypes.int64, x.device)
        if x.shape[dim] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size")
        return x.backend.arg_reduce(op, x, dim, keepdim)


class Softmax(Primitive):
    """``softmax(x, dim)`` (or ``log_softmax`` with ``log=True``); the backward is one fused backend call.

    ``safe`` (softmax only) gives a row whose entries are all -inf zero weights instead of NaN, as torch's safe
    softmax in attention; the backward needs nothing more (a zero output has a zero gradient).
    """

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, log: bool, safe: bool = False) -> NDArray:
        out = x.backend.softmax(x, dim, log, safe)
        ctx.save_for_backward(out)
        ctx.meta = (dim, log)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        dim, log = ctx.meta
        if is_grad_enabled():
            # create_graph: composite ops, so the gradient is differentiable again.
            if log:
                return grad - out.exp() * grad.sum(dim=dim, keepdim=True), None, None, None
            return out * (grad - (grad * out).sum(dim=dim, keepdim=True)), None, None, None
        return SoftmaxBackward.apply(grad, out, dim, log), None, None, None


class LogSoftmax(Softmax):
    """``log_softmax(x, dim)``: Softmax with ``log=True``, a class of its own for torch's node name
    (``LogSoftmaxBackward0``)."""


class SafeSoftmax(Softmax):
    """Softmax with ``safe=True``: a class of its own for torch's node name (``SafeSoftmaxBackward0``)."""


class SoftmaxBackward(Primitive):
    """``y * (dy - sum(dy * y))`` (log: ``dy - exp(y) * sum(dy)``) in one backend call."""

    @staticmethod
    def forward(ctx, grad: NDArray, out: NDArray, dim: int, log: bool) -> NDArray:
        return out.backend.softmax_backward(grad, out, dim, log)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through the fused softmax backward is not supported")


class _NanToZero(Primitive):
    """NaN replaced by zero; the gradient is multiplied by the mask (so an inf gradient gives NaN there, as torch)."""

    @staticmethod
    def forward(ctx, x: NDArray, keep: NDArray) -> NDArray:
        ctx.save_for_backward(keep)
        return keep.where(x, 0)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        (keep,) = ctx.saved_tensors
        return grad * keep.to(grad.dtype), None


def _reduce_dims(op: str, dim: Any, ndim: int) -> tuple[int, ...]:
    """Normalized reduction dims; like torch, an empty list of dims means every dim."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return normalize_dims(op, dim, ndim)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    (input,) = autocast_args("sum", input)
    dims = _reduce_dims("sum", dim, input.ndim)
    return (Sum if dim is None else SumDims).apply(input, dims, keepdim,
                                                   dtypes.to_dtype(dtype) if dtype is not None else None)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = input.to(_mean_dtype("mean", dtype))
    if input.dtype.category < 2:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
            f"Got: {dtypes.SCALAR_TYPE_NAMES[input.dtype]}"
        )
    return (Mean if dim is None else MeanDims).apply(input, _reduce_dims("mean", dim, input.ndim), keepdim)


def _mean_dtype(op: str, dtype: Any) -> dtypes.dtype:
    """The ``dtype=`` of a mean: floating or complex, as torch requires."""
    d = dtypes.to_dtype(dtype)
    if d.category < 2:
        raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be either a floating point or "
                           f"complex dtype. Got: {dtypes.SCALAR_TYPE_NAMES[d]}")
    return d


def prod(input: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """The product over ``dim`` (every element when None); ``dtype`` is the type computed in and returned (a narrow
    integer type too: the backend's integer products, in int64, wrap to it as its own would)."""
    (input,) = autocast_args("prod", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    dims = normalize_dims("prod", dim, input.ndim)
    out = (Prod if dim is None else ProdDim).apply(input, dims, keepdim)
    return out if dtype is None or out.dtype is input.dtype else out.to(input.dtype)


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return Amax.apply(input, _extremum_dims("amax", input, dim), keepdim, "amax")


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return Amin.apply(input, _extremum_dims("amin", input, dim), keepdim, "amin")


def _extremum_dims(op: str, input: Tensor, dim: Any) -> tuple[int, ...]:
    """The dims amax / amin reduce; as torch, an empty tensor needs them named (RuntimeError, not IndexError)."""
    if dim in ((), None) and input.numel() == 0:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")
    return normalize_dims(op, None if dim == () else dim, input.ndim)


class ValuesIndices(NamedTuple):
    """(values, indices), as torch.return_types of max, min, sort, topk, kthvalue, median, mode, cummax...: each op
    returns its own subclass (:data:`RESULT_TYPES`), named and printed as torch's (``genesis.return_types.max``)."""

    values: Tensor
    indices: Tensor

    def __repr__(self) -> str:
        return f"{type(self).__module__}.{type(self).__name__}(\nvalues={self.values!r},\nindices={self.indices!r})"


#: The result type of each op returning (values, indices), by op name (``genesis.return_types``).
RESULT_TYPES: dict[str, type[ValuesIndices]] = {
    op: type(op, (ValuesIndices,), {"__slots__": (), "__module__": "genesis.return_types",
                                    "__doc__": f"The (values, indices) result of ``{op}``."})
    for op in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin")
}


def values_indices(op: str, values: Tensor, indices: Tensor) -> ValuesIndices:
    """``(values, indices)`` as ``op``'s result type."""
    return RESULT_TYPES[op](values, indices)


def _max_min(op: str, input: Tensor, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, Tensor):
        return maximum(input, dim) if op == "max" else minimum(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return (MaxAll if op == "max" else MinAll).apply(input, tuple(range(input.ndim)), False,
                                                         "amax" if op == "max" else "amin")
    d = normalize_dim(op, dim, input.ndim)
    return values_indices(op, *(Max if op == "max" else Min).apply(input, d, keepdim, op))


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """Largest element, or with ``dim`` the (values, indices) along it, or with a tensor the elementwise maximum."""
    return _max_min("max", input, dim, keepdim)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return _max_min("min", input, dim, keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the largest element (of the flattened input when ``dim`` is None)."""
    if input.dtype is dtypes.bool_:
        raise RuntimeError("argmax(): does not support bool input")
    if input.numel() == 0 and dim is None:
        raise IndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
    d = None if dim is None else normalize_dim("argmax", dim, input.ndim)
    return ArgReduce.apply(input, d, keepdim, "argmax")


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the smallest element (of the flattened input when ``dim`` is None)."""
    if input.dtype is dtypes.bool_:
        raise RuntimeError("argmin(): does not support bool input")
    if input.numel() == 0 and dim is None:
        raise IndexError("argmin(): Expected reduction dim to be specified for input.numel() == 0.")
    d = None if dim is None else normalize_dim("argmin", dim, input.ndim)
    return ArgReduce.apply(input, d, keepdim, "argmin")


class Moments(Primitive):
    """Variance, or with ``root`` the standard deviation, over ``dims`` with Bessel's ``correction``: one graph node.

    Forward: the backend's ``variance`` (the sum of squared deviations over ``max(0, n - correction)``, as torch:
    too few samples give inf, or nan for an all-zero sum), or its square root for the standard deviation; backward as
    torch's: ``grad * 2 (x - mean) / (n - correction)``, over ``2 std`` for the standard deviation (zero where it
    is 0).
    """

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool, correction: float, root: bool) -> NDArray:
        n = math.prod(x.shape[d] for d in dims)
        out = x.backend.variance(x, dims, correction, keepdim, root)
        ctx.save_for_backward(x, out)
        ctx.meta = (dims, keepdim, builtins.max(0, n - correction), root)
        return out

    @staticmethod
    def backward(ctx, grad):
        dims, keepdim, denominator, root = ctx.meta
        # Without a graph of the backward: the same steps on arrays (no Tensor per intermediate).
        x, out = ctx.saved_tensors if is_grad_enabled() else ctx.saved_arrays()
        grad = _expand_back(grad if x.__class__ is Tensor else grad.ndarray, x.shape, dims, keepdim)
        if x.__class__ is NDArray:
            if root:
                std = _expand_back(out, x.shape, dims, keepdim)
                zero = std.binary("eq", 0)
                grad = zero.where(0.0, grad / (zero.where(1.0, std) * 2))
            return grad * ((x - x.reduce("mean", dims, True)) * 2 / denominator), None, None, None, None
        if root:
            std = _expand_back(out, x.shape, dims, keepdim)
            zero = std == 0
            grad = where(zero, 0.0, grad / (2 * where(zero, 1.0, std)))
        return grad * (2 * (x - mean(x, dims, keepdim=True)) / denominator), None, None, None, None


class Var(Moments):
    """``var``."""


class Std(Moments):
    """``std``."""


def _moments(op: str, input: Tensor, dim: Any, unbiased: bool | None, keepdim: bool, correction: float | None,
             root: bool) -> Tensor:
    if correction is None:
        correction = 0 if unbiased is False else 1
    elif unbiased is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: 'unbiased' and 'correction' cannot be "
                        "given together")
    dims = _reduce_dims(op, dim, input.ndim)
    _check_moments_dtype(op, input, "std and var")
    kept = math.prod(n for d, n in enumerate(input.shape) if d not in dims)
    if (input.numel() // kept if kept else 0) - correction <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    if input.dtype.is_complex:
        # The variance of complex numbers is that of the real parts plus that of the imaginary parts (a real result).
        v = Var.apply(real(input), dims, keepdim, correction, False) + Var.apply(imag(input), dims, keepdim,
                                                                                 correction, False)
        return _root(v, 2) if root else v
    return (Std if root else Var).apply(input, dims, keepdim, correction, root)


def _check_moments_dtype(op: str, input: Tensor, what: str) -> None:
    """torch's RuntimeError for the variance of integers or bools (``what`` names the ops, as torch's message)."""
    if input.dtype.category < 2:
        raise RuntimeError(f"{op}: {what} only support floating point and complex dtypes")


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Variance with Bessel's ``correction`` (default 1; ``unbiased=False`` means 0)."""
    return _moments("var", input, dim, unbiased, keepdim, correction, False)


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Standard deviation with Bessel's ``correction`` (default 1; ``unbiased=False`` means 0)."""
    return _moments("std", input, dim, unbiased, keepdim, correction, True)


def _root(x: Tensor, p: float) -> Tensor:
    """``x ** (1 / p)`` with a zero gradient where ``x == 0`` (torch's convention for norms at zero)."""
    zero = x == 0
    safe = where(zero, 1.0, x)
    return where(zero, 0.0, sqrt(safe) if p == 2 else safe ** (1.0 / p))


def var_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple[Tensor, Tensor]:
    """(variance, mean) over ``dim`` with Bessel's ``correction`` (default 1)."""
    _check_moments_dtype("var_mean", input, "var_mean")
    return _moments("var_mean", input, dim, unbiased, keepdim, correction, False), mean(input, dim, keepdim)


def std_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple[Tensor, Tensor]:
    """(standard deviation, mean) over ``dim`` with Bessel's ``correction`` (default 1)."""
    _check_moments_dtype("std_mean", input, "std_mean")
    return _moments("std_mean", input, dim, unbiased, keepdim, correction, True), mean(input, dim, keepdim)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Vector p-norm over ``dim`` (all elements by default): 2 / "fro", 1, inf, -inf, 0 or any real p."""
    (input,) = autocast_args("norm", input)
    if input.dtype.category < 2:  # checked before ``dtype`` converts it, as torch
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{dtypes.SCALAR_TYPE_NAMES[input.dtype]}")
    if dtype is not None:
        input = input.to(_norm_dtype(input, dtype))
    if input.dtype.category == 3:
        input = input.abs()  # a complex tensor's norms are its magnitudes' (a real result, as torch's)
    if isinstance(p, str) and p != "fro":  # torch hands other strings to its matrix norm
        if p == "nuc" and input.ndim < 2:
            raise RuntimeError("norm: linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        raise RuntimeError(f"norm: linalg.matrix_norm: Order {p} not supported (genesis.norm computes 'fro' and "
                           "numeric orders; genesis.linalg.matrix_norm computes 'nuc').")
    dims = _reduce_dims("norm", dim, input.ndim)
    if p in (math.inf, -math.inf):
        return (amax if p > 0 else amin)(input.abs(), dims, keepdim)
    if p in ("fro", 2, 2.0):
        return LinalgVectorNorm.apply(input, dims, keepdim)
    if input.dtype.itemsize == 2:
        # Half types: squares, powers and the root in float32, rounded once at the end, as torch's kernel.
        return _p_norm(input.to(dtypes.float32), p, dims, keepdim).to(input.dtype)
    return _p_norm(input, p, dims, keepdim)


def _norm_dtype(input: Tensor, dtype: Any) -> dtypes.dtype:
    """The ``dtype=`` of a norm: floating or complex, and one the input widens to (torch's checks)."""
    d = dtypes.to_dtype(dtype)
    names = dtypes.SCALAR_TYPE_NAMES
    if d.category < 2:
        raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got {names[d]}")
    if input.dtype.category >= 2 and dtypes.promote_types(input.dtype, d) is not d:
        raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({names[input.dtype]}) should be convertible "
                           f"without narrowing to the specified dtype ({names[d]})")
    return d


class LinalgVectorNorm(Primitive):
    """The 2-norm over ``dims`` (half types squared and summed in float32, rounded once); the gradient is
    ``grad * x / norm``, zero where the norm is zero, as torch's."""

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
        out = x.reduce("sumsq", dims, True).unary("sqrt")  # half types: float32 squares and sum, one pass
        ctx.meta = dims
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, out)
        out = out if out.dtype is x.dtype else out.astype(x.dtype)
        return out if keepdim else out.squeeze(dims)

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        if is_grad_enabled():  # a graph of the backward: the norm again, with its history from x
            out = LinalgVectorNorm.apply(x, ctx.meta, True).to(out.dtype)
        if grad.ndim != x.ndim:
            grad = grad.reshape(out.shape)
        scale = where(out == 0, 0.0, grad.to(out.dtype) / out)
        return (x * scale).to(x.dtype), None, None


def _p_norm(input: Tensor, p: Any, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    if p == 1:
        return sum(input.abs(), dims, keepdim)
    if p == 0:
        return sum((input != 0).to(input.dtype), dims, keepdim)
    magnitude = input.abs()
    if p < 1:
        # |x|^p has an infinite slope at 0 (and is infinite there for p < 0): as torch's norm backward, zeros get
        # a zero gradient.
        zero = magnitude == 0
        powered = where(zero, 0.0 if p > 0 else math.inf, where(zero, 1.0, magnitude) ** p)
        return _root(sum(powered, dims, keepdim), p)
    return _root(sum(magnitude ** p, dims, keepdim), p)


@one_op("logsumexp")
def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` computed stably by subtracting the maximum first."""
    dims = normalize_dims("logsumexp", dim, input.ndim)
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    if input.numel() == 0:
        # An empty sum is 0 and its log -inf; there is no maximum to subtract.
        return log(sum(exp(input), dims, keepdim))
    return Logsumexp.apply(input, dims, keepdim)


class Logsumexp(Primitive):
    """``log(sum(exp(x)))`` over ``dims``, the maximum subtracted first (0 where it is infinite); the gradient is
    ``grad * exp(x - result)``, the softmax of ``x``, as torch's."""

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
        out = x.backend.logsumexp(x, dims)
        ctx.meta = dims
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, out)
        return out if keepdim else out.squeeze(dims)

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims = ctx.meta
        if is_grad_enabled():  # a graph of the backward: the result again, with its history from x
            out = Logsumexp.apply(x, dims, True)
        if grad.ndim != x.ndim:
            grad = grad.reshape(out.shape)
        return grad * exp(x - out), None, None


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    (input,) = autocast_args("softmax", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    d = normalize_dim("softmax", dim, input.ndim)  # torch checks the dim first
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"softmax: not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    return Softmax.apply(input, d, False)


def safe_softmax(input: Tensor, dim: int) -> Tensor:
    """Softmax over ``dim`` where a slice of -inf only (a query that may attend no key) gets zeros, not NaN, and no
    gradient: torch's ``_safe_softmax``, used by attention without weights."""
    return SafeSoftmax.apply(input, normalize_dim("softmax", dim, input.ndim), False, True)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    (input,) = autocast_args("log_softmax", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    d = normalize_dim("log_softmax", dim, input.ndim)  # torch checks the dim first
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"log_softmax: not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    return LogSoftmax.apply(input, d, True)


def _truth(op: str, input: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """``all``/``any``: bool results (uint8 for uint8 input, as torch); a 0-d input gives whether it is nonzero."""
    nd = input.ndarray
    dims = normalize_dims(op, dim, nd.ndim)
    out = nd.reduce(op, dims, keepdim) if nd.ndim else nd.binary("ne", 0)
    want = dtypes.uint8 if nd.dtype is dtypes.uint8 else dtypes.bool_
    return Tensor._wrap(out if out.dtype is want else out.astype(want))


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether every element (along ``dim``) is nonzero."""
    return _truth("all", input, dim, keepdim)


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether some element (along ``dim``) is nonzero."""
    return _truth("any", input, dim, keepdim)


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    return sum(input != 0, dim)


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum treating NaN as zero; the gradient is masked as torch's (``grad * ~isnan(input)``). Complex input is
    refused on the CPU, as torch's CPU kernel does."""
    if input.dtype.is_complex and input.device.type == "cpu":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if input.dtype.is_floating_point:
        input = _NanToZero.apply(input, ~isnan(input))
    return sum(input, dim, keepdim, dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over the non-NaN elements (NaN where a slice holds only NaN)."""
    if input.dtype.category < 2:  # torch checks the input's dtype, whatever ``dtype`` asks for
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{dtypes.SCALAR_TYPE_NAMES[input.dtype]}")
    if dtype is not None:
        input = input.to(_mean_dtype("nanmean", dtype))
    count = sum(~isnan(input), dim, keepdim)
    return nansum(input, dim, keepdim) / count


class AminmaxResult(NamedTuple):
    """(min, max), as torch.return_types.aminmax."""

    min: Tensor
    max: Tensor


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> AminmaxResult:
    """(min, max) over ``dim`` (all elements when None), each reduced as ``amin`` / ``amax``."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        low, high = amin(input), amax(input)
        if keepdim:
            shape = (1,) * input.ndim
            low, high = low.reshape(shape), high.reshape(shape)
    else:
        d = normalize_dim("aminmax", dim, input.ndim)
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        low, high = amin(input, dim, keepdim), amax(input, dim, keepdim)
    return AminmaxResult(low, high)
