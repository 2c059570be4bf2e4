"""The legacy typed tensor constructors: ``genesis.FloatTensor(2, 3)``, ``genesis.LongTensor([1, 2])``...

As torch's, each makes a tensor of its dtype from sizes (uninitialized memory), from data, or empty when given
nothing, and ``isinstance(t, genesis.FloatTensor)`` asks whether ``t`` is a float32 CPU tensor. The ``genesis.cuda``
variants (``genesis.cuda.FloatTensor``, from :func:`cuda_typed`) make and recognize CUDA tensors.
"""

from __future__ import annotations

from typing import Any

from genesis import dtypes
from genesis.tensor import Size, Tensor


class _TypedTensorMeta(type):
    """Calling the class constructs a Genesis Tensor of its dtype on its device type; isinstance checks both."""

    dtype: dtypes.dtype
    device_type: str

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:
        if device is not None and str(device).split(":")[0] != cls.device_type:
            raise RuntimeError(f"{cls.__name__}: legacy constructor expects device type: {cls.device_type} but "
                               f"device type: {device} was passed")
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])  # FloatTensor(t.shape): sizes
        return Tensor(*args, dtype=cls.dtype, device=device or cls.device_type)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == cls.device_type


def _typed(dtype: dtypes.dtype, device_type: str = "cpu") -> type:
    name = dtypes.LEGACY_TYPE_NAMES[dtype]
    where, module = ("", "genesis") if device_type == "cpu" else ("cuda.", "genesis.cuda")
    doc = (f"A {device_type.upper() if device_type == 'cpu' else 'CUDA'} tensor of dtype {dtype.name} (legacy "
           f"constructor, as ``torch.{where}{name}``): sizes, data, or nothing.")
    return _TypedTensorMeta(name, (), {"dtype": dtype, "device_type": device_type, "__doc__": doc,
                                       "__module__": module})


def cuda_typed(dtype: dtypes.dtype) -> type:
    """The CUDA legacy constructor of ``dtype`` (``genesis.cuda.FloatTensor``...)."""
    return _typed(dtype, "cuda")


FloatTensor = _typed(dtypes.float32)
DoubleTensor = _typed(dtypes.float64)
HalfTensor = _typed(dtypes.float16)
BFloat16Tensor = _typed(dtypes.bfloat16)
ByteTensor = _typed(dtypes.uint8)
CharTensor = _typed(dtypes.int8)
ShortTensor = _typed(dtypes.int16)
IntTensor = _typed(dtypes.int32)
LongTensor = _typed(dtypes.int64)
BoolTensor = _typed(dtypes.bool_)

__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
           "IntTensor", "LongTensor", "ShortTensor"]
