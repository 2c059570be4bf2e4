"""DLPack exchange for CUDA arrays (zero-copy, stream-ordered), written with ctypes.

Export: a ``DLManagedTensor`` describing the view (shape, strides, dtype, device pointer) in a "dltensor" capsule
that keeps the storage alive until the consumer calls its deleter. The consumer's stream is made to wait for
Genesis's current stream with an event, so it sees every write queued before the export.
Import: ``obj.__dlpack__(stream=...)`` asked for Genesis's current stream, the capsule renamed "used_dltensor" as
the protocol requires, and the producer's deleter called when the last Genesis view of the memory is gone.
"""

from __future__ import annotations

import ctypes

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import storage
from genesis.device import device as Device
from genesis.ndarray import NDArray, contiguous_strides


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_KDLCUDA = 2
_CODES = {  # Genesis dtype -> (DLPack type code, bits)
    dtypes.bool_: (6, 8), dtypes.uint8: (1, 8), dtypes.int8: (0, 8), dtypes.int16: (0, 16), dtypes.int32: (0, 32),
    dtypes.int64: (0, 64), dtypes.float16: (2, 16), dtypes.bfloat16: (4, 16), dtypes.float32: (2, 32),
    dtypes.float64: (2, 64), dtypes.complex64: (5, 64), dtypes.complex128: (5, 128),
}
_FROM_CODES = {v: k for k, v in _CODES.items()}

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

_exported: dict[int, tuple] = {}  # address of the DLManagedTensor -> what keeps it and the memory alive


@_DELETER
def _delete(managed: ctypes.POINTER(_DLManagedTensor)) -> None:
    _exported.pop(ctypes.addressof(managed.contents), None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule: int) -> None:
    # An unconsumed capsule still named "dltensor" owns its tensor: free it.
    if _api.PyCapsule_IsValid(capsule, b"dltensor"):
        _exported.pop(_raw_get_pointer(capsule, b"dltensor"), None)


def _sync_consumer(stream: object) -> None:
    if stream is None or stream == -1:
        return
    ours = rt.stream_handle()
    theirs = 0 if stream in (1, 2) else int(stream)
    if theirs == ours:
        return
    event = rt.Event()
    event.record()
    rt.Stream(_handle=theirs).wait_event(event)


def to_dlpack(x: NDArray, stream: object = None) -> object:
    """A DLPack capsule viewing ``x`` (no copy)."""
    _sync_consumer(stream)
    managed = _DLManagedTensor()
    shape = (ctypes.c_int64 * max(x.ndim, 1))(*x.shape)
    strides = (ctypes.c_int64 * max(x.ndim, 1))(*x.strides)
    t = managed.dl_tensor
    t.data = x.buffer.ptr or None
    t.device = _DLDevice(_KDLCUDA, x.device.index)
    t.ndim = x.ndim
    code, bits = _CODES[x.dtype]
    t.dtype = _DLDataType(code, bits, 1)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = x.offset * x.dtype.itemsize
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _exported[address] = (managed, shape, strides, x.buffer)
    return _api.PyCapsule_New(address, b"dltensor", ctypes.cast(_capsule_destructor, ctypes.c_void_p))


class _Imported:
    """Owner of memory imported through DLPack: calls the producer's deleter when Genesis lets go."""

    def __init__(self, address: int, capsule: object) -> None:
        self.address = address
        self.capsule = capsule

    def __del__(self) -> None:
        managed = _DLManagedTensor.from_address(self.address)
        if managed.deleter:
            managed.deleter(ctypes.pointer(managed))


def from_dlpack(obj: object) -> NDArray:
    """A Genesis view of a CUDA DLPack producer's memory (no copy)."""
    rt.current_device()
    ours = rt.stream_handle()
    capsule = obj.__dlpack__(stream=1 if ours == 0 else ours) if hasattr(obj, "__dlpack__") else obj
    address = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    managed = _DLManagedTensor.from_address(address)
    t = managed.dl_tensor
    if t.device.device_type != _KDLCUDA:
        raise RuntimeError(f"from_dlpack: expected a CUDA tensor (device type 2), got device type "
                           f"{t.device.device_type}")
    key = (t.dtype.code, t.dtype.bits)
    if key not in _FROM_CODES or t.dtype.lanes != 1:
        raise RuntimeError(f"from_dlpack: unsupported DLPack dtype (code {t.dtype.code}, bits {t.dtype.bits}, "
                           f"lanes {t.dtype.lanes})")
    dtype = _FROM_CODES[key]
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(ndim))
    else:
        strides = contiguous_strides(shape)
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    ptr = (t.data or 0) + t.byte_offset
    owner = _Imported(address, capsule)
    buffer = storage.CudaStorage(ptr, 0, 0, t.device.device_id, rt.stream_handle(), owner=owner)
    return NDArray(buffer, shape, strides, 0, dtype, Device("cuda", t.device.device_id))
