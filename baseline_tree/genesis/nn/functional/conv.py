"""Convolutions (1-d, 2-d, 3-d and transposed) with torch's argument checks, on the ``conv`` backend primitive."""

from __future__ import annotations

from typing import Sequence

from genesis import amp
from genesis.functional.nn_ops import Conv
from genesis.nn.functional.basic import pad
from genesis.tensor import Tensor


def ntuple(op: str, name: str, value: int | Sequence[int], n: int) -> tuple[int, ...]:
    """``value`` as an n-tuple of ints (an int is repeated), checking the length."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of {n} values to match "
                           f"the convolution dimensions, but got {name}={list(value)}")
    return value


def _same_padding(op: str, weight: Tensor, stride: tuple, dilation: tuple, n: int) -> tuple[tuple, tuple | None]:
    """Symmetric padding for ``padding="same"``, plus the extra right-side padding when the total is odd."""
    if any(s != 1 for s in stride):
        raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
    sym = tuple(t // 2 for t in total)
    extra = [t - 2 * s for t, s in zip(total, sym)]
    if not any(extra):
        return sym, None
    pads: list[int] = []
    for e in reversed(extra):
        pads += [0, e]
    return sym, tuple(pads)


def _convnd(op: str, n: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: int | Sequence[int],
            padding: int | str | Sequence[int], dilation: int | Sequence[int], groups: int,
            transposed: bool = False, output_padding: int | Sequence[int] = 0) -> Tensor:
    input, weight, bias = amp.autocast_args(op, input, weight, bias)
    if weight.ndim != n + 2:
        raise RuntimeError(f"{op}: expected a {n + 2}-D weight, got weight of size {list(weight.shape)}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {op}, but got "
                           f"input of size: {list(input.shape)}")
    batched = input.ndim == n + 2
    x = input if batched else input.unsqueeze(0)
    stride = ntuple(op, "stride", stride, n)
    dilation = ntuple(op, "dilation", dilation, n)
    output_padding = ntuple(op, "output_padding", output_padding, n)
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported, got stride={list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero, got dilation={list(dilation)}")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported, got groups={groups}")
    if isinstance(padding, str):
        if transposed:
            raise ValueError(f"{op}: string padding is not supported for transposed convolutions")
        if padding == "valid":
            padding = (0,) * n
        elif padding == "same":
            padding, extra = _same_padding(op, weight, stride, dilation, n)
            if extra is not None:
                x = pad(x, extra)
        else:
            raise ValueError(f"{op}: Invalid padding string {padding!r}, should be one of ['valid', 'same']")
    padding = ntuple(op, "padding", padding, n)
    if any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: negative padding is not supported, got padding={list(padding)}")
    channels = x.shape[1]
    if transposed:
        if weight.shape[0] != channels:
            raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, expected input"
                               f"{list(x.shape)} to have {weight.shape[0]} channels, but got {channels} channels "
                               "instead")
        if channels % groups:
            raise RuntimeError(f"{op}: in_channels {channels} must be divisible by groups {groups}")
        for op_, s, d in zip(output_padding, stride, dilation):
            if op_ >= max(s, d):
                raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, got "
                                   f"output_padding={list(output_padding)}, stride={list(stride)}, "
                                   f"dilation={list(dilation)}")
        out_channels = weight.shape[1] * groups
    else:
        if weight.shape[1] * groups != channels:
            raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                               f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {channels} "
                               "channels instead")
        if weight.shape[0] % groups:
            raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
                               f"dimension 0, but got weight of size {list(weight.shape)} instead")
        out_channels = weight.shape[0]
        padded = [size + 2 * p for size, p in zip(x.shape[2:], padding)]
        spans = [d * (k - 1) + 1 for d, k in zip(dilation, weight.shape[2:])]
        if any(size < span for size, span in zip(padded, spans)):
            raise RuntimeError(f"{op}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                               f"Kernel size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than "
                               "actual input size")
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(f"{op}: Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")
    if x.dtype is not weight.dtype:
        raise RuntimeError(f"{op}: Input type ({x.dtype}) and weight type ({weight.dtype}) should be the same")
    out = Conv.apply(x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups,
                     transposed=transposed, output_padding=output_padding)
    return out if batched else out.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: int | str | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """1-d convolution of (N, C_in, L) input with weight (C_out, C_in / groups, k)."""
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: int | str | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """2-d convolution (cross-correlation, as in torch) of (N, C_in, H, W) input with weight
    (C_out, C_in / groups, kh, kw); ``padding`` may be an int, a pair, ``"valid"`` or ``"same"``."""
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: int | str | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """3-d convolution of (N, C_in, D, H, W) input."""
    return _convnd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """Transposed 1-d convolution with weight (C_in, C_out / groups, k)."""
    return _convnd("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation, groups, True,
                   output_padding)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """Transposed 2-d convolution (the gradient of conv2d) with weight (C_in, C_out / groups, kh, kw).

    Output size per dim: ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.
    """
    return _convnd("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation, groups, True,
                   output_padding)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """Transposed 3-d convolution with weight (C_in, C_out / groups, kd, kh, kw)."""
    return _convnd("conv_transpose3d", 3, input, weight, bias, stride, padding, dilation, groups, True,
                   output_padding)
