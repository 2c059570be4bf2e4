"""Rearranging elements into a new shape: repeat, tile, repeat_interleave, flip, roll, rot90, and the grids
and products of coordinates (meshgrid, cartesian_prod, combinations).
"""

from __future__ import annotations

import builtins
import itertools
from typing import Any, Sequence

from genesis import dtypes
from genesis.autograd import Primitive
from genesis.ndarray import NDArray, check_same_device, normalize_dim, normalize_dims
from genesis.ndarray import broadcast_shapes as _broadcast_shapes
from genesis.ops._args import (
    _shape_args,
    _tensor_args,
    _varargs_or_keyword,
    _zeros,
    arange_like,
    keep_memory_format,
    new_memory,
)
from genesis.ops.gather_scatter import index_select
from genesis.ops.join import stack
from genesis.ops.scans import cumsum
from genesis.ops.sorting import searchsorted
from genesis.tensor import Size, Tensor


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
    out = x.reshape(view_shape).expand(expanded_shape).contiguous()  # a copy, as torch's (never a view)
    return new_memory(out.reshape([r * n for r, n in zip(sizes, x.shape)]), input)


def tile(input: Tensor, *dims: Any) -> Tensor:
    """``repeat`` with ``dims`` padded with leading ones to the input's rank (``x.tile(2, 1)`` or ``(2, 1)``)."""
    dims = _shape_args("tile", dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times (an int or one count per element) along ``dim``.

    With only a tensor of counts, ``repeat_interleave(counts)`` repeats each index ``i`` ``counts[i]`` times.
    ``output_size``, the length of the result along ``dim``, is checked against it (torch uses it to skip a host
    synchronization).
    """
    out = _repeat_interleave(input, repeats, dim)
    if output_size is not None:
        length = out.shape[0] if repeats is None or dim is None else out.shape[normalize_dim(
            "repeat_interleave", dim, input.ndim)]
        if output_size != length:
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {length} but got {output_size}")
    return out


def _repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None) -> Tensor:
    if repeats is None:
        return repeat_interleave(arange_like(input.numel(), input), input.reshape(-1), 0)
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = normalize_dim("repeat_interleave", dim, input.ndim)
    n = input.shape[d]
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError(f"repeat_interleave: Repeats must be non-negative, got {repeats}")
        x = input.unsqueeze(d + 1)
        shape = list(x.shape)
        shape[d + 1] = repeats
        out_shape = list(input.shape)
        out_shape[d] = n * repeats
        return new_memory(x.expand(shape).contiguous().reshape(out_shape), input)
    counts = repeats if isinstance(repeats, Tensor) else input.new_tensor(repeats, dtype=dtypes.int64)
    if counts.numel() and int(counts.min().item()) < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
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


def flip(input: Tensor, *args: Any, dims: Any = None) -> Tensor:
    """``input`` with the order of its elements reversed along ``dims`` (a sequence of dims, or the dims themselves:
    ``x.flip(0, 1)``)."""
    args = _varargs_or_keyword("flip", args, "dims", dims)
    if not args:
        raise TypeError("flip() missing 1 required positional argument: 'dims'")
    dims = normalize_dims("flip", args[0] if len(args) == 1 else args, input.ndim)
    if not dims:
        return input.clone()
    return keep_memory_format(Flip.apply(input, dims), input)


class Flip(Primitive):
    """The elements in reverse order along ``dims``: one reversed ``index_select`` per dim; its gradient is the
    same flip of the output's gradient."""

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...]) -> NDArray:
        ctx.meta = dims
        backend, out = x.backend, x
        for d in dims:
            n = x.shape[d]
            out = backend.index_select(out, d, backend.arange(n - 1, -1, -1, dtypes.int64, x.device))
        return out

    @staticmethod
    def backward(ctx, grad):
        return Flip.apply(grad, ctx.meta), None


def fliplr(input: Tensor) -> Tensor:
    """The columns (dim 1) in reverse order."""
    if input.ndim < 2:
        raise RuntimeError(f"fliplr: Input must be >= 2-d, got a {input.ndim}-d tensor")
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    """The rows (dim 0) in reverse order."""
    if input.ndim < 1:
        raise RuntimeError("flipud: Input must be >= 1-d, got a 0-d tensor")
    return flip(input, 0)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Rotate elements by ``shifts`` along ``dims`` (the flattened tensor when dims is None)."""
    shifts = _shape_args("roll", (shifts,))
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: 0")
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    dims = _shape_args("roll", (dims,))
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    moves = []
    for s, d in zip(shifts, dims):
        d = normalize_dim("roll", d, input.ndim)
        n = input.shape[d]
        if n and s % n:
            moves.append((s % n, d))
    return Roll.apply(input, tuple(moves)) if moves else input.clone()


class Roll(Primitive):
    """Elements rotated by ``s`` along ``d`` for each ``(s, d)`` of ``moves`` (0 < s < size): the two pieces of
    each dim joined in swapped order; its gradient rolls back by ``-s``."""

    @staticmethod
    def forward(ctx, x: NDArray, moves: tuple[tuple[int, int], ...]) -> NDArray:
        ctx.meta = moves
        out = x
        for s, d in moves:
            n = x.shape[d]
            out = x.backend.cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
        return out

    @staticmethod
    def backward(ctx, grad):
        return Roll.apply(grad, tuple((grad.shape[d] - s, d) for s, d in ctx.meta)), None


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
        check_same_device("torch.meshgrid", tensors[0].device, t.device)
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


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape that tensors of the given shapes broadcast to."""
    result: tuple[int, ...] = ()
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        result = _broadcast_shapes("broadcast_shapes", result, shape)
    return Size(result)
