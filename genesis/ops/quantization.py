"""Fake quantization, torch's quantization-aware-training primitives: values rounded to a quantization grid and
back, in floating point, with a straight-through gradient.

``fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max)`` is
``(clamp(round(x * (1 / scale)) + zero_point, quant_min, quant_max) - zero_point) * scale`` with torch's
arithmetic: the reciprocal of the scale in float32, the rounding (half to even) in float32 (float64 for float64
input), the grid value a float32 product, returned in the input's dtype. ``fake_quantize_per_channel_affine``
takes one scale and zero point per slice along ``axis``; a floating zero point is added before rounding, as
torch's. The gradient passes where the rounded value lies inside ``[quant_min, quant_max]`` and is zero elsewhere;
scale and zero point get none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from genesis import dtypes
from genesis.autograd import Function, no_grad
from genesis.ops._args import check_tensors
from genesis.ops.nn import check_all
from genesis.tensor import Tensor, tensor

_OUT_OF_RANGE = "`zero_point` must be between `quant_min` and `quant_max`."


def _check_range(zero_point: Any, quant_min: int, quant_max: int) -> None:
    """torch's checks of the range and of a zero point inside it; a tensor's zero points are checked on the device
    (``check_all``: on CUDA the error comes at the next synchronization), so a training step does not wait."""
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")
    if isinstance(zero_point, Tensor):
        check_all((zero_point >= quant_min) & (zero_point <= quant_max), RuntimeError, _OUT_OF_RANGE)
    elif not quant_min <= int(zero_point) <= quant_max:
        raise RuntimeError(_OUT_OF_RANGE)


class FakeQuantize(Function):
    """The grid round trip with its straight-through gradient (the mask of values inside the range)."""

    @staticmethod
    def forward(ctx, x: Tensor, inv_scale: Tensor, scale: Tensor, zero_point: Tensor, zero_before_rounding: bool,
                quant_min: int, quant_max: int) -> Tensor:
        wide = dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32
        v = x.to(wide) * inv_scale.to(wide)
        q = (v + zero_point).round() if zero_before_rounding else v.round() + zero_point
        inside = (q >= quant_min) & (q <= quant_max)
        ctx.save_for_backward(inside)
        # The grid value is an integer times a float32 scale: a float32 product, as torch's, whatever the input dtype.
        return ((q.clamp(quant_min, quant_max) - zero_point).to(dtypes.float32) * scale).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        (inside,) = ctx.saved_tensors
        return (grad * inside.to(grad.dtype),) + (None,) * 6


def _qparams(scale: Any, zero_point: Any, like: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(1 / scale in float32, scale in float32, zero point) as tensors on ``like``'s device."""
    if isinstance(scale, Tensor):
        s = scale.detach().to(dtypes.float32)
    else:
        s = tensor(np.float32(scale), device=like.device)
    with no_grad():
        inv = 1.0 / s
    z = zero_point.detach() if isinstance(zero_point, Tensor) else tensor(int(zero_point), device=like.device)
    return inv, s, z


def fake_quantize_per_tensor_affine(input: Tensor, scale: Any, zero_point: Any, quant_min: int,
                                    quant_max: int) -> Tensor:
    """``input`` rounded to the grid ``scale * (q - zero_point)``, ``q`` in ``[quant_min, quant_max]`` (see the
    module docstring); ``scale``/``zero_point`` are numbers or one-element tensors."""
    check_tensors("fake_quantize_per_tensor_affine", input=input)
    _check_range(zero_point.detach() if isinstance(zero_point, Tensor) else zero_point, quant_min, quant_max)
    inv, s, z = _qparams(scale, zero_point, input)
    return FakeQuantize.apply(input, inv, s, z.to(dtypes.float32), False, quant_min, quant_max)


def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor, axis: int, quant_min: int,
                                     quant_max: int) -> Tensor:
    """Per-channel fake quantization: ``scale`` (float32 or bfloat16) and ``zero_point`` (int32, float32 or float16)
    hold one value per slice of ``input`` along ``axis``."""
    check_tensors("fake_quantize_per_channel_affine", input=input)
    if scale.dtype not in (dtypes.float32, dtypes.bfloat16):
        raise RuntimeError(f"Scale must be Float or BFloat16, found {dtypes.SCALAR_TYPE_NAMES[scale.dtype]}")
    if zero_point.dtype not in (dtypes.int32, dtypes.float32, dtypes.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found "
                           f"{dtypes.SCALAR_TYPE_NAMES[zero_point.dtype]}")
    if not 0 <= axis < input.ndim:  # torch takes no negative axis here
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    if scale.ndim != 1 or zero_point.ndim != 1 or scale.shape[0] != input.shape[axis] \
            or zero_point.shape[0] != input.shape[axis]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    floating = zero_point.dtype.is_floating_point
    if floating:  # torch checks only the range for floating zero points
        _check_range(0 if quant_min <= 0 <= quant_max else quant_min, quant_min, quant_max)
    else:
        _check_range(zero_point.detach(), quant_min, quant_max)
    shape = [1] * input.ndim
    shape[axis] = -1
    inv, s, z = _qparams(scale, zero_point, input)
    return FakeQuantize.apply(input, inv.reshape(shape), s.reshape(shape), z.to(dtypes.float32).reshape(shape),
                              floating, quant_min, quant_max)
