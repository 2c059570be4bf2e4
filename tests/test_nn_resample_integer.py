"""``interpolate`` on integer input against torch: uint8 images in every mode torch's kernels take them (nearest,
nearest-exact, bilinear and bicubic, antialiased or not, and antialiased lanczos), bit-identical with torch's CPU
results, and the ``NotImplementedError`` torch raises for the other integer dtypes and modes."""

from __future__ import annotations

import math
import random

import pytest
import torch

import genesis
from tests.helpers import DEVICE, TORCH_DTYPE, check, check_error, rand, requires_torch_lanczos, to_torch

BYTES = torch.uint8


def image(*shape: int, seed: int = 0, edges: bool = False) -> torch.Tensor:
    """Random uint8 pixels; ``edges``: only 0 and 255, whose sharp steps make bicubic overshoot (clamped)."""
    gen = torch.Generator().manual_seed(seed)
    if edges:
        return (torch.rand(shape, generator=gen) < 0.5).to(BYTES) * 255
    return torch.randint(0, 256, shape, generator=gen, dtype=BYTES)


def resize(fmt: str | None = None, **kwargs):
    """``interpolate(x, **kwargs)``, of ``x`` made contiguous in memory format ``fmt`` (``"channels_last"``...) first
    on each side (the copies given to Genesis on another device are contiguous)."""
    def fn(lib, x):
        return lib.nn.functional.interpolate(x if fmt is None else x.contiguous(memory_format=getattr(lib, fmt)),
                                             **kwargs)
    return fn


def test_uint8_bilinear_and_bicubic_small_image():
    # The reported case: a 2 x 3 image to 3 x 5 (bicubic gave all zeros, bilinear a nearest-like copy)
    x = torch.tensor([[[[172, 47, 117], [192, 67, 251]]]], dtype=BYTES)
    for mode in ("bilinear", "bicubic"):
        check(resize(size=(3, 5), mode=mode), x)


SIZES = [
    dict(size=(3, 5)), dict(size=(23, 17)), dict(size=(4, 2)), dict(size=(1, 9)), dict(size=(11, 7)),
    dict(size=(5, 30)), dict(scale_factor=0.37), dict(scale_factor=(2.5, 0.45)), dict(scale_factor=(1.05, 2.01)),
    dict(scale_factor=(0.3, 1.6), recompute_scale_factor=True),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kwargs", SIZES, ids=str)
def test_uint8_bilinear_bicubic_bit_identical(mode, antialias, align_corners, kwargs):
    # Up, down, mixed, a dim that stays (skipped, as torch's), to and from one pixel; three channels (torch's AVX2
    # kernel) and random and 0/255 images
    fn = resize(mode=mode, antialias=antialias, align_corners=align_corners, **kwargs)
    check(fn, image(2, 3, 11, 7))
    check(fn, image(1, 4, 11, 7, seed=1, edges=True))
    if "size" in kwargs:
        check(fn, image(1, 1, 1, 1, seed=2))


@requires_torch_lanczos
@pytest.mark.parametrize("kwargs", SIZES, ids=str)
def test_uint8_lanczos_bit_identical(kwargs):
    # torch's Lanczos window (always antialiased) in the same fixed-point arithmetic as the other filters
    fn = resize(mode="lanczos", antialias=True, **kwargs)
    check(fn, image(2, 3, 11, 7))
    check(fn, image(1, 5, 11, 7, seed=1, edges=True))


@pytest.mark.parametrize("antialias", [False, True])
def test_uint8_many_random_images(antialias):
    # Random sizes, factors and modes: every pixel equals torch's
    rng = random.Random(int(antialias))
    for case in range(40):
        mode = rng.choice(["bilinear", "bicubic"])
        h, w = rng.randint(1, 60), rng.randint(1, 60)
        if rng.random() < 0.5:
            kwargs = dict(size=(rng.randint(1, 70), rng.randint(1, 70)))
        else:
            factors = (rng.uniform(0.05, 3.0), rng.uniform(0.05, 3.0))
            if min(math.floor(s * f) for s, f in zip((h, w), factors)) < 1:
                continue
            kwargs = dict(scale_factor=factors)
        fn = resize(mode=mode, antialias=antialias, align_corners=rng.random() < 0.3, **kwargs)
        check(fn, image(2, rng.choice([1, 3, 4]), h, w, seed=case, edges=rng.random() < 0.3))


def test_uint8_large_factors_and_channels():
    # Downsampling by 100 with antialias (hundreds of taps per pixel, the finest fixed-point precision), more than
    # four channels (torch's generic kernel rather than its AVX2 one) and channels_last input
    check(resize(size=(3, 2), mode="bilinear", antialias=True), image(1, 2, 300, 200))
    check(resize(size=(3, 2), mode="bicubic", antialias=True), image(1, 1, 300, 200, seed=1))
    check(resize(size=(200, 3), mode="bicubic"), image(1, 2, 4, 300, seed=2, edges=True))
    for mode in ("bilinear", "bicubic"):
        for antialias in (False, True):
            fn = resize(size=(9, 13), mode=mode, antialias=antialias)
            check(fn, image(2, 7, 17, 5, seed=3))
            check(resize("channels_last", size=(9, 13), mode=mode, antialias=antialias), image(2, 5, 17, 5, seed=4))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
def test_uint8_one_pixel_wide_output_many_channels(mode, antialias):
    # torch's generic uint8 kernel (more than four channels) reads an output one pixel wide wrongly; its AVX2 kernel
    # (four channels or fewer) gets it right and is the reference, one group of channels at a time
    def column(lib, x):
        if lib is torch:
            return torch.cat([resize(size=(5, 1), mode=mode, antialias=antialias)(torch, c) for c in x.split(4, 1)], 1)
        return resize(size=(5, 1), mode=mode, antialias=antialias)(lib, x)
    check(column, image(2, 7, 13, 9))


@pytest.mark.parametrize("kwargs", [
    dict(size=7), dict(size=31), dict(scale_factor=1.05), dict(scale_factor=2.01), dict(scale_factor=0.7),
], ids=str)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_uint8_nearest_1d_2d_3d(kwargs, mode):
    # torch computes nearest indices in float32 with two kernels whose arithmetic differs where a product lands
    # next to an integer: its channels-last one (small 2-d outputs, channels_last input of more than three
    # channels) copies a dim that keeps its size or doubles, its generic one does not. Both are followed.
    check(resize(mode=mode, **kwargs), image(2, 3, 20))
    check(resize(mode=mode, **kwargs), image(2, 3, 20, 60, seed=1))
    check(resize(mode=mode, **kwargs), image(2, 3, 10, 130, seed=2))
    check(resize("channels_last", mode=mode, **kwargs), image(1, 5, 10, 130, seed=3))
    check(resize(mode=mode, **kwargs), image(1, 2, 10, 6, 20, seed=4))
    check(resize("channels_last_3d", mode=mode, **kwargs), image(1, 5, 10, 6, 20))
    check(resize(mode=mode, **kwargs), image(1, 2, 10, 6, 20, seed=5).float())


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.bool], ids=str)
@pytest.mark.parametrize("mode, shape, kwargs", [
    ("nearest", (1, 2, 4), {}), ("nearest-exact", (1, 2, 4, 4), {}), ("nearest", (1, 2, 3, 4, 4), {}),
    ("linear", (1, 2, 4), {}), ("bilinear", (1, 2, 4, 4), {}), ("bicubic", (1, 2, 4, 4), {}),
    ("bilinear", (1, 2, 4, 4), dict(antialias=True)), ("bicubic", (1, 2, 4, 4), dict(antialias=True)),
    ("trilinear", (1, 2, 3, 4, 4), {}), ("area", (1, 2, 4, 4), {}),
], ids=str)
def test_other_integer_dtypes_raise_like_torch(dtype, mode, shape, kwargs):
    x = image(*shape).to(dtype)
    check_error(NotImplementedError, resize(size=(3,) * (len(shape) - 2), mode=mode, **kwargs), x,
                match="not implemented")


@pytest.mark.parametrize("mode, shape", [
    ("linear", (1, 2, 4)), ("trilinear", (1, 2, 3, 4, 4)), ("area", (1, 2, 4)), ("area", (1, 2, 4, 4)),
    ("area", (1, 2, 3, 4, 4)),
], ids=str)
def test_uint8_modes_torch_rejects(mode, shape):
    check_error(NotImplementedError, resize(size=(3,) * (len(shape) - 2), mode=mode), image(*shape),
                match="not implemented")


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_float_nearest_1d_indices_as_torch(mode: str, dtype: torch.dtype) -> None:
    """1-d float nearest picks torch's 1-d kernel's sources (its generic float32 arithmetic, not the 2-d kernel's
    shortcuts) at sizes and factors where a product lands next to an integer, and its gradient sums the output
    gradients over the picks. With a scale factor, torch's own backward picks other sources than its forward (2.01
    and 1.05 here): there the values are compared with torch's and the gradient with the sum over the picks."""
    x = rand(2, 3, 13, dtype=dtype, seed=11)
    g_dtype = next(g for g, t in TORCH_DTYPE.items() if t is dtype)
    for kwargs in ({"size": 27}, {"size": 26}, {"size": 7}, {"size": 150}):
        check(lambda lib, x, kw=kwargs: lib.nn.functional.interpolate(x, mode=mode, **kw), x)
    for factor in (2.01, 1.05, 1 / 3, 2.5):
        check(lambda lib, x, f=factor: lib.nn.functional.interpolate(x, mode=mode, scale_factor=f), x, backward=False)
        ramp = genesis.arange(13.0, dtype=g_dtype, device=DEVICE).reshape(1, 1, 13).requires_grad_()
        out = genesis.nn.functional.interpolate(ramp, mode=mode, scale_factor=factor)
        out.sum().backward()
        picks = to_torch(out.detach()).long().flatten()  # the ramp's values are its indices
        expected = torch.zeros(13, dtype=dtype).index_add_(0, picks, torch.ones(picks.numel(), dtype=dtype))
        assert torch.equal(to_torch(ramp.grad).flatten(), expected)
