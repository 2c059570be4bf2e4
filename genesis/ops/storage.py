"""The memory behind tensors, in torch's storage API.

``Tensor.untyped_storage()`` is the block of bytes that a tensor and all its views share (``UntypedStorage``: its
size in bytes, address and device); ``Tensor.storage()`` is torch's deprecated typed form (``TypedStorage``: the
same block counted in elements of the tensor's dtype). While a storage object is alive, asking any view of the same
buffer for its storage gives that same object, as torch's. ``Tensor.is_set_to`` compares views of one buffer, and
``Tensor.record_stream`` tells the CUDA allocator that another stream uses a tensor's memory.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

from genesis import dtypes
from genesis.device import device, is_warn_always_enabled
from genesis.ndarray import NDArray
from genesis.tensor import Tensor

_storages: weakref.WeakValueDictionary[int, UntypedStorage] = weakref.WeakValueDictionary()
_typed_storage_warned = [False]


class UntypedStorage:
    """The bytes behind a tensor and all its views (``torch.UntypedStorage``); it keeps the memory alive."""

    __slots__ = ("_array", "__weakref__")

    def __init__(self, array: NDArray) -> None:
        nbytes = array.backend.storage_nbytes(array)
        self._array = NDArray(array.buffer, (nbytes // array.dtype.itemsize,), (1,), 0, array.dtype, array.device)

    @property
    def device(self) -> device:
        """The device the memory is on."""
        return self._array.device

    def nbytes(self) -> int:
        """The size of the memory block in bytes."""
        return self._array.backend.storage_nbytes(self._array)

    def size(self) -> int:
        """The size in bytes (the elements of an untyped storage are bytes)."""
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        """1: an untyped storage counts bytes."""
        return 1

    def data_ptr(self) -> int:
        """The address of the block's first byte (the same for every view of the tensor)."""
        return self._array.backend.data_ptr(self._array)

    def tolist(self) -> list[int]:
        """The bytes as Python ints."""
        return Tensor._wrap(self._array.view_dtype(dtypes.uint8)).tolist()

    def __repr__(self) -> str:
        return f"[genesis.UntypedStorage(device={self.device}) of size {self.nbytes()}]"


class TypedStorage:
    """The memory behind a tensor counted in elements of its dtype (``torch.TypedStorage``, deprecated in torch for
    :class:`UntypedStorage`)."""

    __slots__ = ("_untyped_storage", "dtype")

    def __init__(self, untyped: UntypedStorage, dtype: dtypes.dtype) -> None:
        self._untyped_storage = untyped
        self.dtype = dtype

    @property
    def device(self) -> device:
        """The device the memory is on."""
        return self._untyped_storage.device

    def untyped(self) -> UntypedStorage:
        """The storage as bytes."""
        return self._untyped_storage

    def nbytes(self) -> int:
        """The size of the memory block in bytes."""
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        """The size of one element of ``dtype`` in bytes."""
        return self.dtype.itemsize

    def size(self) -> int:
        """The number of elements of ``dtype`` the block holds."""
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def data_ptr(self) -> int:
        """The address of the block's first byte."""
        return self._untyped_storage.data_ptr()

    def tolist(self) -> list[Any]:
        """The elements as Python numbers."""
        array = self._untyped_storage._array
        flat = NDArray(array.buffer, (self.size(),), (1,), 0, array.dtype, array.device).view_dtype(self.dtype)
        return Tensor._wrap(flat).tolist()

    def __repr__(self) -> str:
        return f"[genesis.TypedStorage(dtype={self.dtype}, device={self.device}) of size {self.size()}]"


def untyped_storage(self: Tensor) -> UntypedStorage:
    """The bytes behind this tensor and all its views (torch's ``Tensor.untyped_storage``)."""
    nd = self.ndarray
    found = _storages.get(id(nd.buffer))
    if found is None:
        found = _storages[id(nd.buffer)] = UntypedStorage(nd)
    return found


def storage(self: Tensor) -> TypedStorage:
    """The memory behind this tensor in elements of its dtype (torch's deprecated ``Tensor.storage``; warns once
    per process, or every time after ``genesis.set_warn_always(True)``)."""
    if is_warn_always_enabled() or not _typed_storage_warned[0]:
        _typed_storage_warned[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. To access UntypedStorage directly, use tensor.untyped_storage() instead "
                      "of tensor.storage()", UserWarning, stacklevel=2)
    return TypedStorage(untyped_storage(self), self.dtype)


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same memory with the same offset, shape and strides (torch's
    ``Tensor.is_set_to``)."""
    a, b = self.ndarray, tensor.ndarray
    return (a.backend.data_ptr(a) == b.backend.data_ptr(b) and a.shape == b.shape and a.strides == b.strides
            and untyped_storage(self).data_ptr() == untyped_storage(tensor).data_ptr())


def record_stream(self: Tensor, stream: Any) -> None:
    """Mark this CUDA tensor's memory as in use by work queued on ``stream`` (a ``genesis.cuda.Stream`` of its
    device), as torch's ``Tensor.record_stream``: when the tensor's last view goes, the caching allocator does not
    hand the memory out again before that work is done. NotImplementedError for CPU tensors, as torch's."""
    nd = self.ndarray
    nd.backend.record_stream(nd, stream)
