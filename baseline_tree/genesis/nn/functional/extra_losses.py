"""Margin and triplet losses of ``torch.nn.functional``: hinge embedding, multi-class and multi-label margins,
multi-label soft margin, and triplet margin (with a p-norm or any distance function).

Composed from differentiable Genesis ops; signatures, reductions and errors as torch's.
"""

from __future__ import annotations

from typing import Callable, Sequence

from genesis import functional as T
from genesis.nn.functional.activations import logsigmoid
from genesis.nn.functional.basic import pairwise_distance
from genesis.nn.functional.losses import _reduce, _reduction
from genesis.tensor import Tensor, arange, full, tensor, zeros


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


def _logsumexp(*terms: Tensor) -> Tensor:
    """``log(sum(exp(terms)))`` elementwise, -inf where every term is -inf, with finite gradients there too."""
    stacked = T.stack(terms, 0)
    top = stacked.amax(0).detach()
    top = T.where(T.isfinite(top), top, 0.0)
    total = T.exp(stacked - top).sum(0)
    positive = total > 0
    return T.where(positive, top + T.log(T.where(positive, total, 1.0)), float("-inf"))


def _lengths(op: str, name: str, lengths: Tensor | Sequence[int], batch: int) -> list[int]:
    if isinstance(lengths, Tensor):
        lengths = lengths.reshape(-1).tolist()
    values = [int(v) for v in lengths]
    if len(values) != batch:
        raise RuntimeError(f"{op}: Expected tensor to have size at least {batch} at dimension 1, but got size "
                           f"{len(values)} for argument #2 '{name}'")
    return values


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss (Graves et al., 2006): ``-log`` of the total probability of
    every alignment of each target with its input, by the forward (alpha) recursion in log space.

    Args:
        log_probs: (T, N, C) or unbatched (T, C) log-probabilities (e.g. ``log_softmax`` output).
        targets: (N, S) padded class indices, or all targets concatenated (sum(target_lengths),); never ``blank``.
        input_lengths: (N,) number of valid time steps of each input.
        target_lengths: (N,) length of each target.
        blank: the blank class.
        reduction: ``"mean"`` divides each loss by its target length then averages; ``"sum"``; ``"none"``.
        zero_infinity: replace infinite losses (impossible alignments) and their gradients by zero.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got {log_probs.ndim}-D")
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs  # (T, N, C)
    steps, batch, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    in_len = _lengths("ctc_loss", "input_lengths", input_lengths, batch)
    tg_len = _lengths("ctc_loss", "target_lengths", target_lengths, batch)
    for n in range(batch):
        if not 0 <= in_len[n] <= steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {in_len[n]} "
                               f"(while checking arguments for ctc_loss_cpu)")
    flat = targets.reshape(-1).tolist()
    if targets.ndim == 2:
        width = targets.shape[1]
        rows = [flat[n * width:n * width + tg_len[n]] for n in range(batch)]
    else:
        starts = [sum(tg_len[:n]) for n in range(batch)]
        rows = [flat[s:s + length] for s, length in zip(starts, tg_len)]
    longest = max(tg_len + [0])
    width = 2 * longest + 1
    # The extended targets: a blank before, between and after the labels (padded with blanks).
    extended = [[blank] * width for _ in range(batch)]
    skip = [[False] * width for _ in range(batch)]
    for n, row in enumerate(rows):
        for k, label in enumerate(row):
            extended[n][2 * k + 1] = int(label)
            if k > 0 and int(label) != int(row[k - 1]):
                skip[n][2 * k + 1] = True
    device = lp.device
    ext = tensor(extended, device=device)  # (N, S)
    can_skip = tensor(skip, device=device)
    emit = T.gather(lp, 2, ext.unsqueeze(0).expand(steps, batch, width))  # (T, N, S)
    position = arange(width, device=device).unsqueeze(0)  # (1, S)
    neg_inf = float("-inf")
    first = position < tensor([[2 if length else 1] for length in tg_len], device=device)
    alpha = T.where(first, emit[0], neg_inf) if steps else full((batch, width), neg_inf, dtype=lp.dtype,
                                                                 device=device)
    pad1 = full((batch, 1), neg_inf, dtype=lp.dtype, device=device)
    pad2 = full((batch, 2), neg_inf, dtype=lp.dtype, device=device)
    active_until = tensor([[length] for length in in_len], device=device)
    for t in range(1, steps):
        from_prev = T.cat([pad1, alpha[:, :-1]], 1)
        from_skip = T.where(can_skip, T.cat([pad2, alpha[:, :-2]], 1), neg_inf)
        stepped = _logsumexp(alpha, from_prev, from_skip) + emit[t]
        alpha = T.where(t < active_until, stepped, alpha)
    last = tensor([[2 * length] for length in tg_len], device=device)
    before_last = tensor([[max(2 * length - 1, 0)] for length in tg_len], device=device)
    end_blank = T.gather(alpha, 1, last).squeeze(1)
    end_label = T.where(last.squeeze(1) > 0, T.gather(alpha, 1, before_last).squeeze(1), neg_inf)
    loss = -_logsumexp(end_blank, end_label)
    loss = T.where(tensor(in_len, device=device) > 0, loss, T.where(tensor(tg_len, device=device) > 0,
                                                                       float("inf"), 0.0))
    if zero_infinity:
        loss = T.where(T.isinf(loss), 0.0, loss)
    if reduction == "mean":
        lengths = T.clamp(tensor(tg_len, device=device), min=1).to(loss.dtype)
        return (loss / lengths).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
