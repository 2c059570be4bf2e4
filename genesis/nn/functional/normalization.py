"""Normalization functions: layer_norm, rms_norm, batch_norm, group_norm, instance_norm, local_response_norm
and normalize.

Half-precision inputs are normalized in float32 and the result cast back, as torch does.
"""

from __future__ import annotations

import math
from typing import Sequence

from genesis import amp, dtypes
from genesis import ops as T
from genesis.autograd import no_grad
from genesis.nn.functional._out import write_out
from genesis.ops._args import check_floating_kernel
from genesis.ops.fused import fused_norm
from genesis.ops.nn import BatchNorm, GroupNorm, InstanceNorm
from genesis.tensor import Tensor, arange, zeros

_HALF = (dtypes.float16, dtypes.bfloat16)


def _upcast(x: Tensor) -> Tensor:
    return x.float() if x.dtype in _HALF else x


def _check_param_dtypes(input: Tensor, *params: Tensor | None) -> None:
    """torch's rule for a norm's parameters (weight, bias, running statistics): all of the input's dtype, or all
    float32 under half-precision input (the mixed mode); RuntimeError otherwise, worded as torch's kernels."""
    x = input.ndarray.dtype
    same = wide = True  # every parameter of the input's dtype / every one float32
    for p in params:
        if p is not None:
            d = p.ndarray.dtype
            same = same and d is x
            wide = wide and d is dtypes.float32
    if same or (wide and x in _HALF):
        return
    found = [p.dtype for p in params if p is not None]
    if found[0] is x:  # the first parameter agrees with the input, a later one does not
        other = next(d for d in found if d is not x)
        raise RuntimeError(f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[x]} but found "
                           f"{dtypes.SCALAR_TYPE_NAMES[other]}")
    where = input.device.type.upper()
    if all(d is dtypes.float32 for d in found):
        raise RuntimeError(f"mixed dtype ({where}): all inputs must share same datatype.")
    raise RuntimeError(f"mixed dtype ({where}): expect parameter to have scalar type of Float")


def _norm_count(op: str, input: Tensor, normalized_shape: int | Sequence[int]) -> int:
    """How many trailing dims ``normalized_shape`` names (checked against the input's shape)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if n == 0:
        raise RuntimeError(f"{op}: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
                           "one element, but got normalized_shape = []")
    xshape = input.ndarray.shape
    if n == 0 or len(xshape) < n or xshape[-n:] != shape:
        raise RuntimeError(f"{op}: Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(xshape)}")
    return n


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing ``normalized_shape`` dims."""
    input, weight, bias = amp.autocast_args("layer_norm", input, weight, bias)
    n = _norm_count("layer_norm", input, normalized_shape)
    check_floating_kernel("layer_norm", "LayerNormKernelImpl", input)
    _check_param_dtypes(input, weight, bias)
    fused = fused_norm(input, weight, bias, n, eps, False)
    if fused is not None:
        return fused
    out, _, _ = _standardize(_upcast(input), tuple(range(input.ndim - n, input.ndim)), eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.to(input.dtype)


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
             eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims (Zhang & Sennrich, 2019).

    ``eps`` defaults to the machine epsilon of the computation dtype (float32 for half inputs), as in torch.
    Half-precision input is normalized and multiplied by ``weight`` in float32, then cast back (torch's order;
    HF Qwen casts before the weight).
    ``out=`` writes into a preallocated tensor (inference only).
    """
    input, weight = amp.autocast_args("rms_norm", input, weight)
    n = _norm_count("rms_norm", input, normalized_shape)
    check_floating_kernel("rms_norm", "rms_norm", input)
    if eps is None:
        eps = _EPS[input.dtype]
    fused = fused_norm(input, weight, None, n, eps, True)
    if fused is not None:
        return write_out("rms_norm", fused, out)
    x = _upcast(input)
    result = x * T.rsqrt((x * x).mean(tuple(range(input.ndim - n, input.ndim)), keepdim=True) + eps)
    if weight is not None:
        result = result * weight
    return write_out("rms_norm", result.to(input.dtype), out)


# Machine epsilon of the dtype the computation runs in (float32 for half inputs), torch's default.
_EPS = {dtypes.float16: 1.1920928955078125e-07, dtypes.bfloat16: 1.1920928955078125e-07,
        dtypes.float32: 1.1920928955078125e-07, dtypes.float64: 2.220446049250313e-16}


def _channel_shape(input: Tensor) -> tuple[int, ...]:
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _standardize(x: Tensor, dims: int | tuple[int, ...], eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``((x - mean) / sqrt(var + eps), mean, var)`` over ``dims`` (biased variance, dims kept)."""
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return centered * T.rsqrt(var + eps), mean, var


def _channel_affine(out: Tensor, weight: Tensor | None, bias: Tensor | None, like: Tensor) -> Tensor:
    """``out * weight + bias`` with per-channel (dim 1) parameters, cast back to ``like``'s dtype."""
    shape = _channel_shape(like)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out.to(like.dtype)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float | None = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) with batch statistics (training) or the running ones (eval).

    In training the running statistics are updated in place: ``running = (1 - momentum) * running + momentum *
    batch_stat`` with the unbiased batch variance (``momentum=None`` is handled by the module as a cumulative
    average and arrives here as a number).
    """
    shape = input.ndarray.shape
    if len(shape) < 2:  # torch reads the channel count as size(1): an IndexError in training, else its kernel's
        raise (IndexError if training else RuntimeError)(
            f"batch_norm: expected at least 2D input (got {len(shape)}D input): Dimension out of range (expected to "
            f"be in range of [{-max(len(shape), 1)}, {max(len(shape), 1) - 1}], but got 1)")
    if training and math.prod(shape) // shape[1] <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    return batch_norm_unchecked(input, running_mean, running_var, weight, bias, training, momentum, eps)


def batch_norm_unchecked(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                         weight: Tensor | None, bias: Tensor | None, training: bool, momentum: float | None,
                         eps: float) -> Tensor:
    """``batch_norm`` without the Python-level checks of ``F.batch_norm`` (a single value per channel in training
    normalizes to zeros): torch's namespace ``batch_norm`` goes straight here, as its kernel."""
    check_floating_kernel("batch_norm", "batch_norm", input)
    channels = input.ndarray.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.ndarray.shape != (channels,) and t.numel() != channels:
            raise RuntimeError(f"batch_norm: {name} should contain {channels} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm: running_mean and running_var must be given when training=False")
    _check_param_dtypes(input, weight, bias, running_mean, running_var)
    if input.ndarray.dtype.category == 2:  # floating
        # One fused kernel each way (several times fewer graph nodes than the composite below); half-precision
        # input keeps its statistics in float32, with parameters of its own dtype or float32 (torch's mixed mode,
        # the only mix the check above lets through).
        return BatchNorm.apply(input, weight, bias, running_mean, running_var, training=training,
                               momentum=0.0 if momentum is None else momentum, eps=eps)
    return _batch_norm_composite(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _batch_norm_composite(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                          weight: Tensor | None, bias: Tensor | None, training: bool, momentum: float | None,
                          eps: float) -> Tensor:
    """Batch norm from tensor ops, computed in float32 for half-precision input (and mixed dtypes)."""
    channels = input.shape[1]
    dims = (0,) + tuple(range(2, input.ndim))
    shape = _channel_shape(input)
    x = _upcast(input)
    if training:
        count = input.numel() // channels
        out, mean, var = _standardize(x, dims, eps)
        if running_mean is not None and running_var is not None:
            with no_grad():
                m = 0.0 if momentum is None else momentum
                running_mean.mul_(1 - m).add_(mean.detach().reshape(channels).to(running_mean.dtype) * m)
                unbiased = var.detach().reshape(channels) * (count / max(count - 1, 1))
                running_var.mul_(1 - m).add_(unbiased.to(running_var.dtype) * m)
    else:
        mean = running_mean.reshape(shape)
        out = (x - mean) * T.rsqrt(running_var.reshape(shape) + eps)
    return _channel_affine(out, weight, bias, input)


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) plane over its spatial dims (Ulyanov et al., 2016).

    With ``use_input_stats`` the running statistics, when given, are updated in place with the batch mean of the
    per-instance mean and unbiased variance; without it the running statistics normalize (as eval batch norm).
    Floating input with parameters of its dtype runs as one kernel each way (group norm's, one channel per group).
    """
    if use_input_stats and math.prod(input.shape[2:]) <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
    return instance_norm_unchecked(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def instance_norm_unchecked(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                            weight: Tensor | None, bias: Tensor | None, use_input_stats: bool, momentum: float,
                            eps: float) -> Tensor:
    """``instance_norm`` without ``F.instance_norm``'s check for a single spatial element: torch's namespace
    ``instance_norm`` goes straight here, as its kernel."""
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    check_floating_kernel("instance_norm", "batch_norm", input)
    count = math.prod(input.shape[2:])
    channels = input.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"instance_norm: {name} should contain {channels} elements not {t.numel()}")
    _check_param_dtypes(input, weight, bias, running_mean, running_var)
    if input.dtype.is_floating_point and all(t is None or t.dtype is input.dtype for t in (weight, bias)):
        return InstanceNorm.apply(input, weight, bias, running_mean, running_var, momentum=momentum, eps=eps)
    dims = tuple(range(2, input.ndim))
    out, mean, var = _standardize(_upcast(input), dims, eps)
    if running_mean is not None and running_var is not None:
        with no_grad():
            running_mean.mul_(1 - momentum).add_(mean.detach().mean(0).reshape(-1) * momentum)
            unbiased = var.detach().mean(0).reshape(-1) * (count / max(count - 1, 1))
            running_var.mul_(1 - momentum).add_(unbiased * momentum)
    return _channel_affine(out, weight, bias, input)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize groups of ``C / num_groups`` channels over the channels and spatial dims (Wu & He, 2018)."""
    input, weight, bias = amp.autocast_args("group_norm", input, weight, bias)
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    check_floating_kernel("group_norm", "GroupNormKernelImpl", input)
    _check_param_dtypes(input, weight, bias)
    if input.dtype.is_floating_point and all(t is None or t.dtype is input.dtype for t in (weight, bias)):
        # One kernel each way (statistics in float32 for half-precision input, as the composite below).
        return GroupNorm.apply(input, weight, bias, num_groups=num_groups, eps=eps)
    out, _, _ = _standardize(_upcast(input).reshape(n, num_groups, -1), 2, eps)  # (N, G, C/G * spatial)
    return _channel_affine(out.reshape(input.shape), weight, bias, input)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Normalize each element by the sum of squares over ``size`` neighbouring channels (AlexNet's LRN)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    sq = input * input
    channels = input.shape[1]
    # Windowed channel sums as differences of a zero-padded cumulative sum.
    pad_shape = list(sq.shape)
    pad_shape[1] = 1
    before, after = size // 2, (size - 1) // 2
    csum = T.cat([zeros(pad_shape, dtype=sq.dtype, device=sq.device), T.cumsum(sq, 1)], 1)  # (N, C + 1, ...)
    hi = T.clamp(arange(channels, device=input.device) + after + 1, max=channels)
    lo = T.clamp(arange(channels, device=input.device) - before, min=0)
    window = (T.index_select(csum, 1, hi) - T.index_select(csum, 1, lo)) / size
    return input / (window * alpha + k) ** beta


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``."""
    denom = T.norm(input, p, dim, keepdim=True).clamp(min=eps)
    return write_out("normalize", input / denom, out)
