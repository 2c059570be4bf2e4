"""``Tensor.to``: dtype, device and memory-format conversion as graph nodes (Cast, ToDevice, a layout copy)."""

from __future__ import annotations

from typing import Any

from genesis import memory_format as _mf
from genesis.ops import views
from genesis.ops.unary import Cast
from genesis.ops.views import ToDevice
from genesis.tensor import Tensor, parse_to_args


def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Convert dtype and/or device: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``.

    ``memory_format`` (default ``preserve_format``) sets the result's layout; a conversion keeps a
    channels_last source channels_last.
    """
    fmt = _mf.check("to", kwargs.pop("memory_format", _mf.preserve_format))
    device, dtype, copy = parse_to_args(*args, **kwargs)
    out = self
    if device is not None and device is not out.device:
        out = ToDevice.apply(out, device)
    if dtype is not None and dtype is not out.dtype:
        out = Cast.apply(out, dtype)
    if copy and out is self:
        out = views.clone(self)
    if fmt is _mf.preserve_format:
        fmt = _mf.suggest(self.ndarray.shape, self.ndarray.strides) if out is not self else None
    if fmt is not None:
        out = views.contiguous(out, fmt)
    return out
