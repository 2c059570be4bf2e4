"""Statistics, scans and products written as composites of Genesis ops (torch semantics, autograd, every device).

Each function here is built from existing differentiable ops (sort, gather, cumsum, matmul, ...), so it needs no
backend primitive and its gradient follows from theirs. Index outputs (cummax, mode, ...) come from detached
computations, and values are gathered at them so that the gradient lands where torch puts it.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from genesis import dtypes
from genesis.functional import (
    MinMaxResult,
    amax,
    amin,
    arange_like,
    cat,
    diag,
    exp,
    floor,
    gather,
    index_add,
    isinf,
    isnan,
    log,
    matmul,
    maximum,
    mean,
    minimum,
    movedim,
    narrow,
    norm,
    ones_like_bool,
    sort,
    sqrt,
    stack,
    std,
    sum,
    where,
)
from genesis.functional.elementwise import Primitive
from genesis.ndarray import NDArray, broadcast_shapes, normalize_dim
from genesis.tensor import Tensor


def _zeros(shape: tuple[int, ...], dtype: dtypes.dtype, like: Tensor) -> Tensor:
    return Tensor._wrap(NDArray.full(shape, 0, dtype, like.device))


def _full(shape: tuple[int, ...], value: Any, dtype: dtypes.dtype, like: Tensor) -> Tensor:
    return Tensor._wrap(NDArray.full(shape, value, dtype, like.device))


def _require_float(op: str, x: Tensor) -> None:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected input to have floating point dtype but got {x.dtype.name}")


# ------------------------------------------------------------------ statistics

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


def std_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple[Tensor, Tensor]:
    """(standard deviation, mean) over ``dim`` with Bessel's ``correction`` (default 1)."""
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum treating NaN as zero; the gradient is masked as torch's (``grad * ~isnan(input)``)."""
    if input.dtype.is_floating_point:
        input = _NanToZero.apply(input, ~isnan(input))
    return sum(input, dim, keepdim, dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over the non-NaN elements (NaN where a slice holds only NaN)."""
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype.name}")
    count = sum(~isnan(input), dim, keepdim)
    return nansum(input, dim, keepdim) / count


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> MinMaxResult:
    """(min, max) over ``dim`` (all elements when None), each reduced as ``amin`` / ``amax``."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): Expected reduction dim to be specified for input.numel() == 0.")
        low, high = amin(input), amax(input)
        if keepdim:
            shape = (1,) * input.ndim
            low, high = low.reshape(shape), high.reshape(shape)
    else:
        d = normalize_dim("aminmax", dim, input.ndim)
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        low, high = amin(input, dim, keepdim), amax(input, dim, keepdim)
    return _AminmaxResult((low, high))


class _AminmaxResult(MinMaxResult):
    """torch.return_types.aminmax: (min, max)."""

    @property
    def min(self) -> Tensor:
        return self[0]

    @property
    def max(self) -> Tensor:
        return self[1]


def _scan(x: Tensor, dim: int, combine: Any) -> Tensor:
    """Inclusive prefix scan of ``combine`` along ``dim`` in log2(n) doubling steps (Hillis-Steele)."""
    n = x.shape[dim]
    step = 1
    while step < n:
        head = narrow(x, dim, 0, step)
        tail = combine(narrow(x, dim, step, n - step), narrow(x, dim, 0, n - step))
        x = cat([head, tail], dim)
        step *= 2
    return x


def _cum_extremum(op: str, input: Tensor, dim: int) -> MinMaxResult:
    if input.ndim == 0:
        return MinMaxResult((input.clone(), _zeros((), dtypes.int64, input)))
    d = normalize_dim(op, dim, input.ndim)
    x = input.detach()
    running = _scan(x, d, maximum if op == "cummax" else minimum)
    # torch moves the index to every later element equal to the running extreme (and to every NaN).
    positions = arange_like(x.shape[d], x).reshape([-1 if k == d else 1 for k in range(x.ndim)])
    hit = x == running
    if x.dtype.is_floating_point:
        hit = hit | isnan(x)
    indices = _scan(where(hit, positions, 0), d, maximum)
    return MinMaxResult((gather(input, d, indices), indices))


def cummax(input: Tensor, dim: int) -> MinMaxResult:
    """Running maximum along ``dim`` and the index where each was attained (the latest among equals)."""
    return _cum_extremum("cummax", input, dim)


def cummin(input: Tensor, dim: int) -> MinMaxResult:
    """Running minimum along ``dim`` and the index where each was attained (the latest among equals)."""
    return _cum_extremum("cummin", input, dim)


def _logaddexp(a: Tensor, b: Tensor) -> Tensor:
    """``log(exp(a) + exp(b))`` shifted by the (detached, finite) larger operand so that nothing overflows."""
    shift = maximum(a, b).detach()
    shift = where(isinf(shift), 0.0, shift)
    return log(exp(a - shift) + exp(b - shift)) + shift


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably by a scan of pairwise log-add-exp."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"logcumsumexp(): expected input to have floating point dtype but got "
                           f"{input.dtype.name}")
    if input.ndim == 0:
        return input.clone()
    return _scan(input, normalize_dim("logcumsumexp", dim, input.ndim), _logaddexp)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """Lower median of the non-NaN elements; with ``dim`` returns (values, indices)."""
    if dim is None:
        if input.numel() == 0:
            return _full((), math.nan, input.dtype, input)
        flat = input.reshape(-1)
        value = nanmedian(flat.detach(), 0).values
        if not flat.requires_grad:
            return value
        # As torch, the gradient is shared evenly by the elements equal to the median.
        ties = flat == value
        return value + where(ties, flat - value, 0.0).sum() / ties.sum()
    d = normalize_dim("nanmedian", dim, input.ndim)
    if input.ndim == 0:
        return MinMaxResult((input.clone(), _zeros((), dtypes.int64, input)))
    if input.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size.")
    values, order = sort(input, d, stable=True)  # NaN sorts last
    if input.dtype.is_floating_point:
        valid = sum(~isnan(input.detach()), d, keepdim=True)
    else:
        reduced = tuple(1 if j == d else n for j, n in enumerate(input.shape))
        valid = _full(reduced, input.shape[d], dtypes.int64, input)
    k = (valid - 1).clamp(min=0) // 2  # the lower median among the valid (sorted-first) elements
    out, idx = gather(values, d, k), gather(order, d, k)
    return MinMaxResult((out, idx) if keepdim else (out.squeeze(d), idx.squeeze(d)))


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> MinMaxResult:
    """Most frequent value along ``dim`` (the smallest among equally frequent ones) and its last index."""
    if input.ndim == 0:
        return MinMaxResult((input.clone(), _zeros((), dtypes.int64, input)))
    d = normalize_dim("mode", dim, input.ndim)
    if input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    x = movedim(input.detach(), d, -1)
    ordered = sort(x, -1, stable=True).values
    counts = sum(ordered.unsqueeze(-1) == ordered.unsqueeze(-2), -1)
    # argmax takes the first maximal count, i.e. the smallest of the most frequent values.
    value = gather(ordered, -1, counts.argmax(-1, keepdim=True))
    positions = arange_like(x.shape[-1], x)
    index = amax(where(x == value, positions, -1), -1, keepdim=True)
    index = movedim(index, -1, d)
    out = gather(input, d, index)
    return MinMaxResult((out, index) if keepdim else (out.squeeze(d), index.squeeze(d)))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op: str, input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        qs = q.detach().reshape(-1).tolist()
        scalar_q = q.ndim == 0
    else:
        qs = [float(q)]
    if builtins.any(not 0 <= v <= 1 for v in qs):
        raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = normalize_dim(op, dim, input.ndim)
        x = input if input.ndim else input.reshape(1)
    x = movedim(x, d, -1)
    n = x.shape[-1]
    values = sort(x, -1).values  # NaN sorts last
    nan_mask = isnan(x.detach())
    count = sum(~nan_mask, -1, keepdim=True).to(input.dtype)
    has_nan = nan_mask.any(-1, keepdim=True)
    # A slice with NaN answers NaN (quantile), or one holding only NaN (nanquantile): point at its last element.
    degenerate = (count == 0) if ignore_nan else has_nan
    last = count - 1 if ignore_nan else _full(count.shape, n - 1, input.dtype, input)
    outs = []
    for v in qs:
        rank = where(degenerate, float(n - 1), last * v)
        if interpolation == "nearest":
            rank = rank.round()
        low = floor(rank)
        high = (low + 1).clamp(max=where(degenerate, float(n - 1), last))
        high = where(rank > low, high, low)
        lo_v = gather(values, -1, low.to(dtypes.int64))
        hi_v = gather(values, -1, high.to(dtypes.int64))
        if interpolation in ("lower", "nearest"):
            out = lo_v
        elif interpolation == "higher":
            out = hi_v
        elif interpolation == "midpoint":
            out = (lo_v + hi_v) * 0.5
        else:
            out = lo_v + (rank - low) * (hi_v - lo_v)
        out = out.squeeze(-1)
        if keepdim:
            out = out.reshape((1,) * input.ndim) if dim is None else out.unsqueeze(d)
        if input.ndim == 0:
            out = out.reshape(())
        outs.append(out)
    return outs[0] if scalar_q else stack(outs, 0)


def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (a number or a 1-D tensor of them in [0, 1]) along ``dim`` (flattened when None).

    Between two sorted neighbours ``interpolation`` chooses: linear, lower, higher, midpoint or nearest (ties to
    even). A slice holding NaN gives NaN. A 1-D ``q`` adds a leading dim of ``len(q)``.
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN (NaN only for a slice holding nothing else)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Occurrences of each value of a 1-D non-negative integer tensor (or the sum of ``weights`` per value).

    The length is ``max(input.max() + 1, minlength)``. Counts are int64; weights give float32 for float32
    weights and float64 otherwise, like torch. Not differentiable (torch has no derivative either).
    """
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bincount\" not implemented for '{input.dtype.name}'")
    if input.ndim != 1 or input.dtype is dtypes.bool_ or (input.numel() and int(input.min().item()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("bincount: weights should be 1-d and have the same length as input")
    size = builtins.max(int(input.max().item()) + 1 if input.numel() else 0, minlength)
    index = input.to(dtypes.int64)
    if weights is None:
        return index_add(_zeros((size,), dtypes.int64, input), 0, index, ones_like_bool(index).to(dtypes.int64))
    out_dtype = dtypes.float32 if weights.dtype is dtypes.float32 else dtypes.float64
    return index_add(_zeros((size,), out_dtype, input), 0, index, weights.detach().to(out_dtype))


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Histogram of ``bins`` equal-width bins over [min, max] (the data's range when both are equal).

    Elements outside the range (and NaN) are ignored; the maximum falls in the last bin. Not differentiable.
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input.dtype.name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for bins")
    if min > max:
        raise RuntimeError(f"torch.histc: max must be larger than min, but got max {max} and min {min}")
    x = input.detach().reshape(-1)
    low, high = float(min), float(max)
    if low == high and x.numel():
        finite = x[~isnan(x)]
        if finite.numel():
            low, high = float(finite.min().item()), float(finite.max().item())
    if low == high:
        low, high = low - 1, high + 1
    if math.isinf(low) or math.isinf(high):
        raise RuntimeError(f"torch.histc: range of [{low}, {high}] is not finite")
    inside = (x >= low) & (x <= high)
    kept = x[inside]
    position = ((kept - low) * bins / (high - low)).to(dtypes.int64).clamp(max=bins - 1)
    return index_add(_zeros((bins,), input.dtype, input), 0, position, ones_like_bool(kept).to(input.dtype))


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """Covariance matrix of the variables in the rows of ``input`` (observations in the columns).

    ``fweights`` (integer frequencies) and ``aweights`` (observation weights) weight the observations; the
    normalization is ``sum(w) - correction * sum(w * a) / sum(w)`` as in numpy and torch.
    """
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                         f"{input.ndim} dimensions")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.get_default_dtype())
    observations = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.ndim > 1 or fweights.numel() != observations:
            raise RuntimeError(f"cov(): expected fweights to have one dimension and the same number of elements as "
                               f"observations ({observations}), got shape {list(fweights.shape)}")
        if fweights.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{fweights.dtype.name} dtype")
        if fweights.numel() and int(fweights.min().item()) < 0:
            raise RuntimeError(f"cov(): fweights cannot be negative but got {fweights.min().item()}")
        w = fweights
    if aweights is not None:
        if aweights.ndim > 1 or aweights.numel() != observations:
            raise RuntimeError(f"cov(): expected aweights to have one dimension and the same number of elements as "
                               f"observations ({observations}), got shape {list(aweights.shape)}")
        if not aweights.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{aweights.dtype.name} dtype")
        if aweights.numel() and float(aweights.min().item()) < 0:
            raise RuntimeError(f"cov(): aweights cannot be negative but got {aweights.min().item()}")
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = float(observations)
        avg = mean(x, 1)
        scale = w_sum - correction
    else:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            scale = w_sum
        elif aweights is None:
            scale = w_sum - correction
        else:
            scale = w_sum - correction * (w * aweights).sum() / w_sum
    centered = x - avg.unsqueeze(1)
    weighted = centered if w is None else centered * w
    # torch clamps a non-positive normalization to zero (the result becomes inf or nan).
    scale = builtins.max(scale, 0.0) if isinstance(scale, float) else scale.clamp(min=0)
    return (matmul(weighted, centered.t()) / scale).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input``, clipped to [-1, 1]."""
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                         f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    stddev = sqrt(diag(c))
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return c.clamp(-1, 1)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim``, after concatenating ``prepend`` and ``append``."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim("diff", dim, input.ndim)
    parts = [p for p in (prepend, input, append) if p is not None]
    for p in parts:
        if p.ndim != input.ndim:
            raise RuntimeError(f"diff expects prepend or append to be the same dimension as input, got "
                               f"{p.ndim} and {input.ndim}")
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        later, earlier = narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1)
        x = later != earlier if x.dtype is dtypes.bool_ else later - earlier
    return x


# ------------------------------------------------------------------ products

def _cross_dim(op: str, shape: tuple[int, ...], dim: int | None) -> int:
    if dim is None:
        for k, n in enumerate(shape):
            if n == 3:
                return k
        raise RuntimeError(f"{op}: no dimension of size 3 in input")
    return normalize_dim(op, dim, len(shape))


def _cross(op: str, input: Tensor, other: Tensor, dim: int | None) -> Tensor:
    if input.ndim != other.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions, got {input.ndim} and "
                           f"{other.ndim}")
    shape = broadcast_shapes(op, input.shape, other.shape)
    d = _cross_dim(op, shape, dim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim if dim is not None else d} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    a, b = input.expand(shape), other.expand(shape)
    next_, after = input.new_tensor([1, 2, 0], dtype=dtypes.int64), input.new_tensor([2, 0, 1], dtype=dtypes.int64)
    return a.index_select(d, next_) * b.index_select(d, after) - a.index_select(d, after) * b.index_select(d, next_)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (the first dim of size 3 when None), broadcasting the rest."""
    return _cross("cross", input, other, dim)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Dot product of two 1-D tensors (the first conjugated; Genesis tensors are real, so this is ``dot``)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found {input.dtype.name} and "
                           f"{other.dtype.name}")
    return input.dot(other)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: block ``(i, j, ...)`` of the result is ``input[i, j, ...] * other``."""
    ndim = builtins.max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.shape)
    # Interleave the dims: a as (a0, 1, a1, 1, ...) times b as (1, b0, 1, b1, ...).
    a = input.reshape([s for n in a_shape for s in (n, 1)])
    b = other.reshape([s for n in b_shape for s in (1, n)])
    return (a * b).reshape([x * y for x, y in zip(a_shape, b_shape)])


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"
          ) -> Tensor:
    """p-norm distances between each row of ``x1`` (..., P, M) and each row of ``x2`` (..., R, M): (..., P, R).

    Computed from the differences directly (no matrix-product shortcut), so every ``compute_mode`` gives the
    exact distances; the gradient is zero where a distance is zero, as torch's.
    """
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                           f"{x2.shape[-1]}")
    if not x1.dtype.is_floating_point or not x2.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype.name}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    batch = broadcast_shapes("cdist", x1.shape[:-2], x2.shape[:-2])
    a = x1.expand((*batch, *x1.shape[-2:])).unsqueeze(-2)  # (..., P, 1, M)
    b = x2.expand((*batch, *x2.shape[-2:])).unsqueeze(-3)  # (..., 1, R, M)
    return _graph_norm(a - b, p, (-1,))


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of ``input - other`` (broadcast), over all elements."""
    return _graph_norm(input - other, p, None)


def _graph_norm(x: Tensor, p: float, dims: Any, keepdim: bool = False) -> Tensor:
    """``norm`` whose p = 0 count stays attached to the graph with a zero gradient, as torch's."""
    if p != 0:
        return norm(x, p, dims, keepdim)
    nonzero = (x != 0).to(x.dtype)
    return sum(where(ones_like_bool(x), nonzero, x), dims, keepdim)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (broadcast)."""
    return input + value * (tensor1 * tensor2)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcast); integer division is refused as in torch."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
                           "tensor2), for all dtypes.")
    return input + value * (tensor1 / tensor2)


def _scaled(x: Tensor, beta: float) -> Tensor:
    """``beta * x``; beta == 0 ignores x entirely (NaN and inf do not propagate), as torch's BLAS-style ops."""
    if beta == 0:
        return where(ones_like_bool(x), 0, x)
    return x if beta == 1 else x * beta


def _add_product(op: str, input: Tensor, product: Tensor, beta: float, alpha: float) -> Tensor:
    if broadcast_shapes(op, input.shape, product.shape) != tuple(product.shape):
        raise RuntimeError(f"{op}: the size of input {list(input.shape)} cannot be broadcast to the product's size "
                           f"{list(product.shape)}")
    return _scaled(input, beta) + (product if alpha == 1 else product * alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _add_product("addmv", input, mat.mv(vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return _add_product("addr", input, vec1.outer(vec2), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    return _add_product("addbmm", input, batch1.bmm(batch2).sum(0), beta, alpha)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Rescale each slice along ``dim`` whose p-norm exceeds ``maxnorm`` to norm ``maxnorm`` (others unchanged)."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = normalize_dim("renorm", dim, input.ndim)
    norms = norm(input, p, [k for k in range(input.ndim) if k != d], keepdim=True)
    # torch's factor, including its 1e-7 guard against dividing by a zero norm.
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


__all__ = [
    "std_mean", "nansum", "nanmean", "aminmax", "cummax", "cummin", "logcumsumexp", "nanmedian", "mode",
    "quantile", "nanquantile", "bincount", "histc", "cov", "corrcoef", "diff", "cross", "vdot", "kron", "cdist",
    "dist", "addcmul", "addcdiv", "addmv", "addr", "addbmm", "renorm",
]
