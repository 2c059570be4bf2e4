"""Distances between vectors: ``pairwise_distance``, ``cosine_similarity`` and ``pdist``."""

from __future__ import annotations

import numpy as np

from genesis import amp, linalg
from genesis import ops as T
from genesis.autograd import no_grad
from genesis.cuda.graphs import is_current_stream_capturing
from genesis.dtypes import SCALAR_TYPE_NAMES, promote_types
from genesis.memo import remember
from genesis.ops._args import check_tensors
from genesis.ops.autocast import one_op
from genesis.ops.linalg import distance_norm
from genesis.tensor import Tensor, tensor


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim."""
    return T.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``(x1 / max(||x1||, eps)) . (x2 / max(||x2||, eps))`` along ``dim`` (inputs broadcast), as torch: each vector
    divided by its own norm first (the result stays within [-1, 1]), each norm clamped on its own. As torch's, the
    clamp does not cut the gradient: it flows through the norm as if unclamped."""
    check_tensors("cosine_similarity", x1=x1, x2=x2)
    x1, x2 = amp.autocast_args("cosine_similarity", x1, x2)
    common = promote_types(x1.dtype, x2.dtype)
    if common.category < 2:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{SCALAR_TYPE_NAMES[common]}")
    x1, x2 = (x if x.dtype.category >= 2 else x.to(common) for x in (x1, x2))  # integers join the floating one
    if x1.shape != x2.shape:
        shape = T.broadcast_shapes(x1.shape, x2.shape)
        x1, x2 = x1.expand(shape), x2.expand(shape)
    return ((x1 / _clamped_norm(x1, dim, eps)) * (x2 / _clamped_norm(x2, dim, eps))).sum(dim)


def _clamped_norm(x: Tensor, dim: int, eps: float) -> Tensor:
    """``||x||`` along ``dim`` (kept), its value at least ``eps``; the gradient is the unclamped norm's (a copy of
    the norm clamped in place without recording, as torch)."""
    norm = linalg.vector_norm(x, 2, dim, keepdim=True).clone()
    with no_grad():
        norm.clamp_min_(eps)
    return norm


@one_op("pdist")
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between the rows of (N, M) input, for every pair i < j in row-major order:
    shape (N * (N - 1) / 2,)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    first, second = _pairs(input.shape[0], input.device)
    return distance_norm(T.index_select(input, 0, first) - T.index_select(input, 0, second), p)


# (rows, device) -> the row indices (i, j) of every pair i < j in row-major order, made once (read-only).
_PAIRS: dict[tuple, tuple[Tensor, Tensor]] = {}


def _pairs(n: int, device: object) -> tuple[Tensor, Tensor]:
    pairs = _PAIRS.get((n, device))
    if pairs is None:
        first, second = np.triu_indices(n, 1)
        pairs = (tensor(first.astype(np.int64), device=device), tensor(second.astype(np.int64), device=device))
        if not is_current_stream_capturing():  # made inside a capture, its values exist only in the replays
            remember(_PAIRS, (n, device), pairs, 64)
    return pairs
