"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d with torch's parameters and initialization, and
the sliding-window layers Fold and Unfold."""

from __future__ import annotations

import math
from typing import Any, Sequence

from genesis.nn import functional as F
from genesis.nn import init
from genesis.nn.functional.conv import ntuple
from genesis.nn.modules.lazy import _LazyMixin
from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor, empty


class _ConvNd(Module):
    """Shared state: weight (out, in / groups, *k) — (in, out / groups, *k) when transposed — and bias.

    Initialization as torch: kaiming_uniform(a=sqrt(5)) for the weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for
    the bias.
    """

    _n = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
                 dilation: int | Sequence[int] = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None, *, output_padding: int | Sequence[int] = 0) -> None:
        super().__init__()
        name = type(self).__name__
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, n)
        self.stride = ntuple(name, "stride", stride, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = ntuple(name, "padding", padding, n)
        self.dilation = ntuple(name, "dilation", dilation, n)
        self.transposed = self._transposed
        self.output_padding = ntuple(name, "output_padding", output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * n
            if padding == "same":
                for d, k, i in zip(self.dilation, self.kernel_size, range(n - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in range(2)]
        if self.transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self._n
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _conv = staticmethod(F.conv2d)

    def forward(self, input: Tensor) -> Tensor:
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return self._conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) input; weight (C_out, C_in / groups, k)."""

    _n = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W) input; weight (C_out, C_in / groups, kh, kw).

    ``padding`` may be an int, a pair, ``"valid"`` or ``"same"``; ``padding_mode`` zeros/reflect/replicate/circular.
    """

    _n = 2
    _conv = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W) input."""

    _n = 3
    _conv = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _conv = staticmethod(F.conv_transpose2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                 output_padding: int | Sequence[int] = 0, groups: int = 1, bias: bool = True,
                 dilation: int | Sequence[int] = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding=output_padding)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """The output_padding that produces ``output_size`` (torch's rule), or the configured one."""
        if output_size is None:
            return self.output_padding
        n = self._n
        output_size = tuple(output_size)[-n:]
        result = []
        for d in range(n):
            size = input.shape[input.ndim - n + d]
            min_size = ((size - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] *
                        (self.kernel_size[d] - 1) + 1)
            max_size = min_size + self.stride[d] - 1
            if not min_size <= output_size[d] <= max_size:
                raise ValueError(f"requested an output size of {list(output_size)}, but valid sizes range from "
                                 f"{min_size} to {max_size} (for an input of {list(input.shape[2:])})")
            result.append(output_size[d] - min_size)
        return tuple(result)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return self._conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                          self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-d convolution; weight (C_in, C_out / groups, k)."""

    _n = 1
    _conv = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-d convolution (a.k.a. deconvolution); weight (C_in, C_out / groups, kh, kw).

    ``forward(input, output_size=None)``: ``output_size`` picks the output_padding that gives that size.
    """

    _n = 2
    _conv = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-d convolution; weight (C_in, C_out / groups, kd, kh, kw)."""

    _n = 3
    _conv = staticmethod(F.conv_transpose3d)


# ------------------------------------------------------------------ sliding windows


class Fold(Module):
    """col2im: sums (N, C * prod(kernel_size), L) sliding-block columns into (N, C, *output_size)."""

    def __init__(self, output_size: int | Sequence[int], kernel_size: int | Sequence[int],
                 dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                 stride: int | Sequence[int] = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """im2col: sliding blocks of (N, C, H, W) input as columns (N, C * prod(kernel_size), L)."""

    def __init__(self, kernel_size: int | Sequence[int], dilation: int | Sequence[int] = 1,
                 padding: int | Sequence[int] = 0, stride: int | Sequence[int] = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class _LazyConvNd(_LazyMixin, _ConvNd):
    def __init__(self, out_channels: int, kernel_size: int | Sequence[int], stride: int | Sequence[int] = 1,
                 padding: int | str | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        _ConvNd.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         device, dtype)
        self._placeholders(("weight", "bias") if bias else ("weight",), (), device, dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            _ConvNd.reset_parameters(self)

    def _shapes(self, size: int) -> dict[str, tuple[int, ...]]:
        if size % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        self.in_channels = size
        if self.transposed:
            shapes = {"weight": (size, self.out_channels // self.groups, *self.kernel_size)}
        else:
            shapes = {"weight": (self.out_channels, size // self.groups, *self.kernel_size)}
        if "bias" in self._lazy_names:
            shapes["bias"] = (self.out_channels,)
        return shapes

    def _size_from_checkpoint(self, name: str, shape: tuple[int, ...]) -> int | None:
        if name != "weight":
            return None
        return shape[0] if self.transposed else shape[1] * self.groups

    def _materialize_from(self, input: Tensor) -> None:
        """On the first call, the parameters' shapes from the input's channels (dim 1, or 0 when unbatched)."""
        if self.has_uninitialized_params():
            n = self._n
            if input.ndim not in (n + 1, n + 2):
                raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                                   f"{type(self).__name__}, but got input of size: {list(input.shape)}")
            self._materialize(input.shape[1] if input.ndim == n + 2 else input.shape[0])

    def forward(self, input: Tensor) -> Tensor:
        self._materialize_from(input)
        return type(self).forward(self, input)


class LazyConv1d(_LazyConvNd, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is taken from the first input (``input.shape[-2]``)."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is taken from the first input (``input.shape[-3]``)."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is taken from the first input (``input.shape[-4]``)."""

    cls_to_become = Conv3d


class _LazyConvTransposeNd(_LazyConvNd, _ConvTranspose):
    def __init__(self, out_channels: int, kernel_size: int | Sequence[int], stride: int | Sequence[int] = 1,
                 padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0, groups: int = 1,
                 bias: bool = True, dilation: int | Sequence[int] = 1, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        _ConvTranspose.__init__(self, 0, out_channels, kernel_size, stride, padding, output_padding, groups, False,
                                dilation, padding_mode, device, dtype)
        self._placeholders(("weight", "bias") if bias else ("weight",), (), device, dtype)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        self._materialize_from(input)
        return type(self).forward(self, input, output_size)


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` is taken from the first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` is taken from the first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` is taken from the first input."""

    cls_to_become = ConvTranspose3d
