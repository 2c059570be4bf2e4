"""``torch.utils.dlpack``: tensors to and from DLPack capsules, sharing memory with numpy, CuPy, JAX, torch..."""

from __future__ import annotations

import enum
from typing import Any

from genesis.tensor import Tensor, from_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """The device codes of the DLPack standard (``__dlpack_device__()[0]``), as torch names them."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule over ``tensor``'s memory; whoever consumes it (``from_dlpack``) shares that memory.

    Args:
        tensor: the tensor to export; one that requires grad is refused (BufferError), as by torch.

    Returns:
        A ``dltensor`` PyCapsule, which can be consumed once.
    """
    return tensor.__dlpack__()
