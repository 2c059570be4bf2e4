"""Whether the CUDA backend can run here, asked without importing it: importing ``genesis._impl.cuda`` needs the
CUDA Python bindings, Triton and a driver, so a device and ``genesis.cuda`` ask this module first.
"""

from __future__ import annotations

import functools
import importlib.util


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


def pci_addresses(count: int) -> list[str]:
    """The PCI addresses (``0000:1b:00.0``) of the first ``count`` CUDA devices, in CUDA's order (which follows
    ``CUDA_VISIBLE_DEVICES``), read through the driver without creating a context; RuntimeError when there are
    fewer devices or no driver."""
    visible = _probe()
    if visible < count:
        raise RuntimeError(f"{count} GPU(s) needed but {visible} visible (driver, bindings and CUDA_VISIBLE_DEVICES)")
    from cuda.bindings import driver

    addresses = []
    for index in range(count):
        err, dev = driver.cuDeviceGet(index)
        err, raw = driver.cuDeviceGetPCIBusId(32, dev)
        if int(err) != 0:
            raise RuntimeError(f"the driver gave no PCI address for GPU {index} ({err!r})")
        addresses.append(raw.split(b"\0", 1)[0].decode().lower())
    return addresses


def _describe_devices(driver: object, found: dict[str, object]) -> None:
    """Fill ``found`` with the driver's CUDA version and each GPU's name and compute capability."""
    err, version = driver.cuDriverGetVersion()
    if int(err) == 0:
        found["driver"] = f"{int(version) // 1000}.{int(version) % 1000 // 10}"
    err, count = driver.cuDeviceGetCount()
    if int(err) != 0 or int(count) == 0:
        found["problems"].append("the NVIDIA driver reports no GPU (check CUDA_VISIBLE_DEVICES)")  # type: ignore[union-attr]
        return
    for index in range(int(count)):
        err, name = driver.cuDeviceGetName(256, index)
        label = name.split(b"\0", 1)[0].decode() if int(err) == 0 else f"device {index}"
        capability = [driver.cuDeviceGetAttribute(attribute, index)[1] for attribute in (
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)]
        found["devices"].append(f"{label} (sm_{capability[0]}{capability[1]})")  # type: ignore[union-attr]


def report() -> dict[str, object]:
    """What the CUDA backend finds here, for ``genesis.utils.collect_env``: never raises.

    Returns a dict with ``driver`` (the CUDA version the driver supports, e.g. ``"13.0"``, or None), ``devices`` (one
    ``"name (sm_XY)"`` string per GPU) and ``problems`` (why CUDA cannot be used: each missing piece, in words).
    """
    found: dict[str, object] = {"driver": None, "devices": [], "problems": []}
    problems: list[str] = found["problems"]  # type: ignore[assignment]
    try:
        import triton  # noqa: F401
    except ImportError as e:
        problems.append(f"triton cannot be imported ({e}): pip install -e '.[cuda]'")
    if importlib.util.find_spec("nvmath") is None:
        problems.append("nvmath-python (cuBLASLt, the matrix products of the CUDA backend) is not installed: "
                        "pip install -e '.[cuda]'")
    try:
        from cuda.bindings import driver
    except ImportError as e:
        problems.append(f"the CUDA Python bindings cannot be imported ({e}): pip install -e '.[cuda]'")
        return found
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:  # libcuda.so is absent: no NVIDIA driver
        problems.append(f"the NVIDIA driver library libcuda could not be loaded ({type(e).__name__}: {e})")
        return found
    if int(err) != 0:
        problems.append(f"cuInit failed with {err!r}: the NVIDIA driver found no usable GPU")
        return found
    try:
        _describe_devices(driver, found)
    except Exception as e:  # an old or broken driver: say so instead of failing the report
        problems.append(f"the NVIDIA driver could not be queried ({type(e).__name__}: {e})")
    return found


def is_available() -> bool:
    """Whether a CUDA GPU can be used (driver, device and the packages the CUDA backend imports present)."""
    if _probe() == 0:
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    # The backend imports cuBLASLt's bindings when it loads; found without importing it (the import takes a while).
    return importlib.util.find_spec("nvmath") is not None


def device_count() -> int:
    """The number of usable CUDA devices (0 when :func:`is_available` is False)."""
    return _probe() if is_available() else 0
