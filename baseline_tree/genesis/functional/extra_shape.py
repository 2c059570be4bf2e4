"""Shape, stacking, splitting and scatter ops written as composites of Genesis ops (torch semantics, autograd).

Every function is built from differentiable views, cat, index_select, where and scatter, so it runs on every
device and its gradient follows from theirs.
"""

from __future__ import annotations

import builtins
import itertools
import math
from typing import Any, Sequence

from genesis import dtypes
from genesis.functional import (
    arange_like,
    cat,
    flip,
    gather,
    hstack,
    maximum,
    minimum,
    movedim,
    ones_like_bool,
    scatter,
    scatter_add,
    sort,
    split,
    stack,
    tensor_split,
    vstack,
    where,
)
from genesis.ndarray import NDArray, normalize_dim
from genesis.tensor import Tensor


def _zeros(shape: Sequence[int], dtype: dtypes.dtype, like: Tensor) -> Tensor:
    return Tensor._wrap(NDArray.full(tuple(shape), 0, dtype, like.device))


def _tensor_args(tensors: tuple) -> tuple[Tensor, ...]:
    """torch's varargs-or-one-sequence convention for functions such as meshgrid and atleast_1d."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(tensors[0])
    return tensors


# ------------------------------------------------------------------ grids and promotion of dims

def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors: expanded views of shape (len(t0), len(t1), ...).

    ``indexing="xy"`` swaps the first two output dims (Cartesian, as numpy); "ij" is matrix indexing.
    """
    tensors = _tensor_args(tensors)
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid: expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("torch.meshgrid: expected all tensors to be on the same device")
    swap = indexing == "xy" and len(tensors) >= 2
    sizes = [t.numel() for t in tensors]
    order = list(range(len(tensors)))
    if swap:
        order[0], order[1] = 1, 0
    shape = [sizes[k] for k in order]
    grids = []
    for k, t in enumerate(tensors):
        position = order.index(k)
        view = [-1 if j == position else 1 for j in range(len(tensors))]
        grids.append(t.reshape(view).expand(shape))
    return tuple(grids)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least one dim (0-d becomes (1,)); one tensor in gives one tensor out."""
    return _atleast(tensors, lambda t: t.reshape(1) if t.ndim == 0 else t)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least two dims: 0-d becomes (1, 1), 1-d (n,) becomes (1, n)."""
    return _atleast(tensors, lambda t: t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t)


def _to_3d(t: Tensor) -> Tensor:
    if t.ndim == 0:
        return t.reshape(1, 1, 1)
    if t.ndim == 1:
        return t.reshape(1, -1, 1)
    if t.ndim == 2:
        return t.unsqueeze(-1)
    return t


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least three dims: (1, 1, 1), (1, n, 1) and (m, n, 1) for 0-, 1- and 2-d input."""
    return _atleast(tensors, _to_3d)


def _atleast(tensors: tuple, promote: Any) -> Any:
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    out = tuple(promote(t) for t in _tensor_args(tensors))
    return out[0] if single else out


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack along the third dim after ``atleast_3d``."""
    return cat(list(atleast_3d(*tensors)) if len(tensors) != 1 else [atleast_3d(tensors[0])], 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack 0-/1-d tensors as columns (and 2-d ones as blocks of columns) into a matrix."""
    return hstack([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors])


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Alias of ``vstack``."""
    return vstack(tensors)


def _split_along(op: str, input: Tensor, sections: Any, dim: int, min_ndim: int) -> tuple[Tensor, ...]:
    if input.ndim < min_ndim:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_ndim} dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{input.shape[dim]} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 1 (dim 0 for 1-d input) into equal sections or at indices."""
    dim = 1 if input.ndim >= 2 else 0
    return _split_along("hsplit", input, indices_or_sections, dim, 1)


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 0 (input of at least 2 dims)."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 2 (input of at least 3 dims)."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split into pieces of the listed sizes, which must add up to the size of ``dim``."""
    d = normalize_dim("split_with_sizes", dim, input.ndim)
    if builtins.sum(split_sizes) != input.shape[d] or builtins.any(s < 0 for s in split_sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[d]} (input tensor's "
                           f"size at dimension {d}), but got split_sizes={list(split_sizes)}")
    return split(input, list(split_sizes), d)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first dim towards the second."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = normalize_dim("rot90", dims[0], input.ndim), normalize_dim("rot90", dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(input, d1).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, d0).transpose(d0, d1)
    return input.clone()


def block_diag(*tensors: Tensor) -> Tensor:
    """Block-diagonal matrix of 0-, 1- and 2-d tensors (a 1-d tensor is one row), dtypes promoted."""
    if not tensors:
        return Tensor._wrap(NDArray.full((1, 0), 0, dtypes.get_default_dtype(), _default_device()))
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        blocks.append(t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = dtypes.promote_types(dtype, b.dtype)
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        rows.append(cat([_zeros((r, left), dtype, b), b.to(dtype), _zeros((r, width - left - c), dtype, b)], 1))
        left += c
    return cat(rows, 0)


def _default_device() -> Any:
    from genesis.device import to_device

    return to_device("cpu")


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Cartesian product of 1-d tensors as rows (n0 * n1 * ..., len(tensors)); one tensor is returned as is."""
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Length-``r`` combinations of the elements of a 1-d tensor, as rows (itertools order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _zeros((0,), input.dtype, input)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    index = input.new_tensor(rows, dtype=dtypes.int64) if rows else _zeros((0, r), dtypes.int64, input)
    return input[index.reshape(-1)].reshape(len(rows), r)


def _band_indices(op: str, row: int, col: int, offset: int, dtype: Any, device: Any, upper: bool) -> Tensor:
    from genesis.device import to_device

    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row must be non-negative, got {row}" if row < 0
                           else f"{op}: col must be non-negative, got {col}")
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    if dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError(f"\"{op}\" not implemented for '{dtype.name}'")
    like = Tensor._wrap(NDArray.full((), 0, dtypes.int64, to_device(device if device is not None else "cpu")))
    r = arange_like(row, like).unsqueeze(1)
    c = arange_like(col, like).unsqueeze(0)
    mask = (c - r >= offset) if upper else (c - r <= offset)
    return mask.nonzero().t().to(dtype).contiguous()


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """(2, N) row and column indices of the upper triangle (``col - row >= offset``) of a row x col matrix."""
    return _band_indices("triu_indices", row, col, offset, dtype, device, True)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """(2, N) row and column indices of the lower triangle (``col - row <= offset``) of a row x col matrix."""
    return _band_indices("tril_indices", row, col, offset, dtype, device, False)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Vandermonde matrix: column j is ``x ** (N - 1 - j)`` (``x ** j`` when increasing); integers widen to int64."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.int64)
    if n == 0:
        return _zeros((x.shape[0], 0), x.dtype, x)
    # Running products (as torch) keep the gradient finite at x == 0, unlike x ** arange.
    ones = where(ones_like_bool(x), 1, x).unsqueeze(1)
    powers = cat([ones, x.unsqueeze(1).expand(x.shape[0], n - 1)], 1).cumprod(1)
    return powers if increasing else flip(powers, 1)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in dims ``dim1``, ``dim2`` of the result) with the last dim of ``input`` on diagonal ``offset``."""
    if input.ndim == 0:
        raise RuntimeError("diag_embed: input must have at least 1 dimension")
    out_ndim = input.ndim + 1
    d1, d2 = normalize_dim("diag_embed", dim1, out_ndim), normalize_dim("diag_embed", dim2, out_ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    k = input.shape[-1]
    n = k + builtins.abs(offset)
    pad = _zeros((*input.shape[:-1], builtins.abs(offset)), input.dtype, input)
    # Rows holding the values: 0..k-1 above the main diagonal, |offset|..n-1 below it.
    rows = cat([input, pad], -1) if offset >= 0 else cat([pad, input], -1)
    i = arange_like(n, input).unsqueeze(1)
    j = arange_like(n, input).unsqueeze(0)
    zero = False if input.dtype is dtypes.bool_ else 0
    matrices = where(j - i == offset, rows.unsqueeze(-1), zero)  # (..., n, n)
    return movedim(matrices, (-2, -1), (d1, d2))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened input as diagonal ``offset`` of a square matrix."""
    return diag_embed(input.reshape(-1), offset)


# ------------------------------------------------------------------ scatters into views

def _scatter_into(op: str, input: Tensor, src: Tensor, key: tuple) -> Tensor:
    target = input[key]
    if tuple(src.shape) != tuple(target.shape):
        raise RuntimeError(f"{op}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target.shape)}")
    if src.dtype is not input.dtype:
        raise RuntimeError(f"{op}: expected src to have the dtype of self ({input.dtype.name}), got "
                           f"{src.dtype.name}")
    out = input.clone()
    out[key] = src
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim``."""
    d = normalize_dim("select_scatter", dim, input.ndim)
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return _scatter_into("select_scatter", input, src, (slice(None),) * d + (index,))


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input[start:end:step]`` along ``dim``."""
    d = normalize_dim("slice_scatter", dim, input.ndim)
    return _scatter_into("slice_scatter", input, src, (slice(None),) * d + (slice(start, end, step),))


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written onto the diagonal ``offset`` of dims ``dim1``, ``dim2``."""
    target = input.diagonal(offset, dim1, dim2)
    if tuple(src.shape) != tuple(target.shape):
        raise RuntimeError(f"diagonal_scatter: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target.shape)}")
    d1, d2 = normalize_dim("diagonal_scatter", dim1, input.ndim), normalize_dim("diagonal_scatter", dim2, input.ndim)
    moved = movedim(input, (d1, d2), (-2, -1))
    length = target.shape[-1]
    rows = arange_like(length, input) + builtins.max(-offset, 0)
    cols = arange_like(length, input) + builtins.max(offset, 0)
    out = moved.clone()
    out[..., rows, cols] = src.to(input.dtype)
    return movedim(out, (-2, -1), (d1, d2))


_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Reduce ``src`` into a copy of ``input`` at ``index`` along ``dim`` with sum, prod, mean, amax or amin.

    ``include_self=False`` leaves the old values of the written positions out of the reduction. As torch, the
    gradient of amax/amin is shared evenly by every element equal to the result, and integer means round down.
    """
    # torch also takes "max" and "min" for amax and amin.
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    if reduce not in _SCATTER_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if src.dtype is not input.dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype, got "
                           f"{input.dtype.name} and {src.dtype.name}")
    d = normalize_dim("scatter_reduce", dim, input.ndim)
    src = src[tuple(slice(0, n) for n in index.shape)] if tuple(src.shape) != tuple(index.shape) else src
    if index.numel() == 0:
        return scatter_add(input, d, index, src)  # a copy, still attached to src's graph
    hits = scatter_add(_zeros(input.shape, dtypes.int64, input), d, index, ones_like_bool(index).to(dtypes.int64))
    touched = hits > 0
    if reduce in ("sum", "mean"):
        base = input if include_self else where(touched, 0, input)
        total = scatter_add(base, d, index, src)
        if reduce == "sum":
            return total
        count = hits + 1 if include_self else where(touched, hits, 1)
        if input.dtype.is_floating_point:
            return total / count.to(input.dtype)
        return total.div(count, rounding_mode="floor")
    return _scatter_reduce_loop(input, d, index, src, reduce, include_self, touched)


def _scatter_reduce_loop(input: Tensor, d: int, index: Tensor, src: Tensor, reduce: str, include_self: bool,
                         touched: Tensor) -> Tensor:
    """prod / amax / amin: one scatter per slice of ``index`` along ``d`` (a slice never writes one place twice)."""
    if reduce == "prod":
        identity: float = 1
    elif input.dtype.is_floating_point:
        identity = -math.inf if reduce == "amax" else math.inf
    else:
        identity = _int_extreme(input.dtype, lowest=reduce == "amax")
    combine = {"prod": lambda a, b: a * b, "amax": maximum, "amin": minimum}[reduce]
    # prod differentiates through the products; amax/amin run detached and attach an even split below.
    source = src if reduce == "prod" else src.detach()
    start = input if reduce == "prod" else input.detach()
    result = start if include_self else where(touched, identity, start)
    filler = Tensor._wrap(NDArray.full(tuple(input.shape), identity, input.dtype, input.device))
    for j in range(index.shape[d]):
        piece = (slice(None),) * d + (slice(j, j + 1),)
        result = combine(result, scatter(filler, d, index[piece], source[piece]))
    if reduce == "prod":
        return result
    if not input.dtype.is_floating_point:
        return result
    # Even split of the gradient among the elements equal to the extreme: the added terms are exactly zero.
    # As torch, an old value equal to the extreme counts in the split even when include_self=False, but then
    # receives nothing.
    gathered = gather(result, d, index)
    self_hit = input.detach() == result
    src_hit = src.detach() == gathered
    count = scatter_add(self_hit.to(dtypes.int64), d, index, src_hit.to(dtypes.int64))
    self_gets = self_hit if include_self else self_hit & ~touched
    spread = scatter_add(where(self_gets, input - result, 0.0), d, index, where(src_hit, src - gathered, 0.0))
    return result + spread / where(count > 0, count, 1).to(input.dtype)


def _int_extreme(dtype: dtypes.dtype, lowest: bool) -> int:
    bits = {dtypes.int8: 8, dtypes.int16: 16, dtypes.int32: 32, dtypes.int64: 64}.get(dtype)
    if dtype is dtypes.uint8:
        return 0 if lowest else 255
    if dtype is dtypes.bool_:
        return 0 if lowest else 1
    return -(2 ** (bits - 1)) if lowest else 2 ** (bits - 1) - 1


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """Reduce the slices of ``source`` along ``dim`` into the slices ``index`` of a copy of ``input``.

    ``reduce`` is prod, mean, amax or amin; ``scatter_reduce`` with ``index`` broadcast over the other dims.
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = normalize_dim("index_reduce", dim, input.ndim)
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{index.dtype.name} and size: {list(index.shape)}")
    if source.ndim and index.numel() != source.shape[d]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({source.shape[d]}), for dim: {d}")
    view = [-1 if k == d else 1 for k in range(source.ndim)]
    full = index.reshape(view).expand(source.shape)
    return scatter_reduce(input, d, full, source, reduce, include_self=include_self)


# ------------------------------------------------------------------ misc

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


def msort(input: Tensor) -> Tensor:
    """Sorted along the first dim (values only)."""
    return sort(input, 0).values


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input: Tensor) -> bool:
    """The truth value of a one-element tensor."""
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


def is_signed(input: Tensor) -> bool:
    """Whether the dtype holds negative numbers (every dtype but uint8 and bool)."""
    return input.dtype not in (dtypes.uint8, dtypes.bool_)


def _category(d: dtypes.dtype) -> int:
    if d is dtypes.bool_:
        return 0
    return 2 if d.is_floating_point else 1


def can_cast(from_: dtypes.dtype, to: dtypes.dtype) -> bool:
    """Whether torch's casting rules allow ``from_`` to ``to`` (never to a lower kind: float to int, int to bool)."""
    return _category(dtypes.to_dtype(from_)) <= _category(dtypes.to_dtype(to))


__all__ = [
    "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d", "dstack", "column_stack", "row_stack", "hsplit",
    "vsplit", "dsplit", "split_with_sizes", "rot90", "block_diag", "cartesian_prod", "combinations",
    "triu_indices", "tril_indices", "vander", "diag_embed", "diagflat", "select_scatter", "slice_scatter",
    "diagonal_scatter", "scatter_reduce", "index_reduce", "unique_consecutive", "msort", "is_same_size",
    "is_nonzero", "is_signed", "can_cast",
]
