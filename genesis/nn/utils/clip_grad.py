"""Gradient clipping: by total norm (``clip_grad_norm_``, ``get_total_norm``, ``clip_grads_with_norm_``) and by value
(``clip_grad_value_``), with torch's numerics.

With ``foreach`` None or True (the default) each (device, dtype) group of gradients takes one multi-tensor norm
(two launches on GPUs), the per-tensor norms one more norm, and the scaling one multi-tensor launch per group: a
handful of launches whatever the number of gradients, and no host read: the clip coefficient stays a 0-d device
tensor. Only ``error_if_nonfinite=True`` reads the total norm back, as in torch. ``foreach=False`` runs one op per
gradient (torch's slow path). Both devices have the multi-tensor path, so ``foreach=True`` never raises.
"""

from __future__ import annotations

import types
import warnings
from typing import Iterable, Union

from genesis.autograd import no_grad
from genesis.ops import cat, stack, view_as_real
from genesis.ops.foreach import _foreach_mul_, foreach_clamp_, group_by_device_dtype, group_norms
from genesis.tensor import Tensor, tensor

Params = Union[Tensor, Iterable[Tensor]]


def _params(parameters: Params) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    is_generator = isinstance(parameters, types.GeneratorType)
    params = list(parameters)
    if is_generator and not params:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    return params


def _grads(params: list[Tensor]) -> list[Tensor]:
    return [p.grad for p in params if p.grad is not None]


def _norm_of(x: Tensor, norm_type: float) -> Tensor:
    """The ``norm_type``-norm of a tensor as a 0-d tensor of its dtype, accumulated in float32 as torch's."""
    return Tensor._wrap(group_norms([x], norm_type).astype(x.dtype).reshape(()))


def get_total_norm(tensors: Params, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` taken together (as if concatenated into one vector).

    As torch: the norm of the per-tensor norms, each rounded to its tensor's dtype; the result has their promoted
    dtype (bfloat16 for bfloat16 gradients) on the first tensor's device.

    Args:
        tensors: a tensor or an iterable of tensors.
        norm_type: the p of the p-norm (``inf`` for the max norm).
        error_if_nonfinite: raise RuntimeError when the total norm is nan or inf (reads it back to the host).
        foreach: None or True: one multi-tensor norm per (device, dtype) group; False: one norm per tensor.
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    # A complex tensor's norm is its magnitudes' (the total is then real, as torch's).
    tensors = [t.abs() if t.is_complex() else t for t in tensors]
    first_device = tensors[0].device
    with no_grad():
        if foreach is False:
            norms = stack([_norm_of(t, norm_type).to(first_device) for t in tensors])
        else:
            parts = [Tensor._wrap(group_norms([tensors[i] for i in idx], norm_type).astype(dt)).to(first_device)
                     for (_, dt), idx in group_by_device_dtype(tensors).items()]
            norms = parts[0] if len(parts) == 1 else cat(parts)
        total = _norm_of(norms, norm_type)
    if error_if_nonfinite and not bool(total.isfinite().item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: Params, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients in place by ``min(1, max_norm / (total_norm + 1e-6))``, computed on the device.

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` is scaled.
        max_norm: the largest allowed total norm.
        total_norm: the total norm of the gradients (``get_total_norm``).
        foreach: None or True: one multi-tensor launch per (device, dtype) group; False: one ``mul_`` per gradient.
    """
    grads = [view_as_real(g) if g.is_complex() else g for g in _grads(_params(parameters))]  # both parts scaled
    if not grads:
        return
    with no_grad():
        clip_coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        if foreach is False:
            for g in grads:
                g.mul_(clip_coef.to(device=g.device))
            return
        for (device, _), idx in group_by_device_dtype(grads).items():
            _foreach_mul_([grads[i] for i in idx], clip_coef.to(device=device))


def clip_grad_norm_(parameters: Params, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale the gradients in place so that their total norm is at most ``max_norm``.

    The scale is ``min(1, max_norm / (total_norm + 1e-6))``, as in torch; it stays on the device (no host sync
    unless ``error_if_nonfinite``).

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` is clipped.
        max_norm: the largest allowed total norm.
        norm_type: the p of the p-norm (``inf`` for the max norm).
        error_if_nonfinite: raise RuntimeError when the total norm is nan or inf.
        foreach: None or True: multi-tensor kernels (a few launches in all); False: one op per gradient.

    Returns:
        The total norm of the gradients before clipping (a 0-d tensor of the gradients' promoted dtype).
    """
    params = _params(parameters)
    total = get_total_norm(_grads(params), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: Params, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (torch's, with its warning)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Params, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient in place to ``[-clip_value, clip_value]`` (one launch per (device, dtype) group on GPUs;
    ``foreach=False``: one ``clamp_`` per gradient)."""
    clip_value = float(clip_value)
    grads = _grads(_params(parameters))
    with no_grad():
        if foreach is False:
            for g in grads:
                g.clamp_(min=-clip_value, max=clip_value)
        else:
            foreach_clamp_(grads, -clip_value, clip_value)

