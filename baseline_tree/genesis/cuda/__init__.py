"""``genesis.cuda``: NVIDIA GPU runtime utilities.

Importing this module never touches the GPU driver; ``is_available()`` probes it once. All other functions need a
working CUDA device and raise a clear RuntimeError otherwise.
"""

from __future__ import annotations

import functools
import sys


@functools.lru_cache(maxsize=1)
def _probe() -> int:
    """Number of CUDA devices, 0 when the driver, a GPU or the Python bindings are missing."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return 0
    try:
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return 0
        err, count = driver.cuDeviceGetCount()
        return int(count) if int(err) == 0 else 0
    except Exception:  # noqa: BLE001 - a missing driver library surfaces as various errors
        return 0


def is_available() -> bool:
    """Whether a CUDA GPU can be used (driver, device and Genesis's CUDA dependencies present)."""
    if _probe() == 0:
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def device_count() -> int:
    return _probe() if is_available() else 0


class OutOfMemoryError(RuntimeError):
    """The CUDA caching allocator could not serve a request, even after releasing its cache."""


def _runtime():  # noqa: ANN202 - the backend's runtime module
    if not is_available():
        raise RuntimeError("genesis.cuda: CUDA is not available on this machine (no NVIDIA driver or GPU was found, "
                           "or the Genesis CUDA dependencies cuda-python and triton are not installed)")
    import genesis.backends.cuda  # noqa: F401 - installs Genesis's Triton driver
    from genesis.backends.cuda import runtime

    return runtime


def _allocator(device: object = None):  # noqa: ANN202
    rt = _runtime()
    from genesis.backends.cuda import allocator

    return allocator.get(_index(device, rt))


def _index(device: object, rt: object = None) -> int:
    if device is None:
        return (rt or _runtime()).current_device()
    if isinstance(device, int):
        return device
    from genesis.device import device as Device

    d = Device(device)
    if d.type != "cuda":
        raise ValueError(f"genesis.cuda: expected a CUDA device, got {d}")
    return d.index


def init() -> None:
    """Initialize the driver and make device 0 current (done lazily by every other call)."""
    _runtime().current_device()


def current_device() -> int:
    return _runtime().current_device()


def set_device(device: object) -> None:
    rt = _runtime()
    rt.set_device(_index(device, rt))


def get_device_name(device: object = None) -> str:
    rt = _runtime()
    return rt.device_name(_index(device, rt))


def get_device_capability(device: object = None) -> tuple[int, int]:
    rt = _runtime()
    return rt.capability(_index(device, rt))


class _DeviceProperties:
    """What ``get_device_properties`` reports (the fields PyTorch users read most)."""

    def __init__(self, index: int) -> None:
        rt = _runtime()
        self.name = rt.device_name(index)
        self.major, self.minor = rt.capability(index)
        self.total_memory = rt.total_memory(index)
        self.multi_processor_count = rt.multiprocessor_count(index)

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, multi_processor_count={self.multi_processor_count})")


def get_device_properties(device: object = None) -> _DeviceProperties:
    return _DeviceProperties(_index(device))


def synchronize(device: object = None) -> None:
    """Wait for all work queued on the device."""
    rt = _runtime()
    rt.synchronize(_index(device, rt))


def mem_get_info(device: object = None) -> tuple[int, int]:
    """(free, total) bytes of device memory as the driver reports them."""
    rt = _runtime()
    return rt.mem_get_info(_index(device, rt))


def __getattr__(name: str):  # noqa: ANN202 - Stream and Event classes, loaded with the runtime
    if name in ("Stream", "Event"):
        return getattr(_runtime(), name)
    raise AttributeError(f"module 'genesis.cuda' has no attribute '{name}'")


def current_stream(device: object = None):  # noqa: ANN201 - a Stream
    rt = _runtime()
    return rt.current_stream(_index(device, rt))


def default_stream(device: object = None):  # noqa: ANN201 - a Stream
    rt = _runtime()
    return rt.default_stream(_index(device, rt))


def set_stream(stream: object) -> None:
    _runtime().set_stream(stream)


class stream:  # noqa: N801 - torch's name
    """``with genesis.cuda.stream(s):`` makes ``s`` the current stream of its device inside the block."""

    def __init__(self, s: object) -> None:
        self.stream = s
        self._prev = None

    def __enter__(self) -> object:
        if self.stream is None:
            return None
        rt = _runtime()
        self._prev = rt.current_stream(self.stream.device)
        self._prev_device = rt.current_device()
        rt.set_device(self.stream.device)
        rt.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is None:
            return
        rt = _runtime()
        rt.set_stream(self._prev)
        rt.set_device(self._prev_device)


def memory_allocated(device: object = None) -> int:
    """Bytes held by live tensors on the device (rounded to allocator blocks)."""
    return _allocator(device).allocated


def max_memory_allocated(device: object = None) -> int:
    return _allocator(device).peak


def memory_reserved(device: object = None) -> int:
    """Bytes the allocator holds from the driver (live tensors plus its cache)."""
    return _allocator(device).reserved()


def reset_peak_memory_stats(device: object = None) -> None:
    _allocator(device).reset_peak()


def empty_cache() -> None:
    """Return every cached, unused block to the driver."""
    from genesis.backends.cuda import allocator

    _runtime()
    for a in list(allocator._allocators.values()):
        a.empty_cache()


def memory_stats(device: object = None) -> dict[str, int]:
    """Counters of the caching allocator, including ``driver_alloc_calls``."""
    return _allocator(device).stats()


def memory_summary(device: object = None, abbreviated: bool = False) -> str:
    return _allocator(device).summary()


def manual_seed(seed: int) -> None:
    """Seed the default generator of the current CUDA device."""
    from genesis.random import default_generator

    default_generator(f"cuda:{current_device()}").manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    from genesis.random import default_generator

    for i in range(device_count()):
        default_generator(f"cuda:{i}").manual_seed(seed)


def set_allow_tf32(flag: bool) -> None:
    """Let float32 matrix products use TF32 tensor cores (off by default): the same switch as
    ``genesis.backends.cuda.matmul.allow_tf32`` (torch's ``torch.backends.cuda.matmul.allow_tf32``)."""
    from genesis.backends import cuda_switches

    cuda_switches.matmul.allow_tf32 = bool(flag)


# ---------------------------------------------------------------- CUDA graphs


def is_current_stream_capturing() -> bool:
    """True while a CUDA graph capture is in progress (torch's name)."""
    graphs = sys.modules.get("genesis.backends.cuda.graphs")
    return graphs is not None and graphs.capturing > 0


class CUDAGraph:
    """A captured sequence of CUDA work, replayed with one launch (``torch.cuda.CUDAGraph``).

    Capture with ``with genesis.cuda.graph(g): out = fn(static_input)``; then fill ``static_input`` in place and
    call ``g.replay()`` to recompute ``out`` in place. Run the code once before capturing (kernels compile and the
    allocator warms up on the first run). Inside the capture nothing may read device values on the host. Tensors
    created during capture live in the graph's private memory pool and are overwritten by every replay.
    """

    def __init__(self) -> None:
        _runtime()
        from genesis.backends.cuda import graphs

        self._graph = graphs.Graph()

    def capture_begin(self) -> None:
        self._graph.capture_begin()

    def capture_end(self) -> None:
        self._graph.capture_end()

    def replay(self) -> None:
        """Run the captured work again on the current stream."""
        self._graph.replay()

    def reset(self) -> None:
        """Free the graph and its memory pool; the object can capture again."""
        self._graph.reset()

    def num_nodes(self) -> int:
        """The number of nodes (kernels, copies) in the captured graph."""
        return self._graph.num_nodes()


class graph:  # noqa: N801 - torch's name
    """``with genesis.cuda.graph(g):`` captures the CUDA work of the block into the :class:`CUDAGraph` ``g``.

    The device is synchronized first, the block runs on the graph's own stream, and the previous stream is current
    again afterwards. An exception inside the block abandons the capture and is re-raised.
    """

    def __init__(self, cuda_graph: CUDAGraph) -> None:
        self.cuda_graph = cuda_graph

    def __enter__(self) -> CUDAGraph:
        synchronize()
        self.cuda_graph.capture_begin()
        return self.cuda_graph

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.cuda_graph.capture_end()
            return
        try:
            self.cuda_graph.capture_end()
        except RuntimeError:
            pass  # the capture was invalidated by the error being raised
        self.cuda_graph.reset()
