"""Whether the CUDA backend can run here, asked without importing it: importing ``genesis._impl.cuda`` needs the
CUDA Python bindings, Triton and a driver, so a device and ``genesis.cuda`` ask this module first.
"""

from __future__ import annotations

import functools


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
    except Exception:  # a missing driver library surfaces as various errors
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
    """The number of usable CUDA devices (0 when :func:`is_available` is False)."""
    return _probe() if is_available() else 0
