"""``genesis.sparse``: torch's sparse namespace for sparse COO tensors on the CPU (``genesis.ops.sparse`` holds the
tensor class and the math).

Sparse tensors support only construction (``genesis.sparse_coo_tensor``, ``Tensor.to_sparse``), ``to_dense``,
``coalesce``, ``indices``/``values``/``_nnz``, the sparse-times-dense product (:func:`mm`, ``genesis.spmm``,
``genesis.mm``, ``@``) and :func:`sum`; other ops raise NotImplementedError naming the op.
"""

from __future__ import annotations

from typing import Any, Sequence

from genesis.ops.sparse import SparseTensor, sparse_matmul, sparse_sum
from genesis.tensor import Tensor

__all__ = ["mm", "sum"]


def mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``mat1 @ mat2`` where ``mat1`` (or ``mat2``) is a 2-D sparse COO matrix and the other a 2-D strided one, as
    ``torch.sparse.mm``: a strided result, with gradients for the strided operand and the sparse values (a leaf
    sparse tensor's gradient is sparse, over its coalesced pattern)."""
    if not isinstance(mat1, SparseTensor) and not isinstance(mat2, SparseTensor):
        raise RuntimeError("sparse.mm: expected a sparse COO operand, got two strided tensors (use genesis.mm)")
    return sparse_matmul(mat1, mat2, "sparse.mm")


def sum(input: Tensor, dim: int | Sequence[int] | None = None, dtype: Any = None) -> Tensor:
    """Sum of a sparse COO tensor over ``dim`` (all dims by default), as ``torch.sparse.sum``: a strided tensor once
    every sparse dimension is summed, else a coalesced sparse tensor."""
    return sparse_sum(input, dim, dtype)
