"""CUDA runtime: devices, primary contexts, Genesis's current stream, streams and events (``cuda.bindings``).

Genesis keeps its own notion of the current device and of each device's current stream. The default stream of every
device is the legacy NULL stream (handle 0), as in PyTorch, so work from libraries that use it orders with Genesis's
work; user streams (``genesis.cuda.Stream()``) are non-blocking streams created here. Every synchronizing call
reports the errors that device-side checks recorded (``device_checks``).
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from cuda.bindings import driver as cu

from genesis._impl.cuda import device_checks

_SUCCESS = cu.CUresult.CUDA_SUCCESS

#: How many times the host has waited for the device (``genesis.cuda.synchronization_count``): every stream, device
#: and event synchronize, which includes device-to-host copies (``.item()``, ``.numpy()``, ``.tolist()``) and
#: host-to-device copies, both of which wait for their stream.
synchronizations = 0


def check(result: tuple, what: str) -> Any:
    """Unpack a ``cuda.bindings`` result tuple, raising RuntimeError naming the call on an error code."""
    err = result[0]
    if err != _SUCCESS:
        _, name = cu.cuGetErrorName(err)
        _, text = cu.cuGetErrorString(err)
        raise RuntimeError(f"CUDA error in {what}: {name.decode() if name else err} "
                           f"({text.decode() if text else 'unknown error'})")
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


@functools.lru_cache(maxsize=1)
def _init() -> int:
    check(cu.cuInit(0), "cuInit")
    return check(cu.cuDeviceGetCount(), "cuDeviceGetCount")


def device_count() -> int:
    return _init()


_contexts: dict[int, Any] = {}


class _State(threading.local):
    def __init__(self) -> None:
        self.device = -1
        self.streams: dict[int, Stream] = {}


state = _State()


def _context(index: int) -> Any:
    ctx = _contexts.get(index)
    if ctx is None:
        _init()
        dev = check(cu.cuDeviceGet(index), "cuDeviceGet")
        ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _contexts[index] = ctx
    return ctx


def started() -> bool:
    """Whether this process has made a device context (importing this module alone makes none)."""
    return bool(_contexts)


def set_device(index: int) -> None:
    """Make ``index`` the current device of this thread (its primary context becomes current)."""
    n = device_count()
    if not 0 <= index < n:
        raise RuntimeError(f"set_device: invalid device ordinal {index}, only {n} CUDA device(s) present")
    if state.device != index:
        check(cu.cuCtxSetCurrent(_context(index)), "cuCtxSetCurrent")
        state.device = index


def current_device() -> int:
    if state.device < 0:
        set_device(0)
    return state.device


def ensure_device(index: int) -> None:
    """Switch to ``index`` if another device (or none) is current in this thread."""
    if state.device != index:
        set_device(index)


@functools.cache
def _attribute(index: int, attr: Any) -> int:
    _init()
    dev = check(cu.cuDeviceGet(index), "cuDeviceGet")
    return check(cu.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute")


_A = cu.CUdevice_attribute


def capability(index: int | None = None) -> tuple[int, int]:
    index = current_device() if index is None else index
    return (_attribute(index, _A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            _attribute(index, _A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))


def multiprocessor_count(index: int | None = None) -> int:
    index = current_device() if index is None else index
    return _attribute(index, _A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)


@functools.cache
def device_name(index: int) -> str:
    _init()
    dev = check(cu.cuDeviceGet(index), "cuDeviceGet")
    raw = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
    return raw.split(b"\0", 1)[0].decode()


@functools.cache
def total_memory(index: int) -> int:
    _init()
    dev = check(cu.cuDeviceGet(index), "cuDeviceGet")
    return int(check(cu.cuDeviceTotalMem(dev), "cuDeviceTotalMem"))


def mem_get_info(index: int | None = None) -> tuple[int, int]:
    """(free, total) bytes on the device, as the driver reports them."""
    ensure_device(current_device() if index is None else index)
    free, total = check(cu.cuMemGetInfo(), "cuMemGetInfo")
    return int(free), int(total)


class Stream:
    """A CUDA stream of one device. ``Stream()`` creates a new non-blocking stream on the current device."""

    __slots__ = ("handle", "device", "_cu", "_owned")

    def __init__(self, device: int | None = None, priority: int = 0, *, _handle: int | None = None) -> None:
        self.device = current_device() if device is None else int(device)
        self._owned = _handle is None
        if _handle is None:
            ensure_device(self.device)
            flags = cu.CUstream_flags.CU_STREAM_NON_BLOCKING
            s = check(cu.cuStreamCreateWithPriority(flags, priority), "cuStreamCreateWithPriority")
            self._cu = s
            self.handle = int(s)
        else:
            self.handle = int(_handle)
            self._cu = cu.CUstream(self.handle)

    @property
    def cuda_stream(self) -> int:
        """The raw ``CUstream`` handle as an int (PyTorch's name)."""
        return self.handle

    def synchronize(self) -> None:
        stream_synchronize(self._cu)

    def query(self) -> bool:
        """True when all work queued on the stream has finished."""
        err = cu.cuStreamQuery(self._cu)[0]
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        check((err,), "cuStreamQuery")
        return True

    def wait_event(self, event: Event) -> None:
        check(cu.cuStreamWaitEvent(self._cu, event._cu, 0), "cuStreamWaitEvent")

    def wait_stream(self, other: Stream) -> None:
        """Make future work on this stream wait for the work queued on ``other`` so far."""
        e = Event()
        e.record(other)
        self.wait_event(e)

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.handle == self.handle and other.device == self.device

    def __hash__(self) -> int:
        return hash((self.handle, self.device))

    def __repr__(self) -> str:
        return f"<genesis.cuda.Stream device=cuda:{self.device} cuda_stream={self.handle:#x}>"

    def __del__(self) -> None:
        if getattr(self, "_owned", False) and cu is not None:
            try:
                cu.cuStreamDestroy(self._cu)
            except Exception:  # interpreter shutdown
                pass


def default_stream(device: int | None = None) -> Stream:
    device = current_device() if device is None else device
    return _default_streams.setdefault(device, Stream(device, _handle=0))


_default_streams: dict[int, Stream] = {}


def current_stream(device: int | None = None) -> Stream:
    device = current_device() if device is None else device
    s = state.streams.get(device)
    return s if s is not None else default_stream(device)


def stream_handle() -> int:
    """The raw handle of the current device's current stream (the launch fast path)."""
    if not custom_streams:
        return 0
    s = state.streams.get(state.device)
    return 0 if s is None else s.handle


custom_streams = False  # becomes True once a non-default stream is made current: launches then look it up


def set_stream(stream: Stream) -> None:
    global custom_streams
    if stream.handle != 0:
        custom_streams = True
    state.streams[stream.device] = stream


def synchronize(device: int | None = None) -> None:
    global synchronizations
    ensure_device(current_device() if device is None else device)
    synchronizations += 1
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    device_checks.raise_pending()  # errors found by device-side checks surface here


def stream_synchronize(stream: Any) -> None:
    """Block the host until the work queued on ``stream`` (a ``CUstream`` or a raw handle) has finished."""
    global synchronizations
    synchronizations += 1
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
    device_checks.raise_pending()  # errors found by device-side checks surface here


class Event:
    """A CUDA event: ``record`` on a stream, ``synchronize``, ``query``, ``elapsed_time`` in milliseconds."""

    __slots__ = ("_cu", "enable_timing", "_recorded")

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        current_device()
        flags = 0
        if not enable_timing:
            flags |= cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
        if blocking:
            flags |= cu.CUevent_flags.CU_EVENT_BLOCKING_SYNC
        self._cu = check(cu.cuEventCreate(int(flags)), "cuEventCreate")
        self.enable_timing = enable_timing
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        s = current_stream() if stream is None else stream
        check(cu.cuEventRecord(self._cu, s._cu), "cuEventRecord")
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        (current_stream() if stream is None else stream).wait_event(self)

    def synchronize(self) -> None:
        global synchronizations
        synchronizations += 1
        check(cu.cuEventSynchronize(self._cu), "cuEventSynchronize")
        device_checks.raise_pending()  # errors found by device-side checks surface here

    def query(self) -> bool:
        err = cu.cuEventQuery(self._cu)[0]
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        check((err,), "cuEventQuery")
        return True

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded, both created with enable_timing=True)."""
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with enable_timing=True")
        if not (self._recorded and end._recorded):
            raise RuntimeError("elapsed_time: both events must be recorded before calling elapsed_time")
        return float(check(cu.cuEventElapsedTime(self._cu, end._cu), "cuEventElapsedTime"))

    def __del__(self) -> None:
        if cu is not None and getattr(self, "_cu", None) is not None:
            try:
                cu.cuEventDestroy(self._cu)
            except Exception:  # interpreter shutdown
                pass
