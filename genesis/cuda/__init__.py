"""``genesis.cuda``: NVIDIA GPU runtime utilities.

Importing this module never touches the GPU driver; ``is_available()`` probes it once. All other functions need a
working CUDA device and raise a clear RuntimeError otherwise.
"""

from __future__ import annotations

import sys

from genesis import dtypes
from genesis._impl import cuda_probe
from genesis._impl.cuda_errors import OutOfMemoryError  # noqa: F401 - torch.cuda.OutOfMemoryError
from genesis.cuda.graphs import (  # noqa: F401 - the public names of CUDA graphs
    CUDAGraph,
    graph,
    is_current_stream_capturing,
    make_graphed_callables,
)
from genesis.tensor_types import cuda_typed

# The legacy typed constructors of CUDA tensors (torch.cuda.FloatTensor...), as the CPU ones in the genesis namespace.
FloatTensor = cuda_typed(dtypes.float32)
DoubleTensor = cuda_typed(dtypes.float64)
HalfTensor = cuda_typed(dtypes.float16)
BFloat16Tensor = cuda_typed(dtypes.bfloat16)
ByteTensor = cuda_typed(dtypes.uint8)
CharTensor = cuda_typed(dtypes.int8)
ShortTensor = cuda_typed(dtypes.int16)
IntTensor = cuda_typed(dtypes.int32)
LongTensor = cuda_typed(dtypes.int64)
BoolTensor = cuda_typed(dtypes.bool_)


def is_available() -> bool:
    """Whether a CUDA GPU can be used: an NVIDIA driver, a GPU and Genesis's GPU packages are all present.

    Returns a bool and never raises. When it is False, ``python -m genesis.utils.collect_env`` prints what is missing
    (the GPU packages of the ``cuda`` extra not installed, no driver library, no GPU visible); ``make demo
    DEVICE=cuda`` or ``pip install -e ".[cuda]"`` installs the packages.
    """
    return cuda_probe.is_available()


def device_count() -> int:
    """The number of usable CUDA devices."""
    return cuda_probe.device_count()


def _runtime():  # the backend's runtime module
    if not is_available():
        raise RuntimeError("genesis.cuda: CUDA is not available on this machine (no NVIDIA driver or GPU was found, "
                           "or the Genesis GPU packages are not installed); python -m genesis.utils.collect_env "
                           "says what is missing")
    import genesis._impl.cuda  # noqa: F401 - the backend (its kernels launch through Genesis's Triton driver)
    from genesis._impl.cuda import runtime

    return runtime


def _allocator(device: object = None):
    rt = _runtime()
    from genesis._impl.cuda import allocator

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
    """The index of the current CUDA device."""
    return _runtime().current_device()


def set_device(device: object) -> None:
    """Make ``device`` the current CUDA device."""
    rt = _runtime()
    rt.set_device(_index(device, rt))


def get_device_name(device: object = None) -> str:
    """The name of ``device``, e.g. ``"NVIDIA H100 80GB HBM3"``."""
    rt = _runtime()
    return rt.device_name(_index(device, rt))


def get_device_capability(device: object = None) -> tuple[int, int]:
    """The compute capability ``(major, minor)`` of ``device``."""
    rt = _runtime()
    return rt.capability(_index(device, rt))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current CUDA device computes in bfloat16: natively from compute capability 8.0 (Ampere) on,
    emulated through float32 on older cards (counted only with ``including_emulation``). False without CUDA."""
    if not is_available():
        return False
    return get_device_capability() >= (8, 0) or including_emulation


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
    """Name, compute capability, total memory and multiprocessor count of ``device``."""
    return _DeviceProperties(_index(device))


def synchronize(device: object = None) -> None:
    """Wait for all work queued on the device."""
    rt = _runtime()
    rt.synchronize(_index(device, rt))


def synchronization_count() -> int:
    """How many times the host has waited for a CUDA device in this process so far.

    Every stream, device and event synchronize counts once, which includes the copies that read device values on the
    host (``.item()``, ``.numpy()``, ``.tolist()``, printing) and host-to-device copies without ``non_blocking=True``
    (they wait for their stream).
    A training step that counts 0 never stalls the host; ``genesis.profiler`` reports the count per profile and per
    op. Always 0 when the CUDA backend was never used; reading it never starts the driver.
    """
    runtime = sys.modules.get("genesis._impl.cuda.runtime")
    return 0 if runtime is None else runtime.synchronizations


def mem_get_info(device: object = None) -> tuple[int, int]:
    """(free, total) bytes of device memory as the driver reports them."""
    rt = _runtime()
    return rt.mem_get_info(_index(device, rt))


_STAND_INS: dict[str, type] = {}


def _stand_in(name: str) -> type:
    """The class ``name`` on a machine without CUDA: it exists, as torch's does, for annotations, ``hasattr`` and
    ``isinstance`` checks (always False), and making one raises the RuntimeError that says why CUDA is missing."""
    if name not in _STAND_INS:
        def __new__(cls: type, *args: object, **kwargs: object) -> object:
            _runtime()

        _STAND_INS[name] = type(name, (), {"__new__": __new__, "__module__": __name__,
                                           "__doc__": f"A CUDA {name.lower()} (CUDA is not available here)."})
    return _STAND_INS[name]


def __getattr__(name: str):  # Stream and Event classes, loaded with the runtime
    if name in ("Stream", "Event"):
        return getattr(_runtime(), name) if is_available() else _stand_in(name)
    raise AttributeError(f"module 'genesis.cuda' has no attribute '{name}'")


def current_stream(device: object = None):  # a Stream
    """Genesis's current stream on ``device`` (the current device by default)."""
    rt = _runtime()
    return rt.current_stream(_index(device, rt))


def default_stream(device: object = None):  # a Stream
    """The default (legacy NULL) stream of ``device``."""
    rt = _runtime()
    return rt.default_stream(_index(device, rt))


def set_stream(stream: object) -> None:
    """Make ``stream`` Genesis's current stream on its device."""
    _runtime().set_stream(stream)


class stream:  # torch's name
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


def is_initialized() -> bool:
    """Whether this process has started the CUDA runtime (a tensor on a GPU or a call that needs the device did);
    never starts it. Before that the memory statistics read 0 and ``empty_cache`` does nothing, as torch's."""
    runtime = sys.modules.get("genesis._impl.cuda.runtime")
    return runtime is not None and runtime.started()


def memory_allocated(device: object = None) -> int:
    """Bytes held by live tensors on the device (rounded to allocator blocks); 0 before CUDA is used."""
    return _allocator(device).allocated if is_initialized() else 0


def max_memory_allocated(device: object = None) -> int:
    """The peak of ``memory_allocated`` on ``device`` since the start or the last reset, in bytes."""
    return _allocator(device).peak if is_initialized() else 0


def memory_reserved(device: object = None) -> int:
    """Bytes the allocator holds from the driver (live tensors plus its cache); 0 before CUDA is used."""
    return _allocator(device).reserved() if is_initialized() else 0


def reset_peak_memory_stats(device: object = None) -> None:
    """Reset the peak statistics (``max_memory_allocated``) of ``device``."""
    if is_initialized():
        _allocator(device).reset_peak()


def reset_max_memory_allocated(device: object = None) -> None:
    """torch's older name of ``reset_peak_memory_stats``."""
    reset_peak_memory_stats(device)


def memory_cached(device: object = None) -> int:
    """torch's older name of ``memory_reserved``."""
    return memory_reserved(device)


def empty_cache() -> None:
    """Return every cached, unused block to the driver (nothing to do before CUDA is used, so a CPU-only machine
    may call it too)."""
    allocator = sys.modules.get("genesis._impl.cuda.allocator")
    if allocator is None:
        return
    for a in list(allocator._allocators.values()):
        a.empty_cache()


def memory_stats(device: object = None) -> dict[str, int]:
    """Counters of the caching allocator, including ``driver_alloc_calls``; empty before CUDA is used."""
    return _allocator(device).stats() if is_initialized() else {}


def memory_summary(device: object = None, abbreviated: bool = False) -> str:
    """A readable table of the caching allocator's statistics on ``device``."""
    return _allocator(device).summary()


def _generator(device: object = None) -> object:
    """The default generator of ``device`` (the current CUDA device by default; device 0 while CUDA is not
    available: seeding is lazy, as torch's, so a CPU-only run may seed CUDA too)."""
    from genesis.random import default_generator

    index = _index(device) if device is not None or is_available() else 0
    return default_generator(f"cuda:{index}")


def manual_seed(seed: int) -> None:
    """Seed the default generator of the current CUDA device."""
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed the random number generators of every CUDA device."""
    for i in range(device_count()):
        _generator(i).manual_seed(int(seed))


def seed() -> int:
    """Seed the current CUDA device's generator from the clock; returns the seed."""
    return _generator().seed()


def seed_all() -> None:
    """Seed every CUDA device's generator from one clock-drawn seed."""
    if device_count():
        manual_seed_all(_generator(0).seed())


def initial_seed() -> int:
    """The seed of the current CUDA device's generator."""
    _runtime()
    return _generator().initial_seed()


def get_rng_state(device: object = "cuda") -> object:
    """The state of ``device``'s generator as a uint8 CPU tensor (its seed and offset, as torch's CUDA state)."""
    _runtime()
    return _generator(device).get_state()


def set_rng_state(new_state: object, device: object = "cuda") -> None:
    """Restore ``device``'s generator from ``get_rng_state``'s tensor (or torch's 16-byte CUDA state)."""
    _runtime()
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list:
    """``get_rng_state`` of every CUDA device (an empty list without CUDA)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: list) -> None:
    """``set_rng_state`` for every device, from ``get_rng_state_all``'s list."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def get_arch_list() -> list[str]:
    """The GPU architectures Genesis's kernels run on here: Triton compiles them for the card at hand, so the
    current card's (``["sm_90"]`` on an H100); empty without CUDA."""
    if not is_available():
        return []
    major, minor = get_device_capability()
    return [f"sm_{major}{minor}"]


def is_tf32_supported() -> bool:
    """Whether the current CUDA device has TF32 tensor cores (compute capability 8.0 or newer)."""
    return is_available() and get_device_capability() >= (8, 0)


def ipc_collect() -> None:
    """torch frees memory shared with other processes here; Genesis shares no CUDA memory between processes, so
    there is nothing to collect (it still starts CUDA, as torch's does)."""
    _runtime()


def set_allow_tf32(flag: bool) -> None:
    """Let float32 matrix products use TF32 tensor cores (off by default): the same switch as
    ``genesis.backends.cuda.matmul.allow_tf32`` (torch's ``torch.backends.cuda.matmul.allow_tf32``)."""
    from genesis.backends import cuda as cuda_switches

    cuda_switches.matmul.allow_tf32 = bool(flag)
