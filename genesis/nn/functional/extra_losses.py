"""Margin and triplet losses of ``torch.nn.functional``: hinge embedding, multi-class and multi-label margins,
multi-label soft margin, and triplet margin (with a p-norm or any distance function).

Composed from differentiable Genesis ops; signatures, reductions and errors as torch's.
"""

from __future__ import annotations

from typing import Callable

from genesis import functional as T
from genesis.nn.functional.activations import logsigmoid
from genesis.nn.functional.basic import pairwise_distance
from genesis.nn.functional.losses import _reduce, _reduction
from genesis.tensor import Tensor, arange, zeros


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1`` (a sum of both elsewhere)."""
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    margin_term = T.where(target != 1, T.clamp(margin - input, min=0.0), 0.0)
    self_term = T.where(target != -1, input, 0.0)
    return _reduce(margin_term + self_term, reduction)


def _class_rows(op: str, input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """(N, C) input and (N,) target of a multi-class margin loss (1-D input is one sample)."""
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or input.ndim == 0:
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    rows = input.reshape(1, -1) if input.ndim == 1 else input
    if target.ndim > 1 or target.numel() != rows.shape[0]:
        raise RuntimeError(f"{op}: target tensor should be 1-D with size equal to the number of input samples "
                           f"(batch size). Expected target size [{rows.shape[0]}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    return rows, target.reshape(-1).long()


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``sum_{i != y} w_y * max(0, margin - x_y + x_i)^p / C`` per sample."""
    reduction = _reduction("multi_margin_loss", size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    rows, labels = _class_rows("multi_margin_loss", input, target)
    n, c = rows.shape
    if labels.numel() and (int(labels.min().item()) < 0 or int(labels.max().item()) >= c):
        raise RuntimeError("target out of range")
    picked = T.gather(rows, 1, labels.unsqueeze(1))  # (N, 1)
    hinge = T.clamp(margin - picked + rows, min=0.0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * T.index_select(weight, 0, labels).unsqueeze(1)
    others = arange(c, device=rows.device).unsqueeze(0) != labels.unsqueeze(1)
    loss = T.where(others, hinge, 0.0).sum(1) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: ``sum_{j in targets} sum_{i not in targets} max(0, 1 - (x_j - x_i)) / C``.

    ``target`` holds class indices of the same shape as ``input``, ended by the first ``-1``.
    """
    reduction = _reduction("multilabel_margin_loss", size_average, reduce, reduction)
    if input.ndim > 2 or input.ndim == 0 or (input.ndim == 2 and input.shape[1] == 0):
        raise RuntimeError(f"multilabel_margin_loss: Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    rows = input.reshape(1, -1) if input.ndim == 1 else input
    labels = target.reshape(rows.shape).long()
    n, c = rows.shape
    # A label counts while no -1 has been seen before it in its row.
    valid = T.cumsum((labels == -1).long(), 1) == 0
    if labels.numel() and bool((valid & ((labels < 0) | (labels >= c))).any().item()):
        raise RuntimeError("argument #2 'target' is out of range")
    labels = T.where(valid, labels, 0)
    is_target = zeros((n, c), device=rows.device).scatter_add(1, labels, valid.float()) > 0
    picked = T.gather(rows, 1, labels)  # (N, K)
    hinge = T.clamp(1.0 - picked.unsqueeze(2) + rows.unsqueeze(1), min=0.0)  # (N, K, C)
    counted = valid.unsqueeze(2) & (~is_target).unsqueeze(1)
    loss = T.where(counted, hinge, 0.0).sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """One-vs-all logistic loss averaged over the C classes (last dim):
    ``-mean_c(w_c * (y_c log sigmoid(x_c) + (1 - y_c) log sigmoid(-x_c)))``."""
    reduction = _reduction("multilabel_soft_margin_loss", size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def _check_triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the p-norm pairwise distance (Balntas et al., 2016);
    ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative distance."""
    reduction = _reduction("triplet_margin_loss", size_average, reduce, reduction)
    _check_triplet_dims(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = T.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(T.clamp(margin + d_pos - d_neg, min=0.0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` for any ``distance_function`` (default ``pairwise_distance``)."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_triplet_dims(anchor, positive, negative)
    distance = distance_function if distance_function is not None else pairwise_distance
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = T.minimum(d_neg, distance(positive, negative))
    return _reduce(T.clamp(margin + d_pos - d_neg, min=0.0), reduction)
