"""Upsampling layers: ``Upsample`` (any ``F.interpolate`` mode) and the fixed-mode 2-d upsamplers."""

from __future__ import annotations

from typing import Sequence

from genesis.nn import functional as F
from genesis.nn.modules.module import Module
from genesis.tensor import Tensor


class Upsample(Module):
    """Resize with ``F.interpolate``: modes nearest, nearest-exact, linear, bilinear, bicubic, trilinear and area."""

    def __init__(self, size: int | Sequence[int] | None = None, scale_factor: float | Sequence[float] | None = None,
                 mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):  # torch keeps every factor as a float (its repr prints 1.0, not 1)
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling (torch's legacy module)."""
    def __init__(self, size: int | Sequence[int] | None = None,
                 scale_factor: float | Sequence[float] | None = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with ``align_corners=True`` (torch's legacy module)."""
    def __init__(self, size: int | Sequence[int] | None = None,
                 scale_factor: float | Sequence[float] | None = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
