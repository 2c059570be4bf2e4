"""Flatten parameters into one vector and write a vector back into them."""

from __future__ import annotations

from typing import Iterable

from genesis.functional import cat
from genesis.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one 1-d tensor (differentiable)."""
    params = list(parameters)
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise TypeError(f"parameters_to_vector: found parameters on different devices {sorted(map(str, devices))}")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-d ``vec`` into the parameters (their ``.data`` is replaced)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: vec has shape {list(vec.shape)}, the parameters hold {total} "
                           "elements")
    offset = 0
    for p in params:
        n = p.numel()
        p.data = vec[offset:offset + n].view_as(p).data
        offset += n
