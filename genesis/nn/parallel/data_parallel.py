"""``DataParallel``, the single-process wrapper of older scripts (``model = nn.DataParallel(model)``).

torch's version splits each batch across the GPUs of ``device_ids`` within one process. Genesis runs the wrapped
module on the first of them: inputs are moved to that device (as torch's scatter does) and the module runs whole,
so a script keeps working, with its ``.module`` attribute and ``module.``-prefixed state-dict keys, but gains no
speed from more GPUs. For that, use ``DistributedDataParallel`` with one process per GPU.
"""

from __future__ import annotations

from typing import Any, Sequence

from genesis import cuda
from genesis.device import device as Device
from genesis.nn.modules.module import Module
from genesis.tensor import Tensor


def _to(value: Any, target: Device) -> Any:
    """``value`` with every tensor in it (through lists, tuples and dicts) on ``target``."""
    if isinstance(value, Tensor):
        return value.to(target)
    if isinstance(value, (list, tuple)):
        moved = [_to(v, target) for v in value]
        return type(value)(*moved) if hasattr(value, "_fields") else type(value)(moved)
    if isinstance(value, dict):
        return type(value)((k, _to(v, target)) for k, v in value.items())
    return value


class DataParallel(Module):
    """Run ``module`` on the first device of ``device_ids`` (every visible GPU by default; none: run it as it is).

    Args:
        module: the model; its parameters must be on ``device_ids[0]`` (as torch requires).
        device_ids: GPU indices or devices; only the first one computes.
        output_device: accepted for torch compatibility (outputs stay on the computing device).
        dim: accepted for torch compatibility (the batch dim torch would split).
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        self.module = module
        if device_ids is None:
            device_ids = list(range(cuda.device_count())) if cuda.is_available() else []
        self.device_ids = [d.index if isinstance(d, Device) else int(d) for d in device_ids]
        self.output_device = output_device
        self.dim = dim
        self.src_device = Device("cuda", self.device_ids[0]) if self.device_ids else None

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.src_device is None:
            return self.module(*inputs, **kwargs)
        for p in self.module.parameters():
            if p.device != self.src_device:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device} "
                                   f"(device_ids[0]) but found one of them on device: {p.device}")
        return self.module(*_to(inputs, self.src_device), **_to(kwargs, self.src_device))
