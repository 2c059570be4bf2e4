"""CUDA storage: a block of device memory behind NDArray views.

An NDArray's ``buffer`` on a CUDA device is a ``CudaStorage``; views share it and differ only in shape, strides and
offset. When the last reference goes, the block returns to the caching allocator's free list of the stream it was
allocated on (memory imported through DLPack is released through its producer instead). A block that work on other
streams uses (``record_stream``) returns only after its own stream has been made to wait for that work, so whatever
is next given the block on that stream runs after it.
"""

from __future__ import annotations

from cuda.bindings import driver as cu

from genesis._impl.cuda import allocator
from genesis._impl.cuda import runtime as rt


class CudaStorage:
    """A block of device memory; returns itself to the allocator when the last view is gone."""

    __slots__ = ("ptr", "nbytes", "size", "device", "stream", "owner", "users", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, size: int, device: int, stream: int, owner: object = None) -> None:
        self.ptr = ptr
        self.nbytes = nbytes
        self.size = size
        self.device = device
        self.stream = stream
        self.owner = owner  # set for memory Genesis does not own (DLPack imports)
        self.users: set[int] | None = None  # other streams whose queued work reads or writes the block

    def data_ptr(self) -> int:
        return self.ptr

    def __del__(self) -> None:
        if self.owner is None and self.size:
            try:
                a = allocator._allocators.get(self.device)
            except AttributeError:  # interpreter shutdown: module globals are gone, the driver frees everything
                return
            if a is not None:
                if self.users:
                    _wait_for(self.device, self.stream, self.users)
                a.free(self.ptr, self.size, self.stream)


def _wait_for(device: int, stream: int, others: set[int]) -> None:
    """Make ``stream`` wait for the work queued so far on each of ``others`` (one event each, no host wait)."""
    rt.ensure_device(device)
    for other in others:
        event = rt.check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        rt.check(cu.cuEventRecord(event, other), "cuEventRecord")
        rt.check(cu.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent")
        rt.check(cu.cuEventDestroy(event), "cuEventDestroy")  # released once the wait is done


def record_stream(x: object, stream: object) -> None:
    st = x.buffer
    if st.owner is None and st.size and stream.handle != st.stream:
        if st.users is None:
            st.users = set()
        st.users.add(stream.handle)


def storage_nbytes(x: object) -> int:
    return x.buffer.nbytes


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


def copy_from_host(dst_ptr: int, array: object, stream: int, wait: bool = True) -> None:
    """Copy a contiguous numpy array in pageable memory to device memory; ``wait`` also waits for the copy.

    One ``cuMemcpyHtoDAsync`` on ``stream``: the driver stages pageable memory and returns once the array has been
    read, so the array may change or go at once either way. Without ``wait`` (``non_blocking=True``, as torch's
    copy from pageable memory) the host does not wait for the stream's earlier work nor for the copy itself: later
    work on the stream is queued behind it. Measured on an H100 host for a 37 MB batch, the driver's staging took
    2.6-3.2 ms against 3.3-5.2 ms for Genesis's own double-buffered pinned staging (bound by the host's memcpy), and
    torch's ``.to("cuda")`` 2.4-3.7 ms.
    """
    rt.check(cu.cuMemcpyHtoDAsync(dst_ptr, array.ctypes.data, array.nbytes, stream), "cuMemcpyHtoDAsync")
    if wait:
        rt.stream_synchronize(stream)
