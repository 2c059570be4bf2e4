"""Gathers and scatters along a dim: gather, take, index_select, scatter (set, add, reduce), index_add,
index_copy, index_fill, index_reduce, the masked ops and the scatters into views.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any, Sequence

from genesis import dtypes
from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray, broadcast_shapes, normalize_dim
from genesis.ops._args import (
    _check_range,
    _check_same_dtype,
    _to_index_tensor,
    _zeros,
    arange_like,
    check_scalar_fits,
    check_tensors,
    ones_like_bool,
    python_number,
)
from genesis.ops.compare import Where, nonzero, where
from genesis.ops.indexing import IndexPut, _check_bounds, getitem, index_put
from genesis.ops.views import as_strided, movedim
from genesis.tensor import Tensor


class Gather(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray) -> NDArray:
        ctx.meta = (x.shape, dim)
        ctx.save_for_backward(index)
        return x.backend.gather(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.meta
        return zeros_scatter(shape, dim, index, grad), None, None


class Scatter(Primitive):
    """Out-of-place scatter: mode "set" (torch.scatter) or "add" (torch.scatter_add)."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
        ctx.meta = (dim, mode)
        ctx.save_for_backward(index)
        if isinstance(src, NDArray):
            src = src.astype(x.dtype)
        return x.backend.scatter(x, dim, index, src, mode)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, mode = ctx.meta
        grad_x = grad if mode == "add" else grad.scatter(dim, index, 0.0)
        grad_src = grad.gather(dim, index) if ctx.needs_input_grad[3] else None
        return grad_x, None, None, grad_src, None


class IndexSelect(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray) -> NDArray:
        ctx.meta = (x.shape, dim)
        ctx.save_for_backward(index)
        return x.backend.index_select(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.meta
        return _zeros(shape, grad.dtype, grad).index_add(dim, index, grad), None, None


class IndexAdd(Primitive):
    """Out-of-place ``index_add``: ``out = x; out.index_select(dim, index) += alpha * src``."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray, src: NDArray, alpha: float) -> NDArray:
        ctx.meta = (dim, alpha)
        ctx.save_for_backward(index)
        out = x.backend.contiguous(x) if not x.is_contiguous() else x.backend.cast(x, x.dtype)
        return _index_add_arrays(out, dim, index, src, alpha)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, alpha = ctx.meta
        grad_src = grad.index_select(dim, index) * alpha if ctx.needs_input_grad[3] else None
        return grad, None, None, grad_src, None


def _index_add_arrays(out: NDArray, dim: int, index: NDArray, src: NDArray, alpha: float) -> NDArray:
    """``out.index_select(dim, index) += alpha * src`` in ``out``'s memory (the backend's ``index_add_``); returns
    ``out``."""
    values = src.astype(out.dtype) if alpha == 1 else src.astype(out.dtype) * alpha
    return out.backend.index_add_(out, dim, index, values)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``input``'s values at ``index`` along ``dim`` (``out[i][j] = input[index[i][j]][j]`` for dim 0).

    ``sparse_grad`` is accepted for torch compatibility, but the gradient of ``input`` is always dense: where torch
    makes it a sparse COO tensor, Genesis gives the same values as a strided one.
    """
    d = normalize_dim("gather", dim, input.ndim)
    index = _to_index_tensor("gather", index, input)
    if index.ndim != input.ndim and not (index.ndim <= 1 and input.ndim <= 1):
        raise RuntimeError(f"gather(): Index tensor must have the same number of dimensions as input tensor "
                           f"(index {list(index.shape)}, input {list(input.shape)})")
    ishape, xshape = index.ndarray.shape, input.ndarray.shape
    for k in range(len(ishape)):
        if k != d and ishape[k] > xshape[k]:
            raise RuntimeError(f"gather(): Size does not match at dimension {k} expected index {list(ishape)} "
                               f"to be smaller than self {list(xshape)} apart from dimension {d}")
    index = _check_bounds("gather", index, xshape[d] if xshape else 1, d, False, RuntimeError)
    return Gather.apply(input, d, index)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    check_tensors("take_along_dim", input=input, indices=indices)
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
    index = _to_index_tensor("take", index, input, long_only=True)
    flat = _check_bounds("take", index.reshape(-1), input.numel(), 0)
    return gather(input.reshape(-1), 0, flat).reshape(index.shape)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``take``'s inverse, out of place: ``source`` written (added with ``accumulate``) at the positions ``index``
    of the flattened input (negative indices count from the end); the result has ``input``'s shape."""
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index.dtype.name}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype.name} and source.dtype = {source.dtype.name}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if input.numel() == 0 and index.numel():
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    flat = _check_range(index.reshape(-1), -input.numel(), input.numel(), IndexError,
                        "out of range: tried to access index {value} on a tensor of {size} elements.")
    out = index_put(input.reshape(-1), (flat,), source.reshape(-1), accumulate)
    return out.reshape(input.shape)


def zeros_scatter(shape: tuple[int, ...], dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Zeros of ``shape`` with ``src`` scatter-added at ``index`` along ``dim`` (gather's gradient)."""
    zeros = Tensor._wrap(NDArray.full(shape, 0, src.dtype, src.device))
    return Scatter.apply(zeros, dim, index, src, "add")


def _scatter(op: str, input: Tensor, dim: int, index: Tensor, src: Any, mode: str) -> Tensor:
    d = normalize_dim(op, dim, input.ndim)
    index, src = _scatter_operands(op, input, d, index, src)
    return Scatter.apply(input, d, index, src, mode)


def scatter_into(input: Tensor, dim: int, index: Tensor, src: Any = None, value: Any = None,
                 reduce: str | None = None) -> bool:
    """``input.scatter_(...)`` written by the backend straight into ``input``'s memory (``general_method``'s
    direct writer); False (the general path) with ``reduce``."""
    return reduce is None and _scatter_direct("scatter", input, dim, index, value if src is None else src, "set")


def scatter_add_into(input: Tensor, dim: int, index: Tensor, src: Tensor) -> bool:
    """``input.scatter_add_(...)`` written straight into ``input``'s memory; see :func:`scatter_into`."""
    return _scatter_direct("scatter_add", input, dim, index, src, "add")


def _scatter_direct(op: str, input: Tensor, dim: int, index: Tensor, src: Any, mode: str) -> bool:
    d = normalize_dim(op, dim, input.ndim)
    index, src = _scatter_operands(op, input, d, index, src)
    nd = input.ndarray
    nd.backend.scatter_(nd, d, index.ndarray, src.ndarray if isinstance(src, Tensor) else src, mode)
    return True


def _scatter_operands(op: str, input: Tensor, d: int, index: Tensor, src: Any) -> tuple[Tensor, Any]:
    """The index of a scatter along ``d`` checked (an int64 tensor in range) and ``src`` (a tensor, or a number)
    checked against it and cut to its shape."""
    index = _to_index_tensor(op, index, input)
    if isinstance(src, Tensor) and index.ndim != src.ndim and index.numel():
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as src tensor")
    index = _check_bounds(op, index, input.shape[d] if input.ndim else 1, d, False, RuntimeError)
    if isinstance(src, Tensor):
        _check_same_dtype("scatter", input, src)
        for k in range(index.ndim):
            if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > input.shape[k]):
                raise RuntimeError(f"{op}(): Expected index {list(index.shape)} to be no larger than self "
                                   f"{list(input.shape)} apart from dimension {d} and to be no larger than src "
                                   f"{list(src.shape)}")
    if isinstance(src, Tensor) and index.shape != src.shape:
        src = src[tuple(slice(0, n) for n in index.shape)]
    return index, src


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, value: Any = None, reduce: str | None = None
            ) -> Tensor:
    """Out-of-place scatter of ``src`` (tensor) or ``value`` (number) into ``input`` at ``index`` along ``dim``."""
    if src is None:
        src = value
    if reduce is None:
        return _scatter("scatter", input, dim, index, src, "set")
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if isinstance(src, Tensor):
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                      "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                      UserWarning, stacklevel=3)
    else:  # a number: every indexed position combines with it
        src = Tensor._wrap(NDArray.full(tuple(index.shape), src, input.dtype, input.device))
    if reduce == "add":
        return scatter_add(input, dim, index, src)
    return scatter_reduce(input, dim, index, src, "prod")


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return _scatter("scatter_add", input, dim, index, src, "add")


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    d = normalize_dim("index_select", dim, input.ndim)
    index = _to_index_tensor("index_select", index, input)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    # torch's class: RuntimeError along dim 1 (its dim-1 CPU kernel), IndexError along the others.
    index = _check_bounds("index_select", index if index.ndim == 1 else index.reshape(-1),
                          input.ndarray.shape[d] if input.ndim else 1, d, False, RuntimeError if d == 1 else IndexError)
    if input.ndim == 0:
        return input.clone()
    return IndexSelect.apply(input, d, index)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha: float = 1) -> Tensor:
    """``input`` with ``alpha * source`` added to the slices at ``index`` along ``dim`` (repeated indices add up)."""
    return IndexAdd.apply(input, *_index_add_operands(input, dim, index, source, alpha))


def index_add_into(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha: float = 1) -> bool:
    """``input.index_add_(...)`` written straight into ``input``'s memory (``general_method``'s direct writer)."""
    d, index, source, alpha = _index_add_operands(input, dim, index, source, alpha)
    _index_add_arrays(input.ndarray, d, index.ndarray, source.ndarray, alpha)
    return True


def _index_add_operands(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha: float) -> tuple:
    """index_add's checks: (dim, the index in range, source, alpha in the input's kind of number)."""
    d = normalize_dim("index_add", dim, input.ndim)
    index = _to_index_tensor("index_add", index, input)
    # torch's class: IndexError for a vector (its 1-d kernel), RuntimeError for higher ranks.
    error = IndexError if input.ndim <= 1 else RuntimeError
    index = _check_bounds("index_add", index if index.ndim == 1 else index.reshape(-1), input.ndarray.shape[d], d,
                          False, error)
    expected = input.shape[:d] + (index.shape[0],) + input.shape[d + 1:]
    if source.shape != expected:
        raise RuntimeError(f"index_add(): source shape {list(source.shape)} does not match the expected "
                           f"{list(expected)}")
    _check_same_dtype("index_add", input, source)
    if input.dtype.category < 2:  # torch's kernel reads alpha in the integer (or bool) dtype: 0.5 adds nothing
        alpha = bool(alpha) if input.dtype is dtypes.bool_ else int(alpha)
    return d, index, source, alpha


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    d = normalize_dim("index_copy", dim, input.ndim)
    index = _to_index_tensor("index_copy", index, input, long_only=True)
    index = _check_bounds("index_copy", index.reshape(-1), input.shape[d], d)
    _check_same_dtype("index_copy", input, source)
    indices = tuple(index.ndarray if k == d else None for k in range(input.ndim))
    return IndexPut.apply(input, indices, source, False)


def index_fill(input: Tensor, dim: int, index: Tensor, value: float) -> Tensor:
    d = normalize_dim("index_fill", dim, input.ndim)
    index = _to_index_tensor("index_fill", index, input, IndexError, long_only=True).reshape(-1)
    index = _check_bounds("index_fill", index, input.shape[d], d)
    if isinstance(value, Tensor):  # a 0-d tensor: it receives the gradient of each filled element once
        if value.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        filled = index_fill(~ones_like_bool(input), d, index, True)
        return where(filled, value.to(device=input.device, dtype=input.dtype), input)
    check_scalar_fits(value, input.dtype)
    indices = tuple(index.ndarray if k == d else None for k in range(input.ndim))
    return IndexPut.apply(input, indices, Tensor._wrap(NDArray.scalar(value, input.dtype, input.device)), False)


class MaskedFill(Where):
    """``masked_fill`` with a number: ``where`` recorded under torch's node name (MaskedFillBackward0)."""


class MaskedFillTensor(Where):
    """``masked_fill`` with a 0-d tensor value (MaskedFillBackward1)."""


def _masked_fill_value(input: Tensor, mask: Tensor, value: Any) -> tuple[Any, tuple[int, ...]]:
    """``masked_fill``'s checks (a bool mask broadcastable with the input, a 0-d value that fits its dtype): the
    value as a Python number, or as a tensor of the input's dtype when it stays on the device, and the shape the
    input and the mask broadcast to."""
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_fill: expected a bool mask, got "
                           f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        if not value.requires_grad:  # a device value stays on the device: reading it would synchronize
            value = value.item() if value.device.type == "cpu" else value.to(input.dtype)
    if not isinstance(value, Tensor):
        value = python_number(value)  # numpy scalars as the numbers they hold
        check_scalar_fits(value, input.dtype)
    return value, broadcast_shapes("masked_fill", input.shape, mask.shape)


def masked_fill_into(input: Tensor, mask: Tensor, value: Any) -> bool:
    """``input.masked_fill_(mask, value)`` written by the backend straight into ``input``'s memory
    (``general_method``'s direct writer); False (the general path) for a tensor value, a mask that does not broadcast
    to the input's own shape, and complex input."""
    value, shape = _masked_fill_value(input, mask, value)
    nd = input.ndarray
    if isinstance(value, Tensor) or nd.dtype.is_complex or shape != nd.shape:
        return False
    nd.backend.masked_fill_(nd, mask.ndarray, value)
    return True


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    value, _ = _masked_fill_value(input, mask, value)
    # Out of place, the input and the mask broadcast together, as torch's (in place, the result must keep the input's
    # shape: the in-place machinery refuses a larger one). The result is contiguous whatever the input's layout, as
    # torch's (a clone filled in place), so a caller may view() it.
    out = (MaskedFillTensor if isinstance(value, Tensor) else MaskedFill).apply(mask, value, input).contiguous()
    return out.to(input.dtype) if out.dtype is not input.dtype else out


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes("masked_select", input.shape, mask.shape)
    return getitem(input.expand(shape), mask.expand(shape))


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    _check_same_dtype("masked_scatter", input, source)
    shape = broadcast_shapes("masked_scatter", input.shape, mask.shape)
    if not shape:  # a 0-d result: scatter into its one-element 1-D view
        return masked_scatter(input.reshape(1), mask.reshape(1), source).reshape(())
    coords = nonzero(mask.expand(shape), as_tuple=True)
    n = coords[0].shape[0] if coords else 0
    if source.numel() < n:
        raise RuntimeError(f"masked_scatter: Number of elements of source < number of ones in mask ({source.numel()} "
                           f"< {n})")
    return index_put(input.expand(shape).clone(), coords, source.reshape(-1)[:n])


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
    check_tensors("slice_scatter", input=input, src=src)
    d = normalize_dim("slice_scatter", dim, input.ndim)
    return _scatter_into("slice_scatter", input, src, (slice(None),) * d + (slice(start, end, step),))


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """A contiguous copy of ``input`` with ``src`` written into the elements that ``as_strided(size, stride,
    storage_offset)`` views (offset and strides count the copy's elements in row-major order)."""
    out = input.contiguous().clone()
    target = as_strided(out, size, stride, 0 if storage_offset is None else storage_offset)
    if tuple(src.shape) != tuple(target.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(target.shape)}")
    target.copy_(src)
    return out


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written onto the diagonal ``offset`` of dims ``dim1``, ``dim2``."""
    check_tensors("diagonal_scatter", input=input, src=src)
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
        raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to src.dtype")
    if reduce == "mean" and input.dtype is dtypes.bool_:
        raise NotImplementedError("scatter_reduce(): \"mean\" not implemented for 'Bool'")
    d = normalize_dim("scatter_reduce", dim, input.ndim)
    index, src = _scatter_operands("scatter_reduce", input, d, index, src)
    if index.numel() == 0:
        return scatter_add(input, d, index, src)  # a copy, still attached to src's graph
    if reduce == "prod" and (input.requires_grad or src.requires_grad) and is_grad_enabled():
        return _scatter_prod(input, d, index, src, include_self)
    return ScatterReduce.apply(input, d, index, src, reduce, include_self)


class ScatterReduce(Primitive):
    """``scatter_reduce`` with sum, mean, amax or amin (prod with no gradient) as one backend call; the gradients
    as torch's: amax/amin share each result's gradient evenly among the elements equal to it."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray, src: NDArray, reduce: str, include_self: bool) -> NDArray:
        out = x.backend.scatter_reduce(x, dim, index, src, reduce, include_self)
        ctx.meta = (dim, reduce, include_self)
        if ctx.needs_input_grad:  # recorded
            ctx.save_for_backward(x, index, src, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        dim, reduce, include_self = ctx.meta
        x, index, src, out = ctx.saved_tensors
        if reduce == "sum":
            grad_self, grad_src = grad, gather(grad, dim, index)
        elif reduce == "mean":
            count = _zeros(x.shape, x.dtype, x) + 1 if include_self else _zeros(x.shape, x.dtype, x)
            count = scatter_add(count, dim, index, ones_like_bool(index).to(x.dtype))
            count = where(count == 0, 1, count)
            grad_self = grad / count
            grad_src = gather(grad, dim, index) / gather(count, dim, index)
        else:
            value = gather(out, dim, index)
            self_hit, src_hit = x == out, src == value
            shares = scatter_add(self_hit.to(x.dtype), dim, index, src_hit.to(x.dtype))
            grad_distributed = grad / shares  # products below, as torch's: a NaN place passes NaN on
            grad_self = self_hit.to(x.dtype) * grad_distributed
            grad_src = src_hit.to(x.dtype) * gather(grad_distributed, dim, index)
        if not include_self:
            grad_self = scatter(grad_self, dim, index, 0.0)
        return grad_self, None, None, grad_src, None, None


def _scatter_prod(input: Tensor, d: int, index: Tensor, src: Tensor, include_self: bool) -> Tensor:
    """prod with gradients: the product of one scatter per slice of ``index`` along ``d`` (a slice never writes
    one place twice), differentiated through the products."""
    hits = scatter_add(_zeros(input.shape, dtypes.int64, input), d, index, ones_like_bool(index).to(dtypes.int64))
    result = input if include_self else where(hits > 0, Tensor._wrap(NDArray.full((), 1, input.dtype, input.device)),
                                              input)
    filler = Tensor._wrap(NDArray.full(tuple(input.shape), 1, input.dtype, input.device))
    for j in range(index.shape[d]):
        piece = (slice(None),) * d + (slice(j, j + 1),)
        result = result * scatter(filler, d, index[piece], src[piece])
    return result


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
    _check_same_dtype("index_reduce", input, source)
    view = [-1 if k == d else 1 for k in range(source.ndim)]
    full = index.reshape(view).expand(source.shape)
    return scatter_reduce(input, d, full, source, reduce, include_self=include_self)
