"""Tensor contraction, trapezoidal integration, index arithmetic and membership, as composites of Genesis ops."""

from __future__ import annotations

import math
from typing import Any

from genesis import dtypes
from genesis.functional import cumsum, matmul, narrow, searchsorted, sort, sum, zeros_like_detached
from genesis.ndarray import broadcast_shapes as _broadcast_shapes
from genesis.ndarray import normalize_dim
from genesis.tensor import Size, Tensor, linspace
from genesis.tensor import tensor as make_tensor


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Contract the last ``dims`` dims of ``a`` with the first ``dims`` of ``b`` (an int), or the listed dims
    (a pair of sequences, or of ints), as one matrix product."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"both dimension lists should have same length, got {len(dims_a)} and {len(dims_b)}")
    dims_a = [normalize_dim("tensordot", d, a.ndim) for d in dims_a]
    dims_b = [normalize_dim("tensordot", d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    inner = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(*free_a, *dims_a).reshape(math.prod(a.shape[d] for d in free_a), inner)
    right = b.permute(*dims_b, *free_b).reshape(inner, math.prod(b.shape[d] for d in free_b))
    return matmul(left, right).reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])


def _float(y: Tensor) -> Tensor:
    return y if y.dtype.is_floating_point else y.to(dtypes.get_default_dtype())


def _intervals(op: str, y: Tensor, x: Tensor | None, dx: float | None, dim: int) -> tuple[Tensor, int]:
    """The area of each interval ``(x[i+1] - x[i]) * (y[i] + y[i+1]) / 2`` along ``dim``."""
    d = normalize_dim(op, dim, y.ndim)
    n = y.shape[d]
    y = _float(y)
    mean_heights = (narrow(y, d, 1, n - 1) + narrow(y, d, 0, n - 1)) * 0.5 if n else y
    if x is None:
        return mean_heights * (1.0 if dx is None else dx), d
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        x = x.reshape([-1 if k == d else 1 for k in range(y.ndim)])
    widths = narrow(x, d, 1, n - 1) - narrow(x, d, 0, n - 1) if n else x
    return widths * mean_heights, d


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """Integral of ``y`` along ``dim`` by the trapezoidal rule, at sample points ``x`` or with spacing ``dx``."""
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx; pass only one of them")
    if y.ndim == 0:
        raise IndexError("trapezoid: Dimension out of range (expected to be in range of [-1, 0], but got -1)")
    areas, d = _intervals("trapezoid", y, x, dx, dim)
    return sum(areas, d)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """Running trapezoidal integral along ``dim`` (one element shorter than ``y`` there)."""
    if x is not None and dx is not None:
        raise RuntimeError("cumulative_trapezoid: received both x and dx; pass only one of them")
    areas, d = _intervals("cumulative_trapezoid", y, x, dx, dim)
    return cumsum(areas, d)


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape that tensors of the given shapes broadcast to."""
    result: tuple[int, ...] = ()
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        result = _broadcast_shapes("broadcast_shapes", result, shape)
    return Size(result)


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """Coordinates in ``shape`` of flat indices (negative ones wrap, as Python's floor division), one int64 tensor
    per dim."""
    if not isinstance(indices, Tensor):
        indices = make_tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is dtypes.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype.name}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    flat = indices.to(dtypes.int64)
    coords = []
    stride = math.prod(shape)
    for size in shape:
        stride //= size if size else 1
        coords.append((flat // stride) % size if size else flat * 0)
    return tuple(coords)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a number), as a bool tensor
    of ``elements``' shape; by sorting and binary search."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(elements, Tensor):
        elements = like.new_tensor(elements)
    if not isinstance(test_elements, Tensor):
        test_elements = like.new_tensor(test_elements)
    common = dtypes.promote_types(elements.dtype, test_elements.dtype)
    values = elements.detach().to(common)
    pool = sort(test_elements.detach().to(common).reshape(-1)).values
    if pool.numel() == 0:
        found = zeros_like_detached(values).to(dtypes.bool_)
    else:
        position = searchsorted(pool, values.reshape(-1)).clamp(max=pool.numel() - 1)
        found = (pool.index_select(0, position) == values.reshape(-1)).reshape(values.shape)
    return ~found if invert else found


class HistogramResult(tuple):
    """(hist, bin_edges), as torch.return_types.histogram."""

    @property
    def hist(self) -> Tensor:
        return self[0]

    @property
    def bin_edges(self) -> Tensor:
        return self[1]


def histogram(input: Tensor, bins: Any, *, range: tuple[float, float] | None = None, weight: Tensor | None = None,
              density: bool = False) -> HistogramResult:
    """Histogram of ``input`` over ``bins`` equal bins of ``range`` (the data's range by default) or over the given
    monotonic edges; each bin is [left, right) except the last, which includes its right edge. ``weight`` sums
    weights instead of counting; ``density`` normalizes to a unit integral. Not differentiable."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{input.dtype.name}'")
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
            low, high = 0.0, 0.0
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
    return HistogramResult((hist, edges))


# broadcast_shapes stays out of the star export: genesis.functional uses the NDArray helper of that name; the
# public one is bound in genesis/__init__.py.
__all__ = ["tensordot", "trapezoid", "trapz", "cumulative_trapezoid", "unravel_index", "isin", "histogram"]
