"""Loss functions with torch's signatures, reductions and edge cases (ignore_index, label smoothing, weights)."""

from __future__ import annotations

from genesis import amp
from genesis import functional as T
from genesis.functional.fused import fused_cross_entropy
from genesis.functional.nn_ops import CrossEntropy
from genesis.tensor import Tensor

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(op: str, size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """Resolve torch's legacy ``size_average``/``reduce`` flags and validate ``reduction``."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_same_size(op: str, input: Tensor, target: Tensor) -> None:
    if input.shape != target.shape:
        raise ValueError(f"{op}: Using a target size ({tuple(target.shape)}) that is different to the input size "
                         f"({tuple(input.shape)}) is not supported. Please ensure they have the same size.")


# ------------------------------------------------------------------ classification

def _check_class_target(op: str, input: Tensor, target: Tensor) -> None:
    if target.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected target of integer class indices (int64), got {target.dtype}")
    if input.ndim == 1:
        if target.ndim != 0:
            raise ValueError(f"{op}: Expected target of 0 dims for 1-D input, got {target.ndim} dims")
    elif input.ndim < 1 or target.ndim != input.ndim - 1 or target.shape[0] != input.shape[0] or (
            tuple(target.shape[1:]) != tuple(input.shape[2:])):
        raise ValueError(f"{op}: Expected input batch_size ({input.shape[0] if input.ndim else 0}) and target shape "
                         f"{tuple(target.shape)} to match input shape {tuple(input.shape)} without the class dim")


def _check_target_range(target: Tensor, ignore_index: int, n_classes: int) -> None:
    """IndexError naming the first out-of-range class index (ignored entries excepted)."""
    # On NDArrays: a validity check needs no graph, and this runs on every loss call.
    t = target.ndarray
    bad = t.binary("lt", 0).binary("logical_or", t.binary("ge", n_classes)).binary("logical_and",
                                                                                t.binary("ne", ignore_index))
    if t.ndim and bool(bad.reduce("any", tuple(range(t.ndim))).numpy()) or not t.ndim and bool(bad.numpy()):
        value = int(target[Tensor._wrap(bad)].reshape(-1)[0].item())
        raise IndexError(f"Target {value} is out of bounds (the input has {n_classes} classes).")


def _pick_classes(logp: Tensor, target: Tensor, ignore_index: int) -> tuple[Tensor, Tensor, Tensor]:
    """(-logp at the target class, the valid mask, the safe target) for class-index targets."""
    class_dim = 1 if logp.ndim > 1 else 0
    valid = target != ignore_index
    safe = T.where(valid, target, 0).long()
    n_classes = logp.shape[class_dim]
    _check_target_range(target, ignore_index, n_classes)
    picked = T.gather(logp, class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
    return -picked, valid, safe


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
             ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of the target classes from log-probabilities ``input`` of shape (N, C, *) or (C,).

    ``mean`` divides by the summed weights of the non-ignored targets (NaN when every target is ignored).
    """
    input, target, weight = amp.autocast_args("nll_loss", input, target, weight)
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    _check_class_target("nll_loss", input, target)
    loss, valid, safe = _pick_classes(input, target, ignore_index)
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * T.index_select(weight.to(input.dtype), 0, safe.reshape(-1)).reshape(safe.shape)
    # where(), not a product, so ignored targets get an exact zero gradient even when every target is ignored
    # (the mean is then 0/0 = nan, as in torch, but no nan flows back).
    loss = T.where(valid, loss * w, 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def _smooth_term(logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str) -> Tensor:
    """The uniform-distribution part of label smoothing, reduced like torch's ``cross_entropy``."""
    class_dim = 1 if logp.ndim > 1 else 0
    if weight is not None:
        wshape = [1] * logp.ndim
        wshape[class_dim] = logp.shape[class_dim]
        smooth = -(logp * weight.to(logp.dtype).reshape(wshape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    valid = target != ignore_index
    smooth = T.where(valid, smooth, 0.0)
    if reduction == "none":
        return smooth
    if reduction == "sum":
        return smooth.sum()
    if weight is not None:
        safe = T.where(valid, target, 0).long().reshape(-1)
        denom = (T.index_select(weight.to(logp.dtype), 0, safe) * valid.reshape(-1).to(logp.dtype)).sum()
    else:
        denom = valid.sum().to(logp.dtype)
    return smooth.sum() / denom


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
                  ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)`` for class indices, or the soft-label form for probabilities.

    Args:
        input: logits of shape (N, C, *) or (C,).
        target: int64 class indices of shape (N, *) (``ignore_index`` entries contribute nothing), or class
            probabilities of ``input``'s shape.
        weight: a per-class rescaling of shape (C,).
        label_smoothing: mixes the target with the uniform distribution: ``(1 - e) * target + e / C``.
    """
    input, target, weight = amp.autocast_args("cross_entropy", input, target, weight)
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 1 if input.ndim > 1 else 0
    n_classes = input.shape[class_dim]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or "
                           f"no classes but got weight tensor of shape: {list(weight.shape)}")
    if (input.ndim == 2 and weight is None and not target.dtype.is_floating_point
            and (input.device.type == "cuda" or label_smoothing > 0)):
        _check_class_target("cross_entropy", input, target)
        _check_target_range(target, ignore_index, n_classes)
        fused = fused_cross_entropy(input, target, ignore_index, label_smoothing, reduction)
        if fused is not None:
            return fused
    if (input.ndim == 2 and not target.dtype.is_floating_point and label_smoothing == 0.0
            and input.dtype.is_floating_point and (weight is None or weight.dtype is input.dtype)):
        _check_class_target("cross_entropy", input, target)
        return CrossEntropy.apply(input, target.long(), weight, ignore_index=ignore_index, reduction=reduction)
    logp = T.log_softmax(input, class_dim)
    if target.dtype.is_floating_point:
        _check_same_size_probs(input, target)
        if weight is not None:
            wshape = [1] * input.ndim
            wshape[class_dim] = n_classes
            logp = logp * weight.to(logp.dtype).reshape(wshape)
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        loss = -(logp * target)
        if reduction == "none":
            return loss.sum(class_dim)
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / (input.numel() // n_classes) if input.numel() else loss.sum() * float("nan")
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return nll
    smooth = _smooth_term(logp, target, weight, ignore_index, reduction)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _check_same_size_probs(input: Tensor, target: Tensor) -> None:
    if input.shape != target.shape:
        raise RuntimeError(f"cross_entropy: expected target probabilities of the input's shape {tuple(input.shape)}, "
                           f"got {tuple(target.shape)}")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-(t log p + (1 - t) log(1 - p))`` for probabilities ``input``; logs are clamped at -100 as in torch."""
    input, target, weight = amp.autocast_args("binary_cross_entropy", input, target, weight)
    reduction = _reduction("binary_cross_entropy", size_average, reduce, reduction)
    _check_same_size("binary_cross_entropy", input, target)
    if input.numel() and (float(input.detach().min().item()) < 0 or float(input.detach().max().item()) > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_p = T.clamp(T.log(input), min=-100.0)
    log_1mp = T.clamp(T.log(1 - input), min=-100.0)
    loss = -(target * log_p + (1 - target) * log_1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid plus binary cross-entropy in one stable formula; ``pos_weight`` scales the positive term."""
    input, target, weight, pos_weight = amp.autocast_args("binary_cross_entropy_with_logits", input, target, weight,
                                                          pos_weight)
    reduction = _reduction("binary_cross_entropy_with_logits", size_average, reduce, reduction)
    _check_same_size("binary_cross_entropy_with_logits", input, target)
    # log(sigmoid(x)) = -softplus(-x), log(1 - sigmoid(x)) = -softplus(x)
    log_sig = -T.softplus(-input)
    log_one_minus = -T.softplus(input)
    if pos_weight is not None:
        loss = -(pos_weight * target * log_sig + (1 - target) * log_one_minus)
    else:
        loss = -(target * log_sig + (1 - target) * log_one_minus)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log target - input)`` with ``input`` in log space (``batchmean`` divides by the batch size)."""
    input, target = amp.autocast_args("kl_div", input, target)
    if reduction == "batchmean":
        red = "sum"
    else:
        red = _reduction("kl_div", size_average, reduce, reduction)
    if log_target:
        loss = T.exp(target) * (target - input)
    else:
        # xlogy: 0 where target == 0 (torch's convention).
        safe = T.where(target > 0, target, 1.0)
        loss = T.where(target > 0, target * T.log(safe), 0.0) - target * input
    out = _reduce(loss, red)
    if reduction == "batchmean" and input.ndim:
        out = out / input.shape[0]
    return out


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """Negative log likelihood of a Poisson target with rate ``exp(input)`` (or ``input`` if not log_input)."""
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    loss = T.exp(input) - target * input if log_input else input - target * T.log(input + eps)
    if full:
        stirling = target * T.log(T.where(target > 1, target, 1.0)) - target + 0.5 * T.log(
            T.where(target > 1, target, 1.0) * 6.283185307179586)
        loss = loss + T.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


# ------------------------------------------------------------------ regression

def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``(input - target)^2`` (inputs broadcast, as torch does with a warning)."""
    input, target = amp.autocast_args("mse_loss", input, target)
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    diff = input - target
    loss = diff * diff
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``|input - target|``."""
    input, target = amp.autocast_args("l1_loss", input, target)
    reduction = _reduction("l1_loss", size_average, reduce, reduction)
    loss = T.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere (``beta=0`` is L1)."""
    input, target = amp.autocast_args("smooth_l1_loss", input, target)
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = T.abs(input - target)
    if beta == 0.0:
        return _reduce(diff, reduction)
    loss = T.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere."""
    input, target = amp.autocast_args("huber_loss", input, target)
    reduction = _reduction("huber_loss", None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    diff = T.abs(input - target)
    loss = T.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``."""
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    return _reduce(T.softplus(-target * input), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for target -1."""
    reduction = _reduction("cosine_embedding_loss", size_average, reduce, reduction)
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    mag = T.sqrt(((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps))
    cos = dot / mag
    loss = T.where(target == 1, 1 - cos, T.clamp(cos - margin, min=0.0))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (x1 - x2) + margin)``."""
    reduction = _reduction("margin_ranking_loss", size_average, reduce, reduction)
    return _reduce(T.clamp(-target * (input1 - input2) + margin, min=0.0), reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """``0.5 (log var + (input - target)^2 / var)`` (+ ``0.5 log 2 pi`` if full), var clamped at eps."""
    reduction = _reduction("gaussian_nll_loss", None, None, reduction)
    if var.ndim == input.ndim - 1 or (var.ndim == input.ndim and var.shape[-1] == 1 and input.shape[-1] != 1):
        var = var.unsqueeze(-1) if var.ndim == input.ndim - 1 else var
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    # Clamped value with an identity gradient, as torch clamps a copy under no_grad.
    var = T.clamp(var.detach(), min=eps) + (var - var.detach())
    loss = 0.5 * (T.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.9189385332046727
    return _reduce(loss, reduction)

