"""Joining and splitting tensors: cat, stack and their variants (hstack, vstack, dstack, column_stack), the
atleast_*d promotions, and split, chunk, tensor_split, unbind with their h/v/d variants.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Sequence

from genesis import dtypes
from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray, check_same_device, normalize_dim
from genesis.ndarray import cat as cat_nd
from genesis.ndarray import stack as stack_nd
from genesis.ops._args import _tensor_args
from genesis.ops.indexing import getitem
from genesis.tensor import Tensor


class Cat(Primitive):
    @staticmethod
    def forward(ctx, dim: int, *arrays: NDArray) -> NDArray:
        # torch skips 1-D empty tensors whatever the other shapes (legacy); they only receive an empty gradient.
        sizes = [None if a.shape == (0,) else a.shape[dim] for a in arrays]
        ctx.meta = (dim, sizes)
        if None in sizes:
            arrays = [a for a, n in zip(arrays, sizes) if n is not None] or arrays[:1]
        return cat_nd(arrays, dim)

    @staticmethod
    def backward(ctx, grad):
        dim, sizes = ctx.meta
        g = grad if is_grad_enabled() else grad.ndarray  # views of the array when no graph is recorded
        grads, start = [], 0
        for n in sizes:
            if n is None:
                grads.append(grad.new_zeros(0))
                continue
            grads.append(g.narrow(dim, start, n))
            start += n
        return (None, *grads)


class Stack(Primitive):
    """Same-shape arrays stacked along a new dim: one node (not an unsqueeze node per input and a concatenation);
    each input's gradient is a view of the output's gradient."""

    @staticmethod
    def forward(ctx, dim: int, *arrays: NDArray) -> NDArray:
        ctx.meta = (dim, len(arrays))
        return stack_nd(arrays, dim)

    @staticmethod
    def backward(ctx, grad):
        dim, n = ctx.meta
        if is_grad_enabled():
            return (None, *(grad.select(dim, i) for i in range(n)))
        g = grad.ndarray
        return (None, *(g.narrow(dim, i, 1).squeeze((dim,)) for i in range(n)))


class Split(Primitive):
    """Pieces of an array along ``dim``, each a view of it. The gradient is one concatenation of the pieces'
    gradients (as torch's SplitBackward), not a zero-filled copy of the whole array per piece."""

    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, sizes: tuple[int, ...]) -> tuple[NDArray, ...]:
        ctx.dim = dim
        pieces, start = [], 0
        for n in sizes:
            pieces.append(x.narrow(dim, start, n))
            start += n
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        # Pieces that received no gradient arrive as zeros (materialized by the engine).
        if is_grad_enabled():
            return cat(grads, ctx.dim), None, None
        return cat_nd([g.ndarray for g in grads], ctx.dim), None, None


def _check_cat(op: str, tensors: Sequence[Tensor], dim: int) -> int:
    """The normalized ``dim`` of a concatenation of ``tensors``, after torch's checks of their count, dims, sizes
    and devices."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        # torch: ValueError from cat and its aliases, RuntimeError from stack.
        raise (ValueError if op in ("cat", "concat", "concatenate") else RuntimeError)(
            f"{op}(): expected a non-empty list of Tensors")
    # torch skips 1-D empty tensors in cat (legacy behaviour). The checks read the NDArrays' metadata directly: the
    # Tensor properties would build a Size per access.
    arrays = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        arrays.append(t.ndarray)
    nonempty = [a for a in arrays if a.shape != (0,)] if op == "cat" else arrays
    ref = nonempty[0] if nonempty else arrays[0]
    ndim = len(ref.shape)
    if ndim == 0:
        raise RuntimeError(f"{op}(): zero-dimensional tensor (at position 0) cannot be concatenated")
    d = normalize_dim(op, dim, ndim)
    before, after = ref.shape[:d], ref.shape[d + 1:]
    for i, a in enumerate(nonempty):
        shape = a.shape
        if len(shape) != ndim:
            raise RuntimeError(f"{op}(): Tensors must have same number of dimensions: got {ndim} and {len(shape)}")
        if a.device is not ref.device:
            check_same_device(op, ref.device, a.device)
        if shape[:d] != before or shape[d + 1:] != after:
            k = next(k for k in range(ndim) if k != d and shape[k] != ref.shape[k])
            raise RuntimeError(
                f"{op}(): Sizes of tensors must match except in dimension {d}. Expected size {ref.shape[k]} but "
                f"got size {shape[k]} for tensor number {i} in the list."
            )
    return d


def _in_common_dtype(tensors: list[Tensor]) -> list[Tensor]:
    """The tensors to join, cast to their promoted dtype where they differ (as torch's cat and stack)."""
    dt = tensors[0].ndarray.dtype
    mixed = False
    for t in tensors[1:]:
        if t.ndarray.dtype is not dt:
            dt, mixed = dtypes.promote_types(dt, t.ndarray.dtype), True
    return [t if t.dtype is dt else t.to(dt) for t in tensors] if mixed else tensors


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors along an existing dim; dtypes are promoted as in torch."""
    if not isinstance(tensors, Tensor):
        tensors = list(tensors)
    d = _check_cat("cat", tensors, dim)
    tensors = _in_common_dtype(tensors)  # the skipped empty 1-d tensors count too, as in torch
    if len(tensors) == 1:
        return tensors[0].clone()
    return Cat.apply(d, *tensors)


concat = cat


concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Stack same-shape tensors along a new dim; dtypes are promoted as in torch."""
    if isinstance(tensors, Tensor):
        raise TypeError("stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    arrays = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        arrays.append(t.ndarray)
    ref = arrays[0]
    for i, a in enumerate(arrays):
        if a.shape != ref.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} at "
                               f"entry 0 and {list(a.shape)} at entry {i}")
        if a.device is not ref.device:
            check_same_device("stack", ref.device, a.device)
    return Stack.apply(normalize_dim("stack", dim, len(ref.shape) + 1), *_in_common_dtype(tensors))


def _stack_list(op: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    """The tensors of an ``*stack`` op as a list; torch's errors for a bare tensor and an empty list."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return tensors


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along the first dim of 1-d tensors, the second of others."""
    tensors = _stack_list("hstack", tensors)
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along the first dim after ``atleast_2d``."""
    tensors = _stack_list("vstack", tensors)
    return cat([t.reshape(1, -1) if t.ndim == 1 else t for t in tensors], 0)


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
    tensors = _stack_list("dstack", tensors)
    return cat(list(atleast_3d(*tensors)) if len(tensors) != 1 else [atleast_3d(tensors[0])], 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack 0-/1-d tensors as columns (and 2-d ones as blocks of columns) into a matrix."""
    tensors = _stack_list("column_stack", tensors)
    return hstack([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors])


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Alias of ``vstack``."""
    return vstack(tensors)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into chunks of a given size (the last may be smaller) or of the listed sizes."""
    shape = tensor.ndarray.shape  # the array's tuple: Tensor.shape would build a Size
    if not shape:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if isinstance(split_size_or_sections, int) and split_size_or_sections < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size_or_sections}")
    d = normalize_dim("split", dim, len(shape))
    n = shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"split: split_size can only be 0 if dimension size is 0, but got {size}")
        # An empty dim still splits into one empty piece, as in torch.
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size and n else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    return Split.apply(tensor, d, tuple(sizes))


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunks`` nearly equal pieces along ``dim`` (fewer when the dim is short), as torch."""
    shape = input.ndarray.shape
    if not shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    chunks = operator.index(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = shape[normalize_dim("chunk", dim, len(shape))]
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
    if not isinstance(indices_or_sections, (tuple, list)):  # a number of sections (an int, a numpy integer)
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {sections}")
        base, extra = divmod(n, sections)
        return split(input, [base + 1] * extra + [base] * (sections - extra), d)
    # Piece k is input[indices[k-1]:indices[k]] along dim, with Python slice semantics (so pieces may be empty).
    bounds = [0] + [int(i) for i in indices_or_sections] + [None]
    lead = (slice(None),) * d
    return tuple(getitem(input, lead + (slice(a, b),)) for a, b in zip(bounds, bounds[1:]))


class Unbind(Primitive):
    """The slices of an array along ``dim``, each a view of it. The gradient is one stack of the slices' gradients
    (as torch's UnbindBackward), not a zero-filled copy of the whole array per slice."""

    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, dim: int) -> tuple[NDArray, ...]:
        ctx.dim = dim
        shape = x.shape[:dim] + x.shape[dim + 1:]
        strides = x.strides[:dim] + x.strides[dim + 1:]
        step = x.strides[dim]
        return tuple(x.as_strided(shape, strides, x.offset + i * step) for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        # Slices that received no gradient arrive as zeros (materialized by the engine).
        if is_grad_enabled():
            return stack(grads, ctx.dim), None
        return cat_nd([g.ndarray.unsqueeze(ctx.dim) for g in grads], ctx.dim), None


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim`` as a tuple of views (one graph node; its gradient is one stack)."""
    if input.ndim == 0:
        raise IndexError(f"unbind: Dimension specified as {dim} but tensor has no dimensions")
    d = normalize_dim("unbind", dim, input.ndim)
    return Unbind.apply(input, d)


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
    return split(input, list(split_sizes), normalize_dim("split_with_sizes", dim, input.ndim))
