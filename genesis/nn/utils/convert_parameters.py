"""Flatten parameters into one vector and write a vector back into them."""

from __future__ import annotations

from typing import Iterable

from genesis.device import device as Device
from genesis.ops import cat
from genesis.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened (``view(-1)``: each must be contiguous, as in torch) and concatenated into one 1-d
    tensor (differentiable).

    Raises:
        TypeError: if the parameters are on different devices.
    """
    device = None
    vec = []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters (their ``.data`` is replaced by views of ``vec``);
    elements of ``vec`` past the parameters are ignored, as in torch.

    Raises:
        TypeError: if ``vec`` is not a tensor or the parameters are on different devices.
        RuntimeError: if ``vec`` runs out before the parameters do (the slice cannot take the parameter's shape).
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    offset = 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        param.data = vec[offset:offset + n].view_as(param).data
        offset += n


def _check_param_device(param: Tensor, device: Device | None) -> Device:
    """``param``'s device, checked to be ``device`` (the first parameter's, None before it)."""
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device
