"""Less common ``torch.nn.functional`` operations, composed from differentiable Genesis ops.

Shrinking activations and RReLU, pixel unshuffling and channel shuffling, 3-d and feature-alpha dropout, 1-d/3-d
adaptive pooling (max with indices), 1-d power-average pooling, max unpooling, and ``embedding_bag``. Every
function keeps torch's signature, defaults and errors; gradients come from autograd through the composed ops.
"""

from __future__ import annotations

from typing import Sequence

from genesis import functional as T
from genesis import random
from genesis.dtypes import int64
from genesis.nn.functional.activations import _apply, celu, elu, hardtanh, leaky_relu, relu, selu, softmax
from genesis.nn.functional.activations import threshold as _threshold
from genesis.nn.functional.adaptive import _adaptive_avg, _adaptive_max, _adaptive_sizes
from genesis.nn.functional.basic import _check_p, _feature_dropout, embedding
from genesis.nn.functional.conv import ntuple
from genesis.nn.functional.pooling import avg_pool1d, avg_pool3d, interpolate, max_pool1d, max_pool2d, max_pool3d
from genesis.tensor import Tensor, arange, full, tensor, zeros

# ------------------------------------------------------------------ activations


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, 0 elsewhere."""
    return T.where(T.abs(input) > lambd, input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be in range [0, inf) for input dtype {input.dtype}, but found "
                           f"{lambd}")
    return T.where(input > lambd, input - lambd, T.where(input < -lambd, input + lambd, 0.0))


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU (Xu et al., 2015): negative inputs are scaled by ``a ~ U(lower, upper)``, drawn per
    element in training, and by the fixed ``(lower + upper) / 2`` in evaluation."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        slope = (lower + upper) / 2
        return _apply(input, inplace, lambda x: T.where(x >= 0, x, x * slope))
    noise = random.rand(input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    return _apply(input, inplace, lambda x: T.where(x > 0, x, x * noise))


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``."""
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``elu``."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place ``leaky_relu``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place ``hardtanh``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``."""
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``."""
    return celu(input, alpha, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place ``threshold``."""
    return _threshold(input, threshold, value, inplace=True)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax (Concrete) distribution: ``softmax((logits + g) / tau)`` with
    ``g = -log(-log(U))`` Gumbel noise (Jang et al., 2016). ``hard=True`` returns the one-hot argmax in the forward
    pass with the soft sample's gradient (straight-through)."""
    uniform = T.clamp(random.rand(logits.shape, dtype=logits.dtype, device=logits.device), min=eps, max=1 - eps)
    gumbels = -T.log(-T.log(uniform))
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = zeros(logits.shape, dtype=logits.dtype, device=logits.device).scatter(dim, index, 1.0)
    return one_hot - soft.detach() + soft


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between the rows of (N, M) input, for every pair i < j in row-major order:
    shape (N * (N - 1) / 2,)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    first = [i for i in range(n) for _ in range(i + 1, n)]
    second = [j for i in range(n) for j in range(i + 1, n)]
    rows_i = T.index_select(input, 0, tensor(first, dtype=int64, device=input.device))
    rows_j = T.index_select(input, 0, tensor(second, dtype=int64, device=input.device))
    return T.norm(rows_i - rows_j, p, -1)


# ------------------------------------------------------------------ rearranging


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W), the inverse of ``pixel_shuffle``."""
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    nd = x.ndim
    x = x.permute(*range(nd - 5), nd - 5, nd - 3, nd - 1, nd - 4, nd - 2)  # (..., C, r, r, H, W)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of (N, C, *) input across ``groups`` (ShuffleNet): (N, g, C/g, *) -> (N, C/g, g, *)."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


# ------------------------------------------------------------------ dropout


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    return _feature_dropout("dropout3d", input, p, training, inplace, 5)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels of (N, C, *) input: dropped channels take SELU's negative saturation value
    and the result is rescaled so mean and variance are kept (as ``alpha_dropout``, one draw per channel)."""
    _check_p("feature_alpha_dropout", p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        alpha = 1.7580993408473766
        a = ((alpha * alpha * p + 1) * (1 - p)) ** -0.5
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
        keep = (random.rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
        # Kept: a * x + alpha * a * p; dropped: -alpha * a + alpha * a * p.
        out = input * keep * a + (keep - 1) * (alpha * a) + alpha * a * p
    return input.copy_(out) if inplace else out


def upsample_nearest(input: Tensor, size: int | Sequence[int] | None = None,
                     scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """Deprecated torch alias of ``interpolate(mode="nearest")``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: int | Sequence[int] | None = None,
                      scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """Deprecated torch alias of ``interpolate(mode="bilinear", align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ------------------------------------------------------------------ pooling


def _adaptive_max_pool(op: str, n: int, input: Tensor, output_size: int | None | Sequence[int | None],
                       return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    if n == 1 and input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {op})")
    sizes, out = _adaptive_sizes(op, input, output_size, n)
    values, indices = _adaptive_max(input, sizes, out)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of (N, C, L) or (C, L) input to a fixed length (torch's window boundaries)."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: int | Sequence[int],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool1d`` returning ``(values, indices)``."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, True)


def adaptive_max_pool3d(input: Tensor, output_size: int | None | Sequence[int | None],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) input to a fixed (out_d, out_h, out_w)."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: int | None | Sequence[int | None],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool3d`` returning ``(values, indices)``."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, True)


def adaptive_avg_pool3d(input: Tensor, output_size: int | None | Sequence[int | None]) -> Tensor:
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) input to a fixed (out_d, out_h, out_w)."""
    sizes, out = _adaptive_sizes("adaptive_avg_pool3d", input, output_size, 3)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"adaptive_avg_pool3d: not implemented for {input.dtype}")
    return _adaptive_avg(input, sizes, out)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: int | Sequence[int] | None = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` over (N, C, L) input."""
    (k,) = ntuple("lp_pool1d", "kernel_size", kernel_size, 1)
    out = avg_pool1d(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (T.sign(out) * T.relu(T.abs(out))).mul(k).pow(1.0 / norm_type)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: int | Sequence[int],
              stride: int | Sequence[int] | None = None, ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` over (N, C, D, H, W) input."""
    kd, kh, kw = ntuple("lp_pool3d", "kernel_size", kernel_size, 3)
    out = avg_pool3d(input.pow(norm_type), (kd, kh, kw), stride, 0, ceil_mode)
    return (T.sign(out) * T.relu(T.abs(out))).mul(kd * kh * kw).pow(1.0 / norm_type)


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


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: int | None | Sequence[int | None],
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """Adaptive max pooling of (N, C, H, W) or (C, H, W) input returning ``(values, flat H * W argmax indices)``."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, True)


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
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D input, but got input of size {list(input.shape)}")
    if indices.shape != input.shape:
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    if indices.dtype.is_floating_point or indices.dtype.name == "bool":
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
    if flat_index.numel():
        lo, hi = int(flat_index.min().item()), int(flat_index.max().item())
        if lo < 0 or hi >= plane:
            raise RuntimeError(f"Found an invalid max index: {hi if hi >= plane else lo} (output volumes are of "
                               f"size {'x'.join(map(str, size))}")
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
    """Inverse of ``max_pool2d``: each value goes back to its flat (H * W) argmax position, zeros elsewhere."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """Inverse of ``max_pool3d``: each value goes back to its flat (D * H * W) argmax position, zeros elsewhere."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# ------------------------------------------------------------------ embedding bags


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sum, mean or max of the embedding rows of each bag of indices, without materializing the per-index rows
    as a batch.

    Bags are the rows of 2-D ``input`` (B, L), or the slices ``input[offsets[b]:offsets[b + 1]]`` of 1-D
    ``input`` (the last one runs to the end unless ``include_last_offset``). Empty bags give zeros; indices equal
    to ``padding_idx`` are left out of their bag (and out of the mean's count). ``per_sample_weights`` scales each
    row before summing (``mode="sum"`` only).

    Returns:
        (B, embedding_dim) tensor of ``weight``'s dtype.
    """
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise RuntimeError(f"embedding_bag: expected input to have an integer dtype, but got {input.dtype}")
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = arange(0, input.numel(), input.shape[1], device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    offsets = offsets.long()
    if offsets.numel() and int(offsets[0].item()) != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(offsets[0].item())}")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx = padding_idx % num
    count = input.shape[0]
    starts = offsets[:-1] if include_last_offset else offsets
    end = int(offsets[-1].item()) if include_last_offset and offsets.numel() else count
    bags = starts.shape[0]
    if bags == 0:
        return zeros((0, weight.shape[1]), dtype=weight.dtype, device=weight.device)
    indices = T._check_bounds("embedding_bag", input.long(), num, 0, negative=False, error=RuntimeError)
    rows = embedding(indices, weight, None, max_norm, norm_type, scale_grad_by_freq)  # (count, D)
    position = arange(count, device=input.device)
    bag = T.searchsorted(starts, position, right=True) - 1  # the bag of every index
    keep = position < end
    if padding_idx is not None:
        keep = keep & (indices != padding_idx)
    if mode == "max":
        return _bag_max(rows, starts, end, keep)
    scale = keep.to(weight.dtype)
    if per_sample_weights is not None:
        scale = scale * per_sample_weights
    bag = T.clamp(bag, min=0)
    out = zeros((bags, weight.shape[1]), dtype=weight.dtype, device=weight.device)
    out = out.index_add(0, bag, rows * scale.unsqueeze(1))
    if mode == "mean":
        sizes = zeros((bags,), dtype=weight.dtype, device=weight.device).index_add(0, bag, keep.to(weight.dtype))
        out = out / T.clamp(sizes, min=1.0).unsqueeze(1)
    return out


def _bag_max(rows: Tensor, starts: Tensor, end: int, keep: Tensor) -> Tensor:
    """Per-bag maximum: each bag gathered as a (B, longest bag) block, padded by repeating its last index."""
    bags, dim = starts.shape[0], rows.shape[1]
    stops = T.cat([starts[1:], full((1,), end, dtype=starts.dtype, device=starts.device)], 0)
    lengths = T.clamp(stops - starts, min=0)
    longest = int(lengths.max().item())
    if longest == 0 or rows.shape[0] == 0:
        return zeros((bags, dim), dtype=rows.dtype, device=rows.device)
    step = arange(longest, device=rows.device).unsqueeze(0)  # (1, longest)
    gather = T.clamp(starts.unsqueeze(1) + T.minimum(step, T.clamp(lengths - 1, min=0).unsqueeze(1)),
                     max=rows.shape[0] - 1)  # (B, longest)
    valid = T.index_select(keep, 0, gather.reshape(-1)).reshape(bags, longest) & (step < lengths.unsqueeze(1))
    block = T.index_select(rows, 0, gather.reshape(-1)).reshape(bags, longest, dim)
    block = T.where(valid.unsqueeze(2), block, float("-inf"))
    values = block.max(1)[0]
    empty = ~valid.any(1, keepdim=True)
    return T.where(empty, 0.0, values)
