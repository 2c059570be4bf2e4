"""Resampling: ``interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area; antialiased
bilinear, bicubic and lanczos; uint8 images as torch's CPU kernels compute them) and torch's deprecated ``upsample``
aliases."""

from __future__ import annotations

import math
import struct
from functools import lru_cache
from typing import Sequence

from genesis import dtypes
from genesis import ops as T
from genesis.memory_format import channels_last, channels_last_3d
from genesis.nn.functional.pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from genesis.ops._args import keep_memory_format
from genesis.ops.nn import Upsample
from genesis.tensor import Tensor, arange, tensor

_UINT8_MODES = ("nearest", "nearest-exact", "bilinear", "bicubic", "lanczos")  # the modes torch takes uint8 in
_NEAREST_AREA = ("nearest", "nearest-exact", "area")  # the modes without align_corners


def _ratio(in_size: int, out_size: int, scale: float | None, align_corners: bool | None) -> float:
    """Input pixels per output pixel along one dim (torch's ``area_pixel_compute_scale``, in float64)."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _source_index(out_size: int, in_size: int, scale: float | None, align_corners: bool | None,
                  mode: str, device: object) -> Tensor:
    """Fractional source coordinate of every output position along one dim for the linear and cubic modes
    (torch's conventions)."""
    dst = arange(out_size, device=device).double()
    ratio = _ratio(in_size, out_size, scale, align_corners)
    if align_corners:
        return dst * ratio
    src = (dst + 0.5) * ratio - 0.5
    return src if mode == "bicubic" else T.clamp(src, min=0.0)  # cubic convolution reads past 0 (clamped taps)


def _f32(x: float) -> float:
    """``x`` rounded to float32 (torch computes nearest source indices in single precision)."""
    return struct.unpack("f", struct.pack("f", x))[0]


@lru_cache(maxsize=256)
def _nearest_index(in_size: int, out_size: int, scale: float | None, exact: bool, channels_last_kernel: bool,
                   double: bool) -> tuple[int, ...]:
    """The source index of every output position along one dim for ``"nearest"`` (``exact``: ``"nearest-exact"``),
    with the arithmetic of the torch CPU kernel that resizes this input, so that the indices agree where a product
    lands next to an integer. Its channels-last kernel (``channels_last_kernel``) computes ``floor(i * ratio)`` /
    ``floor((i + 0.5) * ratio)`` with a float32 ratio and copies a dim that keeps its size or doubles (nearest);
    its generic kernel computes ``floor(ratio * i)`` / ``floor(max(ratio * (i + 0.5) - 0.5, 0) + 0.5)`` in float32
    (float64 for ``double`` input), rounding to float32 before the floor (``floorf``)."""
    if channels_last_kernel and not exact and out_size in (in_size, 2 * in_size):
        return tuple(i * in_size // out_size for i in range(out_size))  # i, or i // 2
    rnd = float if double and not channels_last_kernel else _f32  # the precision of the kernel's arithmetic
    ratio = rnd(1.0 / scale) if scale is not None and scale > 0 else rnd(rnd(float(in_size)) / out_size)
    sources = []
    for i in range(out_size):
        if channels_last_kernel:
            src = (i + 0.5) * ratio if exact else i * ratio  # (i + 0.5) * ratio: in float64, then floorf
        elif exact:
            src = rnd(max(rnd(rnd(ratio * (i + 0.5)) - 0.5), 0.0) + 0.5)
        else:
            src = rnd(ratio * i)
        sources.append(min(math.floor(_f32(src)), in_size - 1))
    return tuple(sources)


def _torch_uses_channels_last_kernel(input: Tensor, out_sizes: tuple) -> bool:
    """Whether torch's CPU nearest kernel for this input and output is its channels-last one
    (``_use_vectorized_kernel_cond_2d`` / ``_3d``): channels-last input of more than 3 channels, or a 2-d output
    with ``OH + OW <= 128``."""
    fmt = {4: channels_last, 5: channels_last_3d}.get(input.ndim)
    if fmt is None:
        return False
    small = input.ndim == 4 and sum(out_sizes) <= 128
    return small or (input.shape[1] > 3 and input.is_contiguous(memory_format=fmt))


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


# the filters' widths in input pixels at scale 1 (torch's interp_size)
_AA_WIDTH = {"bilinear": 2, "bicubic": 4, "lanczos": 6}
_LANCZOS_A = 3  # the lobes of torch's (Pillow's) Lanczos window


def _aa_filter(x: Tensor, mode: str) -> Tensor:
    """torch's (Pillow's) antialiasing filters: the triangle for bilinear, Keys' cubic with ``a = -0.5`` for
    bicubic (not the ``-0.75`` of plain bicubic), and ``sinc(x) * sinc(x / 3)`` on ``|x| < 3`` for lanczos."""
    x = x.abs()
    if mode == "bilinear":
        return T.clamp(1.0 - x, min=0.0)
    if mode == "lanczos":
        return T.where(x < _LANCZOS_A, T.sinc(x) * T.sinc(x / _LANCZOS_A), 0.0)
    return T.where(x < 1.0, _keys_near(x, -0.5), T.where(x < 2.0, _keys_far(x, -0.5), 0.0))


def _aa_weights(in_size: int, out_size: int, scale: float | None, align_corners: bool, mode: str,
                device: object) -> Tensor:
    """The (out_size, in_size) float64 matrix of torch's antialiased resampling along one dim
    (``_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa``, ``_compute_indices_min_size_weights_aa``).

    Output pixel ``i`` has its centre at ``ratio * (i + 0.5)`` in input pixels; it averages the input pixels within
    ``support`` of it, weighted by the filter stretched by ``ratio`` when downsampling (that is the antialiasing) and
    normalized to sum 1 (so borders renormalize instead of clamping). ``align_corners`` only changes ``ratio``."""
    ratio = _ratio(in_size, out_size, scale, align_corners)
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


def _sinc(x: float) -> float:
    """``sin(pi x) / (pi x)``, 1 at 0."""
    return math.sin(math.pi * x) / (math.pi * x) if x != 0.0 else 1.0


def _filter(x: float, mode: str, a: float) -> float:
    """The triangle (bilinear), Keys' cubic with parameter ``a`` (bicubic) or the Lanczos window (lanczos) at ``x``,
    in float64."""
    x = abs(x)
    if mode == "bilinear":
        return 1.0 - x if x < 1.0 else 0.0
    if mode == "lanczos":
        return _sinc(x) * _sinc(x / _LANCZOS_A) if x < _LANCZOS_A else 0.0
    return _keys_near(x, a) if x < 1.0 else _keys_far(x, a) if x < 2.0 else 0.0


def _interp_rows(in_size: int, out_size: int, ratio: float, align_corners: bool,
                 mode: str) -> tuple[list[tuple[int, list[float]]], float]:
    """(first tap, weights) of every output position for plain bilinear / bicubic, as torch's uint8 kernels compute
    them (``_compute_indices_min_size_weights``): the float kernels' taps, with those that fall outside the input
    added to the border pixel's weight instead of reading it again; and the largest weight torch sees on the way
    (it includes the partial sums of a border weight)."""
    width = _AA_WIDTH[mode]
    half = width // 2
    rows, largest = [], 0.0
    for i in range(out_size):
        src = ratio * i if align_corners else ratio * (i + 0.5) - 0.5
        if mode == "bilinear" and not align_corners:
            src = max(src, 0.0)
        base = min(math.floor(_f32(src)), in_size - 1)  # torch floors in float32 (floorf)
        t = min(max(src - base, 0.0), 1.0)
        first = max(base - half + 1, 0)
        weights = [0.0] * (min(base + half + 1, in_size) - first)
        for j in range(width):
            tap = min(max(base - half + 1 + j, 0), in_size - 1)
            weights[tap - first] += _filter(float(j + 1 - half) - t, mode, _CUBIC_A)
            largest = max(largest, weights[tap - first])
        rows.append((first, weights))
    return rows, largest


def _aa_rows(in_size: int, out_size: int, ratio: float, mode: str) -> tuple[list[tuple[int, list[float]]], float]:
    """(first tap, weights) of every output position for antialiased bilinear / bicubic: the filters of
    ``_aa_weights`` in torch's order of operations (``_compute_indices_min_size_weights_aa``), and the largest
    weight."""
    support = _AA_WIDTH[mode] / 2 * ratio if ratio >= 1.0 else _AA_WIDTH[mode] / 2
    inverse = 1.0 / ratio if ratio >= 1.0 else 1.0
    rows, largest = [], 0.0
    for i in range(out_size):
        centre = ratio * (i + 0.5)
        first = max(int(centre - support + 0.5), 0)
        end = min(int(centre + support + 0.5), in_size, first + math.ceil(support) * 2 + 1)
        weights = [_filter((j - centre + 0.5) * inverse, mode, -0.5) for j in range(first, end)]  # Keys' a = -0.5
        total = 0.0
        for w in weights:  # in order (Python's sum() of floats compensates rounding since 3.12)
            total += w
        if total != 0.0:
            weights = [w / total for w in weights]
            largest = max(largest, *weights)
        rows.append((first, weights))
    return rows, largest


@lru_cache(maxsize=256)
def _fixed_point_taps(in_size: int, out_size: int, scale: float | None, align_corners: bool, mode: str,
                      antialias: bool) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
    """The taps of torch's uint8 resampling along one dim: (source index per output and tap, int16 weight per
    output and tap, taps per output, precision). The float64 weights become integers ``round(w * 2**precision)``
    with the largest precision (at most 22) that keeps them below ``2**15`` (torch's
    ``_compute_index_ranges_int16_weights``); unused taps repeat the last pixel with weight 0."""
    ratio = _ratio(in_size, out_size, scale, align_corners)
    if antialias:
        rows, largest = _aa_rows(in_size, out_size, ratio, mode)
    else:
        rows, largest = _interp_rows(in_size, out_size, ratio, align_corners, mode)
    precision = 0
    while precision < 22 and int(0.5 + largest * (1 << (precision + 1))) < 1 << 15:
        precision += 1
    taps = max(len(weights) for _, weights in rows)
    index, fixed = [], []
    for first, weights in rows:
        index += [min(first + k, in_size - 1) for k in range(taps)]
        scaled = [w * (1 << precision) for w in weights]
        fixed += [int(v - 0.5) if v < 0 else int(v + 0.5) for v in scaled] + [0] * (taps - len(weights))
    return tuple(index), tuple(fixed), taps, precision


def _fixed_point_resample(x: Tensor, dim: int, taps: tuple[tuple[int, ...], tuple[int, ...], int, int]) -> Tensor:
    """``x`` (int32 values of uint8 pixels) resampled along ``dim`` in torch's uint8 arithmetic: every output is
    ``(sum of pixel * int16 weight + 2**(precision - 1)) >> precision`` clamped to [0, 255], exactly in integers."""
    index, weights, k, precision = taps
    out_size = len(index) // k
    shape, weight_shape = list(x.shape), [1] * (x.ndim + 1)
    shape[dim:dim + 1] = weight_shape[dim:dim + 2] = [out_size, k]
    gathered = T.index_select(x, dim, tensor(index, dtype=dtypes.int64, device=x.device)).reshape(shape)
    total = (gathered * tensor(weights, dtype=dtypes.int32, device=x.device).reshape(weight_shape)).sum(dim + 1)
    return T.clamp(T.floor_divide(total + (1 << (precision - 1)), 1 << precision), 0, 255)


def _resized_uint8(input: Tensor, out_sizes: tuple, scales: tuple, align_corners: bool, mode: str,
                   antialias: bool) -> Tensor:
    """(N, C, H, W) uint8 input resized as torch's CPU kernels resize uint8 images (Pillow-SIMD's method, plain or
    antialiased): separable, along W and then along H (a dim whose size stays is left as it is), each pass in
    fixed point with int16 weights and rounded to uint8. Bit-identical with torch's AVX2 and generic kernels."""
    x = input.int()
    for dim in (3, 2):
        in_size, out_size = input.shape[dim], out_sizes[dim - 2]
        if out_size != in_size:
            taps = _fixed_point_taps(in_size, out_size, scales[dim - 2], align_corners, mode, antialias)
            x = _fixed_point_resample(x, dim, taps)
    return x.to(dtypes.uint8)


def _is_integer(x: object) -> bool:
    """Whether ``x`` is an integer size: a Python or numpy integer, or a tensor of an integer dtype (torch's
    ``_is_integer``)."""
    if isinstance(x, Tensor):
        return not x.dtype.is_floating_point
    return hasattr(type(x), "__index__")  # int, bool and numpy's integers; not floats


def _output_sizes(input: Tensor, size: int | Sequence[int] | None, scale_factor: float | Sequence[float] | None,
                  recompute_scale_factor: bool | None) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    """The output size and the scale of every spatial dim from exactly one of ``size`` and ``scale_factor``, with
    torch's checks and messages; the scales are None where the kernels derive them from the sizes (``size`` given,
    or ``recompute_scale_factor``)."""
    n = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        if not isinstance(size, (list, tuple)):
            if not _is_integer(size):  # torch's kernels take integer sizes only
                raise TypeError(f"interpolate: expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size of type {type(size).__name__} ({size})")
            return (int(size),) * n, (None,) * n
        if len(size) != n:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please provide "
                             f"input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                             f"format.")
        if not all(_is_integer(s) for s in size):
            raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], "
                            f"but got size with types {[type(s) for s in size]}")
        return tuple(int(s) for s in size), (None,) * n
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != n:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                             f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             f"scale_factor in (s1, s2, ...,sK) format.")
        factors = tuple(scale_factor)
    else:
        factors = (scale_factor,) * n
    out_sizes = tuple(int(math.floor(s * f)) for s, f in zip(input.shape[2:], factors))
    return out_sizes, (None,) * n if recompute_scale_factor else tuple(float(f) for f in factors)


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) input.

    Modes: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (1-d), ``"bilinear"`` (2-d), ``"bicubic"`` (2-d:
    torch's cubic convolution with ``A = -0.75``, borders clamped), ``"trilinear"`` (3-d), and ``"area"`` (adaptive
    average pooling to the output size); the interpolating modes work one dim at a time (they are separable), with
    torch's ``align_corners`` rule.

    ``antialias=True`` (bilinear, bicubic and ``"lanczos"`` on 4-D input, as torch's; lanczos requires it): torch's
    (Pillow's) separable filters, a triangle, Keys' cubic with ``a = -0.5`` or the 3-lobe Lanczos window, widened
    by the scale when downsampling so that every input pixel contributes, and normalized per output pixel; computed
    as one product with an (out, in) weight matrix per dim. Upsampling with it equals plain bilinear
    (``align_corners=False``) but not plain bicubic.

    Input is floating point, or uint8 for the modes torch's kernels take it in (nearest, nearest-exact, bilinear,
    bicubic and lanczos, antialiased or not; other dtypes and modes raise ``NotImplementedError`` as torch's). uint8
    bilinear, bicubic and lanczos are torch's fixed-point arithmetic (int16 weights, rounded and clamped to [0, 255]
    after each dim), so the pixels are bit-identical with torch's CPU results.

    A channels_last (or channels_last_3d) input gives an output in the same memory format, as torch's.
    """
    out = _interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    return keep_memory_format(out, input)


def _interpolate(input: Tensor, size: int | Sequence[int] | None, scale_factor: float | Sequence[float] | None,
                 mode: str, align_corners: bool | None, recompute_scale_factor: bool | None,
                 antialias: bool) -> Tensor:
    n = input.ndim - 2
    if align_corners is not None and mode in _NEAREST_AREA:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    out_sizes, scales = _output_sizes(input, size, scale_factor, recompute_scale_factor)
    if antialias and not (mode in _AA_WIDTH and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    linear_modes = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode == "lanczos" and n == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    elif mode in ("linear", "bilinear", "trilinear") and 1 <= n <= 3 and linear_modes[mode] != n:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {linear_modes[mode] + 2}D input")
    elif not 1 <= n <= 3 or linear_modes.get(mode, n) != n or mode not in (*linear_modes, *_NEAREST_AREA):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    in_sizes = input.shape[2:]
    if min(in_sizes) <= 0 or min(out_sizes) <= 0:
        names = ("D", "H", "W")[-n:]
        raise RuntimeError("Input and output sizes should be greater than 0, but got input ("
                           + ", ".join(f"{k}: {v}" for k, v in zip(names, in_sizes)) + ") output ("
                           + ", ".join(f"{k}: {v}" for k, v in zip(names, out_sizes)) + ")")
    if not input.dtype.is_floating_point and not (input.dtype is dtypes.uint8 and mode in _UINT8_MODES):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not implemented for {input.dtype} input (torch "
                                  f"takes floating-point input, and uint8 in modes {', '.join(_UINT8_MODES)})")
    if input.dtype is dtypes.uint8 and mode in _AA_WIDTH:
        return _resized_uint8(input, out_sizes, scales, bool(align_corners), mode, antialias)
    if antialias:
        return _antialiased(input, out_sizes, scales, bool(align_corners), mode)
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[n - 1](input, out_sizes)
    nearest_1d = n == 1 and mode in ("nearest", "nearest-exact")  # torch's 1-d kernel rounds as its generic one
    if n <= 2 and mode not in ("trilinear", "bicubic") and input.dtype.is_floating_point and not nearest_1d:
        # One resampling kernel each way (1-d linear runs as 2-d over a height of one).
        kernel_mode = "bilinear" if mode in linear_modes else mode
        x = input if n == 2 else input.unsqueeze(2)
        sizes = tuple(out_sizes) if n == 2 else (1, out_sizes[0])
        factors = tuple(scales) if n == 2 else (None, scales[0])
        out = Upsample.apply(x, output_size=sizes, mode=kernel_mode,
                             align_corners=bool(align_corners) if kernel_mode == "bilinear" else None, scales=factors)
        return out if n == 2 else out.squeeze(2)
    # Half-precision input is blended in float32 and rounded once, as torch's kernels accumulate in float32
    low = input.dtype in (dtypes.float16, dtypes.bfloat16) and mode not in ("nearest", "nearest-exact")
    out = input.float() if low else input
    channels_last_kernel = _torch_uses_channels_last_kernel(input, out_sizes)
    for axis, (in_size, out_size, scale) in enumerate(zip(in_sizes, out_sizes, scales)):
        dim = 2 + axis
        if in_size == out_size and scale in (None, 1.0):
            continue
        if mode in ("nearest", "nearest-exact"):
            index = _nearest_index(in_size, out_size, scale, mode == "nearest-exact", channels_last_kernel,
                                   input.dtype is dtypes.float64)
            out = T.index_select(out, dim, tensor(index, dtype=dtypes.int64, device=input.device))
            continue
        src = _source_index(out_size, in_size, scale, align_corners, mode, input.device)
        if mode == "bicubic":
            out = _cubic(out, dim, src, in_size)
            continue
        lo = T.clamp(T.floor(src), max=in_size - 1).long()
        hi = T.clamp(lo + 1, max=in_size - 1)
        shape = [1] * out.ndim
        shape[dim] = out_size
        frac = (src - lo.double()).to(out.dtype).reshape(shape)
        out = T.index_select(out, dim, lo) * (1 - frac) + T.index_select(out, dim, hi) * frac
    return out.to(input.dtype) if low else out


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
