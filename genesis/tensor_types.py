"""The legacy typed tensor constructors: ``genesis.FloatTensor(2, 3)``, ``genesis.LongTensor([1, 2])``...

As torch's, each makes a CPU tensor of its dtype from sizes (uninitialized memory), from data, or empty when given
nothing, and ``isinstance(t, genesis.FloatTensor)`` asks whether ``t`` is a float32 CPU tensor.
"""

from __future__ import annotations

from typing import Any

from genesis import dtypes
from genesis.tensor import Size, Tensor


class _TypedTensorMeta(type):
    """Calling the class constructs a Genesis Tensor of its dtype; isinstance checks the dtype and the device."""

    dtype: dtypes.dtype

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:
        if device is not None and str(device) != "cpu":
            raise RuntimeError(f"{cls.__name__}: legacy constructor expects device type: cpu but device type: "
                               f"{device} was passed")
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])  # FloatTensor(t.shape): sizes
        return Tensor(*args, dtype=cls.dtype, device="cpu")

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"


def _typed(name: str, dtype: dtypes.dtype) -> type:
    doc = f"A CPU tensor of dtype {dtype.name} (legacy constructor, as ``torch.{name}``): sizes, data, or nothing."
    return _TypedTensorMeta(name, (), {"dtype": dtype, "__doc__": doc, "__module__": "genesis"})


FloatTensor = _typed("FloatTensor", dtypes.float32)
DoubleTensor = _typed("DoubleTensor", dtypes.float64)
HalfTensor = _typed("HalfTensor", dtypes.float16)
BFloat16Tensor = _typed("BFloat16Tensor", dtypes.bfloat16)
ByteTensor = _typed("ByteTensor", dtypes.uint8)
CharTensor = _typed("CharTensor", dtypes.int8)
ShortTensor = _typed("ShortTensor", dtypes.int16)
IntTensor = _typed("IntTensor", dtypes.int32)
LongTensor = _typed("LongTensor", dtypes.int64)
BoolTensor = _typed("BoolTensor", dtypes.bool_)

__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
           "IntTensor", "LongTensor", "ShortTensor"]
