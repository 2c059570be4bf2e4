"""Sparse CSR tensors (``torch.sparse_csr``): :class:`SparseCsrTensor`, :func:`sparse_csr_tensor` and the
conversions between CSR, COO and strided tensors.

A CSR matrix is ``(crow_indices, col_indices, values, size)``: the entries of row ``i`` are ``values[crow[i]:crow[i +
1]]`` at the columns ``col_indices[crow[i]:crow[i + 1]]`` (sorted and distinct within a row). Genesis supports 2-D
CSR matrices with scalar values (no batch or dense dims) and a small set of ops (:data:`SUPPORTED_CSR`): its parts,
conversions, casts and the products with strided matrices, which go through the equivalent coalesced COO tensor
(``genesis.ops.sparse``), so gradients flow to the values the same way. Other ops raise NotImplementedError naming the
op. A matrix lives on the device of its parts (the CPU or a GPU); ``to(device)`` moves all three.
"""

from __future__ import annotations

from typing import Any, Sequence

from genesis import dtypes
from genesis.device import device as Device
from genesis.memory_format import layout, sparse_coo, sparse_csr
from genesis.ops.join import cat, stack
from genesis.ops.shape import repeat_interleave
from genesis.ops.sparse import SparseTensor, sparse_matmul
from genesis.ops.sparse import to_sparse as _to_sparse_coo
from genesis.ops.sparse_base import SparseBase, coerce_tensor
from genesis.tensor import Size, Tensor, arange, zeros

#: The operations a sparse CSR tensor supports (everything else raises NotImplementedError naming the op).
SUPPORTED_CSR = ("to_dense", "to_sparse", "to_sparse_coo", "to_sparse_csr", "crow_indices", "col_indices", "values",
                 "_nnz", "sparse_dim", "dense_dim", "size", "shape", "dim", "ndim", "numel", "dtype", "device",
                 "layout", "is_sparse_csr", "to", "float", "double", "cpu", "cuda", "requires_grad", "requires_grad_",
                 "grad", "detach", "clone", "mm", "matmul", "@", "genesis.sparse.mm", "genesis.sparse.addmm")


class SparseCsrTensor(SparseBase):
    """A 2-D sparse CSR matrix: ``crow_indices`` (rows + 1,), ``col_indices`` (nnz,), ``values`` (nnz,), a size.

    Made by :func:`sparse_csr_tensor` or ``Tensor.to_sparse_csr()``; ``to_dense()`` / ``to_sparse()`` turn it into a
    strided or a COO tensor.
    """

    _KIND = "CSR"
    _SUPPORTED = SUPPORTED_CSR

    def __init__(self, crow_indices: Tensor, col_indices: Tensor, values: Tensor, size: Sequence[int]) -> None:
        self._crow_t = crow_indices
        self._col_t = col_indices
        self._values_t = values
        self._size = Size(size)
        self._vc = [0]

    def _with_values(self, values: Tensor) -> SparseCsrTensor:
        return SparseCsrTensor(self._crow_t, self._col_t, values, self._size)

    def _to_device(self, device: Device) -> SparseCsrTensor:
        return SparseCsrTensor(self._crow_t.to(device), self._col_t.to(device), self._values_t.to(device), self._size)

    @property
    def layout(self) -> layout:
        return sparse_csr

    def crow_indices(self) -> Tensor:
        """Where each row's entries start in ``col_indices`` / ``values``, and the end: (rows + 1,)."""
        return self._crow_t

    def col_indices(self) -> Tensor:
        """The column of each entry, row by row: (nnz,)."""
        return self._col_t

    def values(self) -> Tensor:
        """The entries, row by row, with their autograd history: (nnz,)."""
        return self._values_t

    def _nnz(self) -> int:
        return self._values_t.shape[0]

    def sparse_dim(self) -> int:
        return 2

    def dense_dim(self) -> int:
        return 0

    def __repr__(self) -> str:
        extra = f", grad_fn=<{self.grad_fn.name()}>" if self.grad_fn is not None else ""
        extra += ", requires_grad=True" if self.requires_grad and self.grad_fn is None else ""
        return (f"tensor(crow_indices={self._crow_t!r},\n       col_indices={self._col_t!r},\n       "
                f"values={self._values_t.detach()!r}, size={tuple(self._size)}, nnz={self._nnz()}, "
                f"layout=genesis.sparse_csr{extra})")

    def clone(self) -> SparseCsrTensor:
        """A copy with indices and values of its own."""
        return SparseCsrTensor(self._crow_t.clone(), self._col_t.clone(), self._values_t.clone(), self._size)

    # ------------------------------------------------------------ conversions and products, through COO
    def to_sparse(self, sparse_dim: int | None = None, *, layout: Any = None) -> SparseBase:
        """The coalesced COO tensor of the same entries (``layout=genesis.sparse_csr``: this tensor);
        differentiable in the values."""
        if layout is sparse_csr:
            return self
        if sparse_dim not in (None, 2) or layout not in (None, sparse_coo):
            raise RuntimeError(f"to_sparse: a CSR matrix converts to a COO tensor with 2 sparse dims, got "
                               f"sparse_dim={sparse_dim}, layout={layout}")
        rows = repeat_interleave(arange(self._size[0], device=self.device), self._crow_t.diff())
        indices = stack([rows, self._col_t.to(dtypes.int64)])
        return SparseTensor(indices, self._values_t, self._size, coalesced=True)

    def to_sparse_coo(self) -> SparseTensor:
        """``to_sparse()``."""
        return self.to_sparse()

    def to_dense(self, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
        """The strided matrix; differentiable in the values."""
        return self.to_sparse().to_dense(dtype)

    def mm(self, other: Tensor) -> Tensor:
        """``self @ other`` for a 2-D strided (or sparse COO) ``other``."""
        return sparse_matmul(self.to_sparse(), other, "mm")

    def matmul(self, other: Tensor) -> Tensor:
        """``self @ other``: as :meth:`mm`, and a 1-D strided ``other`` as a column (a 1-D result)."""
        return sparse_matmul(self.to_sparse(), other, "matmul")

    __matmul__ = matmul

    def __rmatmul__(self, other: Tensor) -> Tensor:
        return sparse_matmul(other, self.to_sparse(), "matmul")


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Sequence[int] | None = None, *,
                      dtype: Any = None, device: Any = None, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseCsrTensor:
    """A 2-D sparse CSR matrix (as ``torch.sparse_csr_tensor``); its invariants are always checked, with the
    messages torch gives under ``check_invariants=True``.

    Args:
        crow_indices: integer (rows + 1,): row ``i``'s entries are ``crow[i]:crow[i + 1]``; ``crow[0] == 0`` and
            ``crow[-1] == nnz``.
        col_indices: integer (nnz,) columns, sorted and distinct within each row (same dtype as ``crow_indices``,
            int64 where they differ).
        values: (nnz,) entries.
        size: (rows, cols); by default ``(len(crow) - 1, max(col) + 1)``.
        dtype, requires_grad: of the values (``requires_grad`` makes the matrix a leaf).
        device: where the three parts go. Without it, tensors stay on their devices, which must agree (RuntimeError
            otherwise, as torch); indices given as Python data go to the values' device, values given as data to
            the default device.
        check_invariants: accepted for torch's signature.

    Returns:
        The CSR matrix.
    """
    d = dtypes.to_dtype(dtype) if dtype is not None else None
    values = coerce_tensor(values, d, device)
    crow = coerce_tensor(crow_indices, dtypes.int64, device, values.device)
    col = coerce_tensor(col_indices, dtypes.int64, device, values.device)
    for name, t in (("values", values), ("col_indices", col)):
        if t.device is not crow.device:
            raise RuntimeError(f"sparse_csr_tensor: device of crow_indices (={crow.device}) must match device of "
                               f"{name} (={t.device})")
    if d is not None and values.dtype is not d:
        values = values.to(d)
    if crow.dtype not in (dtypes.int32, dtypes.int64) or col.dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError(f"sparse_csr_tensor: crow_indices and col_indices must be int32 or int64 tensors, got "
                           f"{crow.dtype} and {col.dtype}")
    if crow.dtype is not col.dtype:
        crow, col = crow.to(dtypes.int64), col.to(dtypes.int64)
    if crow.ndim != 1 or col.ndim != 1 or values.ndim != 1 or (size is not None and len(size) != 2):
        raise NotImplementedError("sparse_csr_tensor: only 2-D CSR matrices with 1-D crow_indices, col_indices and "
                                  "values are supported (no batch or dense dims)")
    nnz = values.shape[0]
    if col.shape[0] != nnz:
        raise RuntimeError(f"sparse_csr_tensor: col_indices and values must have the same number of elements, but "
                           f"got {col.shape[0]} and {nnz}")
    if size is None:
        size = (crow.shape[0] - 1, col.max().item() + 1 if nnz else 0)
    rows, cols = (int(n) for n in size)
    if crow.shape[0] != rows + 1:
        raise RuntimeError(f"sparse_csr_tensor: crow_indices.size(-1) must be equal to size[-2] + 1 (that is "
                           f"{rows + 1}), but got: {crow.shape[0]}")
    _check_csr(crow, col, nnz, rows, cols)
    if requires_grad:
        values = values.detach().requires_grad_(True)
    elif values.requires_grad:
        values = values.view(values.shape)  # a node of its own, so the matrix is not a leaf (as torch)
    return SparseCsrTensor(crow, col, values, (rows, cols))


def _check_csr(crow: Tensor, col: Tensor, nnz: int, rows: int, cols: int) -> None:
    """torch's CSR invariants, each a RuntimeError with torch's wording."""
    counts = crow[1:] - crow[:-1]
    failed = None
    if crow[0].item() != 0:
        failed = "`crow_indices[..., 0] == 0`"
    elif crow[-1].item() != nnz:
        failed = "`crow_indices[..., -1] == nnz`"
    elif rows and ((counts < 0).any().item() or (counts > cols).any().item()):
        failed = "`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols`"
    elif nnz and ((col < 0).any().item() or (col >= cols).any().item()):
        failed = "`0 <= col_indices < ncols`"
    elif nnz > 1:
        rows_of = repeat_interleave(arange(rows, device=crow.device), counts.to(dtypes.int64))
        linear = rows_of * cols + col  # row-major: strictly increasing iff each row's columns are
        if not (linear[1:] > linear[:-1]).all().item():
            failed = ("`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, ..., nrows "
                      "are sorted and distinct along the last dimension values`")
    if failed is not None:
        raise RuntimeError(f"sparse_csr_tensor: {failed} is not satisfied.")


def to_sparse_csr(input: Tensor, dense_dim: int | None = None) -> SparseCsrTensor:
    """The CSR matrix of a 2-D strided tensor's nonzero entries, or of a 2-D sparse COO tensor (coalesced first), as
    ``Tensor.to_sparse_csr``; differentiable (a strided input's gradient comes back strided)."""
    if isinstance(input, SparseCsrTensor):
        return input
    if dense_dim:
        raise NotImplementedError("to_sparse_csr: hybrid CSR tensors (dense_dim > 0) are not supported")
    if isinstance(input, SparseTensor):
        if input.sparse_dim() != 2:
            raise RuntimeError("to_sparse_csr: coo_to_sparse_csr: conversion from Sparse to SparseCsr for input "
                               "tensors with sparse_dim()!=2 is not supported")
        if input.dense_dim():
            raise NotImplementedError("to_sparse_csr: hybrid CSR tensors (a COO tensor with dense dims) are not "
                                      "supported")
        coo = input.coalesce()
    else:
        if input.ndim != 2:
            raise NotImplementedError(f"to_sparse_csr: only 2-D tensors convert to CSR (no batched CSR), got "
                                      f"{input.ndim}-D")
        coo = _to_sparse_coo(input)
    ones = zeros(coo._nnz(), dtype=dtypes.int64, device=coo.device) + 1
    counts = zeros(coo.shape[0], dtype=dtypes.int64, device=coo.device).index_add(0, coo._indices_t[0], ones)
    crow = cat([counts.new_zeros(1), counts.cumsum(0)])
    return SparseCsrTensor(crow, coo._indices_t[1], coo._values_t, coo.shape)


def to_sparse(input: Tensor, sparse_dim: int | None = None, *, layout: Any = None, blocksize: Any = None,
              dense_dim: int | None = None) -> SparseBase:
    """``Tensor.to_sparse``: a sparse COO tensor (``genesis.ops.sparse.to_sparse``), or with
    ``layout=genesis.sparse_csr`` a CSR matrix (:func:`to_sparse_csr`)."""
    if blocksize is not None:
        raise NotImplementedError("to_sparse: blocked layouts (blocksize) are not supported")
    if layout is sparse_csr:
        return to_sparse_csr(input, dense_dim)
    if isinstance(input, SparseCsrTensor):
        return input.to_sparse(sparse_dim, layout=layout)
    return _to_sparse_coo(input, sparse_dim, layout=layout)
