"""Pooling layers: MaxPool, AvgPool, adaptive average and max pooling, power-average (LP) pooling and max
unpooling, in 1, 2 and 3 dims, and fractional max pooling in 2 and 3 dims."""

from __future__ import annotations

from typing import Sequence

from genesis.nn import functional as F
from genesis.nn.functional.conv import ntuple
from genesis.nn.modules.module import Module
from genesis.nn.modules.utils import _ntuple
from genesis.tensor import Tensor


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                 padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling (``F.max_pool1d``)."""
    def forward(self, input: Tensor) -> Tensor:
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Maximum over sliding windows of (N, C, H, W) input (stride defaults to the kernel size)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling (``F.max_pool3d``)."""
    def forward(self, input: Tensor) -> Tensor:
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class _AvgPoolNd(Module):
    def __init__(self, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                 padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling (``F.avg_pool1d``)."""

    def __init__(self, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                 padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        # torch keeps this layer's sizes as 1-tuples (its repr prints ``kernel_size=(2,)``)
        single = _ntuple(1)
        super().__init__(single(kernel_size), single(stride if stride is not None else kernel_size), single(padding),
                         ceil_mode, count_include_pad)

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, H, W) input (stride defaults to the kernel size)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling (``F.avg_pool3d``)."""
    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


# ------------------------------------------------------------------ adaptive pooling


class _AdaptivePool(Module):
    def __init__(self, output_size: int | None | Sequence[int | None]) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average pooling over a 1-D input to a fixed output length (``F.adaptive_avg_pool1d``)."""
    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average pooling to a fixed output size (``None`` keeps that input dim)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Average pooling of (N, C, D, H, W) input to a fixed size."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size: int | None | Sequence[int | None], return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Max pooling of (N, C, L) input to a fixed length (``return_indices`` also gives the argmax positions)."""

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Max pooling over a 2-D input to a fixed output size (``F.adaptive_max_pool2d``)."""
    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """Max pooling of (N, C, D, H, W) input to a fixed size."""

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


# ------------------------------------------------------------------ power-average pooling


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum over each window of x^p)^(1/p)`` of (N, C, L) input."""

    def forward(self, input: Tensor) -> Tensor:
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling ``(sum over each window of x^p)^(1/p)`` of (N, C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Power-average pooling ``(sum over each window of x^p)^(1/p)`` of (N, C, D, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        return F.lp_pool3d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


# ------------------------------------------------------------------ max unpooling


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(self, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                 padding: int | Sequence[int] = 0) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, self._n)
        self.stride = ntuple(name, "stride", stride if stride is not None else kernel_size, self._n)
        self.padding = ntuple(name, "padding", padding, self._n)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of ``MaxPool1d``: values back at their argmax positions, zeros elsewhere."""

    _n = 1

    def forward(self, input: Tensor, indices: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of ``MaxPool2d``: values back at their argmax positions, zeros elsewhere."""

    _n = 2

    def forward(self, input: Tensor, indices: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of ``MaxPool3d``: values back at their argmax positions, zeros elsewhere."""

    _n = 3

    def forward(self, input: Tensor, indices: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class _FractionalMaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size: int | Sequence[int], output_size: int | Sequence[int] | None = None,
                 output_ratio: float | Sequence[float] | None = None, return_indices: bool = False,
                 _random_samples: Tensor | None = None) -> None:
        super().__init__()
        name, n = type(self).__name__, self._n
        self.kernel_size = _ntuple(n)(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(n)(output_size) if output_size is not None else None
        self.output_ratio = _ntuple(n)(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, H, W) input to ``output_size`` or ``output_ratio`` of its size
    (``F.fractional_max_pool2d``; Graham, "Fractional Max-Pooling", 2014)."""

    _n = 2

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, T, H, W) input (``F.fractional_max_pool3d``)."""

    _n = 3

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)
