"""Distance layers: ``PairwiseDistance`` and ``CosineSimilarity``."""

from __future__ import annotations

from genesis.nn import functional as F
from genesis.nn.modules.module import Module
from genesis.tensor import Tensor


class PairwiseDistance(Module):
    """p-norm distance ``||x1 - x2 + eps||_p`` along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine similarity of two inputs along ``dim``: ``x1 . x2 / max(||x1|| * ||x2||, eps)``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
