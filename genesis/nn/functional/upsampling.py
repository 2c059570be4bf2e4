"""Resampling: ``interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area) and torch's
deprecated ``upsample`` aliases."""

from __future__ import annotations

import math
from typing import Sequence

from genesis import ops as T
from genesis.nn.functional.pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from genesis.ops.nn import Upsample
from genesis.tensor import Tensor, arange


def _source_index(out_size: int, in_size: int, scale: float | None, align_corners: bool | None,
                  mode: str, device: object) -> Tensor:
    """Fractional source coordinate of every output position along one dim (torch's conventions)."""
    dst = arange(out_size, device=device).double()
    if mode in ("nearest", "nearest-exact"):
        ratio = 1.0 / scale if scale is not None else in_size / out_size
        src = (dst + 0.5) * ratio - 0.5 if mode == "nearest-exact" else dst * ratio
        return T.clamp(T.floor(src + (0.5 if mode == "nearest-exact" else 0.0)), max=in_size - 1)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return dst * ratio
    ratio = 1.0 / scale if scale is not None else in_size / out_size
    src = (dst + 0.5) * ratio - 0.5
    return src if mode == "bicubic" else T.clamp(src, min=0.0)  # cubic convolution reads past 0 (clamped taps)


_CUBIC_A = -0.75  # torch's (and OpenCV's) cubic convolution parameter


def _cubic(x: Tensor, dim: int, src: Tensor, in_size: int) -> Tensor:
    """``x`` resampled along ``dim`` at the fractional positions ``src`` by cubic convolution over four taps (the
    indices clamped to the input, as torch's ``upsample_bicubic2d``)."""
    base = T.floor(src)
    t = src - base
    a = _CUBIC_A

    def near(v: Tensor) -> Tensor:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Tensor) -> Tensor:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    shape = [1] * x.ndim
    shape[dim] = src.shape[0]
    out = None
    for k, w in enumerate(weights):
        index = T.clamp(base + (k - 1), min=0, max=in_size - 1).long()
        term = T.index_select(x, dim, index) * w.to(x.dtype).reshape(shape)
        out = term if out is None else out + term
    return out


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) input.

    Modes: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (1-d), ``"bilinear"`` (2-d), ``"bicubic"`` (2-d:
    torch's cubic convolution with ``A = -0.75``, borders clamped), ``"trilinear"`` (3-d), and ``"area"`` (adaptive
    average pooling to the output size); the interpolating modes work one dim at a time (they are separable), with
    torch's ``align_corners`` rule.
    """
    n = input.ndim - 2
    if n < 1:
        raise ValueError(f"interpolate: expected at least 3-D input (N, C, *spatial), got {input.ndim}-D")
    linear_modes = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in linear_modes and linear_modes[mode] != n:
        raise NotImplementedError(f"interpolate: mode {mode!r} needs {linear_modes[mode] + 2}-D input, got "
                                  f"{input.ndim}-D")
    if mode not in linear_modes and mode not in ("nearest", "nearest-exact", "area"):
        raise NotImplementedError(f"interpolate: unsupported mode {mode!r}")
    if align_corners is not None and mode not in linear_modes:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias is not supported")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    in_sizes = input.shape[2:]
    if size is not None:
        out_sizes = (size,) * n if isinstance(size, int) else tuple(int(s) for s in size)
        scales: tuple = (None,) * n
    else:
        factors = (scale_factor,) * n if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        out_sizes = tuple(int(math.floor(s * f)) for s, f in zip(in_sizes, factors))
        scales = (None,) * n if recompute_scale_factor else tuple(float(f) for f in factors)
    if len(out_sizes) != n:
        raise ValueError(f"interpolate: expected {n} output sizes, got {list(out_sizes)}")
    if min(in_sizes) <= 0 or min(out_sizes) <= 0:
        names = ("D", "H", "W")[-n:]
        raise RuntimeError("Input and output sizes should be greater than 0, but got input ("
                           + ", ".join(f"{k}: {v}" for k, v in zip(names, in_sizes)) + ") output ("
                           + ", ".join(f"{k}: {v}" for k, v in zip(names, out_sizes)) + ")")
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[n - 1](input, out_sizes)
    if n <= 2 and mode not in ("trilinear", "bicubic") and input.dtype.is_floating_point:
        # One resampling kernel each way (1-d runs as 2-d over a height of one).
        kernel_mode = "bilinear" if mode in linear_modes else mode
        x = input if n == 2 else input.unsqueeze(2)
        sizes = tuple(out_sizes) if n == 2 else (1, out_sizes[0])
        factors = tuple(scales) if n == 2 else (None, scales[0])
        out = Upsample.apply(x, output_size=sizes, mode=kernel_mode,
                             align_corners=bool(align_corners) if kernel_mode == "bilinear" else None, scales=factors)
        return out if n == 2 else out.squeeze(2)
    out = input
    for axis, (in_size, out_size, scale) in enumerate(zip(in_sizes, out_sizes, scales)):
        dim = 2 + axis
        if in_size == out_size and scale in (None, 1.0):
            continue
        src = _source_index(out_size, in_size, scale, align_corners, mode, input.device)
        if mode in ("nearest", "nearest-exact"):
            out = T.index_select(out, dim, src.long())
            continue
        if mode == "bicubic":
            out = _cubic(out, dim, src, in_size)
            continue
        lo = T.clamp(T.floor(src), max=in_size - 1).long()
        hi = T.clamp(lo + 1, max=in_size - 1)
        shape = [1] * out.ndim
        shape[dim] = out_size
        frac = (src - lo.double()).to(out.dtype).reshape(shape)
        out = T.index_select(out, dim, lo) * (1 - frac) + T.index_select(out, dim, hi) * frac
    return out


def upsample(input: Tensor, size: int | Sequence[int] | None = None,
             scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated torch alias of ``interpolate``."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: int | Sequence[int] | None = None,
                     scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """Deprecated torch alias of ``interpolate(mode="nearest")``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: int | Sequence[int] | None = None,
                      scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """Deprecated torch alias of ``interpolate(mode="bilinear", align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
