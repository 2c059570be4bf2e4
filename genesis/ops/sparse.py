"""Sparse COO tensors on the CPU: :class:`SparseTensor`, its constructors and the sparse-times-dense product.

A sparse COO tensor is ``(indices, values, size)``: ``indices`` an int64 (sparse_dim, nnz) tensor of coordinates and
``values`` a (nnz, *dense_shape) tensor of the entries there (duplicates add up). Genesis keeps both parts as
ordinary dense Tensors instead of asking a backend for a sparse array: an NDArray is a strided view over one buffer,
which a sparse tensor is not, and every sparse op here is a short composition of dense ops (``index_add``,
``index_select``, ``unique``), so autograd, dtype checks and devices come from the ops beneath with no new backend
primitive. Gradients flow through ``values``: a sparse tensor made with ``requires_grad=True`` owns a leaf ``values``
tensor whose gradient is shown as a sparse tensor over the coalesced pattern (as torch's ``sparse.mm`` gives it).

Sparse tensors support only the operations listed in :data:`SUPPORTED`; any other op raises NotImplementedError
naming the op (as torch does for ops without a sparse kernel). CUDA is not supported: a sparse tensor on a GPU raises
RuntimeError.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Sequence

from genesis import dtypes
from genesis.autograd import Primitive
from genesis.device import device as Device
from genesis.device import factory_device
from genesis.ndarray import NDArray, normalize_dim, normalize_dims
from genesis.ops.join import cat, stack
from genesis.tensor import Size, Tensor, zeros
from genesis.tensor import tensor as _from_data

#: The operations a sparse COO tensor supports (everything else raises NotImplementedError naming the op).
SUPPORTED = ("to_dense", "to_sparse", "coalesce", "is_coalesced", "indices", "values", "_indices", "_values",
             "_nnz", "sparse_dim", "dense_dim", "size", "shape", "dim", "ndim", "dtype", "device", "layout",
             "is_sparse", "requires_grad", "requires_grad_", "grad", "detach", "clone", "zero_", "+", "mm", "matmul",
             "@", "genesis.sparse.mm", "genesis.spmm", "genesis.sparse.sum")


class layout:
    """A tensor's memory layout, as ``torch.layout``: :data:`strided` (dense) or :data:`sparse_coo`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"genesis.{self.name}"

    def __reduce__(self) -> str:
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _unsupported_op() -> str:
    """The name of the outermost Genesis op or Tensor method on the call stack (the one the user called)."""
    from genesis.ops import registry  # the registry imports this module: look its table up only on this error path

    codes: dict = {}
    for op in registry.OPS:  # the first name of an op wins over its aliases (mul, not multiply)
        codes.setdefault(getattr(op.fn, "__code__", None), op.name)
    for name, attr in vars(Tensor).items():
        fn = attr.fget if isinstance(attr, property) else attr
        codes.setdefault(getattr(fn, "__code__", None), name)
    found = "this op"
    frame = sys._getframe(2)
    while frame is not None:
        found = codes.get(frame.f_code, found)
        frame = frame.f_back
    return found


class SparseTensor(Tensor):
    """A sparse COO tensor: int64 ``indices`` (sparse_dim, nnz), ``values`` (nnz, *dense_shape) and a size.

    Made by :func:`sparse_coo_tensor` or ``Tensor.to_sparse()``; ``to_dense()`` turns it back into a strided tensor.
    """

    def __init__(self, indices: Tensor, values: Tensor, size: tuple[int, ...], coalesced: bool = False) -> None:
        self._indices_t = indices
        self._values_t = values
        self._size = Size(size)
        self._coalesced = coalesced
        self._version = [0]

    @property
    def ndarray(self) -> Any:
        """Sparse tensors have no strided array: reaching for one means an op without sparse support was called."""
        raise NotImplementedError(f"{_unsupported_op()}: not supported for sparse COO tensors (layout "
                                  f"genesis.sparse_coo); they support only {', '.join(SUPPORTED)}. Call .to_dense() "
                                  "first")

    # ------------------------------------------------------------ metadata
    @property
    def layout(self) -> layout:
        return sparse_coo

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def shape(self) -> Size:
        return self._size

    def size(self, dim: int | None = None) -> Any:
        return self._size if dim is None else self._size[normalize_dim("size", dim, len(self._size))]

    @property
    def dtype(self) -> dtypes.dtype:
        return self._values_t.dtype

    @property
    def device(self) -> Device:
        return self._values_t.device

    @property
    def ndim(self) -> int:
        return len(self._size)

    def dim(self) -> int:
        return len(self._size)

    def sparse_dim(self) -> int:
        """The number of sparse dimensions (rows of ``indices``)."""
        return self._indices_t.shape[0]

    def dense_dim(self) -> int:
        """The number of dense dimensions (trailing dims of each value)."""
        return self._values_t.ndim - 1

    def _nnz(self) -> int:
        """The number of stored entries (duplicates included until coalesced)."""
        return self._values_t.shape[0]

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and unique (as produced by :meth:`coalesce`)."""
        return self._coalesced

    def __repr__(self) -> str:
        extra = f", grad_fn=<{self.grad_fn.name()}>" if self.grad_fn is not None else ""
        extra += ", requires_grad=True" if self.requires_grad and self.grad_fn is None else ""
        return (f"tensor(indices={self._indices_t!r},\n       values={self._values_t.detach()!r},\n       "
                f"size={tuple(self._size)}, nnz={self._nnz()}, layout=genesis.sparse_coo{extra})")

    # ------------------------------------------------------------ parts
    def _indices(self) -> Tensor:
        """The indices as stored (possibly uncoalesced)."""
        return self._indices_t

    def _values(self) -> Tensor:
        """The values as stored (possibly uncoalesced), with their autograd history."""
        return self._values_t

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor; RuntimeError on an uncoalesced one (as torch)."""
        self._check_coalesced("indices")
        return self._indices_t

    def values(self) -> Tensor:
        """The values of a coalesced tensor; RuntimeError on an uncoalesced one (as torch)."""
        self._check_coalesced("values")
        return self._values_t

    def _check_coalesced(self, op: str) -> None:
        if not self._coalesced:
            raise RuntimeError(f"{op}: Cannot get {op} on an uncoalesced tensor, please call .coalesce() first")

    # ------------------------------------------------------------ autograd, through the values
    @property
    def requires_grad(self) -> bool:
        return self._values_t.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._values_t.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        self._values_t.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self) -> Any:
        return self._values_t.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._values_t.grad_fn is None

    @property
    def grad(self) -> SparseTensor | None:
        """The gradient of a leaf sparse tensor: a sparse tensor over its coalesced pattern."""
        g = self._values_t.grad
        if g is None:
            return None
        # Every duplicate of one position received the gradient of that position: average them, not add.
        summed = SparseTensor(self._indices_t, g, self._size).coalesce()
        counts = SparseTensor(self._indices_t, _ones_for(g), self._size).coalesce()._values_t
        return SparseTensor(summed._indices_t, summed._values_t / counts, self._size, coalesced=True)

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            raise RuntimeError("grad: only None can be assigned to the gradient of a sparse COO tensor")
        self._values_t.grad = None

    def detach(self) -> SparseTensor:
        return SparseTensor(self._indices_t, self._values_t.detach(), self._size, self._coalesced)

    def clone(self) -> SparseTensor:
        """A copy with indices and values of its own."""
        return SparseTensor(self._indices_t.clone(), self._values_t.clone(), self._size, self._coalesced)

    def zero_(self) -> SparseTensor:
        """Drop every stored entry in place (nnz becomes 0), as torch's ``zero_`` on a sparse tensor."""
        self._indices_t = self._indices_t[:, :0]
        self._values_t = self._values_t[:0].detach()
        self._coalesced = True
        self._version[0] += 1
        return self

    # ------------------------------------------------------------ addition (gradients accumulate with it)
    def __add__(self, other: Tensor) -> Tensor:
        """sparse + sparse: a sparse tensor holding both sets of entries (uncoalesced, as torch's gradient
        accumulation); sparse + strided: a strided tensor. A number is not supported, as by the other ops."""
        if not isinstance(other, Tensor):
            return Tensor.__add__(self, other)
        if not isinstance(other, SparseTensor):
            return self.to_dense() + other
        if other._size != self._size:
            raise RuntimeError(f"add: sparse tensors of sizes {list(self._size)} and {list(other._size)} cannot be "
                               "added (the sizes must be equal)")
        if other.sparse_dim() != self.sparse_dim():
            raise RuntimeError(f"add: sparse tensors with {self.sparse_dim()} and {other.sparse_dim()} sparse "
                               "dimensions cannot be added")
        return SparseTensor(cat([self._indices_t, other._indices_t], 1), cat([self._values_t, other._values_t]),
                            self._size)

    def __radd__(self, other: Tensor) -> Tensor:
        """strided + sparse: a strided tensor."""
        if not isinstance(other, Tensor):
            return Tensor.__radd__(self, other)
        return other + self.to_dense()

    # ------------------------------------------------------------ conversions
    def to_sparse(self, sparse_dim: int | None = None) -> SparseTensor:
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from sparse_coo with sparse_dim {self.sparse_dim()} to "
                               f"sparse_dim {sparse_dim} is not supported")
        return self

    def to_dense(self, dtype: Any = None) -> Tensor:
        """The strided tensor of the same values (duplicates added); differentiable in the values."""
        values = self._values_t if dtype is None else self._values_t.to(dtypes.to_dtype(dtype))
        sparse_shape = self._size[:self.sparse_dim()]
        flat = zeros((math.prod(sparse_shape),) + tuple(values.shape[1:]), dtype=values.dtype, device=self.device)
        return flat.index_add(0, _linear_index(self._indices_t, sparse_shape), values).reshape(self._size)

    def coalesce(self) -> SparseTensor:
        """The same tensor with sorted, unique indices (values at repeated indices added); differentiable."""
        if self._coalesced:
            return self
        sparse_shape = self._size[:self.sparse_dim()]
        linear = _linear_index(self._indices_t, sparse_shape)
        unique, inverse = linear.unique(return_inverse=True)
        values = zeros((unique.shape[0],) + tuple(self._values_t.shape[1:]), dtype=self.dtype, device=self.device)
        values = values.index_add(0, inverse, self._values_t)
        rows = []
        for n in reversed(sparse_shape):  # unravel the linear index, last dimension first
            rows.append(unique % n)
            unique = unique // n
        indices = stack(rows[::-1]) if rows else linear.new_zeros(0, unique.shape[0])
        return SparseTensor(indices, values, self._size, coalesced=True)


class EmbeddingSparseGrad(Primitive):
    """Rows of a (V, D) ``weight`` picked by an int64 ``index`` (n,), whose weight gradient is a sparse COO tensor
    (torch's ``embedding(..., sparse=True)``): one entry per looked-up position, the positions equal to
    ``padding_idx`` left out, duplicates not summed (uncoalesced)."""

    @staticmethod
    def forward(ctx, weight: NDArray, index: NDArray, *, padding_idx: int | None,
                scale_grad_by_freq: bool) -> NDArray:
        ctx.save_for_backward(index)
        ctx.weight_shape = tuple(weight.shape)
        ctx.padding_idx = padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        return weight.backend.index_select(weight, 0, index)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[SparseTensor, None]:
        if ctx.scale_grad_by_freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
        (index,) = ctx.saved_tensors
        if ctx.padding_idx is not None:
            keep = index != ctx.padding_idx
            index, grad = index[keep], grad[keep]
        return SparseTensor(index.unsqueeze(0), grad, ctx.weight_shape), None


def _ones_for(g: Tensor) -> Tensor:
    return zeros(g.shape, dtype=g.dtype, device=g.device) + 1


def _linear_index(indices: Tensor, sparse_shape: Sequence[int]) -> Tensor:
    """Row-major linear positions of the (sparse_dim, nnz) coordinates in ``sparse_shape``."""
    linear = indices.new_zeros(indices.shape[1])
    for d, n in enumerate(sparse_shape):
        linear = linear * n + indices[d]
    return linear


def _check_cpu(op: str, device: Device) -> None:
    if device.type != "cpu":
        raise RuntimeError(f"{op}: sparse COO tensors are supported on the CPU only, got device {device}")


def _as_tensor(data: Any, dtype: dtypes.dtype | None, device: Any) -> Tensor:
    if isinstance(data, Tensor):
        return data if device is None else data.to(factory_device(device))
    return _from_data(data, dtype=dtype, device=device)


def sparse_coo_tensor(indices: Any, values: Any, size: Sequence[int] | None = None, *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor with entries ``values`` at the coordinates ``indices`` (as ``torch.sparse_coo_tensor``).

    Args:
        indices: int64 coordinates, shape (sparse_dim, nnz).
        values: the entries, shape (nnz, *dense_shape); gradients flow back to it when it requires them.
        size: the tensor's size; inferred from the largest index of each sparse dimension when None.
        dtype, device: of the values; the CPU only.
        requires_grad: make the sparse tensor a leaf that records a gradient (through its own copy of ``values``).
        check_invariants: accepted for torch's signature; indices are always checked against ``size``.
        is_coalesced: declare the indices sorted and unique.

    Returns:
        The sparse tensor (uncoalesced unless ``is_coalesced``).
    """
    if device is not None:
        _check_cpu("sparse_coo_tensor", factory_device(device))
    d = dtypes.to_dtype(dtype) if dtype is not None else None
    values = _as_tensor(values, d, device)
    indices = _as_tensor(indices, dtypes.int64, values.device if device is None else device)
    _check_cpu("sparse_coo_tensor", values.device)
    _check_cpu("sparse_coo_tensor", indices.device)
    if d is not None and values.dtype is not d:
        values = values.to(d)
    if indices.dtype is not dtypes.int64:
        raise RuntimeError(f"sparse_coo_tensor: indices must be an int64 tensor, got {indices.dtype}")
    if indices.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.ndim == 0:
        raise RuntimeError("sparse_coo_tensor: values must have at least one dimension (nnz), got a 0-d tensor")
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(f"sparse_coo_tensor: indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: {values.shape[0]}")
    sparse_dim, nnz = indices.shape
    if nnz and indices.min().item() < 0:
        raise RuntimeError(f"sparse_coo_tensor: found negative index {indices.min().item()}")
    largest = indices.max(1).values.tolist() if nnz else [-1] * sparse_dim
    if size is None:
        size = tuple(n + 1 for n in largest) + tuple(values.shape[1:])
    size = tuple(int(n) for n in size)
    if len(size) != sparse_dim + values.ndim - 1:
        raise RuntimeError(f"sparse_coo_tensor: number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
                           f"({values.ndim - 1}), but got {len(size)}")
    if size[sparse_dim:] != tuple(values.shape[1:]):
        raise RuntimeError(f"sparse_coo_tensor: values has dense shape {list(values.shape[1:])}, but size "
                           f"{list(size)} has {list(size[sparse_dim:])}")
    for dim, (n, top) in enumerate(zip(size, largest)):
        if top >= n:
            raise RuntimeError(f"sparse_coo_tensor: size is inconsistent with indices: for dim {dim}, size is {n} "
                               f"but found index {top}")
    if requires_grad:
        values = values.detach().requires_grad_(True)
    elif values.requires_grad:
        values = values.view(values.shape)  # a node of its own, so the sparse tensor is not a leaf (as torch)
    return SparseTensor(indices, values, size, coalesced=bool(is_coalesced))


def to_sparse(input: Tensor, sparse_dim: int | None = None, *, layout: Any = None) -> SparseTensor:
    """The sparse COO tensor of a strided one's nonzero entries (the first ``sparse_dim`` dims sparse, all by default);
    differentiable: the gradient comes back dense."""
    if isinstance(input, SparseTensor):
        return input.to_sparse(sparse_dim)
    if layout is not None and layout is not sparse_coo:
        raise RuntimeError(f"to_sparse: only layout genesis.sparse_coo is supported, got {layout}")
    _check_cpu("to_sparse", input.device)
    sparse_dim = input.ndim if sparse_dim is None else sparse_dim
    if not 0 < sparse_dim <= input.ndim:
        raise RuntimeError(f"to_sparse: sparse_dim argument must be in [1, {input.ndim}] range, but {sparse_dim} "
                           "is given")
    nonzero = input.detach() != 0
    if sparse_dim < input.ndim:
        nonzero = nonzero.reshape(input.shape[:sparse_dim] + (-1,)).any(-1)
    indices = nonzero.nonzero().t().contiguous()
    values = input[tuple(indices[d] for d in range(sparse_dim))]
    return SparseTensor(indices, values, tuple(input.shape), coalesced=True)


def to_dense(input: Tensor, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
    """The strided tensor of a sparse one (a strided tensor is returned as it is, as torch)."""
    if isinstance(input, SparseTensor):
        return input.to_dense(dtype)
    return input if dtype is None else input.to(dtypes.to_dtype(dtype))


def is_sparse(input: Tensor) -> bool:
    """Whether ``input`` is a sparse tensor (``Tensor.is_sparse``)."""
    return isinstance(input, SparseTensor)


def layout_of(input: Tensor) -> layout:
    """The layout of a tensor (``Tensor.layout``): :data:`strided` or :data:`sparse_coo`."""
    return sparse_coo if isinstance(input, SparseTensor) else strided


def sparse_mm(sparse: SparseTensor, dense: Tensor, op: str = "sparse.mm") -> Tensor:
    """``sparse @ dense`` for a 2-D sparse COO matrix and a 2-D strided one, as a strided tensor.

    Each stored entry ``(i, k, v)`` adds ``v * dense[k]`` to row ``i`` of the result; gradients flow to ``dense``
    and to the sparse tensor's values.
    """
    if not isinstance(sparse, SparseTensor):
        raise RuntimeError(f"{op}: expected a sparse COO first argument, got a strided tensor")
    if isinstance(dense, SparseTensor):
        raise NotImplementedError(f"{op}: sparse @ sparse is not supported; the second argument must be strided")
    if sparse.ndim != 2 or sparse.sparse_dim() != 2 or dense.ndim != 2:
        raise RuntimeError(f"{op}: expected 2-D sparse (with 2 sparse dims) and 2-D dense matrices, got "
                           f"{sparse.ndim}-D and {dense.ndim}-D")
    if sparse.shape[1] != dense.shape[0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({sparse.shape[0]}x{sparse.shape[1]} "
                           f"and {dense.shape[0]}x{dense.shape[1]})")
    if sparse.dtype is not dense.dtype:
        raise RuntimeError(f"{op}: expected mat1 and mat2 to have the same dtype, but got: {sparse.dtype} != "
                           f"{dense.dtype}")
    _check_cpu(op, dense.device)
    rows, cols = sparse._indices_t[0], sparse._indices_t[1]
    products = sparse._values_t.unsqueeze(1) * dense.index_select(0, cols)  # (nnz, m)
    out = zeros(sparse.shape[0], dense.shape[1], dtype=dense.dtype, device=dense.device)
    return out.index_add(0, rows, products)


def transpose_sparse(input: SparseTensor) -> SparseTensor:
    """The transpose of a 2-D sparse COO matrix (its two rows of indices swapped)."""
    return SparseTensor(input._indices_t.flip(0), input._values_t, (input.shape[1], input.shape[0]))


def sparse_matmul(input: Tensor, other: Tensor, op: str) -> Tensor:
    """``mm`` / ``matmul`` / ``@`` with a sparse COO operand: sparse @ dense, or dense @ sparse as
    ``(sparse.T @ dense.T).T``; a strided result either way."""
    if isinstance(input, SparseTensor):
        return sparse_mm(input, other, op)
    if input.ndim != 2:
        raise RuntimeError(f"{op}: expected a 2-D strided matrix beside a sparse one, got {input.ndim}-D")
    return sparse_mm(transpose_sparse(other), input.mT, op).mT


def spmm(input: SparseTensor, mat2: Tensor) -> Tensor:
    """``input @ mat2`` for a 2-D sparse COO ``input`` and a 2-D strided ``mat2`` (as ``torch.spmm``)."""
    return sparse_mm(input, mat2, "spmm")


def sparse_sum(input: SparseTensor, dim: int | Sequence[int] | None = None, dtype: Any = None) -> Tensor:
    """Sum of a sparse COO tensor's entries over ``dim`` (all by default), as ``torch.sparse.sum``.

    Summing over every sparse dimension gives a strided tensor; otherwise a coalesced sparse tensor over the
    remaining dimensions.
    """
    if not isinstance(input, SparseTensor):
        raise RuntimeError("sparse.sum: expected a sparse COO tensor, got a strided tensor")
    values = input._values_t if dtype is None else input._values_t.to(dtypes.to_dtype(dtype))
    if dim is None:
        return values.sum()
    dims = normalize_dims("sparse.sum", dim, input.ndim)
    k = input.sparse_dim()
    dense_dims = [d - k + 1 for d in dims if d >= k]
    if dense_dims:
        values = values.sum(dense_dims)
    kept = [d for d in range(k) if d not in dims]
    if not kept:
        return values.sum(0)
    size = tuple(n for d, n in enumerate(input.shape) if d not in dims)
    return SparseTensor(input._indices_t[kept], values, size).coalesce()
