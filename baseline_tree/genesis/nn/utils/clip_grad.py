"""Gradient clipping: by total norm (``clip_grad_norm_``) and by value (``clip_grad_value_``)."""

from __future__ import annotations

import math
from typing import Iterable, Union

from genesis.autograd import no_grad
from genesis.functional import stack
from genesis.tensor import Tensor, tensor

Params = Union[Tensor, Iterable[Tensor]]


def _grads(parameters: Params) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in params if p.grad is not None]


def get_total_norm(tensors: Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` taken together (as if concatenated into one vector)."""
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    norms = [t.detach().norm(norm_type) for t in tensors]
    device = norms[0].device
    stacked = stack([n.to(device=device, dtype=norms[0].dtype) for n in norms])
    total = stacked.max() if math.isinf(norm_type) and norm_type > 0 else stacked.norm(norm_type)
    if error_if_nonfinite and not bool(total.isfinite().item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters: Params, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale the gradients in place so that their total norm is at most ``max_norm``.

    The scale is ``min(1, max_norm / (total_norm + 1e-6))``, as in torch.

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` is clipped.
        max_norm: the largest allowed total norm.
        norm_type: the p of the p-norm (``inf`` for the max norm).
        error_if_nonfinite: raise RuntimeError when the total norm is nan or inf.
        foreach: accepted for torch compatibility; every gradient is scaled by the same one update.

    Returns:
        The total norm of the gradients before clipping (a 0-d tensor).
    """
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if not grads:
        return total
    with no_grad():
        clip_coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(device=g.device, dtype=g.dtype))
    return total


def clip_grad_value_(parameters: Params, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient in place to ``[-clip_value, clip_value]``."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
