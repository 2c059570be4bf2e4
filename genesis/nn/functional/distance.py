"""Distances between vectors: ``pairwise_distance``, ``cosine_similarity`` and ``pdist``."""

from __future__ import annotations

from genesis import ops as T
from genesis.dtypes import int64
from genesis.tensor import Tensor, tensor


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim."""
    return T.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / max(||x1|| * ||x2||, eps)`` along ``dim`` (inputs broadcast)."""
    w12 = (x1 * x2).sum(dim)
    n1 = (x1 * x1).sum(dim)
    n2 = (x2 * x2).sum(dim)
    return w12 / T.sqrt(T.clamp(n1 * n2, min=eps * eps))


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between the rows of (N, M) input, for every pair i < j in row-major order:
    shape (N * (N - 1) / 2,)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    first = [i for i in range(n) for _ in range(i + 1, n)]
    second = [j for i in range(n) for j in range(i + 1, n)]
    rows_i = T.index_select(input, 0, tensor(first, dtype=int64, device=input.device))
    rows_j = T.index_select(input, 0, tensor(second, dtype=int64, device=input.device))
    return T.norm(rows_i - rows_j, p, -1)
