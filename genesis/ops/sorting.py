"""Sorting and searching: sort, argsort, topk, kthvalue, median, unique (and unique_consecutive),
searchsorted, bucketize and isin.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from genesis import dtypes
from genesis.autograd import Primitive
from genesis.ndarray import NDArray, normalize_dim
from genesis.ops._args import (
    _check_range,
    _full,
    _zeros,
    arange_like,
    check_real_kernel,
    ones_like_bool,
    zeros_like_detached,
)
from genesis.ops.compare import isnan, where
from genesis.ops.gather_scatter import gather, zeros_scatter
from genesis.ops.join import cat
from genesis.ops.reduce import ValuesIndices, values_indices
from genesis.ops.views import movedim, select
from genesis.tensor import Tensor
from genesis.tensor import tensor as _from_data


class Sort(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, descending: bool, stable: bool) -> tuple[NDArray, NDArray]:
        if x.ndim == 0:
            values, indices = x, NDArray.full((), 0, dtypes.int64, x.device)
        else:
            values, indices = x.backend.sort(x, dim, descending, stable)
        ctx.meta = (x.shape, dim)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        (indices,) = ctx.saved_tensors
        shape, dim = ctx.meta
        if not shape:
            return grad, None, None, None
        return zeros_scatter(shape, dim, indices, grad), None, None, None


class Topk(Sort):
    """The first ``k`` of a sort along ``dim`` (at least 1-d input); the gradient is Sort's."""

    @staticmethod
    def forward(ctx, x: NDArray, k: int, dim: int, largest: bool) -> tuple[NDArray, NDArray]:
        values, indices = x.backend.topk(x, k, dim, largest)
        ctx.meta = (x.shape, dim)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> ValuesIndices:
    """Sorted values along ``dim`` and their original indices (``stable`` keeps equal elements in order)."""
    d = normalize_dim("sort", dim, input.ndim)
    return values_indices("sort", *Sort.apply(input, d, descending, stable))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable)[1]


def msort(input: Tensor) -> Tensor:
    """Sorted along the first dim (values only)."""
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> ValuesIndices:
    """The ``k`` largest (or, with ``largest=False``, smallest) values along ``dim`` and their indices."""
    d = normalize_dim("topk", dim, input.ndim)
    if input.dtype is dtypes.bool_:
        raise RuntimeError("topk does not support bool dtypes")
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k out of range (k = {k}, size along dim {d} = {n})")
    if input.ndim == 0:
        return values_indices("topk", *Sort.apply(input, 0, largest, True))
    # sorted=False may return any order: the sorted one is one of them.
    return values_indices("topk", *Topk.apply(input, k, d, largest))


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The ``k``-th smallest value along ``dim`` (1-based) and its index."""
    d = normalize_dim("kthvalue", dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    check_real_kernel("kthvalue", "kthvalue_cpu", input)
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k={k} out of range for dimension {d} of size {size}")
    if input.ndim == 0:  # the one value, at index 0
        return values_indices("kthvalue", input.clone(), zeros_like_detached(input).long())
    values, indices = sort(input, d, stable=True)
    v, i = select(values, d, k - 1).contiguous(), select(indices, d, k - 1).contiguous()
    return values_indices("kthvalue", v.unsqueeze(d), i.unsqueeze(d)) if keepdim else values_indices("kthvalue", v, i)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """Lower median (torch semantics); with ``dim`` returns (values, indices). NaN propagates: a slice holding NaN
    has median NaN, at the index of its first NaN (``nanmedian`` ignores NaN instead)."""
    floating = input.dtype.is_floating_point
    if dim is not None:
        d = normalize_dim("median", dim, input.ndim)
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    check_real_kernel("median", "median_cpu" if dim is None else "median_out", input)
    if dim is None:
        flat = input.reshape(-1)
        if flat.shape[0] == 0 and floating:
            return _full((), math.nan, input.dtype, input)  # torch: the median of nothing is NaN
        value = sort(flat.detach())[0][(flat.shape[0] - 1) // 2]  # NaN sorts last
        # A NaN anywhere makes the median NaN, decided on the device (no host read).
        nans = isnan(flat.detach()) if floating else None
        any_nan = nans.any() if floating else None
        if floating:
            value = where(any_nan, math.nan, value)
        if not flat.requires_grad:
            return value
        # As torch, the gradient is shared evenly by the elements equal to the median (the NaNs when it is NaN);
        # the sum adds exact zeros.
        ties = where(any_nan, nans, flat == value) if floating else flat == value
        return value + where(ties, flat - value, 0.0).sum() / ties.sum()
    d = normalize_dim("median", dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    if input.ndim == 0:
        return values_indices("median", input.clone(), _zeros((), dtypes.int64, input))
    result = kthvalue(input, (input.shape[d] - 1) // 2 + 1, d, keepdim=True)
    if floating:
        nans = isnan(input.detach())
        first_nan = nans.to(dtypes.int8).argmax(d, keepdim=True)  # argmax takes the first maximum
        index = where(nans.any(d, keepdim=True), first_nan, result.indices)
        result = values_indices("median", gather(input, d, index), index)
    if keepdim:
        return values_indices("median", *result)
    return values_indices("median", result.values.squeeze(d), result.indices.squeeze(d))


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


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Collapse runs of equal consecutive elements (or slices along ``dim``), with inverse indices and run lengths."""
    x = input.detach()
    if dim is None:
        flat = x.reshape(-1)
        n = flat.shape[0]
        changed = flat[1:] != flat[:-1]
    else:
        d = normalize_dim("unique_consecutive", dim, input.ndim)
        flat = movedim(x, d, 0)
        n = flat.shape[0]
        changed = (flat[1:] != flat[:-1]).reshape(builtins.max(n - 1, 0), -1).any(1) if n > 1 else (
            _zeros((0,), dtypes.bool_, x))
    starts = cat([ones_like_bool(_zeros((builtins.min(n, 1),), dtypes.bool_, x)), changed]) if n else changed
    values = flat[starts] if dim is None else movedim(flat[starts], 0, d)
    result = [values]
    if return_inverse or return_counts:
        group = starts.to(dtypes.int64).cumsum(0) - 1
        if return_inverse:
            result.append(group.reshape(input.shape) if dim is None else group)
        if return_counts:
            groups = int(starts.sum().item()) if n else 0
            counts = _zeros((groups,), dtypes.int64, x)
            result.append(counts.index_add(0, group, ones_like_bool(group).to(dtypes.int64)))
    return result[0] if len(result) == 1 else tuple(result)


def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """The indices at which ``values`` would be inserted into the innermost dim of ``sorted_sequence`` to keep it
    sorted (the first such place, or with ``right=True`` / ``side="right"`` the last). ``sorter``, an int64 tensor of
    ``sorted_sequence``'s shape, gives the indices that sort an unsorted sequence along its last dim (its
    ``argsort``); the results index that sorted order, as torch's."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if side == "left" and right:
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if not isinstance(values, Tensor):
        values = _from_data(values, device=sorted_sequence.device)
    if sorted_sequence.ndim > 1 and sorted_sequence.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(f"searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                           f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(sorted_sequence.shape)} and input value tensor {list(values.shape)}")
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, _check_sorter(sorter, sorted_sequence))
    # Compared in the promoted dtype, as torch: float values are not truncated against integer boundaries.
    common = dtypes.promote_types(sorted_sequence.dtype, values.dtype)
    sorted_sequence, values = sorted_sequence.to(common), values.to(common)
    out = Tensor._wrap(sorted_sequence.device.backend.searchsorted(sorted_sequence.ndarray, values.ndarray, right))
    return out.to(dtypes.int32) if out_int32 else out


def _check_sorter(sorter: Tensor, sorted_sequence: Tensor) -> Tensor:
    """``searchsorted``'s ``sorter``, checked as torch checks it (RuntimeError for a wrong dtype, size or index)."""
    if not isinstance(sorter, Tensor):
        raise TypeError(f"searchsorted(): argument 'sorter' must be Tensor, not {type(sorter).__name__}")
    if sorter.dtype is not dtypes.int64:
        raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                           f"{dtypes.SCALAR_TYPE_NAMES.get(sorter.dtype, sorter.dtype.name)}")
    if sorter.shape != sorted_sequence.shape:
        raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                           f"tensor {list(sorted_sequence.shape)} and got sorter tensor {list(sorter.shape)}")
    if not sorter.numel():
        return sorter
    # Checked on the device (no host read): RuntimeError at the call on the CPU, at the next synchronization on CUDA.
    return _check_range(sorter, 0, sorted_sequence.shape[-1], RuntimeError,
                        "torch.searchsorted(): sorter index out of range")


def bucketize(input: Tensor, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each element of ``input`` among the 1-D sorted ``boundaries`` (``searchsorted`` with the
    arguments swapped): ``boundaries[i-1] < x <= boundaries[i]``, or ``<= x <`` with ``right=True``."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a number), as a bool tensor
    of ``elements``' shape; by sorting and binary search."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    # A number compares in the dtype torch promotes it to with the tensor (2.5 against an integer tensor as a float).
    if not isinstance(elements, Tensor):
        elements = like.new_tensor(elements, dtype=dtypes.result_type_scalar(like.dtype, elements))
    if not isinstance(test_elements, Tensor):
        test_elements = like.new_tensor(test_elements, dtype=dtypes.result_type_scalar(like.dtype, test_elements))
    common = dtypes.promote_types(elements.dtype, test_elements.dtype)
    values = elements.detach().to(common)
    pool = sort(test_elements.detach().to(common).reshape(-1)).values
    if pool.numel() == 0:
        found = zeros_like_detached(values).to(dtypes.bool_)
    else:
        position = searchsorted(pool, values.reshape(-1)).clamp(max=pool.numel() - 1)
        found = (pool.index_select(0, position) == values.reshape(-1)).reshape(values.shape)
    return ~found if invert else found
