"""Resampling: ``interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area; antialiased
bilinear and bicubic) and torch's deprecated ``upsample`` aliases."""

from __future__ import annotations

import math
from typing import Sequence

from genesis import dtypes
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


def _keys_near(v: Tensor, a: float) -> Tensor:
    """Keys' cubic convolution kernel for |v| <= 1."""
    return ((a + 2) * v - (a + 3)) * v * v + 1


def _keys_far(v: Tensor, a: float) -> Tensor:
    """Keys' cubic convolution kernel for 1 < |v| < 2."""
    return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a


def cubic_convolution_weights(t: Tensor, a: float = _CUBIC_A) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The weights of the four taps at offsets -1, 0, 1, 2 from ``floor(x)`` of cubic convolution at ``x``, for the
    fraction ``t = x - floor(x)`` (Keys 1981, parameter ``a``; torch's ``get_cubic_upsample_coefficients``)."""
    return _keys_far(t + 1, a), _keys_near(t, a), _keys_near(1 - t, a), _keys_far(2 - t, a)


def _cubic(x: Tensor, dim: int, src: Tensor, in_size: int) -> Tensor:
    """``x`` resampled along ``dim`` at the fractional positions ``src`` by cubic convolution over four taps (the
    indices clamped to the input, as torch's ``upsample_bicubic2d``)."""
    base = T.floor(src)
    shape = [1] * x.ndim
    shape[dim] = src.shape[0]
    out = None
    for k, w in enumerate(cubic_convolution_weights(src - base)):
        index = T.clamp(base + (k - 1), min=0, max=in_size - 1).long()
        term = T.index_select(x, dim, index) * w.to(x.dtype).reshape(shape)
        out = term if out is None else out + term
    return out


_AA_WIDTH = {"bilinear": 2, "bicubic": 4}  # the filters' widths in input pixels at scale 1 (torch's interp_size)


def _aa_filter(x: Tensor, mode: str) -> Tensor:
    """torch's (Pillow's) antialiasing filters: the triangle for bilinear, Keys' cubic with ``a = -0.5`` for
    bicubic (not the ``-0.75`` of plain bicubic)."""
    x = x.abs()
    if mode == "bilinear":
        return T.clamp(1.0 - x, min=0.0)
    return T.where(x < 1.0, _keys_near(x, -0.5), T.where(x < 2.0, _keys_far(x, -0.5), 0.0))


def _aa_weights(in_size: int, out_size: int, scale: float | None, align_corners: bool, mode: str,
                device: object) -> Tensor:
    """The (out_size, in_size) float64 matrix of torch's antialiased resampling along one dim
    (``_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa``, ``_compute_indices_min_size_weights_aa``).

    Output pixel ``i`` has its centre at ``ratio * (i + 0.5)`` in input pixels; it averages the input pixels within
    ``support`` of it, weighted by the filter stretched by ``ratio`` when downsampling (that is the antialiasing) and
    normalized to sum 1 (so borders renormalize instead of clamping). ``align_corners`` only changes ``ratio``."""
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else in_size / out_size
    stretch = max(ratio, 1.0)
    support = _AA_WIDTH[mode] / 2 * stretch
    most = math.ceil(support) * 2 + 1  # torch's max_interp_size: the taps it keeps at the most
    centre = (arange(out_size, device=device).double().reshape(-1, 1) + 0.5) * ratio  # (out, 1)
    first = T.clamp(T.floor(centre - support + 0.5), min=0.0)
    end = T.minimum(T.clamp(T.floor(centre + support + 0.5), max=float(in_size)), first + most)
    pixels = arange(in_size, device=device).double().reshape(1, -1)  # (1, in)
    weights = _aa_filter((pixels - centre + 0.5) / stretch, mode) * ((pixels >= first) & (pixels < end))
    total = weights.sum(-1, keepdim=True)
    return weights / T.where(total == 0, 1.0, total)  # (out, in)


def _antialiased(input: Tensor, out_sizes: tuple, scales: tuple, align_corners: bool, mode: str) -> Tensor:
    """(N, C, H, W) input resized by torch's separable antialiased filters: one product with a weight matrix along
    W, one along H (a dim whose size stays is left as it is, as torch's). Half-precision input is computed in
    float32 and rounded once."""
    x = input if input.dtype in (dtypes.float32, dtypes.float64) else input.float()
    (h, w), (out_h, out_w) = input.shape[2:], out_sizes
    if out_w != w:
        x = T.matmul(x, _aa_weights(w, out_w, scales[1], align_corners, mode, input.device).to(x.dtype).mT)
    if out_h != h:
        x = T.matmul(_aa_weights(h, out_h, scales[0], align_corners, mode, input.device).to(x.dtype), x)
    return input.clone() if x is input else x.to(input.dtype)


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) input.

    Modes: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (1-d), ``"bilinear"`` (2-d), ``"bicubic"`` (2-d:
    torch's cubic convolution with ``A = -0.75``, borders clamped), ``"trilinear"`` (3-d), and ``"area"`` (adaptive
    average pooling to the output size); the interpolating modes work one dim at a time (they are separable), with
    torch's ``align_corners`` rule.

    ``antialias=True`` (bilinear and bicubic on 4-D floating-point input, as torch's): torch's (Pillow's) separable
    filters, a triangle or Keys' cubic with ``a = -0.5``, widened by the scale when downsampling so that every input
    pixel contributes, and normalized per output pixel; computed as one product with an (out, in) weight matrix per
    dim. Upsampling with it equals plain bilinear (``align_corners=False``) but not plain bicubic.
    """
    n = input.ndim - 2
    if n < 1:
        raise ValueError(f"interpolate: expected at least 3-D input (N, C, *spatial), got {input.ndim}-D")
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError(f"interpolate: the anti-alias option is restricted to bilinear and bicubic modes and requires "
                         f"a 4-D tensor as input, got mode {mode!r} and {input.ndim}-D input")
    if antialias and not input.dtype.is_floating_point:
        raise NotImplementedError(f"interpolate: antialias needs floating-point input, got {input.dtype}")
    linear_modes = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in linear_modes and linear_modes[mode] != n:
        raise NotImplementedError(f"interpolate: mode {mode!r} needs {linear_modes[mode] + 2}-D input, got "
                                  f"{input.ndim}-D")
    if mode not in linear_modes and mode not in ("nearest", "nearest-exact", "area"):
        raise NotImplementedError(f"interpolate: unsupported mode {mode!r}")
    if align_corners is not None and mode not in linear_modes:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
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
    if antialias:
        return _antialiased(input, out_sizes, scales, bool(align_corners), mode)
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
