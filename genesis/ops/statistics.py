"""Statistics as composites of Genesis ops: medians ignoring NaN, mode, quantiles, histograms and counts,
covariance and correlation. Index outputs come from detached computations, and values are gathered at
them so that the gradient lands where torch puts it.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, NamedTuple, Sequence

from genesis import dtypes
from genesis.ndarray import normalize_dim
from genesis.ops._args import _full, _zeros, arange_like, check_real_kernel, ones_like_bool, zeros_like_detached
from genesis.ops.compare import isnan, where
from genesis.ops.creation import linspace
from genesis.ops.gather_scatter import gather, index_add
from genesis.ops.join import stack
from genesis.ops.linalg import matmul
from genesis.ops.matrices import diag
from genesis.ops.reduce import ValuesIndices, amax, mean, sum, values_indices
from genesis.ops.sorting import searchsorted, sort
from genesis.ops.unary import floor, sqrt
from genesis.ops.views import movedim
from genesis.tensor import Tensor


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """Lower median of the non-NaN elements; with ``dim`` returns (values, indices)."""
    check_real_kernel("nanmedian", "median_cpu" if dim is None else "median_out", input)
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
        return values_indices("nanmedian", input.clone(), _zeros((), dtypes.int64, input))
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
    return values_indices("nanmedian", *((out, idx) if keepdim else (out.squeeze(d), idx.squeeze(d))))


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """Most frequent value along ``dim`` (the smallest among equally frequent ones) and its last index."""
    check_real_kernel("mode", "mode_cpu", input, bools=True)
    d = normalize_dim("mode", dim, input.ndim)
    if input.ndim == 0:
        return values_indices("mode", input.clone(), _zeros((), dtypes.int64, input))
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
    return values_indices("mode", *((out, index) if keepdim else (out.squeeze(d), index.squeeze(d))))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op: str, input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    # As torch: both ops word their checks as quantile()'s and take float32 and float64 inputs only.
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        qs = q.detach().reshape(-1).tolist()
        scalar_q = q.ndim == 0
        if builtins.any(not 0 <= v <= 1 for v in qs):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    else:
        qs = [float(q)]
        if not 0 <= qs[0] <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {qs[0]:g}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
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
    if input.dtype.is_floating_point or input.dtype is dtypes.bool_:
        raise NotImplementedError(f"\"bincount\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    nd = input.ndarray
    backend = nd.backend
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    low = high = -1
    if nd.size:  # the smallest and largest value in one read from the device
        low, high = (int(v) for v in backend.stack([nd.reduce("amin", (0,)), nd.reduce("amax", (0,))], 0).numpy())
        if low < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("bincount: weights should be 1-d and have the same length as input")
    index = nd.astype(dtypes.int64)
    if weights is None:
        out_dtype, values = dtypes.int64, backend.full(index.shape, 1, dtypes.int64, nd.device)
    else:
        out_dtype = dtypes.float32 if weights.dtype is dtypes.float32 else dtypes.float64
        values = weights.ndarray.astype(out_dtype)
    out = backend.full((builtins.max(high + 1, minlength),), 0, out_dtype, nd.device)
    if nd.size:  # the values are in range by construction: no bounds check
        backend.index_put_(out, (index,), values, True)
    return Tensor._wrap(out)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Histogram of ``bins`` equal-width bins over [min, max] (the data's range when both are equal).

    Elements outside the range (and NaN) are ignored; the maximum falls in the last bin. Not differentiable.
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for bins")
    if min > max:
        raise RuntimeError(f"torch.histc: max must be larger than min, but got max {max} and min {min}")
    x = input.detach().reshape(-1)
    low, high = float(min), float(max)
    if low == high and x.numel():
        # As torch, the data's range is NaN (hence refused below) when the data holds NaN.
        low, high = float(x.min().item()), float(x.max().item())
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low:g}, {high:g}] is not finite")
    inside = (x >= low) & (x <= high)
    kept = x[inside]
    position = ((kept - low) * bins / (high - low)).to(dtypes.int64).clamp(max=bins - 1)
    return index_add(_zeros((bins,), input.dtype, input), 0, position, ones_like_bool(kept).to(input.dtype))


class HistogramResult(NamedTuple):
    """(hist, bin_edges), as torch.return_types.histogram."""

    hist: Tensor
    bin_edges: Tensor


def histogram(input: Tensor, bins: Any = 100, *, range: tuple[float, float] | None = None,
              weight: Tensor | None = None, density: bool = False) -> HistogramResult:
    """Histogram of ``input`` over ``bins`` equal bins of ``range`` (the data's range by default) or over the given
    monotonic edges; each bin is [left, right) except the last, which includes its right edge. ``weight`` sums
    weights instead of counting; ``density`` normalizes to a unit integral. Not differentiable."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    x = input.detach().reshape(-1)
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 2:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension and at least 2 elements")
        edges = bins.detach().to(input.dtype)
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None:
            low, high = float(range[0]), float(range[1])
            if low > high:
                raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {low} max {high}")
        elif x.numel():
            low, high = float(x.min().item()), float(x.max().item())
        else:
            low, high = 0.0, 1.0  # torch's range for no data
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges = linspace(low, high, bins + 1, dtype=input.dtype, device=input.device)
    count = edges.shape[0] - 1
    inside = (x >= edges[0]) & (x <= edges[-1])
    kept = x[inside]
    position = (searchsorted(edges, kept, right=True) - 1).clamp(max=count - 1)
    source = weight.detach().reshape(-1)[inside].to(input.dtype) if weight is not None else (
        zeros_like_detached(kept) + 1)
    hist = zeros_like_detached(edges[:count]).index_add(0, position, source)
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (hist.sum() * widths)
    return HistogramResult(hist, edges)


class HistogramddResult(NamedTuple):
    """(hist, bin_edges), as torch.return_types.histogramdd: ``bin_edges`` holds one edge tensor per dimension."""

    hist: Tensor
    bin_edges: tuple[Tensor, ...]


def _histogramdd_edges(x: Tensor, bins: Any, dim: int, range: Sequence[float] | None) -> Tensor:
    """The edges of dimension ``dim`` of :func:`histogramdd`: the given tensor, or ``bins`` equal bins of
    ``range[2 dim: 2 dim + 2]`` (the data's range by default, widened by 0.5 each side when it is one point)."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {bins.ndim} "
                               f"dimensions in the bins tensor for dimension {dim}")
        if bins.numel() == 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got 0 for dimension {dim}")
        return bins.detach().to(x.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension {dim}")
    column = x[:, dim]
    if range is not None:
        low, high = float(range[2 * dim]), float(range[2 * dim + 1])
        if low > high:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low} max {high} for "
                               f"dimension {dim}")
    elif column.numel():
        low, high = float(column.min().item()), float(column.max().item())
    else:
        low, high = 0.0, 1.0
    if low == high:
        low, high = low - 0.5, high + 0.5
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{low:g}, {high:g}] is not finite")
    return linspace(low, high, bins + 1, dtype=x.dtype, device=x.device)


def histogramdd(input: Tensor, bins: Any, *, range: Sequence[float] | None = None, weight: Tensor | None = None,
                density: bool = False) -> HistogramddResult:
    """Multi-dimensional histogram of the points in the rows of ``input`` (..., D): the innermost dimension holds
    each point's D coordinates.

    Args:
        input: (..., D) floating-point points.
        bins: an int (the bin count of every dimension), D ints, or D monotonic edge tensors.
        range: 2 D numbers ``(min_0, max_0, min_1, max_1, ...)`` for integer bins (the data's range by default).
        weight: (...) weights summed in place of counts.
        density: normalize so that the histogram integrates to one over the bins' volumes.

    Returns:
        (hist, bin_edges): hist of shape (bins_0, ..., bins_{D-1}), and the D edge tensors. Each bin is half-open
        [left, right) except the last of each dimension, which includes its right edge; points outside every
        dimension's edges (and NaN) are left out. Not differentiable.
    """
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    dims = input.shape[-1]
    per_dim = [bins] * dims if isinstance(bins, int) else list(bins)
    if len(per_dim) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should have {2 * dims} "
                           f"elements, but got {len(range)}")
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({input.dtype.name}), and "
                               f"weight({weight.dtype.name})")
    x = input.detach().reshape(-1, dims)  # (N, D)
    edges = tuple(_histogramdd_edges(x, b, d, range) for d, b in enumerate(per_dim))
    counts = [e.shape[0] - 1 for e in edges]
    flat = _zeros((x.shape[0],), dtypes.int64, input)  # (N,): each point's bin in row-major order
    inside = ones_like_bool(flat)
    for d, e in enumerate(edges):
        column = x[:, d].contiguous()
        inside = inside & (column >= e[0]) & (column <= e[-1])
        position = (searchsorted(e, column, right=True) - 1).clamp(min=0, max=builtins.max(counts[d] - 1, 0))
        flat = flat * counts[d] + position
    if weight is not None:
        source = weight.detach().reshape(-1)[inside]
    else:
        source = _zeros((x.shape[0],), input.dtype, input)[inside] + 1
    size = math.prod(counts)
    hist = _zeros((size,), input.dtype, input).index_add(0, flat[inside], source).reshape(counts)
    if density:
        volume = None
        for d, e in enumerate(edges):
            widths = (e[1:] - e[:-1]).reshape([-1 if i == d else 1 for i in builtins.range(dims)])
            volume = widths if volume is None else volume * widths
        hist = hist / (hist.sum() * volume)
    return HistogramddResult(hist, edges)


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
