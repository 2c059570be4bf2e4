"""Connectionist Temporal Classification: ``ctc_loss`` (Graves et al., 2006) with torch's argument checks, reductions,
``zero_infinity`` and gradients, by the forward (alpha) recursion in log space over differentiable tensor ops."""

from __future__ import annotations

from typing import Sequence

from genesis import dtypes
from genesis import ops as T
from genesis.autograd import Function
from genesis.nn.functional.losses import _reduction
from genesis.tensor import Tensor, arange, full, tensor


def _logsumexp(*terms: Tensor) -> Tensor:
    """``log(sum(exp(terms)))`` elementwise, -inf where every term is -inf, with finite gradients there too."""
    stacked = T.stack(terms, 0)
    top = stacked.amax(0).detach()
    top = T.where(T.isfinite(top), top, 0.0)
    total = T.exp(stacked - top).sum(0)
    positive = total > 0
    return T.where(positive, top + T.log(T.where(positive, total, 1.0)), float("-inf"))


def _lengths(name: str, lengths: Tensor | Sequence[int], batch: int) -> list[int]:
    """The per-sample ``lengths`` of ctc_loss as ints, one per sample of the batch (torch's check and message)."""
    if isinstance(lengths, Tensor):
        lengths = lengths.reshape(-1).tolist()
    values = [int(v) for v in lengths]
    if len(values) != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return values


class _CtcGradient(Function):
    """Identity on ``log_probs`` whose backward turns the exact gradient into torch's: ``g - exp(log_probs) * sum_c g``.

    The alpha recursion differentiates to the exact gradient, minus the alignment posterior. torch's ctc_loss
    returns ``exp(log_probs) - posterior`` instead: the gradient with respect to the logits of a log_softmax. Both
    agree once a log_softmax's backward is applied (the posterior sums to one over the classes at every valid step),
    so a network's gradients were the same before; this makes the gradient of ``log_probs`` itself (a leaf, or one
    that retains its gradient) torch's too.
    """

    is_view = True

    @staticmethod
    def forward(ctx, log_probs: Tensor) -> Tensor:
        ctx.save_for_backward(log_probs)
        return log_probs

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (log_probs,) = ctx.saved_tensors
        return grad - log_probs.exp() * grad.sum(-1, keepdim=True)


class _InfiniteCtcGradient(Function):
    """Identity on the per-sample losses that gives ``log_probs`` a NaN gradient over the valid steps of each sample
    whose loss is infinite (no alignment exists), whatever gradient reaches that loss, as torch's ctc_loss does
    without ``zero_infinity``: training loops find impossible alignments by a non-finite gradient norm."""

    is_view = True

    @staticmethod
    def forward(ctx, loss: Tensor, log_probs: Tensor, valid: Tensor) -> Tensor:
        ctx.save_for_backward(valid & T.isinf(loss))  # (T, N): the steps whose gradient is NaN
        ctx.log_probs_meta = (log_probs.shape, log_probs.dtype)
        return loss

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, None]:
        (poisoned,) = ctx.saved_tensors
        shape, dtype = ctx.log_probs_meta
        nan = full(shape, float("nan"), dtype=dtype, device=grad.device)
        return grad, T.where(poisoned.unsqueeze(-1), nan, 0.0), None


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
    reduction = _reduction("ctc_loss", None, None, reduction)
    where = "(while checking arguments for ctc_loss_allocate_outputs)"
    if log_probs.dtype not in (dtypes.float32, dtypes.float64):
        raise NotImplementedError(f"\"ctc_loss_{log_probs.device.type}\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[log_probs.dtype]}'")
    if log_probs.ndim not in (2, 3):  # as torch: all but 3-D inputs count as unbatched, given a batch dim of 1
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.ndim + 1}-dimensional tensor for "
                           f"argument #1 'log_probs' {where}")
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs  # (T, N, C)
    if lp.requires_grad:
        lp = _CtcGradient.apply(lp)
    steps, batch, classes = lp.shape
    if targets.ndim not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional tensor for argument #2 "
                           f"'targets' {where}")
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    in_len = _lengths("input_lengths", input_lengths, batch)
    tg_len = _lengths("target_lengths", target_lengths, batch)
    for length in tg_len:
        if length < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {length} {where}")
    if targets.ndim == 2 and targets.shape[0] != batch:
        raise RuntimeError(f"Expected tensor to have size {batch} at dimension 0, but got size {targets.shape[0]} "
                           f"for argument #2 'targets' {where}")
    if targets.ndim == 2 and max(tg_len + [0]) > targets.shape[1]:
        raise RuntimeError(f"Expected tensor to have size at least {max(tg_len)} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets' {where}")
    if targets.ndim != 2 and sum(tg_len) != targets.numel():
        raise RuntimeError(f"Expected tensor to have size {sum(tg_len)} at dimension 0, but got size "
                           f"{targets.numel()} for argument #2 'targets' {where}")
    for length in in_len:
        if not 0 <= length <= steps:
            bound = "at least 0" if length < 0 else f"at most {steps}"
            raise RuntimeError(f"Expected input_lengths to have value {bound}, but got value {length} {where}")
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
    if lp.requires_grad and not zero_infinity:
        valid = arange(steps, device=device).unsqueeze(1) < tensor(in_len, device=device)  # (T, N)
        loss = _InfiniteCtcGradient.apply(loss, lp, valid)
    if zero_infinity:
        loss = T.where(T.isinf(loss), 0.0, loss)
    if reduction == "mean":
        lengths = T.clamp(tensor(tg_len, device=device), min=1).to(loss.dtype)
        return (loss / lengths).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
