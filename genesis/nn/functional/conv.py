"""Convolutions (1-d, 2-d, 3-d and transposed) with torch's argument checks, on the ``conv`` backend primitive."""

from __future__ import annotations

import operator
from typing import Sequence

from genesis import amp, dtypes
from genesis import ops as T
from genesis.cuda.graphs import is_current_stream_capturing
from genesis.memo import remember
from genesis.memory_format import is_dense
from genesis.nn.functional._out import check_out
from genesis.nn.functional.padding import pad
from genesis.ops.autocast import cast_parameter, lower_dtype
from genesis.ops.nn import CastConv, Conv
from genesis.tensor import Tensor, arange, zeros


def ntuple(op: str, name: str, value: int | Sequence[int], n: int) -> tuple[int, ...]:
    """``value`` as an n-tuple of ints (an int is repeated), checking the length. As torch's integer-list
    arguments: ints, numpy integers and one-element integer tensors are taken, alone or in a sequence; a bool, a
    float or anything else raises TypeError naming the op and the argument."""
    if value.__class__ is int:
        return (value,) * n
    single = _as_int(value)
    if single is not None:
        return (single,) * n
    if isinstance(value, (bool, float, str)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")
    items = []
    for i, v in enumerate(value):
        item = _as_int(v)
        if item is None:
            raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                            f"{type(v).__name__} at pos {i}")
        items.append(item)
    value = tuple(items)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of {n} values to match "
                           f"the convolution dimensions, but got {name}={list(value)}")
    return value


def _as_int(v: object) -> int | None:
    """``v`` as an int where torch takes it for one (an int, a numpy integer, a one-element integer tensor), else
    None (a bool, a float, a sequence)."""
    if v.__class__ is int:
        return v
    if isinstance(v, (bool, float)) or not hasattr(v, "__index__"):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _same_padding(op: str, w_shape: tuple, stride: tuple, dilation: tuple, n: int) -> tuple[tuple, tuple | None]:
    """Symmetric padding for ``padding="same"``, plus the extra right-side padding when the total is odd."""
    if any(s != 1 for s in stride):
        raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for d, k in zip(dilation, w_shape[2:])]
    sym = tuple(t // 2 for t in total)
    extra = [t - 2 * s for t, s in zip(total, sym)]
    if not any(extra):
        return sym, None
    pads: list[int] = []
    for e in reversed(extra):
        pads += [0, e]
    return sym, tuple(pads)


_PLANS: dict[tuple, tuple] = {}


def _conv_plan(op: str, n: int, x_shape: tuple, w_shape: tuple, b_shape: tuple | None, stride: int | Sequence[int],
               padding: int | str | Sequence[int], dilation: int | Sequence[int], groups: int, transposed: bool,
               output_padding: int | Sequence[int]) -> tuple:
    """(batched, stride, padding, dilation, output_padding, extra right padding or None, out channels) of a
    convolution after torch's argument checks, which raise as torch's; a function of the shapes and arguments
    only, so ``_convnd`` keeps it per call signature."""
    if len(w_shape) != n + 2:
        raise RuntimeError(f"{op}: expected a {n + 2}-D weight, got weight of size {list(w_shape)}")
    if len(x_shape) not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {op}, but got "
                           f"input of size: {list(x_shape)}")
    batched = len(x_shape) == n + 2
    shape = x_shape if batched else (1,) + x_shape
    extra = None
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
            raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str (string padding is not "
                            "supported for transposed convolutions)")
        if padding == "valid":
            padding = (0,) * n
        elif padding == "same":
            padding, extra = _same_padding(op, w_shape, stride, dilation, n)
        else:
            raise RuntimeError(f"{op}: Invalid padding string: {padding!r}, should be one of ['valid', 'same']")
    padding = ntuple(op, "padding", padding, n)
    if any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: negative padding is not supported, got padding={list(padding)}")
    if extra is not None:  # the input as it reaches the kernel, padded on the right (pad's last-dim-first order)
        shape = shape[:2] + tuple(size + e for size, e in zip(shape[2:], reversed(extra[1::2])))
    channels = shape[1]
    if transposed:
        if w_shape[0] != channels:
            raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(w_shape)}, expected input"
                               f"{list(shape)} to have {w_shape[0]} channels, but got {channels} channels "
                               "instead")
        if channels % groups:
            raise RuntimeError(f"{op}: in_channels {channels} must be divisible by groups {groups}")
        for op_, s, d in zip(output_padding, stride, dilation):
            if op_ >= max(s, d):
                raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, got "
                                   f"output_padding={list(output_padding)}, stride={list(stride)}, "
                                   f"dilation={list(dilation)}")
        out_channels = w_shape[1] * groups
    else:
        if w_shape[1] * groups != channels:
            raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(w_shape)}, expected input"
                               f"{list(shape)} to have {w_shape[1] * groups} channels, but got {channels} "
                               "channels instead")
        if w_shape[0] % groups:
            raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
                               f"dimension 0, but got weight of size {list(w_shape)} instead")
        out_channels = w_shape[0]
        padded = [size + 2 * p for size, p in zip(shape[2:], padding)]
        spans = [d * (k - 1) + 1 for d, k in zip(dilation, w_shape[2:])]
        if any(size < span for size, span in zip(padded, spans)):
            raise RuntimeError(f"{op}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                               f"Kernel size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than "
                               "actual input size")
    if b_shape is not None and b_shape != (out_channels,):
        raise RuntimeError(f"{op}: Given weight of size {list(w_shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(b_shape)} instead")
    return batched, stride, padding, dilation, output_padding, extra, out_channels


def _convnd(op: str, n: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: int | Sequence[int],
            padding: int | str | Sequence[int], dilation: int | Sequence[int], groups: int,
            transposed: bool = False, output_padding: int | Sequence[int] = 0, out: Tensor | None = None) -> Tensor:
    lower = lower_dtype(op, input)
    # float32 parameters under autocast: their casts fold into the convolution's node (CastConv).
    fold = False
    if lower is not None and out is None:
        device, wd = input.ndarray.device, weight.ndarray
        fold = wd.dtype is dtypes.float32 and wd.device == device and (bias is None or (
            bias.ndarray.dtype is dtypes.float32 and bias.ndarray.device == device))
    if fold:
        if input.ndarray.dtype is not lower:
            (input,) = amp.autocast_args(op, input)
    else:
        input, weight, bias = amp.autocast_args(op, input, weight, bias)
    shapes = (input.ndarray.shape, weight.ndarray.shape, None if bias is None else bias.ndarray.shape)
    key = (op, n, *shapes, stride, padding, dilation, groups, transposed, output_padding)
    try:
        plan = _PLANS.get(key)
    except TypeError:  # list arguments: checked at every call
        plan, key = None, None
    if plan is None:
        plan = _conv_plan(op, n, *shapes, stride, padding, dilation, groups, transposed, output_padding)
        if key is not None:
            remember(_PLANS, key, plan)
    batched, stride, padding, dilation, output_padding, extra, out_channels = plan
    x = input if batched else input.unsqueeze(0)
    if extra is not None:
        x = pad(x, extra)
    if x.ndarray.dtype is not (lower if fold else weight.ndarray.dtype):
        raise RuntimeError(f"{op}: Input type ({x.dtype}) and weight type ({weight.dtype}) should be the same")
    if out is not None:
        return _conv_into(op, out, x, weight, bias, batched, stride, padding, dilation, groups, transposed,
                          output_padding, out_channels)
    conv = dict(stride=stride, padding=padding, dilation=dilation, groups=groups, transposed=transposed,
                output_padding=output_padding)
    if fold:
        result = CastConv.apply(x, weight, bias, w_low=cast_parameter(weight, lower),
                                b_low=None if bias is None else cast_parameter(bias, lower), **conv)
    else:
        result = Conv.apply(x, weight, bias, **conv)
    return result if batched else result.squeeze(0)


def _conv_into(op: str, out: Tensor, x: Tensor, weight: Tensor, bias: Tensor | None, batched: bool, stride: tuple,
               padding: tuple, dilation: tuple, groups: int, transposed: bool, output_padding: tuple,
               out_channels: int) -> Tensor:
    """The convolution written into ``out`` (inference only): on cuda cuDNN writes straight into it when it is laid
    out as the result would be (row-major, or channels_last for channels_last operands), else the result is
    copied in."""
    if transposed:
        size = [(s - 1) * st - 2 * p + d * (k - 1) + o + 1 for s, st, p, d, k, o in
                zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], output_padding)]
    else:
        size = [(s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, st, p, d in
                zip(x.shape[2:], weight.shape[2:], stride, padding, dilation)]
    shape = ((x.shape[0],) if batched else ()) + (out_channels, *size)
    check_out(op, out, shape, x, (weight, bias))
    if out.device != x.device:
        raise RuntimeError(f"{op}: out is on {out.device} but the input is on {x.device}")
    if not is_dense(tuple(out.shape), out.stride()):
        raise RuntimeError(f"{op}: out must be dense (contiguous or channels_last), got strides {out.stride()}")
    target = out if batched else out.unsqueeze(0)
    x.ndarray.backend.conv(x.ndarray, weight.ndarray, bias.ndarray if bias is not None else None, stride, padding,
                           dilation, groups, transposed, output_padding, target.ndarray)
    out._bump_version()
    return out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: int | str | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1, *,
           out: Tensor | None = None) -> Tensor:
    """1-d convolution of (N, C_in, L) input with weight (C_out, C_in / groups, k); ``out=`` writes the result into
    a preallocated dense tensor (inference only, no autograd)."""
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups, out=out)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: int | str | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1, *,
           out: Tensor | None = None) -> Tensor:
    """2-d convolution (cross-correlation, as in torch) of (N, C_in, H, W) input with weight
    (C_out, C_in / groups, kh, kw); ``padding`` may be an int, a pair, ``"valid"`` or ``"same"``. ``out=`` writes
    the result into a preallocated dense tensor (inference only, no autograd)."""
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups, out=out)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
           padding: int | str | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1, *,
           out: Tensor | None = None) -> Tensor:
    """3-d convolution of (N, C_in, D, H, W) input; ``out=`` as :func:`conv2d`'s."""
    return _convnd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups, out=out)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1, *, out: Tensor | None = None) -> Tensor:
    """Transposed 1-d convolution with weight (C_in, C_out / groups, k); ``out=`` as :func:`conv2d`'s."""
    return _convnd("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation, groups, True,
                   output_padding, out=out)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1, *, out: Tensor | None = None) -> Tensor:
    """Transposed 2-d convolution (the gradient of conv2d) with weight (C_in, C_out / groups, kh, kw).

    Output size per dim: ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``. ``out=``
    as :func:`conv2d`'s.
    """
    return _convnd("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation, groups, True,
                   output_padding, out=out)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int | Sequence[int] = 1,
                     padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1, *, out: Tensor | None = None) -> Tensor:
    """Transposed 3-d convolution with weight (C_in, C_out / groups, kd, kh, kw); ``out=`` as :func:`conv2d`'s."""
    return _convnd("conv_transpose3d", 3, input, weight, bias, stride, padding, dilation, groups, True,
                   output_padding, out=out)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-d convolution over time-first input (fairseq's ConvTBC): ``input`` (T, B, C_in), ``weight``
    (k, C_in, C_out), ``bias`` (C_out), ``pad`` zero steps on both sides; returns (T + 2 * pad - k + 1, B, C_out).
    It is :func:`conv1d` on the batch-first layout."""
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    steps = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if steps < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {steps}: "
                           f"[{steps}, {input.shape[1]}, {weight.shape[2]}]")
    if steps == 0:
        return (input[:0].unsqueeze(-1) * weight[0]).sum(2) + bias  # no steps: (0, B, C_out), on the graph
    if pad < 0:  # a negative pad drops steps at both ends
        input, pad = input[-pad:input.shape[0] + pad], 0
    # (T, B, C_in) -> (B, C_in, T); (k, C_in, C_out) -> (C_out, C_in, k)
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)  # (T', B, C_out)


# ------------------------------------------------------------------ sliding windows (fold / unfold)


def _pair(v: int | Sequence[int], n: int = 2) -> tuple[int, ...]:
    single = _as_int(v)
    if single is not None:
        return (single,) * n
    v = tuple(int(i) for i in v)
    return v * n if len(v) == 1 else v


# (h, w, kernel, dilation, stride, device) -> the window index: built once per layout (read-only: gathered and
# scattered with, never written).
_WINDOWS: dict[tuple, Tensor] = {}


def _window_index(h: int, w: int, kernel: tuple[int, int], dilation: tuple[int, int], stride: tuple[int, int],
                  device: object) -> tuple[Tensor, int, int]:
    """Flat (h * w) positions of every (ki, kj, i, j) kernel tap, shape (kh * kw * oh * ow,), and (oh, ow)."""
    (kh, kw), (dh, dw), (sh, sw) = kernel, dilation, stride
    oh = (h - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w - (dw * (kw - 1) + 1)) // sw + 1
    key = (h, w, kernel, dilation, stride, device)
    index = _WINDOWS.get(key)
    if index is None:
        ki = arange(kh, device=device).reshape(kh, 1, 1, 1)
        kj = arange(kw, device=device).reshape(1, kw, 1, 1)
        i = arange(oh, device=device).reshape(1, 1, oh, 1)
        j = arange(ow, device=device).reshape(1, 1, 1, ow)
        index = ((i * sh + ki * dh) * w + (j * sw + kj * dw)).reshape(-1)
        if not is_current_stream_capturing():  # made inside a capture, its values exist only in the replays
            remember(_WINDOWS, key, index, 256)
    return index, oh, ow


def _check_window_args(op: str, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> None:
    if min(stride) <= 0 or min(dilation) <= 0 or min(kernel) <= 0 or min(padding) < 0:
        raise RuntimeError(f"{op}: kernel_size, dilation and stride must be positive and padding non-negative, got "
                           f"kernel_size={kernel}, dilation={dilation}, padding={padding}, stride={stride}")


def _check_window_dtype(kernel: str, input: Tensor) -> None:
    """torch's im2col and col2im take floating-point, complex and bool tensors, not integers."""
    if input.dtype.category == 1:
        name = dtypes.SCALAR_TYPE_NAMES.get(input.dtype, input.dtype.name)
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')


def unfold(input: Tensor, kernel_size: int | Sequence[int], dilation: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, stride: int | Sequence[int] = 1) -> Tensor:
    """im2col: sliding (kh, kw) blocks of (N, C, H, W) input as columns of shape (N, C * kh * kw, L)."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"unfold: expected 3D or 4D (batch mode) tensor for input, got {input.ndim}D")
    _check_window_dtype("im2col_out_cpu", input)
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    kernel, dil, pads, strides = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    _check_window_args("unfold", kernel, dil, pads, strides)
    if pads[0] or pads[1]:
        x = pad(x, (pads[1], pads[1], pads[0], pads[0]))
    n, c, h, w = x.shape
    if h < dil[0] * (kernel[0] - 1) + 1 or w < dil[1] * (kernel[1] - 1) + 1:
        raise RuntimeError(f"unfold: the padded input of size {(h, w)} is smaller than the dilated kernel")
    index, oh, ow = _window_index(h, w, kernel, dil, strides, input.device)
    # One gather over the flattened plane; its backward scatter-adds overlapping windows.
    cols = T.index_select(x.reshape(n, c, h * w), 2, index).reshape(n, c * kernel[0] * kernel[1], oh * ow)
    return cols if batched else cols.squeeze(0)


def fold(input: Tensor, output_size: int | Sequence[int], kernel_size: int | Sequence[int],
         dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
         stride: int | Sequence[int] = 1) -> Tensor:
    """col2im, the adjoint of ``unfold``: sums the (N, C * kh * kw, L) columns back into (N, C, H, W)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"fold: expected 2D or 3D (batch mode) tensor for input, got {input.ndim}D")
    _check_window_dtype("col2im_out_cpu", input)
    batched = input.ndim == 3
    cols = input if batched else input.unsqueeze(0)
    (oh_img, ow_img), (kh, kw) = _pair(output_size), _pair(kernel_size)
    (dh, dw), (ph, pw), (sh, sw) = _pair(dilation), _pair(padding), _pair(stride)
    n, ckk, blocks = cols.shape
    if ckk % (kh * kw):
        raise RuntimeError(f"fold: expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={ckk} and kernel_size={(kh, kw)}")
    c = ckk // (kh * kw)
    hp, wp = oh_img + 2 * ph, ow_img + 2 * pw
    dest, oh, ow = _window_index(hp, wp, (kh, kw), (dh, dw), (sh, sw), input.device)
    if oh * ow != blocks:
        raise RuntimeError(f"fold: expected input's dimension 2 to match the calculated number of sliding blocks "
                           f"{oh} * {ow} = {oh * ow}, but got input.size(2)={blocks}")
    src = cols.reshape(n, c, kh * kw * blocks)
    index = dest.reshape(1, 1, -1).expand(n, c, dest.shape[0])
    out = zeros((n, c, hp * wp), dtype=input.dtype, device=input.device).scatter_add(2, index, src)
    out = out.reshape(n, c, hp, wp)[:, :, ph:ph + oh_img, pw:pw + ow_img]
    return out if batched else out.squeeze(0)
