"""Connectionist Temporal Classification on the GPU: the forward (alpha) and backward (beta) recursions in log
space over the extended targets (a blank before, between and after the labels), one time step at a time with
whole-batch array ops, and the gradient from both as torch's ``_ctc_loss_backward`` computes it."""

from __future__ import annotations

import math

import numpy as np

from genesis import dtypes
from genesis._impl.cuda.creation import cat, copy_, from_numpy, full, to_numpy
from genesis._impl.cuda.elementwise import binary, unary, where
from genesis._impl.cuda.indexing import gather, scatter
from genesis.ndarray import NDArray


def _extended(targets: NDArray, target_lengths: tuple[int, ...], blank: int, classes: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """The extended label rows (N, 2L + 1) and, per position, whether a path may reach it by skipping the blank
    before it (a label that differs from the label two positions back)."""
    flat = to_numpy(targets).reshape(-1)
    batch, longest = len(target_lengths), max(target_lengths, default=0)
    width = targets.shape[1] if targets.ndim == 2 else 0
    ext = np.full((batch, 2 * longest + 1), blank, np.int64)
    skip = np.zeros(ext.shape, bool)
    start = 0
    for n, length in enumerate(target_lengths):
        row = flat[n * width:n * width + length] if targets.ndim == 2 else flat[start:start + length]
        start += length
        if length and (row.min() < 0 or row.max() >= classes):  # a gather would read past the row
            bad = int(row.min()) if row.min() < 0 else int(row.max())
            raise RuntimeError(f"ctc_loss: target {bad} is out of range for {classes} classes")
        ext[n, 1:2 * length:2] = row
        skip[n, 3:2 * length:2] = row[1:] != row[:-1]
    return ext, skip


def _lse(*terms: NDArray) -> NDArray:
    """``log(sum(exp(terms)))`` elementwise; -inf where every term is."""
    top = terms[0]
    for x in terms[1:]:
        top = binary("maximum", top, x)
    top = where(unary("isinf", top), full((), 0, top.dtype, top.device), top)
    total = None
    for x in terms:
        e = unary("exp", binary("sub", x, top))
        total = e if total is None else binary("add", total, e)
    return binary("add", unary("log", total), top)


def _shifted(a: NDArray, k: int, fill: float | bool) -> NDArray:
    """``a`` (N, S) moved k places along S (right for k > 0, left for k < 0), ``fill`` coming in."""
    n, s = a.shape
    if abs(k) >= s:
        return full((n, s), fill, a.dtype, a.device)
    pad = full((n, abs(k)), fill, a.dtype, a.device)
    return cat([pad, a.narrow(1, 0, s - k)], 1) if k > 0 else cat([a.narrow(1, -k, s + k), pad], 1)


def _emissions(log_probs: NDArray, ext: np.ndarray) -> NDArray:
    """(T, N, S): the log-probability of each extended label at each step."""
    steps, batch, _ = log_probs.shape
    index = from_numpy(ext, dtypes.int64, log_probs.device).reshape((1,) + ext.shape)
    return gather(log_probs, 2, index.expand((steps,) + ext.shape))


def ctc_loss(log_probs: NDArray, targets: NDArray, input_lengths: tuple[int, ...], target_lengths: tuple[int, ...],
             blank: int) -> tuple[NDArray, NDArray]:
    steps, batch, _ = log_probs.shape
    ext, skip = _extended(targets, target_lengths, blank, log_probs.shape[2])
    width, device, dt = ext.shape[1], log_probs.device, log_probs.dtype
    emit = _emissions(log_probs, ext)
    neg_inf = full((), -math.inf, dt, device)
    log_alpha = full((steps, batch, width), -math.inf, dt, device)
    can_skip = from_numpy(skip, dtypes.bool_, device)
    active = from_numpy(np.array(input_lengths, np.int64).reshape(batch, 1), dtypes.int64, device)
    first = np.arange(width)[None, :] < np.array([[2 if n else 1] for n in target_lengths])
    alpha = full((batch, width), -math.inf, dt, device)
    if steps:
        alpha = where(from_numpy(first, dtypes.bool_, device), emit.narrow(0, 0, 1).reshape((batch, width)), neg_inf)
        copy_(log_alpha.narrow(0, 0, 1).reshape((batch, width)), alpha)
    for t in range(1, steps):
        stepped = binary("add", _lse(alpha, _shifted(alpha, 1, -math.inf),
                                     where(can_skip, _shifted(alpha, 2, -math.inf), neg_inf)),
                         emit.narrow(0, t, 1).reshape((batch, width)))
        alpha = where(binary("gt", active, t), stepped, alpha)
        copy_(log_alpha.narrow(0, t, 1).reshape((batch, width)), alpha)
    last = from_numpy(np.array([[2 * n] for n in target_lengths], np.int64), dtypes.int64, device)
    before = from_numpy(np.array([[max(2 * n - 1, 0)] for n in target_lengths], np.int64), dtypes.int64, device)
    has_label = from_numpy(np.array([[n > 0] for n in target_lengths]), dtypes.bool_, device)
    total = _lse(gather(alpha, 1, last), where(has_label, gather(alpha, 1, before), neg_inf))
    nll = unary("neg", total).reshape((batch,))
    # No input steps: the empty target costs nothing, any other is impossible.
    empty = np.array([n == 0 for n in input_lengths])
    if empty.any():
        fixed = np.where(np.array(target_lengths) > 0, math.inf, 0.0).astype(dtypes.to_numpy(dt))
        nll = where(from_numpy(empty, dtypes.bool_, device), from_numpy(fixed, dt, device), nll)
    return nll, log_alpha


def ctc_loss_backward(grad: NDArray, log_probs: NDArray, targets: NDArray, input_lengths: tuple[int, ...],
                      target_lengths: tuple[int, ...], nll: NDArray, log_alpha: NDArray, blank: int,
                      zero_infinity: bool) -> NDArray:
    steps, batch, classes = log_probs.shape
    ext, skip = _extended(targets, target_lengths, blank, classes)
    width, device, dt = ext.shape[1], log_probs.device, log_probs.dtype
    emit = _emissions(log_probs, ext)
    neg_inf = full((), -math.inf, dt, device)
    log_beta = full((steps, batch, width), -math.inf, dt, device)
    # A path leaves s for s + 2 when s + 2 may be reached by a skip.
    skip_from = from_numpy(np.concatenate([skip[:, 2:], np.zeros((batch, min(2, width)), bool)], 1)[:, :width],
                           dtypes.bool_, device)
    last_step = from_numpy(np.array([[n - 1] for n in input_lengths], np.int64), dtypes.int64, device)
    ends = np.zeros((batch, width), bool)
    for n, length in enumerate(target_lengths):
        ends[n, 2 * length] = True
        if length:
            ends[n, 2 * length - 1] = True
    ends = from_numpy(ends, dtypes.bool_, device)
    beta = full((batch, width), -math.inf, dt, device)
    for t in range(steps - 1, -1, -1):
        e = emit.narrow(0, t, 1).reshape((batch, width))
        stepped = binary("add", _lse(beta, _shifted(beta, -1, -math.inf),
                                     where(skip_from, _shifted(beta, -2, -math.inf), neg_inf)), e)
        start = where(ends, e, neg_inf)
        beta = where(binary("eq", last_step, t), start, where(binary("gt", last_step, t), stepped, neg_inf))
        copy_(log_beta.narrow(0, t, 1).reshape((batch, width)), beta)
    # The posterior of each class at each step: exp(alpha + beta + nll - emission), summed over the positions that
    # hold the class; the gradient is exp(log_probs) minus it, times the loss's gradient.
    loss = nll.reshape((1, batch, 1))
    posterior = unary("exp", binary("sub", binary("add", binary("add", log_alpha, log_beta), loss), emit))
    index = from_numpy(ext, dtypes.int64, device).reshape((1, batch, width)).expand((steps, batch, width))
    per_class = scatter(full((steps, batch, classes), 0, dt, device), 2, index, posterior, "add")
    out = binary("sub", unary("exp", log_probs), per_class)
    out = binary("add", out, binary("mul", loss, 0.0))  # NaN at every class of an impossible alignment, as torch's
    out = binary("mul", out, grad.astype(dt).reshape((1, batch, 1)))
    valid = np.arange(steps)[:, None] < np.array(input_lengths)[None, :]  # (T, N): the steps of each input
    keep = from_numpy(valid.reshape(steps, batch, 1), dtypes.bool_, device)
    if zero_infinity:  # an impossible alignment passes no gradient
        keep = binary("logical_and", keep, unary("logical_not", unary("isinf", nll)).reshape((1, batch, 1)))
    return where(keep, out, full((), 0, dt, device))
