"""The legacy typed tensor constructors: ``genesis.FloatTensor(2, 3)``, ``genesis.LongTensor([1, 2])``...

As torch's, each makes a tensor of its dtype from sizes (uninitialized memory), from data, or empty when given
nothing, and ``isinstance(t, genesis.FloatTensor)`` asks whether ``t`` is a float32 CPU tensor. The ``genesis.cuda``
variants (``genesis.cuda.FloatTensor``, from :func:`cuda_typed`) make and recognize CUDA tensors.
"""

from __future__ import annotations

import warnings
from typing import Any

from genesis import dtypes
from genesis.device import device, set_default_device
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
           "IntTensor", "LongTensor", "ShortTensor", "set_default_tensor_type"]


def set_default_tensor_type(t: type | str) -> None:
    """torch's deprecated ``set_default_tensor_type``: a floating legacy type (``genesis.FloatTensor``,
    ``"torch.DoubleTensor"``) sets the default floating dtype; a CUDA one (``genesis.cuda.FloatTensor``,
    ``"torch.cuda.HalfTensor"``) also makes CUDA the default device (``set_default_device``), and a CPU one makes the
    CPU the default again. Warns as torch does."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if isinstance(t, str):
        parts = t.split(".")
        name, on_cuda = parts[-1], parts[-2:-1] == ["cuda"]
        dtype = dtypes.BY_LEGACY_NAME.get(name)
        if dtype is None or parts[0] not in ("torch", "genesis") or len(parts) != (3 if on_cuda else 2):
            raise TypeError(f"invalid type: '{t}'")
    elif isinstance(t, _TypedTensorMeta):
        dtype, on_cuda = t.dtype, t.device_type == "cuda"
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if on_cuda and not device("cuda").is_available():
        raise TypeError(f"type torch.cuda.{dtypes.LEGACY_TYPE_NAMES[dtype]} not available: no CUDA device can be "
                        "used here")
    dtypes.set_default_dtype(dtype)
    set_default_device("cuda" if on_cuda else None)
