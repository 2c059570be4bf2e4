"""Connectionist Temporal Classification: ``ctc_loss`` (Graves et al., 2006) with torch's argument checks, reductions,
``zero_infinity`` and gradients; the backend runs the forward (alpha) recursion and the gradient in one node."""

from __future__ import annotations

from typing import Sequence

from genesis import dtypes
from genesis import ops as T
from genesis.autograd import Primitive
from genesis.ndarray import NDArray
from genesis.nn.functional.losses import _reduction
from genesis.tensor import Tensor, tensor


def _lengths(name: str, lengths: Tensor | Sequence[int], batch: int) -> list[int]:
    """The per-sample ``lengths`` of ctc_loss as ints, one per sample of the batch (torch's check and message)."""
    if isinstance(lengths, Tensor):
        lengths = lengths.reshape(-1).tolist()
    values = [int(v) for v in lengths]
    if len(values) != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return values


class CtcLoss(Primitive):
    """The per-sample negative log-likelihoods by the backend's forward recursion; the gradient is torch's, that of
    the logits of a log_softmax: ``(exp(log_probs) - posterior) * grad`` over each input's steps."""

    @staticmethod
    def forward(ctx, log_probs: NDArray, targets: NDArray, input_lengths: tuple[int, ...],
                target_lengths: tuple[int, ...], blank: int, zero_infinity: bool) -> NDArray:
        nll, log_alpha = log_probs.backend.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank)
        ctx.meta = (input_lengths, target_lengths, blank, zero_infinity)
        if ctx.needs_input_grad:
            ctx.save_for_backward(log_probs, targets, nll, log_alpha)
        return nll

    @staticmethod
    def backward(ctx, grad):
        log_probs, targets, nll, log_alpha = ctx.saved_arrays()
        input_lengths, target_lengths, blank, zero_infinity = ctx.meta
        g = grad.ndarray
        out = g.backend.ctc_loss_backward(g, log_probs, targets, input_lengths, target_lengths, nll, log_alpha, blank,
                                          zero_infinity)
        return out, None, None, None, None, None


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
    # Targets may sit on the host beside cuda log-probabilities (as torch's cuDNN path wants them): the backend
    # reads them on the log-probabilities' device.
    targets = targets.to(device=lp.device, dtype=dtypes.int64)
    loss = CtcLoss.apply(lp, targets, tuple(in_len), tuple(tg_len), blank, zero_infinity)
    if zero_infinity:
        loss = T.where(T.isinf(loss), 0.0, loss)
    if reduction == "mean":
        lengths = T.clamp(tensor(tg_len, device=lp.device), min=1).to(loss.dtype)
        return (loss / lengths).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
