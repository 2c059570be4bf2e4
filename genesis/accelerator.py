"""The device-agnostic accelerator API (``genesis.accelerator``, as ``torch.accelerator``).

Genesis's one accelerator is CUDA: these functions answer for it, and raise torch's RuntimeError when the machine
has no usable GPU (``is_available``, ``device_count`` and ``current_accelerator`` answer False, 0 and None instead).
"""

from __future__ import annotations

from genesis import cuda
from genesis.device import device as Device

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """Whether an accelerator (a CUDA GPU Genesis can use) is present."""
    return cuda.is_available()


def device_count() -> int:
    """The number of accelerator devices (0 without one)."""
    return cuda.device_count() if cuda.is_available() else 0


def current_accelerator(check_available: bool = False) -> Device | None:
    """The accelerator as a device (``device("cuda")``), or None without one.

    Args:
        check_available: accepted for torch compatibility; Genesis reports CUDA only where it can be used, so the
            answer is the same either way.
    """
    return Device("cuda") if cuda.is_available() else None


def _require() -> None:
    if not cuda.is_available():
        raise RuntimeError(_NONE)


def current_device_index() -> int:
    """The index of the current accelerator device."""
    _require()
    return cuda.current_device()


def set_device_index(device: Device | str | int) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or a device) the current accelerator device."""
    _require()
    cuda.set_device(device)


def synchronize(device: Device | str | int | None = None) -> None:
    """Wait until all work queued on ``device`` (default: the current one) has finished."""
    _require()
    cuda.synchronize(device)


set_device_idx = set_device_index
current_device_idx = current_device_index

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "device_count", "is_available",
           "set_device_idx", "set_device_index", "synchronize"]
