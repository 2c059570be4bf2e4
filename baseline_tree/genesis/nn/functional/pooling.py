"""Pooling: max/avg (1-d, 2-d, 3-d) on the ``pool`` backend primitive, adaptive pooling, and interpolate."""

from __future__ import annotations

import math
from typing import Sequence

from genesis import functional as T
from genesis.functional.nn_ops import AdaptivePool, Pool, Upsample
from genesis.nn.functional.adaptive import _adaptive_max, _adaptive_sizes
from genesis.nn.functional.conv import ntuple
from genesis.tensor import Tensor, arange


def _pool_args(op: str, n: int, input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None,
               padding: int | Sequence[int], dilation: int | Sequence[int]) -> tuple:
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D input, but got input of size {list(input.shape)}")
    kernel = ntuple(op, "kernel_size", kernel_size, n)
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else ntuple(
        op, "stride", stride, n)
    padding = ntuple(op, "padding", padding, n)
    dilation = ntuple(op, "dilation", dilation, n)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got kernel_size={list(kernel)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: stride must be greater than zero, but got stride={list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got dilation={list(dilation)}")
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    return kernel, stride, padding, dilation


def _run_pool(op: str, n: int, input: Tensor, mode: str, kernel: tuple, stride: tuple, padding: tuple,
              dilation: tuple, ceil_mode: bool, count_include_pad: bool = True,
              divisor_override: int | None = None) -> tuple[Tensor, Tensor | None]:
    batched = input.ndim == n + 2
    x = input if batched else input.unsqueeze(0)
    if n == 1:
        # 1-d pooling runs as 2-d pooling over a height of one.
        x = x.unsqueeze(2)
        kernel, stride, padding, dilation = (1, *kernel), (1, *stride), (0, *padding), (1, *dilation)
    for size, p, k, d, s in zip(x.shape[2:], padding, kernel, dilation, stride):
        out = _pool_out_size(size, k, s, p, d, ceil_mode)
        if out <= 0:
            raise RuntimeError(f"{op}: Given input size {list(input.shape)}, calculated output size is too small")
    values, indices = Pool.apply(x, mode=mode, kernel=kernel, stride=stride, padding=padding, dilation=dilation,
                                 ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                                 divisor_override=divisor_override)
    if n == 1:
        values = values.squeeze(2)
        indices = indices.squeeze(2) if indices is not None else None
    if not batched:
        values = values.squeeze(0)
        indices = indices.squeeze(0) if indices is not None else None
    return values, indices


def _pool_out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        # The last window must start inside the input or its left padding.
        out -= 1
    return out


def _max_pool(op: str, n: int, input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None,
              padding: int | Sequence[int], dilation: int | Sequence[int], ceil_mode: bool,
              return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    kernel, stride, padding, dilation = _pool_args(op, n, input, kernel_size, stride, padding, dilation)
    values, indices = _run_pool(op, n, input, "max", kernel, stride, padding, dilation, ceil_mode)
    return (values, indices) if return_indices else values


def max_pool1d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over sliding windows of (N, C, L) input."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over sliding (kh, kw) windows of (N, C, H, W) input; ``stride`` defaults to the kernel size.

    Padding is implicit -inf (at most half the effective kernel); ``return_indices`` also gives the flat argmax
    position within each (H, W) plane.
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over sliding windows of (N, C, D, H, W) input."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(op: str, n: int, input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None,
              padding: int | Sequence[int], ceil_mode: bool, count_include_pad: bool,
              divisor_override: int | None) -> Tensor:
    kernel, stride, padding, dilation = _pool_args(op, n, input, kernel_size, stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    values, _ = _run_pool(op, n, input, "avg", kernel, stride, padding, dilation, ceil_mode, count_include_pad,
                          divisor_override)
    return values


def avg_pool1d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of (N, C, L) input."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding (kh, kw) windows of (N, C, H, W) input (zero padding counted unless
    ``count_include_pad=False``; ``divisor_override`` replaces the window size as divisor)."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of (N, C, D, H, W) input."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# ------------------------------------------------------------------ adaptive pooling

def _adaptive(op: str, input: Tensor, output_size: int | None | Sequence[int | None], n: int, reduce: str) -> Tensor:
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D input, but got input of size {list(input.shape)}")
    sizes = input.shape[-n:]
    out_size = (output_size,) * n if output_size is None or isinstance(output_size, int) else tuple(output_size)
    out_size = tuple(s if o is None else int(o) for o, s in zip(out_size, sizes))
    if any(o <= 0 for o in out_size):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out_size)}")
    if all(s % o == 0 for s, o in zip(sizes, out_size)):
        # Equal windows: an ordinary pooling with kernel = stride = size / output_size (the common case).
        kernel = tuple(s // o for s, o in zip(sizes, out_size))
        if reduce == "mean":
            if all(o == 1 for o in out_size):
                return input.mean(tuple(range(input.ndim - n, input.ndim)), keepdim=True)
            return _avg_pool(op, n, input, kernel, kernel, 0, False, True, None)
        return _max_pool(op, n, input, kernel, kernel, 0, 1, False, False)
    if input.dtype.is_floating_point:
        # Uneven windows (start = floor(i * in / out), end = ceil((i + 1) * in / out)): one kernel each way,
        # 1-d as 2-d over a height of one.
        batched = input.ndim == n + 2
        x = input if batched else input.unsqueeze(0)
        x = x.unsqueeze(2) if n == 1 else x
        values, _ = AdaptivePool.apply(x, mode="avg" if reduce == "mean" else "max",
                                       output_size=out_size if n == 2 else (1, out_size[0]))
        values = values.squeeze(2) if n == 1 else values
        return values if batched else values.squeeze(0)
    # Integer input: one dim at a time from narrowed windows.
    out = input
    for axis, (size, o) in enumerate(zip(sizes, out_size)):
        dim = input.ndim - n + axis
        pieces = []
        for i in range(o):
            start, end = (i * size) // o, -(-((i + 1) * size) // o)
            window = out.narrow(dim, start, end - start)
            pieces.append(window.mean(dim, keepdim=True) if reduce == "mean" else window.amax(dim, keepdim=True))
        out = T.cat(pieces, dim)
    return out


def adaptive_avg_pool1d(input: Tensor, output_size: int | Sequence[int]) -> Tensor:
    return _adaptive("adaptive_avg_pool1d", input, output_size, 1, "mean")


def adaptive_avg_pool2d(input: Tensor, output_size: int | None | Sequence[int | None]) -> Tensor:
    """Average pooling to a fixed (out_h, out_w) whatever the input size (torch's window boundaries)."""
    return _adaptive("adaptive_avg_pool2d", input, output_size, 2, "mean")


def adaptive_max_pool2d(input: Tensor, output_size: int | None | Sequence[int | None],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling to a fixed (out_h, out_w) whatever the input size (``return_indices``: also the flat H * W
    argmax positions, from gathered windows)."""
    if return_indices:
        return _adaptive_max(input, *_adaptive_sizes("adaptive_max_pool2d", input, output_size, 2))
    return _adaptive("adaptive_max_pool2d", input, output_size, 2, "max")


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: int | Sequence[int],
              stride: int | Sequence[int] | None = None, ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)``."""
    kh, kw = ntuple("lp_pool2d", "kernel_size", kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return (T.sign(out) * T.relu(T.abs(out))).mul(kh * kw).pow(1.0 / norm_type)


# ------------------------------------------------------------------ resampling

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
    return T.clamp((dst + 0.5) * ratio - 0.5, min=0.0)


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) input.

    Modes: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (1-d), ``"bilinear"`` (2-d), ``"trilinear"`` (3-d);
    the linear modes interpolate one dim at a time (they are separable), with torch's ``align_corners`` rule.
    """
    n = input.ndim - 2
    if n < 1:
        raise ValueError(f"interpolate: expected at least 3-D input (N, C, *spatial), got {input.ndim}-D")
    linear_modes = {"linear": 1, "bilinear": 2, "trilinear": 3}
    if mode in linear_modes and linear_modes[mode] != n:
        raise NotImplementedError(f"interpolate: mode {mode!r} needs {linear_modes[mode] + 2}-D input, got "
                                  f"{input.ndim}-D")
    if mode not in linear_modes and mode not in ("nearest", "nearest-exact"):
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
    if n <= 2 and mode != "trilinear" and input.dtype.is_floating_point:
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


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r)."""
    *lead, c, h, w = input.shape
    r = upscale_factor
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    nd = x.ndim
    x = x.permute(*range(nd - 5), nd - 5, nd - 2, nd - 4, nd - 1, nd - 3)  # (..., C, H, r, W, r)
    return x.reshape(*lead, c // (r * r), h * r, w * r)
