"""``genesis.cuda``: NVIDIA GPU runtime utilities.

Importing this module never touches the GPU driver; ``is_available()`` probes it once. All other functions need a
working CUDA device and raise a clear RuntimeError otherwise.
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
