"""Loss functions with torch's signatures, reductions and edge cases (ignore_index, label smoothing, weights)."""

from __future__ import annotations

import builtins
import warnings
from typing import Callable

import numpy as np

from genesis import amp, dtypes
from genesis import ops as T
from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray
from genesis.nn.functional.activations import logsigmoid
from genesis.nn.functional.distance import pairwise_distance
from genesis.ops.fused import fused_cross_entropy
from genesis.ops.nn import (
    BinaryCrossEntropy,
    CrossEntropy,
    NllLoss,
    check_all,
    checked_target,
)
from genesis.tensor import Tensor, arange, full, zeros

_REDUCTIONS = ("none", "mean", "sum")
_HALF = (dtypes.bfloat16, dtypes.float16)


def _as_kernel(loss: Callable[[Tensor, Tensor, float | Tensor], Tensor], input: Tensor, target: Tensor,
               constant: float, widened: dtypes.dtype) -> Tensor:
    """The elementwise ``loss(input, target, constant)`` (written in the steps of torch's CPU kernel) rounded as that
    kernel rounds: in float32 and rounded once where the result is the half type ``widened`` (the kernel widens it),
    else step by step in the result's dtype, with ``constant`` rounded to that dtype first."""
    dtype = dtypes.result_type(input.dtype, input.ndim, target.dtype, target.ndim)
    if dtype is widened:
        return loss(input.float(), target.float(), constant).to(dtype)
    if dtype.is_floating_point:
        return loss(input, target, full((), constant, dtype=dtype, device=input.device))
    return loss(input, target, constant)


def _reduction(op: str, size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """Resolve torch's legacy ``size_average``/``reduce`` flags and the old name ``"elementwise_mean"`` (each with
    torch's deprecation warning), and validate ``reduction``."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                      "instead.", UserWarning, stacklevel=3)
    elif reduction == "elementwise_mean":  # torch's old name of "mean", still taken with a warning
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.", UserWarning,
                      stacklevel=3)
        reduction = "mean"
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
    """torch's refusal of a binary cross-entropy target whose size differs from the input's (in its words)."""
    if input.shape == target.shape:
        return
    if op == "binary_cross_entropy_with_logits":
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) is "
                     f"deprecated. Please ensure they have the same size.")


def _warn_broadcast(input: Tensor, target: Tensor) -> None:
    """torch's warning when a regression loss broadcasts a target of another size against the input."""
    if input.shape != target.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=3)


def _check_scalar_type(expected: dtypes.dtype, found: dtypes.dtype) -> None:
    """torch's refusal of an operand that its loss kernel reads in another operand's dtype: no promotion there."""
    if found is not expected:
        raise RuntimeError(f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[expected]} but found "
                           f"{dtypes.SCALAR_TYPE_NAMES[found]}")


# ------------------------------------------------------------------ classification

def _check_class_target(op: str, input: Tensor, target: Tensor) -> None:
    """torch's checks of class-index targets: int64 (uint8 too for 1-D and 2-D input), shaped as the input without
    its class dim (a 0-D or one-element target for 1-D input)."""
    tnd = target.ndarray
    shape, tshape = input.ndarray.shape, tnd.shape
    if not shape:
        raise ValueError(f"{op}: Expected 1 or more dimensions (got 0)")
    if len(shape) == 1 and len(tshape) == 1 and tshape[0] != 1:
        raise ValueError(f"{op}: For 1D input, 1D target must have size 1, but got target size: {tshape[0]}")
    if len(shape) > 1 and (tshape[0] if tshape else 0) != shape[0]:
        raise ValueError(f"{op}: Expected input batch_size ({shape[0]}) to match target batch_size "
                         f"({tshape[0] if tshape else 0}).")
    if tnd.dtype is not dtypes.int64 and not (tnd.dtype is dtypes.uint8 and len(shape) <= 2):
        raise RuntimeError(f"{op}: expected target dtype to be int64{' or uint8' if len(shape) <= 2 else ''}, but "
                           f"got {tnd.dtype.name}")
    if len(shape) <= 2 and len(tshape) > 1:
        raise RuntimeError(f"{op}: 0D or 1D target tensor expected for {len(shape)}-D input, multi-target not "
                           f"supported (got target shape {tshape})")
    if len(shape) > 2 and tshape != shape[:1] + shape[2:]:
        raise RuntimeError(f"{op}: Expected target size {list(shape[:1] + shape[2:])}, got {list(tshape)}")


def _check_target_range(target: Tensor, ignore_index: int, n_classes: int) -> Tensor:
    """The target, checked: a class index outside [0, n_classes) other than ignore_index raises IndexError naming it
    (on CUDA: RuntimeError at the next synchronization, without a host read here)."""
    t = target.ndarray
    checked = checked_target(t, n_classes, ignore_index)
    return target if checked is t else Tensor._wrap(checked)


def _pick_classes(logp: Tensor, target: Tensor, ignore_index: int) -> tuple[Tensor, Tensor, Tensor]:
    """(-logp at the target class, the valid mask, the safe target) for class-index targets."""
    class_dim = 1 if logp.ndim > 1 else 0
    target = _check_target_range(target, ignore_index, logp.shape[class_dim])
    valid = target != ignore_index
    safe = T.where(valid, target, 0).long()
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
    target = target if target.dtype is dtypes.int64 else target.long()
    target = target.reshape(()) if input.ndim == 1 else target  # a one-element target for 1-D input, as torch
    classes = input.shape[1] if input.ndim > 1 else input.shape[0]
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    if weight is not None:
        _check_scalar_type(input.dtype, weight.dtype)
    if input.ndim == 2 and input.dtype.is_floating_point and (weight is None or weight.ndim == 1):
        # The common (N, C) case: one graph node (torch's nll_loss kernel), not seven recorded ops.
        target = _check_target_range(target, ignore_index, input.shape[1])
        return NllLoss.apply(input, target, weight, ignore_index=ignore_index, reduction=reduction)
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
    # Under autocast the loss runs in float32 (torch casts the logits up first). The fused CUDA kernel computes in
    # float32 from half-precision logits itself: the same values without a float32 copy of the logits and of their
    # gradient (1.6 GB each for GPT-2's 50k vocabulary at 8 x 1024 tokens).
    half_logits = (weight is None and input.ndim == 2 and input.dtype in _HALF and input.device.type == "cuda"
                   and amp.is_autocast_enabled("cuda") and not target.dtype.is_floating_point)
    if not half_logits:
        input, target, weight = amp.autocast_args("cross_entropy", input, target, weight)
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    label_smoothing = max(label_smoothing, 0.0)  # torch smooths by a positive amount only; a negative one is none
    nd = input.ndarray
    ndim = len(nd.shape)
    if not ndim:
        raise RuntimeError("cross_entropy: expected input of 1 or more dimensions (with a class dim), got 0-D")
    class_dim = 1 if ndim > 1 else 0
    n_classes = nd.shape[class_dim]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or "
                           f"no classes but got weight tensor of shape: {list(weight.shape)}")
    class_indices = target.ndarray.dtype.category != 2
    if ndim == 2 and class_indices:
        if weight is None and (nd.device.type == "cuda" or label_smoothing > 0):
            _check_class_target("cross_entropy", input, target)
            # The fused node checks the target range itself (no separate check kernel on CUDA).
            fused = fused_cross_entropy(input, target, ignore_index, label_smoothing, reduction, half_logits)
            if fused is not None:
                return fused
        if half_logits:
            input, target, weight = amp.autocast_args("cross_entropy", input, target, weight)
            nd = input.ndarray
        if label_smoothing == 0.0 and nd.dtype.category == 2 and (weight is None or weight.dtype is nd.dtype):
            _check_class_target("cross_entropy", input, target)
            if target.ndarray.dtype is not dtypes.int64:
                target = target.long()
            return CrossEntropy.apply(input, target, weight, ignore_index=ignore_index, reduction=reduction)
    logp = T.log_softmax(input, class_dim)
    if target.dtype.is_floating_point:
        _check_same_size_probs(input, target)
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        loss = logp * target
        if weight is not None:  # in torch's order, promoted as torch's: a float64 weight gives a float64 loss
            wshape = [1] * input.ndim
            wshape[class_dim] = n_classes
            loss = loss * weight.reshape(wshape)
        loss = -loss
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
    """``-(t log p + (1 - t) log(1 - p))`` for probabilities ``input``; logs are clamped at -100 as in torch, and the
    gradient is torch's ``(p - t) / max(p (1 - p), 1e-12)`` (finite where ``p`` is exactly 0 or 1)."""
    input, target, weight = amp.autocast_args("binary_cross_entropy", input, target, weight)
    reduction = _reduction("binary_cross_entropy", size_average, reduce, reduction)
    _check_same_size("binary_cross_entropy", input, target)
    if target.dtype is not input.dtype:
        raise RuntimeError(f"binary_cross_entropy: Found target dtype {target.dtype.name} but expected the input's "
                           f"{input.dtype.name}")
    if input.dtype.category < 2:
        raise NotImplementedError(f"binary_cross_entropy: \"binary_cross_entropy\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    # The backend checks both ranges (on cuda on the device, reported at the next synchronization: no host-device
    # synchronization inside a training step).
    loss = BinaryCrossEntropy.apply(input, target)
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
    if input.dtype.category < 2:  # torch's log-sigmoid of the logits comes first
        raise NotImplementedError(f"binary_cross_entropy_with_logits: \"log_sigmoid_cpu\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"binary_cross_entropy_with_logits: result type {dtypes.SCALAR_TYPE_NAMES[input.dtype]} "
                           f"can't be cast to the desired output type {dtypes.SCALAR_TYPE_NAMES[target.dtype]} (the "
                           f"target must be floating point, got {target.dtype.name})")
    # torch's formula, rounded as torch rounds it: log(1 - sigmoid(x)) = log(sigmoid(x)) - x, so the loss is
    # (1 - t) x - log(sigmoid(x)), with the positive term weighted by pos_weight. An exact zero where a saturated
    # logit agrees with its target (a Bernoulli's log-probability of a certain outcome). torch accumulates in place:
    # the positive weight into the log-sigmoid (input's dtype), the rest into ``1 - target``, so the loss has the
    # target's dtype.
    log_sig = logsigmoid(input)
    if pos_weight is not None:
        log_sig = (log_sig * ((pos_weight - 1) * target + 1)).to(log_sig.dtype)
    loss = ((1 - target) * input).to(target.dtype)
    loss = (loss - log_sig).to(target.dtype)
    if weight is not None:
        loss = (loss * weight).to(target.dtype)
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log target - input)`` with ``input`` in log space (``batchmean`` divides by the batch size; the
    default ``mean`` divides by every element, with torch's warning saying so)."""
    input, target = amp.autocast_args("kl_div", input, target)
    if input.dtype.category < 2 or target.dtype.category < 2:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if size_average is not None or reduce is not None:
        red = _reduction("kl_div", size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          UserWarning, stacklevel=2)
        red = "sum" if reduction == "batchmean" else _reduction("kl_div", None, None, reduction)
    if log_target:
        loss = T.exp(target) * (target - input)
    else:
        # torch's formula: xlogy is 0 where target == 0, NaN where it is negative (with torch's gradients).
        loss = T.xlogy(target, target) - target * input
    out = _reduce(loss, red)
    if reduction == "batchmean" and input.ndim:
        out = out / input.shape[0]
    return out


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """Negative log likelihood of a Poisson target with rate ``exp(input)`` (or ``input`` if not log_input)."""
    if size_average is None and reduce is None and reduction not in _REDUCTIONS:  # "elementwise_mean" neither
        raise ValueError(f"{reduction} is not a valid value for reduction")
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    input, target = amp.autocast_args("poisson_nll_loss", input, target)
    loss = T.exp(input) - target * input if log_input else input - target * T.log(input + eps)
    if full:
        stirling = target * T.log(T.where(target > 1, target, 1.0)) - target + 0.5 * T.log(
            T.where(target > 1, target, 1.0) * 6.283185307179586)
        loss = loss + T.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


# ------------------------------------------------------------------ regression

def _check_floating_loss(op: str, kernel: str, input: Tensor, target: Tensor, into_input: bool = False) -> None:
    """torch's pointwise loss kernels (``kernel``) compute in the promoted dtype of input and target, floating point
    only (NotImplementedError for integers and bools); with ``into_input`` the result is written in the input's
    dtype, which an integer input cannot hold (RuntimeError)."""
    dt = dtypes.result_type(input.dtype, input.ndim, target.dtype, target.ndim)
    if dt.category < 2:
        raise NotImplementedError(f"{op}: \"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[dt]}'")
    if into_input and input.dtype.category < 2:
        raise RuntimeError(f"{op}: result type {dtypes.SCALAR_TYPE_NAMES[dt]} can't be cast to the desired output "
                           f"type {dtypes.SCALAR_TYPE_NAMES[input.dtype]}")


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``(input - target)^2`` (inputs broadcast, as torch does with a warning)."""
    input, target = amp.autocast_args("mse_loss", input, target)
    _check_floating_loss("mse_loss", "mse_cpu", input, target)
    _warn_broadcast(input, target)
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    if weight is None and reduction != "none" and _fused_pair(input, target):
        return MseLoss.apply(input, target, reduction)
    diff = input - target
    loss = diff * diff
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``|input - target|``."""
    input, target = amp.autocast_args("l1_loss", input, target)
    _warn_broadcast(input, target)
    reduction = _reduction("l1_loss", size_average, reduce, reduction)
    loss = T.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere (``beta=0`` is L1)."""
    input, target = amp.autocast_args("smooth_l1_loss", input, target)
    _check_floating_loss("smooth_l1_loss", "smooth_l1_cpu", input, target)
    _warn_broadcast(input, target)
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return _reduce(T.abs(input - target), reduction)
    if _fused_pair(input, target):
        return SmoothL1Loss.apply(input, target, float(beta), reduction)

    def smooth_l1(a: Tensor, b: Tensor, beta: float | Tensor) -> Tensor:
        # The square of the signed difference (the same value): its second derivative is 1 / beta at 0 too.
        d = a - b
        diff = T.abs(d)
        return T.where(diff < beta, 0.5 * d * d / beta, diff - 0.5 * beta)

    return _reduce(_as_kernel(smooth_l1, input, target, beta, dtypes.bfloat16), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere."""
    input, target = amp.autocast_args("huber_loss", input, target)
    _check_floating_loss("huber_loss", "huber_cpu", input, target, into_input=True)
    _warn_broadcast(input, target)
    reduction = _reduction("huber_loss", None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")

    if weight is None and _fused_pair(input, target):
        return HuberLoss.apply(input, target, float(delta), reduction)

    def huber(a: Tensor, b: Tensor, delta: float | Tensor) -> Tensor:
        d = a - b
        diff = T.abs(d)
        return T.where(diff < delta, 0.5 * d * d, delta * (diff - 0.5 * delta))

    loss = _as_kernel(huber, input, target, delta, dtypes.float16)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _fused_pair(input: Tensor, target: Tensor) -> bool:
    """Whether a pointwise loss of ``input`` and ``target`` runs as one node: float32 or float64 operands of one dtype
    (torch's kernel rounds half types otherwise, which the step-by-step composite follows)."""
    return input.dtype is target.dtype and input.dtype in (dtypes.float32, dtypes.float64) and \
        input.device == target.device


class MseLoss(Primitive):
    """The mean or the sum of ``(input - target)^2`` as one node: the difference, then one reduction of its squares
    (``sumsq``: no array of squares is made); the gradient ``2 (input - target) grad`` (over the count for the
    mean), negated for the target."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray, reduction: str) -> NDArray:
        d = a.binary("sub", b)
        ctx.save_for_backward(a, b)
        ctx.diff = d
        ctx.meta = reduction
        total = d.reduce("sumsq", tuple(range(d.ndim)), False)
        if reduction == "mean":  # an empty input's mean is nan (0 / 0), as torch's
            total = total.binary("mul", 1.0 / d.size) if d.size else total.binary("div", 0)
        return total

    @staticmethod
    def backward(ctx, grad):
        d = ctx.diff
        scale = 2.0 / d.size if ctx.meta == "mean" and d.size else 2.0
        if is_grad_enabled():  # a graph of the backward: from the saved inputs, so that it reaches them
            a, b = ctx.saved_tensors
            g = (a - b) * (grad * scale)
        else:
            ctx.saved_arrays()  # raises if an input changed in place since the forward
            g = Tensor._wrap(d.binary("mul", grad.ndarray.binary("mul", scale)))
        needs = ctx.needs_input_grad
        return g if needs[0] else None, -g if needs[1] else None, None


class _SmoothPointwiseLoss(Primitive):
    """A loss of ``d = input - target`` quadratic for ``|d| < c`` and linear beyond, reduced as asked, as one node:
    the forward in array ops with torch's kernel's steps, the gradient ``grad * slope(d)`` (the slope clamped
    between -c and c, over c for smooth L1)."""

    over_c = False  # smooth L1 divides the quadratic part by c (beta); Huber scales the linear part by c (delta)

    @classmethod
    def forward(cls, ctx, a: NDArray, b: NDArray, c: float, reduction: str) -> NDArray:
        c = float(np.array(c, dtypes.to_numpy(a.dtype)))  # the constant in the operands' dtype, as the kernel's
        ctx.meta = (c, reduction)
        ctx.save_for_backward(a, b)
        d = a.binary("sub", b)
        z = d.unary("abs")
        small = d.binary("mul", 0.5).binary("mul", d)
        if cls.over_c:
            loss = (z.binary("lt", c)).where(small.binary("div", c), z.binary("sub", 0.5 * c))
        else:
            loss = (z.binary("lt", c)).where(small, z.binary("sub", 0.5 * c).binary("mul", c))
        if reduction == "none":
            return loss
        return loss.reduce("mean" if reduction == "mean" else "sum", tuple(range(loss.ndim)), False)

    @classmethod
    def backward(cls, ctx, grad):
        a, b = ctx.saved_tensors
        c, reduction = ctx.meta
        d = a - b
        slope = T.clamp(d / c, -1.0, 1.0) if cls.over_c else T.clamp(d, -c, c)
        if reduction == "mean":
            grad = grad / builtins.max(slope.numel(), 1)
        g = slope * grad
        needs = ctx.needs_input_grad
        return g if needs[0] else None, -g if needs[1] else None, None, None


class HuberLoss(_SmoothPointwiseLoss):
    pass


class SmoothL1Loss(_SmoothPointwiseLoss):
    over_c = True


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """``0.5 (log var + (input - target)^2 / var)`` (+ ``0.5 log 2 pi`` if full), var clamped at eps.

    ``var`` is the input's shape (heteroscedastic), the input's shape without its last dim or with one dim of size
    1 (homoscedastic: broadcast over that dim), or a float; any other shape raises ``ValueError`` as in torch."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * T.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim != var.ndim or sum(v for i, v in zip(input.shape, var.shape) if i != v) != 1:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    # Clamped value with an identity gradient, as torch clamps a copy under no_grad.
    var = T.clamp(var.detach(), min=eps) + (var - var.detach())
    loss = 0.5 * (T.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.9189385332046727
    return _reduce(loss, reduction)


# ------------------------------------------------------------------ margin and ranking


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``, computed as written (as torch's: it overflows to inf where the margin is
    below about -88 in float32)."""
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    input, target = amp.autocast_args("soft_margin_loss", input, target)
    if input.dtype.category < 2:  # torch's kernel writes its floating result in the input's dtype
        raise RuntimeError(f"soft_margin_loss: result type {dtypes.SCALAR_TYPE_NAMES[dtypes.get_default_dtype()]} "
                           f"can't be cast to the desired output type {dtypes.SCALAR_TYPE_NAMES[input.dtype]}")
    return _reduce(T.log1p(T.exp(-input * target)), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for target -1, 0 for any other target.
    A 1-D target goes with (N, D) inputs, a 0-D one with (D,) inputs."""
    reduction = _reduction("cosine_embedding_loss", size_average, reduce, reduction)
    input1, input2, target = amp.autocast_args("cosine_embedding_loss", input1, input2, target)
    dim = target.ndim
    if dim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != dim + 1 or input2.ndim != dim + 1:
        raise RuntimeError(f"{dim}D target tensor expects {dim + 1}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    dot = (input1 * input2).sum(dim)
    mag = T.sqrt(((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps))
    cos = dot / mag
    loss = T.where(target == 1, 1 - cos, 0.0) + T.where(target == -1, T.clamp(cos - margin, min=0.0), 0.0)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (x1 - x2) + margin)``."""
    reduction = _reduction("margin_ranking_loss", size_average, reduce, reduction)
    input1, input2, target = amp.autocast_args("margin_ranking_loss", input1, input2, target)
    return _reduce(T.clamp(-target * (input1 - input2) + margin, min=0.0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1`` (a sum of both elsewhere)."""
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    input, target = amp.autocast_args("hinge_embedding_loss", input, target)
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
    input, weight = amp.autocast_args("multi_margin_loss", input, weight)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    rows, labels = _class_rows("multi_margin_loss", input, target)
    n, c = rows.shape
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    _check_scalar_type(dtypes.int64, target.dtype)
    if weight is not None:
        _check_scalar_type(input.dtype, weight.dtype)
    if labels.numel():
        check_all((labels >= 0) & (labels < c), RuntimeError, "target out of range")  # on the device: no host read
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
    (input,) = amp.autocast_args("multilabel_margin_loss", input)
    if input.ndim > 2 or input.ndim == 0 or (input.ndim == 2 and input.shape[1] == 0):
        raise RuntimeError(f"multilabel_margin_loss: Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    _check_scalar_type(dtypes.int64, target.dtype)
    rows = input.reshape(1, -1) if input.ndim == 1 else input
    labels = target.reshape(rows.shape).long()
    n, c = rows.shape
    # A label counts while no -1 has been seen before it in its row.
    valid = T.cumsum((labels == -1).long(), 1) == 0
    if labels.numel():
        check_all(~(valid & ((labels < 0) | (labels >= c))), RuntimeError, "argument #2 'target' is out of range")
    labels = T.where(valid, labels, 0)
    is_target = zeros((n, c), dtype=dtypes.int64, device=rows.device).scatter_add(1, labels, valid.long()) > 0
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
    if size_average is None and reduce is None and reduction not in _REDUCTIONS:  # "elementwise_mean" neither
        raise ValueError(reduction + " is not valid")
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
    anchor, positive, negative = amp.autocast_args("triplet_margin_loss", anchor, positive, negative)
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
