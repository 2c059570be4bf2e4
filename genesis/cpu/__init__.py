"""``genesis.cpu``: torch's ``torch.cpu`` namespace, for scripts written device-agnostically
(``getattr(torch, device_type).synchronize()``) and for the older ``torch.cpu.amp.autocast`` spelling."""

from __future__ import annotations

from genesis.cpu import amp


def is_available() -> bool:
    """The CPU is always available."""
    return True


def device_count() -> int:
    """One CPU device, as torch counts it."""
    return 1


def current_device() -> str:
    """The CPU device's name, as ``torch.cpu.current_device()``."""
    return "cpu"


def synchronize(device: object = None) -> None:
    """Nothing to wait for: CPU work is done when the op returns."""


__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]
