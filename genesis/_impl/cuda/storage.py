"""CUDA storage: a block of device memory behind NDArray views.

An NDArray's ``buffer`` on a CUDA device is a ``CudaStorage``; views share it and differ only in shape, strides and
offset. When the last reference goes, the block returns to the caching allocator's free list of the stream it was
allocated on (memory imported through DLPack is released through its producer instead).
"""

from __future__ import annotations

from genesis._impl.cuda import allocator, pinned
from genesis._impl.cuda import runtime as rt


class CudaStorage:
    """A block of device memory; returns itself to the allocator when the last view is gone."""

    __slots__ = ("ptr", "nbytes", "size", "device", "stream", "owner", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, size: int, device: int, stream: int, owner: object = None) -> None:
        self.ptr = ptr
        self.nbytes = nbytes
        self.size = size
        self.device = device
        self.stream = stream
        self.owner = owner  # set for memory Genesis does not own (DLPack imports)

    def data_ptr(self) -> int:
        return self.ptr

    def __del__(self) -> None:
        if self.owner is None and self.size:
            try:
                a = allocator._allocators.get(self.device)
            except AttributeError:  # interpreter shutdown: module globals are gone, the driver frees everything
                return
            if a is not None:
                a.free(self.ptr, self.size, self.stream)


def alloc(nbytes: int, device: int) -> CudaStorage:
    """New storage of ``nbytes`` on ``device``, ordered on the current stream."""
    if nbytes == 0:
        return CudaStorage(0, 0, 0, device, 0)
    if rt.state.device != device:
        rt.set_device(device)
    stream = rt.stream_handle() if rt.custom_streams else 0
    a = allocator._allocators.get(device)
    if a is None:
        a = allocator.get(device)
    ptr, size = a.malloc(nbytes, stream)
    return CudaStorage(ptr, nbytes, size, device, stream)


# ---------------------------------------------------------------- host <-> device copies

_STAGE = 16 << 20  # bytes per pinned staging buffer
_STAGED_MIN = 8 << 20  # smaller copies go straight from pageable memory


class _Staging:
    """Two pinned host buffers: while the DMA engine copies one to the device, the CPU fills the other."""

    def __init__(self) -> None:
        import ctypes

        import numpy as np
        from cuda.bindings import driver as cu

        self.ptrs, self.views, self.events = [], [], []
        for _ in range(2):
            ptr = int(rt.check(cu.cuMemHostAlloc(_STAGE, 0), "cuMemHostAlloc"))
            self.ptrs.append(ptr)
            self.views.append(np.ctypeslib.as_array((ctypes.c_uint8 * _STAGE).from_address(ptr)))
            self.events.append(rt.Event())


_staging: _Staging | None = None


def copy_from_host(dst_ptr: int, array: object, stream: int) -> None:
    """Copy a contiguous numpy array to device memory and wait for it.

    Large pageable arrays go through pinned staging buffers in chunks, overlapping the host copy of one chunk with the
    DMA of the previous one; the DMA engine reads pinned memory several times faster than pageable memory. Arrays
    already in pinned memory (``Tensor.pin_memory()``) are copied directly.
    """
    global _staging
    from cuda.bindings import driver as cu

    n = array.nbytes
    if n < _STAGED_MIN or pinned.contains(array.ctypes.data):
        rt.check(cu.cuMemcpyHtoDAsync(dst_ptr, array.ctypes.data, n, stream), "cuMemcpyHtoDAsync")
        rt.stream_synchronize(stream)
        return
    if _staging is None:
        _staging = _Staging()
    src = array.reshape(-1).view("uint8")
    used = [False, False]
    for i, start in enumerate(range(0, n, _STAGE)):
        k = i % 2
        if used[k]:
            _staging.events[k].synchronize()
        m = min(_STAGE, n - start)
        _staging.views[k][:m] = src[start:start + m]
        rt.check(cu.cuMemcpyHtoDAsync(dst_ptr + start, _staging.ptrs[k], m, stream), "cuMemcpyHtoDAsync")
        rt.check(cu.cuEventRecord(_staging.events[k]._cu, stream), "cuEventRecord")
        used[k] = True
    rt.stream_synchronize(stream)
