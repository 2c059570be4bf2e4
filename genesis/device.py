"""Devices: ``genesis.device("cpu")``, ``genesis.device("cuda:1")``.

A device names where a tensor's memory lives and which backend computes on it. The CUDA backend package is imported
only when a CUDA device is first used, so Genesis imports and runs on machines without a GPU or driver.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
from types import ModuleType


class device:
    """A compute device: ``type`` is "cpu", "cuda" or "meta" (tensors with a shape and dtype but no data, for building
    large models before loading their weights), ``index`` the card number (None on the CPU and meta)."""

    __slots__ = ("type", "index", "_backend")
    _cache: dict[tuple[str, int | None], device] = {}

    def __new__(cls, spec: str | device | int = "cpu", index: int | None = None) -> device:
        if isinstance(spec, device):
            return spec
        if isinstance(spec, int):
            spec, index = "cuda", spec
        if not isinstance(spec, str):
            raise TypeError(f"device: expected a string, device or int, got {type(spec).__name__}")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise TypeError(f"device: index must be int, not {type(index).__name__}")
        if index is not None and index < 0:
            raise RuntimeError(f"device: device index must not be negative, got {index}")
        kind, colon, idx = spec.partition(":")
        if colon:
            if index is not None:
                raise RuntimeError(f"device: type (string) must not include an index because index was passed: {spec}")
            if not idx.isdigit():
                raise RuntimeError(f"device: invalid device string: '{spec}'")
            index = int(idx)
        if kind not in ("cpu", "cuda", "meta"):
            raise RuntimeError(f"device: expected one of cpu, cuda, meta device type at start of device string: "
                               f"{spec}")
        if kind == "cuda" and index is None:
            index = 0
        if kind != "cuda":
            index = None
        key = (kind, index)
        cached = cls._cache.get(key)
        if cached is None:
            cached = object.__new__(cls)
            cached.type = kind
            cached.index = index
            cached._backend = None
            cls._cache[key] = cached
        return cached

    @property
    def backend(self) -> ModuleType:
        """The backend module computing on this device (imported on first use)."""
        b = self._backend
        if b is None:
            if self.type == "cpu":
                b = importlib.import_module("genesis._impl.cpu")
            elif self.type == "meta":
                b = importlib.import_module("genesis._impl.cpu.meta")
            else:
                b = _cuda_backend(self)
            self._backend = b
            _freeze_heap()
        return b

    def is_available(self) -> bool:
        """Whether this device can be used on this machine."""
        if self.type != "cuda":
            return True
        return self.index < _cuda_probe().device_count()

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self) -> tuple:
        return (device, (str(self),))

    def __enter__(self) -> device:
        """``with genesis.device("cuda"):`` makes this the default device of the creation functions inside."""
        _default_stack.append(_default[0])
        _default[0] = self
        return self

    def __exit__(self, *exc: object) -> None:
        _default[0] = _default_stack.pop()


def _cuda_probe() -> ModuleType:
    """Whether and how many CUDA devices can be used, known without importing the CUDA backend."""
    return importlib.import_module("genesis._impl.cuda_probe")


def _freeze_heap() -> None:
    """Take the objects alive when a backend is first loaded (its imports: torch, Triton, the CUDA bindings, numpy,
    and what the program built so far) out of the cyclic garbage collector's full collections (``gc.freeze``).

    A training step allocates thousands of small Python objects (graph nodes, tensors) that outlive a young
    collection, so CPython runs a full collection every few steps; over the import-time heap of torch and Triton
    (~300,000 objects) one costs 100-200 ms, a stall of several steps. Frozen objects are still freed by reference
    counting; only reference cycles among them are never collected. ``GENESIS_GC_FREEZE=0`` turns this off.
    """
    global _unfreeze_registered
    if os.environ.get("GENESIS_GC_FREEZE", "1") != "0":
        gc.freeze()
        if not _unfreeze_registered:
            # At exit the objects go back to the collector, so extension types see their instances freed.
            atexit.register(gc.unfreeze)
            _unfreeze_registered = True


_unfreeze_registered = False


def _cuda_backend(dev: device) -> ModuleType:
    probe = _cuda_probe()
    if not probe.is_available():
        raise RuntimeError(
            f"device {dev}: CUDA is not available on this machine (no NVIDIA driver or GPU was found, or the "
            "Genesis CUDA dependencies cuda-python and triton are not installed)"
        )
    if dev.index >= probe.device_count():
        raise RuntimeError(f"device {dev}: invalid device ordinal, only {probe.device_count()} CUDA device(s) present")
    return importlib.import_module("genesis._impl.cuda")


cpu = device("cpu")
meta = device("meta")


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for intra-op parallelism on the CPU (as ``torch.set_num_threads``); RuntimeError unless
    ``n`` is a positive integer. DataLoader workers set one thread each."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n!r}")
    cpu.backend.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism on the CPU (as ``torch.get_num_threads``)."""
    return cpu.backend.get_num_threads()


def set_num_interop_threads(n: int) -> None:
    """Use ``n`` threads for inter-op parallelism on the CPU (as ``torch.set_num_interop_threads``): RuntimeError
    unless ``n`` is a positive integer, and once parallel work has started or the number was set before."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    cpu.backend.set_num_interop_threads(n)


def get_num_interop_threads() -> int:
    """The number of threads used for inter-op parallelism on the CPU (as ``torch.get_num_interop_threads``)."""
    return cpu.backend.get_num_interop_threads()


def set_flush_denormal(mode: bool) -> bool:
    """Flush denormal floating-point numbers to zero on the CPU (``mode=True``) or keep them (as
    ``torch.set_flush_denormal``). Returns whether the processor supports it (SSE3 on x86); GPUs are unaffected."""
    return cpu.backend.set_flush_denormal(bool(mode))


_warn_always = [False]


def set_warn_always(b: bool) -> None:
    """Make warnings that Genesis gives once per process (as the deprecation of typed storages) warn every time
    (as ``torch.set_warn_always``)."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether warnings given once per process warn every time (:func:`set_warn_always`)."""
    return _warn_always[0]


def to_device(d: str | device | int | None) -> device:
    """Normalize a device argument; None means the CPU."""
    if d is None:
        return cpu
    return device(d)


# The device creation functions use when given none: [current], and the defaults that ``with device`` blocks replaced.
_default: list[device] = [cpu]
_default_stack: list[device] = []


def factory_device(d: str | device | int | None) -> device:
    """The device a creation function (``zeros``, ``randn``, ``tensor``...) puts a new tensor on: ``d``, or the
    default device when ``d`` is None."""
    return _default[0] if d is None else device(d)


def set_default_device(d: str | device | int | None) -> None:
    """Set the device creation functions use when given none (as ``torch.set_default_device``; None: the CPU)."""
    _default[0] = to_device(d)


def get_default_device() -> device:
    """The device creation functions use when given none (as ``torch.get_default_device``)."""
    return _default[0]
