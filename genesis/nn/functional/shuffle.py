"""Rearranging channels and pixels: ``pixel_shuffle``, ``pixel_unshuffle`` and ``channel_shuffle``."""

from __future__ import annotations

from genesis.ops._args import keep_memory_format, new_memory
from genesis.tensor import Tensor


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r)."""
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    nd = x.ndim
    x = x.permute(*range(nd - 5), nd - 5, nd - 2, nd - 4, nd - 1, nd - 3)  # (..., C, H, r, W, r)
    return keep_memory_format(new_memory(x.reshape(*lead, c // (r * r), h * r, w * r), input), input)


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
    return keep_memory_format(new_memory(x.reshape(*lead, c * r * r, h // r, w // r), input), input)


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
    return new_memory(x.reshape(n, c, *rest), input)


native_channel_shuffle = channel_shuffle
