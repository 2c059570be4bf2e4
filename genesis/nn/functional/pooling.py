"""Pooling: max/avg (1-d, 2-d, 3-d) on the ``pool`` backend primitive, adaptive pooling, power-average (LP)
pooling, max unpooling and fractional max pooling.

Adaptive max pooling with indices gathers every window (values and flat argmax positions); adaptive average pooling
of uneven windows is a product with one averaging matrix per dim. Both are compositions of differentiable ops.
"""

from __future__ import annotations

import math
from typing import Sequence

from genesis import amp, dtypes, random
from genesis import ops as T
from genesis.memo import remember
from genesis.nn.functional.conv import ntuple
from genesis.ops._args import check_floating_kernel, keep_memory_format
from genesis.ops.nn import AdaptivePool, Pool
from genesis.tensor import Tensor, arange, tensor, zeros

_POOL_ARGS: dict[tuple, tuple] = {}


def _pool_args(op: str, n: int, input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None,
               padding: int | Sequence[int], dilation: int | Sequence[int]) -> tuple:
    """(kernel, stride, padding, dilation) as n-tuples, checked as torch checks them. Int arguments (the common call;
    the pooling modules keep them as given) are remembered, so a layer called again skips the checks; other kinds
    are checked every time (``(2, 2.0)`` equals ``(2, 2)`` as a key but must raise)."""
    if kernel_size.__class__ is int and padding.__class__ is int and dilation.__class__ is int and (
            stride is None or stride.__class__ is int or stride.__class__ is tuple and not stride):
        key = (op, input.ndim, kernel_size, stride, padding, dilation)
        hit = _POOL_ARGS.get(key)
        if hit is None:
            hit = remember(_POOL_ARGS, key, _check_pool_args(op, n, input, kernel_size, stride, padding, dilation))
        return hit
    return _check_pool_args(op, n, input, kernel_size, stride, padding, dilation)


def _check_pool_args(op: str, n: int, input: Tensor, kernel_size: int | Sequence[int],
                     stride: int | Sequence[int] | None, padding: int | Sequence[int],
                     dilation: int | Sequence[int]) -> tuple:
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D input, but got input of size {list(input.shape)}")
    kernel = ntuple(op, "kernel_size", kernel_size, n)
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) else ntuple(
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
              divisor_override: int | None = None, indices: bool = False) -> tuple[Tensor, Tensor | None]:
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
                                 divisor_override=divisor_override, indices=indices)
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
    (input,) = amp.autocast_args(op, input)
    kernel, stride, padding, dilation = _pool_args(op, n, input, kernel_size, stride, padding, dilation)
    values, indices = _run_pool(op, n, input, "max", kernel, stride, padding, dilation, ceil_mode,
                                indices=return_indices)
    return (values, indices) if return_indices else values


def max_pool1d(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over sliding windows of (N, C, L) input. Without indices torch runs a kernel of its own, which takes
    floating-point input only."""
    if not return_indices:
        check_floating_kernel("max_pool1d", "max_pool1d_impl", input)
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


def max_pool1d_with_indices(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                            padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``max_pool1d`` returning ``(values, indices)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                            padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``max_pool2d`` returning ``(values, indices)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                            padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``max_pool3d`` returning ``(values, indices)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_pool(op: str, n: int, input: Tensor, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None,
              padding: int | Sequence[int], ceil_mode: bool, count_include_pad: bool,
              divisor_override: int | None) -> Tensor:
    (input,) = amp.autocast_args(op, input)
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


def _adaptive_sizes(op: str, input: Tensor, output_size: int | None | Sequence[int | None],
                    n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the input's spatial sizes, the output's) of adaptive pooling over the last ``n`` dims, with torch's checks
    and messages (``None`` in ``output_size`` keeps that dim's input size; 0 gives an empty output)."""
    if input.ndim not in (n + 1, n + 2):
        if n == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 "
                               f"'self' (while checking arguments for {op})")
        got = ":" if op.startswith("adaptive_max") else ""
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got{got} {list(input.shape)}")
    sizes = tuple(input.shape[-n:])
    out = (output_size,) * n if output_size is None or isinstance(output_size, int) else tuple(output_size)
    if len(out) != n:
        if n == 1:
            raise RuntimeError(f"{op}() argument 'output_size' should contain one int (got {len(out)})")
        if op.startswith("adaptive_max"):
            raise RuntimeError(f"{op}(): internal error: output_size.size() must be {n}")
        raise RuntimeError(f"{op}: output_size must be {n}")
    out = tuple(s if o is None else int(o) for o, s in zip(out, sizes))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out)}")
    for d in range(input.ndim - n, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {d} being empty")
    if not input.dtype.is_floating_point:  # torch's adaptive pools have real floating kernels only
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    return sizes, out


def _empty_pooled(input: Tensor, out: tuple[int, ...]) -> Tensor:
    """The empty result of pooling ``input`` to ``out`` sizes of which one is 0, still on ``input``'s graph."""
    return input.reshape(-1)[:0].reshape(*input.shape[:input.ndim - len(out)], *out)


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive_avg(input: Tensor, sizes: tuple[int, ...], out: tuple[int, ...]) -> Tensor:
    # The mean over a window is separable: one (out, size) averaging matrix per dim. The products run in the input's
    # dtype (autocast would lower them: a pooling keeps its input's precision).
    if 0 in out:
        return _empty_pooled(input, out)
    x = input
    n = len(sizes)
    with amp.autocast(input.device.type, enabled=False):
        for axis, (size, o) in enumerate(zip(sizes, out)):
            weights = [[0.0] * size for _ in range(o)]
            for i, (start, end) in enumerate(_windows(size, o)):
                for j in range(start, end):
                    weights[i][j] = 1.0 / (end - start)
            avg = tensor(weights, dtype=input.dtype, device=input.device)
            dim = x.ndim - n + axis
            x = T.matmul(x.movedim(dim, -1), avg.t()).movedim(-1, dim)
    return x


def _adaptive_max(input: Tensor, sizes: tuple[int, ...], out: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Values and flat argmax positions (within each input plane) of adaptive max pooling.

    Every window is gathered padded to the largest window length by repeating its last element (a repeat never
    changes a maximum), so one ``max`` over the last dim reduces all windows at once.
    """
    n = len(sizes)
    lead = input.ndim - n
    if 0 in out:
        return _empty_pooled(input, out), zeros(input.shape[:lead] + out, dtype=dtypes.int64, device=input.device)
    x = input
    flat = arange(input[(0,) * lead].numel() if lead else input.numel(), device=input.device).reshape(sizes)
    lengths = []
    for axis, (size, o) in enumerate(zip(sizes, out)):
        windows = _windows(size, o)
        k = max(end - start for start, end in windows)
        lengths.append(k)
        index = tensor([min(start + j, end - 1) for start, end in windows for j in range(k)], device=input.device)
        x = T.index_select(x, lead + 2 * axis, index)
        x = x.reshape(*x.shape[:lead + 2 * axis], o, k, *x.shape[lead + 2 * axis + 1:])
        flat = T.index_select(flat, 2 * axis, index)
        flat = flat.reshape(*flat.shape[:2 * axis], o, k, *flat.shape[2 * axis + 1:])
    # (..., o1, k1, o2, k2, ...) -> (..., o1, o2, ..., k1 * k2 * ...)
    order = [lead + 2 * a for a in range(n)] + [lead + 2 * a + 1 for a in range(n)]
    x = x.permute(*range(lead), *order).reshape(*input.shape[:lead], *out, -1)
    flat = flat.permute(*[o - lead for o in order]).reshape(*out, -1)
    values, local = x.max(-1)
    indices = T.take_along_dim(flat.expand(*input.shape[:lead], *flat.shape), local.unsqueeze(-1), -1).squeeze(-1)
    return values, indices


def _adaptive(op: str, input: Tensor, output_size: int | None | Sequence[int | None], n: int, reduce: str) -> Tensor:
    sizes, out_size = _adaptive_sizes(op, input, output_size, n)
    if 0 in out_size:
        return _empty_pooled(input, out_size)
    if all(s % o == 0 for s, o in zip(sizes, out_size)):
        # Equal windows: an ordinary pooling with kernel = stride = size / output_size (the common case).
        kernel = tuple(s // o for s, o in zip(sizes, out_size))
        if reduce == "mean":
            if all(o == 1 for o in out_size):
                return input.mean(tuple(range(input.ndim - n, input.ndim)), keepdim=True)
            return _avg_pool(op, n, input, kernel, kernel, 0, False, True, None)
        return _max_pool(op, n, input, kernel, kernel, 0, 1, False, False)
    # Uneven windows (start = floor(i * in / out), end = ceil((i + 1) * in / out)): one kernel each way, 1-d as 2-d
    # over a height of one.
    batched = input.ndim == n + 2
    x = input if batched else input.unsqueeze(0)
    x = x.unsqueeze(2) if n == 1 else x
    values, _ = AdaptivePool.apply(x, mode="avg" if reduce == "mean" else "max",
                                   output_size=out_size if n == 2 else (1, out_size[0]))
    values = values.squeeze(2) if n == 1 else values
    return values if batched else values.squeeze(0)


def _adaptive_max_pool(op: str, n: int, input: Tensor, output_size: int | None | Sequence[int | None],
                       return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    sizes, out = _adaptive_sizes(op, input, output_size, n)
    values, indices = _adaptive_max(input, sizes, out)
    return (values, indices) if return_indices else values


def adaptive_avg_pool1d(input: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """Average pooling of a (N, C, L) or (C, L) input to ``output_size`` positions."""
    return _adaptive("adaptive_avg_pool1d", input, output_size, 1, "mean")


def adaptive_avg_pool2d(input: Tensor, output_size: int | None | Sequence[int | None]) -> Tensor:
    """Average pooling to a fixed (out_h, out_w) whatever the input size (torch's window boundaries)."""
    return _adaptive("adaptive_avg_pool2d", input, output_size, 2, "mean")


def adaptive_avg_pool3d(input: Tensor, output_size: int | None | Sequence[int | None]) -> Tensor:
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) input to a fixed (out_d, out_h, out_w)."""
    (input,) = amp.autocast_args("adaptive_avg_pool3d", input)
    sizes, out = _adaptive_sizes("adaptive_avg_pool3d", input, output_size, 3)
    return _adaptive_avg(input, sizes, out)


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of (N, C, L) or (C, L) input to a fixed length (torch's window boundaries)."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: int | Sequence[int],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool1d`` returning ``(values, indices)``."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, True)


def adaptive_max_pool2d(input: Tensor, output_size: int | None | Sequence[int | None],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling to a fixed (out_h, out_w) whatever the input size (``return_indices``: also the flat H * W
    argmax positions, from gathered windows)."""
    if return_indices:
        return _adaptive_max(input, *_adaptive_sizes("adaptive_max_pool2d", input, output_size, 2))
    return _adaptive("adaptive_max_pool2d", input, output_size, 2, "max")


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: int | None | Sequence[int | None],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """Adaptive max pooling of (N, C, H, W) or (C, H, W) input returning ``(values, flat H * W argmax indices)``."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, True)


def adaptive_max_pool3d(input: Tensor, output_size: int | None | Sequence[int | None],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) input to a fixed (out_d, out_h, out_w)."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: int | None | Sequence[int | None],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool3d`` returning ``(values, indices)``."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, True)


# ------------------------------------------------------------------ power-average pooling


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: int | Sequence[int] | None = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` over (N, C, L) input."""
    (k,) = ntuple("lp_pool1d", "kernel_size", kernel_size, 1)
    out = avg_pool1d(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (T.sign(out) * T.relu(T.abs(out))).mul(k).pow(1.0 / norm_type)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: int | Sequence[int],
              stride: int | Sequence[int] | None = None, ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)``."""
    kh, kw = ntuple("lp_pool2d", "kernel_size", kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return (T.sign(out) * T.relu(T.abs(out))).mul(kh * kw).pow(1.0 / norm_type)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: int | Sequence[int],
              stride: int | Sequence[int] | None = None, ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` over (N, C, D, H, W) input."""
    kd, kh, kw = ntuple("lp_pool3d", "kernel_size", kernel_size, 3)
    out = avg_pool3d(input.pow(norm_type), (kd, kh, kw), stride, 0, ceil_mode)
    return (T.sign(out) * T.relu(T.abs(out))).mul(kd * kh * kw).pow(1.0 / norm_type)


# ------------------------------------------------------------------ max unpooling


def _unpool_output_size(op: str, input: Tensor, kernel: tuple, stride: tuple, padding: tuple,
                        output_size: Sequence[int] | None) -> tuple[int, ...]:
    n = len(kernel)
    default = tuple((input.shape[-n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n))
    if output_size is None:
        return default
    size = tuple(int(s) for s in output_size)
    if len(size) == n + 2:
        size = size[2:]
    elif len(size) == n + 1 and input.ndim == n + 1:
        size = size[1:]
    if len(size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                         f"length of '{len(size)}'")
    for d in range(n):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < size[d] < high:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {low} and '
                             f'{high})')
    return size


def _max_unpool(op: str, n: int, input: Tensor, indices: Tensor, kernel_size: int | Sequence[int],
                stride: int | Sequence[int] | None, padding: int | Sequence[int],
                output_size: Sequence[int] | None) -> Tensor:
    (input,) = amp.autocast_args(op, input)
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D input, but got input of size {list(input.shape)}")
    if indices.shape != input.shape:
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    if indices.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: elements in indices should be type int64 but got: {indices.dtype}")
    kernel = ntuple(op, "kernel_size", kernel_size, n)
    stride = kernel if stride is None else ntuple(op, "stride", stride, n)
    padding = ntuple(op, "padding", padding, n)
    size = _unpool_output_size(op, input, kernel, stride, padding, output_size)
    plane = 1
    for s in size:
        plane *= s
    lead = tuple(input.shape[:-n])
    flat_index = indices.reshape(*lead, -1).long()
    flat_index = T._check_range(flat_index, 0, plane, RuntimeError, "Found an invalid max index: {value} (output "
                                f"volumes are of size {'x'.join(map(str, size))}")
    out = zeros((*lead, plane), dtype=input.dtype, device=input.device)
    out = out.scatter(-1, flat_index, input.reshape(*lead, -1))
    return out.reshape(*lead, *size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """Inverse of ``max_pool1d``: each value goes back to its argmax position, zeros elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """Inverse of ``max_pool2d``: each value goes back to its flat (H * W) argmax position, zeros elsewhere (laid out
    channels_last for such input, as torch's; its 3-d unpooling returns row-major)."""
    out = _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)
    return keep_memory_format(out, input)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """Inverse of ``max_pool3d``: each value goes back to its flat (D * H * W) argmax position, zeros elsewhere."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# ------------------------------------------------------------------ fractional max pooling


def _fractional_starts(u: Tensor, size: int, out: int, k: int) -> Tensor:
    """The first input position of each of ``out`` pooling windows for per-plane samples ``u`` (N, C) in [0, 1):
    torch's ``trunc((i + u) * alpha) - trunc(u * alpha)`` with ``alpha = (size - k) / (out - 1)`` in ``u``'s dtype,
    the last window ending at the input's end (Graham, "Fractional Max-Pooling", 2014)."""
    last = T.full((*u.shape, 1), size - k, dtype=dtypes.int64, device=u.device)
    if out == 1:
        return last
    alpha = T.full((), size - k, dtype=u.dtype, device=u.device) / (out - 1)
    i = arange(out - 1, dtype=u.dtype, device=u.device)
    first = ((i + u.unsqueeze(-1)) * alpha).long() - (u * alpha).long().unsqueeze(-1)
    return T.cat([first, last], -1)


def _fractional_max_pool(op: str, n: int, input: Tensor, kernel_size: int | Sequence[int],
                         output_size: int | Sequence[int] | None, output_ratio: float | Sequence[float] | None,
                         return_indices: bool, samples: Tensor | None) -> Tensor | tuple[Tensor, Tensor]:
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    kernel = ntuple(op, "kernel_size", kernel_size, n)
    sizes = tuple(input.shape[-n:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = (output_ratio,) * n if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        output_size = tuple(int(s * r) for s, r in zip(sizes, ratio))
    out = ntuple(op, "output_size", output_size, n)
    names = ("time", "height", "width")[3 - n:]
    for name, s, o, k in zip(names, sizes, out, kernel):
        if o + k - 1 > s:
            raise RuntimeError(f"{op}(): pool {name} {k} too large relative to input {name} {s}")
    x = input if input.ndim == n + 2 else input.unsqueeze(0)
    batch, planes = x.shape[:2]
    if samples is None:
        samples = random.rand((batch, planes, n), dtype=input.dtype, device=input.device)
    if samples.ndim != 3 or tuple(samples.shape) != (batch, planes, n):
        raise RuntimeError(f"{op}(): Expect _random_samples of shape {[batch, planes, n]}, got "
                           f"{list(samples.shape)}")
    # torch's sample order: (width, height) in 2-D, (time, height, width) in 3-D.
    columns = (1, 0) if n == 2 else tuple(range(n))
    flat = None  # (N, C, *out, *kernel): each window element's flat position in the input plane
    stride = 1
    for d in reversed(range(n)):
        starts = _fractional_starts(samples[..., columns[d]], sizes[d], out[d], kernel[d])  # (N, C, out_d)
        pos = starts.unsqueeze(-1) + arange(kernel[d], device=input.device)  # (N, C, out_d, k_d)
        shape = [batch, planes] + [1] * (2 * n)
        shape[2 + d], shape[2 + n + d] = out[d], kernel[d]
        term = pos.reshape(shape) * stride
        flat = term if flat is None else flat + term
        stride *= sizes[d]
    windows = flat.reshape(batch, planes, -1, math.prod(kernel))  # (N, C, P, K)
    plane = x.reshape(batch, planes, -1)
    values = T.gather(plane, 2, windows.reshape(batch, planes, -1)).reshape(windows.shape)
    # The first maximum of each window (NaN counts as the maximum), as torch's kernel scans it.
    best = T.where(T.isnan(values), math.inf, values).argmax(-1, keepdim=True)
    indices = T.gather(windows, 3, best).reshape(batch, planes, *out)
    result = T.gather(plane, 2, indices.reshape(batch, planes, -1)).reshape(batch, planes, *out)
    if input.ndim == n + 1:
        result, indices = result.squeeze(0), indices.squeeze(0)
    return (result, indices) if return_indices else result


def fractional_max_pool2d(input: Tensor, kernel_size: int | Sequence[int],
                          output_size: int | Sequence[int] | None = None,
                          output_ratio: float | Sequence[float] | None = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """Fractional max pooling over (N, C, H, W) or (C, H, W) input: windows of ``kernel_size`` at pseudo-random
    positions that shrink the input to ``output_size`` (or ``output_ratio`` times its size); one sample in [0, 1)
    per plane and dim (``_random_samples`` (N, C, 2), drawn uniformly when omitted) places them. With
    ``return_indices`` also returns each maximum's flat (H * W) position."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: int | Sequence[int],
                          output_size: int | Sequence[int] | None = None,
                          output_ratio: float | Sequence[float] | None = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W) input (see :func:`fractional_max_pool2d`;
    ``_random_samples`` is (N, C, 3), indices are flat (T * H * W) positions)."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: int | Sequence[int],
                                       output_size: int | Sequence[int] | None = None,
                                       output_ratio: float | Sequence[float] | None = None,
                                       return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool2d` returning (values, indices)."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, True,
                                _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: int | Sequence[int],
                                       output_size: int | Sequence[int] | None = None,
                                       output_ratio: float | Sequence[float] | None = None,
                                       return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool3d` returning (values, indices)."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, True,
                                _random_samples)
