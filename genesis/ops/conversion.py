"""``Tensor.to``: dtype, device and memory-format conversion as graph nodes (Cast, ToDevice, a layout copy);
``Tensor.pin_memory`` / ``Tensor.is_pinned`` and ``Tensor.share_memory_`` / ``Tensor.is_shared``."""

from __future__ import annotations

import mmap
import weakref
from typing import Any

import numpy as np

from genesis import dtypes
from genesis import memory_format as _mf
from genesis.autograd import Primitive
from genesis.ndarray import NDArray
from genesis.ops import views
from genesis.ops.unary import Cast
from genesis.ops.views import ToDevice
from genesis.tensor import Tensor, from_numpy, parse_to_args


def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Convert dtype and/or device: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``.

    ``memory_format`` (default ``preserve_format``) sets the result's layout; a conversion keeps the source's
    layout (its strides where it is dense: channels_last, a transpose), as torch.

    ``non_blocking`` (keyword, or the first positional bool as in torch's ``to(device, dtype, non_blocking,
    copy)``): a copy from pinned host memory to the GPU is queued on the current stream and the call returns at
    once; from pageable memory the copy is synchronous, as in torch.
    """
    if not kwargs and len(args) == 1 and args[0].__class__ is dtypes.dtype:
        # ``to(dtype)``, the autocast and gradient casts: the same result as the general path below, without parsing.
        if args[0] is self.dtype:
            return self
        return views.keep_layout(Cast.apply(self, args[0]), self.ndarray)
    fmt = _mf.check("to", kwargs.pop("memory_format", _mf.preserve_format))
    flags = [a for a in args if isinstance(a, bool)]
    non_blocking = bool(kwargs.pop("non_blocking", flags[0] if flags else False))
    device, dtype, copy = parse_to_args(*args, **kwargs)
    copy = copy or (len(flags) > 1 and flags[1])
    out = self
    if device is not None and device is not out.device:
        out = ToDevice.apply(out, device, non_blocking)
    if dtype is not None and dtype is not out.dtype:
        out = Cast.apply(out, dtype)
    if copy and out is self:
        out = views.clone(self)
    if fmt is not _mf.preserve_format:
        return views.contiguous(out, fmt)
    return out if out is self else views.keep_layout(out, self.ndarray)


class PinMemory(Primitive):
    """A copy in page-locked host memory; the gradient passes through (torch's ``_pin_memory``)."""

    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        return x.pin_memory()

    @staticmethod
    def backward(ctx, grad):
        return grad


def pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """Copy the tensor into page-locked (pinned) host memory, or return it when already there.

    Copies from pinned memory to the GPU run at full DMA speed and, with ``non_blocking=True``, asynchronously.
    ``device`` is accepted for torch compatibility (deprecated there); RuntimeError where no CUDA GPU is available.
    """
    if self.ndarray.is_pinned():
        return self
    return PinMemory.apply(self)


def is_pinned(self: Tensor, device: Any = None) -> bool:
    """Whether the tensor lives in page-locked host memory (``pin_memory()``)."""
    return self.ndarray.is_pinned()


#: The live shared mappings made by ``share_memory_``: id -> (first address, end address, weak reference).
_SHARED: dict[int, tuple[int, int, weakref.ref]] = {}


def share_memory_(self: Tensor) -> Tensor:
    """Move a CPU tensor's elements into shared memory, in place (a no-op when already there, and for GPU tensors,
    as torch); returns the tensor.

    The memory is an anonymous shared mapping: processes forked afterwards (``multiprocessing`` with the fork start
    method, ``os.fork``) see and make each other's writes, as with torch. Unlike torch, which moves the whole storage,
    only this tensor moves: views of it taken before the call keep the old memory.
    """
    if self.device.type != "cpu" or is_shared(self):
        return self
    nd = self.ndarray
    region = mmap.mmap(-1, max(nd.size * nd.dtype.itemsize, 1), flags=mmap.MAP_SHARED)
    flat = from_numpy(np.frombuffer(region, dtype=dtypes.to_numpy(nd.dtype), count=nd.size)).ndarray
    # The tensor's own layout where it is dense (a transpose stays one), row-major otherwise.
    strides = _mf.preserved_strides(nd.shape, nd.strides)
    shared = NDArray(flat.buffer, nd.shape, strides, 0, nd.dtype, nd.device)
    if nd.size:
        shared.copy_(nd)
    start = shared.backend.data_ptr(shared)
    key = id(region)
    _SHARED[key] = (start, start + len(region), weakref.ref(region, lambda _, key=key: _SHARED.pop(key, None)))
    self.ndarray = shared
    return self


def is_shared(self: Tensor) -> bool:
    """Whether the tensor's memory is shared between processes: CPU memory moved by ``share_memory_`` (or a view of
    it), and every GPU tensor (CUDA memory can be shared through IPC), as torch."""
    if self.device.type != "cpu":
        return True
    if not _SHARED:
        return False
    address = self.ndarray.backend.data_ptr(self.ndarray)
    return any(start <= address < end for start, end, _ in _SHARED.values())
