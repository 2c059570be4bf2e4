"""Pooling, batch norm, group norm, resampling and the embedding gradient against torch in float32 and half
precision, on odd sizes and length-1 dims (each a single kernel each way on CUDA): values and every gradient."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
from tests.helpers import DEVICE, check, check_error, check_module, rand, requires_torch_lanczos, to_genesis, to_torch

F32, BF16 = torch.float32, torch.bfloat16


def _with_nan(x: torch.Tensor) -> torch.Tensor:
    x = x.detach().clone()
    x.view(-1)[5] = float("nan")
    return x.requires_grad_()


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True},
    {"kernel_size": (2, 3), "stride": (3, 1), "padding": (1, 0), "ceil_mode": True},
    {"kernel_size": 1},
])
def test_max_pool2d_float32_odd_sizes_nan_and_strided_input(kwargs):
    fn = lambda lib, x: lib.nn.functional.max_pool2d(x, **kwargs, return_indices=True)  # noqa: E731
    check(fn, rand(2, 3, 9, 11, dtype=F32))
    check(fn, _with_nan(rand(1, 2, 5, 7, dtype=F32)))
    check(lambda lib, x: lib.nn.functional.max_pool2d(x.transpose(2, 3), **kwargs), rand(2, 3, 11, 9, dtype=F32))
    check(lambda lib, x: lib.nn.functional.max_pool2d(x, 1), rand(1, 1, 1, 1, dtype=F32))


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": (3, 2), "stride": 1, "padding": (1, 1), "divisor_override": 5},
])
def test_avg_pool2d_float32_and_bfloat16(kwargs):
    check(lambda lib, x: lib.nn.functional.avg_pool2d(x, **kwargs), rand(2, 3, 9, 11, dtype=F32))
    check(lambda lib, x: lib.nn.functional.avg_pool2d(x, **kwargs), rand(2, 3, 9, 11, dtype=BF16))


def test_pool_1d_3d_float32():
    check(lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 2, 1, dilation=2, ceil_mode=True),
          rand(2, 3, 13, dtype=F32))
    check(lambda lib, x: lib.nn.functional.avg_pool1d(x, 4, 3, 2, ceil_mode=True, count_include_pad=False),
          rand(2, 3, 13, dtype=F32))
    check(lambda lib, x: lib.nn.functional.max_pool3d(x, 3, 2, 1, dilation=(1, 2, 1), return_indices=True),
          rand(1, 2, 5, 6, 7, dtype=F32))
    check(lambda lib, x: lib.nn.functional.avg_pool3d(x, (2, 3, 2), 2, 1, ceil_mode=True, divisor_override=4),
          rand(1, 2, 5, 6, 7, dtype=F32))


@pytest.mark.parametrize("size", [(3, 4), (5, 2), (1, 3), (7, 11), (None, 4)])
def test_adaptive_pools_uneven_windows_float32(size):
    check(lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, size), rand(2, 3, 7, 9, dtype=F32))
    check(lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, size), rand(2, 3, 7, 9, dtype=F32))
    check(lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, size), _with_nan(rand(3, 7, 9, dtype=F32)))


@pytest.mark.parametrize("op, shape, size", [
    ("adaptive_avg_pool2d", (2, 3, 5, 6), (0, 3)), ("adaptive_max_pool2d", (2, 3, 5, 6), (2, 0)),
    ("adaptive_avg_pool1d", (3, 5), 0), ("adaptive_max_pool1d", (2, 3, 5), 0),
    ("adaptive_avg_pool3d", (2, 4, 5, 6), (0, 2, 2)), ("adaptive_max_pool3d", (1, 2, 4, 5, 6), (1, 0, 2)),
    ("adaptive_avg_pool2d", (2, 3, 5, 6), (None, 0)),
], ids=str)
def test_adaptive_pools_to_empty_outputs(op, shape, size):
    # An output size of 0 gives an empty result, as torch's (whose backward then refuses the empty gradient)
    check(lambda lib, x: getattr(lib.nn.functional, op)(x, size), rand(*shape), backward=False)
    if "max" in op:
        check(lambda lib, x: getattr(lib.nn.functional, op)(x, size, return_indices=True), rand(*shape),
              backward=False)


@pytest.mark.parametrize("op, shape, size, message", [
    ("adaptive_avg_pool1d", (2, 3, 5), (2, 2), r"^adaptive_avg_pool1d\(\) argument 'output_size' should contain one "
                                               r"int \(got 2\)$"),
    ("adaptive_max_pool1d", (2, 3, 5), (2, 2), "should contain one int"),
    ("adaptive_avg_pool2d", (2, 3, 5, 6), (2, 2, 2), "^adaptive_avg_pool2d: output_size must be 2$"),
    ("adaptive_avg_pool2d", (2, 3, 5, 6), (2,), "^adaptive_avg_pool2d: output_size must be 2$"),
    ("adaptive_max_pool2d", (2, 3, 5, 6), (2, 2, 2), r"^adaptive_max_pool2d\(\): internal error: "
                                                     r"output_size.size\(\) must be 2$"),
    ("adaptive_avg_pool3d", (1, 2, 4, 5, 6), (2, 2), "^adaptive_avg_pool3d: output_size must be 3$"),
    ("adaptive_max_pool3d", (1, 2, 4, 5, 6), (2, 2), r"output_size.size\(\) must be 3$"),
    ("adaptive_avg_pool2d", (5,), 2, r"^adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[5\]$"),
    ("adaptive_max_pool2d", (5,), 2, r"^adaptive_max_pool2d\(\): Expected 3D or 4D tensor, but got: \[5\]$"),
    ("adaptive_avg_pool1d", (5,), 2, r"^Expected 2 to 3 dimensions, but got 1-dimensional tensor"),
], ids=str)
def test_adaptive_pools_refuse_bad_ranks_as_torch(op, shape, size, message):
    x = rand(*shape)
    with pytest.raises(RuntimeError, match=message):
        getattr(torch.nn.functional, op)(x, size)
    check_error(RuntimeError, lambda lib, x: getattr(lib.nn.functional, op)(x, size), x, match=message)
    check_error(RuntimeError, lambda lib, x: lib.nn.AdaptiveAvgPool2d((2, 2, 2))(x), rand(1, 2, 4, 4),
                match="output_size must be 2")


def test_adaptive_avg_pool1d_and_bfloat16():
    check(lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 4), rand(2, 3, 11, dtype=F32))
    check(lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (3, 5)), rand(2, 3, 7, 9, dtype=BF16))
    check(lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (4, 4)), rand(2, 3, 5, 6))


def test_pool_of_integers_as_torch():
    x = torch.arange(35).reshape(1, 1, 5, 7) - 10
    check(lambda lib, x: lib.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True), x)
    check(lambda lib, x: lib.nn.functional.max_pool2d(x, 2), x.to(torch.uint8))
    check(lambda lib, x: lib.nn.functional.avg_pool2d(x, 3, 1, 1), x + 10)
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.avg_pool2d(x, 2), x.int())
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.max_pool2d(x, 2), x > 0)
    # Adaptive pools and grid sampling have real floating kernels only, in torch.
    for op in ("adaptive_avg_pool2d", "adaptive_max_pool2d"):
        for t in (x, x.to(torch.uint8), x > 0, x.to(torch.complex64)):
            check_error(NotImplementedError, lambda lib, t, op=op: getattr(lib.nn.functional, op)(t, 2), t)
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x[0], 3), x)
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x[None], 2), x)
    check_error(NotImplementedError, lambda lib, x, g: lib.nn.functional.grid_sample(x, g, align_corners=False),
                x.to(torch.uint8), rand(1, 2, 2, 2, dtype=F32))


@pytest.mark.parametrize("shape", [(7, 5), (3, 5, 7, 9), (1, 4, 1, 1), (2, 3, 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_float32_training_and_eval(shape, affine):
    channels = shape[1]
    mean, var = rand(channels, dtype=F32, requires_grad=False), rand(channels, dtype=F32, low=0.5, requires_grad=False)
    weight, bias = (rand(channels, dtype=F32, seed=1), rand(channels, dtype=F32, seed=2)) if affine else (None, None)
    for training in (True, False):
        def f(lib, x, *wb, training=training):
            m, v = (to_genesis(t, requires_grad=False) if lib is genesis else t.clone() for t in (mean, var))
            out = lib.nn.functional.batch_norm(x, m, v, *(wb or (None, None)), training=training, momentum=0.3)
            return out, m, v
        if training and math.prod(shape) // channels == 1:
            continue  # one value per channel: training raises (tested elsewhere)
        check(f, rand(*shape, dtype=F32, low=-2.0, high=3.0), *((weight, bias) if affine else ()))


@pytest.mark.parametrize("param_dtype", [BF16, F32])
def test_batch_norm_half_precision_input(param_dtype):
    channels = 5
    for training in (True, False):
        def f(lib, x, w, b, training=training):
            mean = (to_genesis if lib is genesis else torch.Tensor.clone)(rand(channels, dtype=param_dtype,
                                                                              requires_grad=False))
            var = (to_genesis if lib is genesis else torch.Tensor.clone)(rand(channels, dtype=param_dtype, low=0.5,
                                                                             requires_grad=False))
            return lib.nn.functional.batch_norm(x, mean, var, w, b, training=training, momentum=0.2), mean, var
        check(f, rand(6, channels, 3, 7, dtype=BF16, low=-2.0, high=3.0), rand(channels, dtype=param_dtype, seed=1),
              rand(channels, dtype=param_dtype, seed=2))


def test_batch_norm_modules_train_then_eval_bfloat16_input_float32():
    t = torch.nn.BatchNorm2d(5)
    g = nn.BatchNorm2d(5).to(DEVICE)
    check_module(g, t, rand(4, 5, 3, 7, dtype=F32))
    t.eval()
    g.eval()
    check_module(g, t, rand(4, 5, 3, 7, dtype=F32, seed=3))


@pytest.mark.parametrize("shape, groups", [((2, 6, 5), 3), ((3, 4, 3, 7), 2), ((2, 4), 2), ((1, 6, 1, 17), 1)])
def test_group_norm_forward_and_backward(shape, groups):
    channels = shape[1]
    w, b = rand(channels, dtype=F32, seed=1), rand(channels, dtype=F32, seed=2)
    check(lambda lib, x, w, b: lib.nn.functional.group_norm(x, groups, w, b), rand(*shape, dtype=F32), w, b)
    check(lambda lib, x: lib.nn.functional.group_norm(x, groups), rand(*shape))
    check(lambda lib, x, w, b: lib.nn.functional.group_norm(x, groups, w, b), rand(*shape, dtype=BF16),
          w.to(BF16), b.to(BF16))


def test_group_norm_module():
    t = torch.nn.GroupNorm(3, 6)
    g = nn.GroupNorm(3, 6).to(DEVICE)
    check_module(g, t, rand(2, 6, 5, 3, dtype=F32))


@pytest.mark.parametrize("kwargs", [
    {"size": (9, 13), "mode": "bilinear"}, {"size": (9, 13), "mode": "bilinear", "align_corners": True},
    {"size": (3, 2), "mode": "bilinear"}, {"size": (3, 2), "mode": "bilinear", "align_corners": True},
    {"scale_factor": (2.5, 0.7), "mode": "bilinear"}, {"scale_factor": 3, "mode": "nearest"},
    {"size": (7, 4), "mode": "nearest"}, {"size": (7, 4), "mode": "nearest-exact"},
])
def test_interpolate_float32_forward_and_backward(kwargs):
    check(lambda lib, x: lib.nn.functional.interpolate(x, **kwargs), rand(2, 3, 5, 7, dtype=F32))


def test_interpolate_length_one_half_precision_and_1d():
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=(3, 5), mode="bilinear", align_corners=True),
          rand(1, 1, 1, 1, dtype=F32))
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=(3, 5), mode="bilinear"), rand(1, 1, 1, 1, dtype=F32))
    check(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"), rand(2, 3, 4, 5,
                                                                                                dtype=BF16))
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=11, mode="linear", align_corners=True),
          rand(2, 3, 4, dtype=F32))
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=5), rand(2, 3, 4, dtype=F32))


@pytest.mark.parametrize("kwargs", [
    dict(scale_factor=2, mode="bicubic"), dict(size=(8, 4), mode="bicubic", align_corners=True),
    dict(size=(9, 13), mode="bicubic"), dict(scale_factor=1.5, mode="bicubic", align_corners=False),
    dict(size=(3, 3), mode="area"), dict(scale_factor=0.5, mode="area"), dict(size=(4, 6), mode="area"),
], ids=str)
def test_interpolate_bicubic_and_area(kwargs):
    check(lambda lib, x: lib.nn.functional.interpolate(x, **kwargs), rand(2, 3, 5, 7))


def test_interpolate_area_1d_and_3d_and_bicubic_rank():
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=4, mode="area"), rand(1, 2, 9))
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=(2, 3, 2), mode="area"), rand(1, 2, 4, 5, 6))
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.interpolate(x, size=4, mode="bicubic"),
                rand(1, 2, 9))
    for shape in ((4, 4), (1, 1, 2, 2, 2, 2)):  # only 3-D to 5-D input (N, C, *spatial)
        check_error(NotImplementedError, lambda lib, x: lib.nn.functional.interpolate(x, size=2), rand(*shape))


ANTIALIAS_SIZES = [
    dict(size=(4, 3)), dict(size=(2, 5)), dict(size=(1, 2)), dict(size=(23, 17)), dict(size=(5, 12)),
    dict(scale_factor=0.37), dict(scale_factor=(0.5, 2.3)), dict(scale_factor=(1.6, 0.45)),
    dict(scale_factor=(0.3, 0.6), recompute_scale_factor=True),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kwargs", ANTIALIAS_SIZES, ids=str)
def test_interpolate_antialias(mode, align_corners, kwargs):
    # Down- and upsampling, integer and fractional factors, a dim shrunk to one pixel, one dim down and one up
    check(lambda lib, x: lib.nn.functional.interpolate(x, mode=mode, align_corners=align_corners, antialias=True,
                                                       **kwargs), rand(2, 3, 11, 7))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_antialias_float32_and_torchvision_resize(mode):
    # torch computes the filter weights in float32 (off by ~2e-6 from a float64 reference on these sizes), Genesis
    # in float64 (off by ~1e-7): absolute tolerance 1e-5
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=(9, 5), mode=mode, antialias=True),
          rand(2, 3, 19, 26, dtype=F32), atol=1e-5)
    # torchvision's Resize(32) on a tensor image: the shorter side to 32, antialiased, align_corners=False
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=(32, 48), mode=mode, align_corners=False,
                                                       antialias=True), rand(1, 3, 75, 112, dtype=F32), atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_interpolate_antialias_half_precision(dtype):
    # torch's CPU kernels have no half-precision antialiasing (its CUDA ones compute in float32): the reference is
    # torch on the same values in float32, rounded once, as Genesis computes them
    def resize(lib, x):
        y = x if lib is genesis else x.float()
        return lib.nn.functional.interpolate(y, size=(4, 9), mode="bicubic", antialias=True).to(x.dtype)
    check(resize, rand(2, 3, 11, 7, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mode, shape, size", [("bicubic", (2, 3, 6, 8), (9, 5)), ("bicubic", (1, 2, 5, 4), (2, 11)),
                                               ("trilinear", (1, 2, 4, 6, 5), (7, 3, 8))])
def test_interpolate_half_precision_blends_in_float32(dtype, mode, shape, size):
    # torch's kernels accumulate half-precision input in float32; Genesis blends in float32 and rounds once: within
    # one ulp of torch's float32 result (rounding every tap and dim to the half type was up to 100 ulps off)
    def resize(lib, x):
        y = x if lib is genesis else x.float()
        return lib.nn.functional.interpolate(y, size=size, mode=mode, align_corners=False).to(x.dtype)
    x = rand(*shape, dtype=dtype)
    out = to_torch(check(resize, x)).float()
    exact = torch.nn.functional.interpolate(x.detach().float(), size=size, mode=mode, align_corners=False)
    assert ((out - exact).abs() <= torch.finfo(dtype).eps * exact.abs()).all()


def test_interpolate_antialias_upsampling_against_plain_modes():
    # Upsampling by the triangle filter is plain bilinear (align_corners=False); the antialiased bicubic is Keys'
    # a = -0.5 with weights renormalized at the borders, not plain bicubic's -0.75 with clamped taps
    x = to_genesis(rand(2, 3, 5, 7), requires_grad=False)
    resize = genesis.nn.functional.interpolate
    plain, smooth = resize(x, size=(9, 13), mode="bilinear"), resize(x, size=(9, 13), mode="bilinear", antialias=True)
    torch.testing.assert_close(to_torch(smooth), to_torch(plain))
    plain, smooth = resize(x, size=(9, 13), mode="bicubic"), resize(x, size=(9, 13), mode="bicubic", antialias=True)
    assert not torch.allclose(to_torch(smooth), to_torch(plain))


def test_interpolate_antialias_edge_cases():
    # torch skips a dim whose size stays even when a scale_factor says otherwise (values compared; its backward
    # then uses that scale's weights, which are not the transpose of its forward, so gradients are not compared)
    check(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=(1.1, 0.5), mode="bilinear", antialias=True),
          rand(2, 3, 5, 8), backward=False)
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=(5, 8), mode="bicubic", antialias=True),
          rand(1, 2, 5, 8))

    # An output one pixel wide: torch's CPU kernel gives every output row the first row's value there, so the
    # reference is torch on the transposed image (one pixel high), which it resizes correctly
    def one_column(lib, x):
        if lib is genesis:
            return lib.nn.functional.interpolate(x, size=(9, 1), mode="bicubic", antialias=True)
        return lib.nn.functional.interpolate(x.mT, size=(1, 9), mode="bicubic", antialias=True).mT
    check(one_column, rand(2, 3, 11, 7))


def test_interpolate_antialias_errors():
    x = rand(1, 2, 5, 6, dtype=F32)
    for mode in ("nearest", "nearest-exact", "area"):
        check_error(ValueError, lambda lib, x, mode=mode: lib.nn.functional.interpolate(x, size=(3, 3), mode=mode,
                                                                                        antialias=True),
                    x, match="Anti-alias")
    check_error(ValueError, lambda lib, x: lib.nn.functional.interpolate(x, size=3, mode="bilinear", antialias=True),
                rand(1, 2, 5, dtype=F32), match="Anti-alias")
    check_error(ValueError, lambda lib, x: lib.nn.functional.interpolate(x, size=3, mode="trilinear", antialias=True),
                rand(1, 2, 4, 5, 6, dtype=F32), match="Anti-alias")


@requires_torch_lanczos
@pytest.mark.parametrize("kwargs", ANTIALIAS_SIZES, ids=str)
def test_interpolate_lanczos(kwargs):
    # torch's 3-lobe Lanczos window, antialiased (the only way torch takes it), down, up and mixed: values and the
    # gradient
    check(lambda lib, x: lib.nn.functional.interpolate(x, mode="lanczos", antialias=True, **kwargs), rand(2, 3, 11, 7))
    check(lambda lib, x: lib.nn.functional.interpolate(x, mode="lanczos", antialias=True, **kwargs),
          rand(1, 2, 11, 7, dtype=F32), atol=1e-5)


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(), ValueError, "^either size or scale_factor should be defined$"),
    (dict(size=3, scale_factor=2), ValueError, "^only one of size or scale_factor should be defined$"),
    (dict(size=(3, 3, 3)), ValueError, r"^Input and output must have the same number of spatial dimensions, but got "
                                       r"input with spatial dimensions of \[5, 6\] and output size of \(3, 3, 3\)"),
    (dict(scale_factor=(2, 2, 2)), ValueError, r"^Input and scale_factor must have the same number of spatial "
                                               r"dimensions, but got input with spatial dimensions of \[5, 6\]"),
    (dict(size=(3, 3), recompute_scale_factor=True), ValueError, "recompute_scale_factor is not meaningful"),
    (dict(size=(3.0, 3)), TypeError, "^expected size to be one of int or Tuple"),
    (dict(size=3, mode="nearest", align_corners=True), ValueError, "^align_corners option can only be set"),
    pytest.param(dict(size=3, mode="area", antialias=True), ValueError,
                 "^Anti-alias option is restricted to bilinear, bicubic", marks=requires_torch_lanczos),
    (dict(size=3, mode="linear"), NotImplementedError, "^Got 4D input, but linear mode needs 3D input$"),
    (dict(size=3, mode="trilinear"), NotImplementedError, "^Got 4D input, but trilinear mode needs 5D input$"),
    (dict(size=3, mode="bogus"), NotImplementedError, r"^Input Error: Only 3D, 4D and 5D input Tensors supported "
                                                      r"\(got 4D\) for the modes: .* \(got bogus\)$"),
    pytest.param(dict(size=3, mode="lanczos"), ValueError, "^Lanczos mode requires antialias=True$",
                 marks=requires_torch_lanczos),
    pytest.param(dict(size=3, mode="lanczos", antialias=True, align_corners=True), ValueError,
                 "^Lanczos mode does not support align_corners=True$", marks=requires_torch_lanczos),
], ids=str)
def test_interpolate_argument_errors_as_torch(kwargs, exc, message):
    x = rand(1, 2, 5, 6)
    with pytest.raises(exc, match=message):
        torch.nn.functional.interpolate(x, **kwargs)
    check_error(exc, lambda lib, x: lib.nn.functional.interpolate(x, **kwargs), x, match=message)


def test_interpolate_sizes_of_other_types():
    # torch.Size slices, integer tensors and numpy integers are sizes; a wrong-length scale_factor never reaches a
    # kernel; bicubic and lanczos on other ranks give torch's generic error
    x = rand(1, 2, 5, 6)
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=x[0, 0, :3, :4].shape[-2:]), x)
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=(lib.tensor(3), 4), mode="bilinear"), x)
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=(np.int64(3), np.int32(7)), mode="bicubic"), x)
    for mode, shape in (("bicubic", (1, 2, 5)), ("bicubic", (1, 2, 3, 4, 5)), ("lanczos", (1, 2, 5))):
        check_error(NotImplementedError, lambda lib, x, mode=mode: lib.nn.functional.interpolate(x, size=3, mode=mode),
                    rand(*shape), match="^Input Error")


def test_interpolate_double_backward():
    x = to_genesis(rand(1, 2, 3, 4))
    y = genesis.nn.functional.interpolate(x, size=(5, 6), mode="bilinear")
    (gx,) = genesis.autograd.grad((y * y).sum(), x, create_graph=True)
    xt = rand(1, 2, 3, 4)
    yt = torch.nn.functional.interpolate(xt, size=(5, 6), mode="bilinear")
    (gt,) = torch.autograd.grad((yt * yt).sum(), xt, create_graph=True)
    torch.testing.assert_close(to_torch(gx), gt.detach())
    gx.sum().backward()
    gt.sum().backward()
    torch.testing.assert_close(to_torch(x.grad), xt.grad)


def test_embedding_gradient_with_repeated_indices():
    idx = torch.randint(0, 7, (3, 41), generator=torch.Generator().manual_seed(0))
    check(lambda lib, w, i: lib.nn.functional.embedding(i, w), rand(7, 5, dtype=F32), idx)
    check(lambda lib, w, i: lib.nn.functional.embedding(i, w), rand(3, 1, dtype=F32), torch.tensor([2]))
    # bfloat16 with an index repeated at most twice: torch's CPU kernel adds in bfloat16, the GPU one in float32,
    # so longer runs of one index round differently (both within bfloat16's precision of the exact sum).
    check(lambda lib, w, i: lib.nn.functional.embedding(i, w), rand(7, 5, dtype=BF16), torch.tensor([[3, 0, 3, 6]]))


def test_embedding_gradient_is_bitwise_reproducible():
    gen = torch.Generator().manual_seed(1)
    idx = to_genesis(torch.randint(0, 50, (4096,), generator=gen))
    grad = to_genesis(torch.randn(4096, 64, generator=gen), requires_grad=False)
    weight = genesis.zeros(50, 64, device=DEVICE, requires_grad=True)
    grads = []
    for _ in range(2):
        weight.grad = None
        genesis.nn.functional.embedding(idx, weight).backward(grad)
        grads.append(to_torch(weight.grad))
    assert torch.equal(grads[0], grads[1])
    ref = torch.zeros(50, 64, dtype=torch.float64).index_add_(0, to_torch(idx), to_torch(grad).double())
    torch.testing.assert_close(grads[0].double(), ref, rtol=1e-5, atol=1e-4)


def test_norm_and_pool_gradients_are_bitwise_reproducible():
    gen = torch.Generator().manual_seed(2)
    x = to_genesis(torch.randn(8, 16, 33, 35, generator=gen).requires_grad_())
    dy = to_genesis(torch.randn(8, 16, 33, 35, generator=gen), requires_grad=False)
    w = genesis.ones(16, device=DEVICE, requires_grad=True)
    b = genesis.zeros(16, device=DEVICE, requires_grad=True)
    F = genesis.nn.functional
    for fn in (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
               lambda x, w, b: F.group_norm(x, 4, w, b),
               lambda x, w, b: F.max_pool2d(x * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1), 3, 1, 1),
               lambda x, w, b: F.interpolate(x * w.reshape(1, -1, 1, 1), scale_factor=0.7, mode="bilinear") + b.sum()):
        runs = []
        for _ in range(2):
            y = fn(x, w, b)
            runs.append([to_torch(g) for g in genesis.autograd.grad(y, (x, w, b), dy if y.shape == dy.shape else
                                                                     genesis.ones_like(y))])
        for first, second in zip(*runs):
            assert torch.equal(first, second)


def test_bad_sizes_raise_like_torch():
    x = rand(1, 2, 3, 4, dtype=F32)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.interpolate(x, size=(0, 2)), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=0.1, mode="bilinear"), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.interpolate(x, size=3), rand(1, 2, 0, dtype=F32))
    check_error(RuntimeError, lambda lib, x, w: lib.nn.functional.group_norm(x, 2, w), x, rand(3, dtype=F32))
    check_error(RuntimeError, lambda lib, x, b: lib.nn.functional.group_norm(x, 2, None, b), x, rand(1, 2, dtype=F32))


def _channels_last_out(fn):
    """``fn(lib, x, ...)`` on a channels_last copy of x that checks the output is channels_last, as torch's is."""
    def run(lib, x, *rest):
        fmt = lib.channels_last if x.dim() == 4 else lib.channels_last_3d
        out = fn(lib, x.contiguous(memory_format=fmt), *rest)
        assert out.is_contiguous(memory_format=fmt), f"{lib.__name__}: output not channels_last"
        return out
    return run


@pytest.mark.parametrize("dtype,shape", [(F32, (3, 6, 5, 7)), (BF16, (3, 6, 5, 7)), (F32, (2, 150, 3, 4)),
                                         (BF16, (2, 150, 3, 4)), (F32, (2, 5, 3, 4, 2))],
                         ids=["4d-f32", "4d-bf16", "wide-f32", "wide-bf16", "5d-f32"])
def test_batch_norm_keeps_channels_last(dtype, shape):
    """Batch norm of a channels_last network (training, then eval on the running statistics): values, running
    statistics and every gradient as torch's, outputs channels_last."""
    C = shape[1]
    weight, bias = rand(C, dtype=F32, seed=1), rand(C, dtype=F32, seed=2)
    tol = {"rtol": 2e-2, "atol": 2e-2, "grad_rtol": 5e-2, "grad_atol": 5e-2} if dtype == BF16 else {}

    def train_then_eval(lib, x, w, b):
        mean, var = lib.zeros(C, dtype=x.dtype, device=x.device), lib.ones(C, dtype=x.dtype, device=x.device)
        y = lib.nn.functional.batch_norm(x, mean, var, w, b, training=True, momentum=0.3)
        z = lib.nn.functional.batch_norm(x, mean, var, w, b, training=False)
        return y * 2 + z

    check(_channels_last_out(train_then_eval), rand(*shape, dtype=dtype, low=-2.0, high=3.0), weight.to(dtype),
          bias.to(dtype), **tol)


@pytest.mark.parametrize("name, op, shape", [
    ("max_pool2d", lambda lib, x: lib.nn.functional.max_pool2d(x, 3, 2, 1), (2, 3, 7, 7)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2), (2, 3, 8)),
    ("max_pool3d", lambda lib, x: lib.nn.functional.max_pool3d(x, 2), (1, 2, 4, 4, 4)),
    ("max_pool2d unbatched", lambda lib, x: lib.nn.functional.max_pool2d(x, 2), (3, 6, 6)),
    ("avg_pool2d", lambda lib, x: lib.nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (2, 3, 7, 7)),
    ("adaptive_avg_pool2d", lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (2, 3)), (2, 3, 7, 7)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (2, 3)), (2, 3, 7, 7)),
])
def test_pooling_double_backward(name, op, shape):
    # A gradient penalty through pooling: the pooling of the upstream gradient (the gather at the argmax for max).
    def penalty(lib, x):
        y = op(lib, x * x)
        (g,) = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
        return (g * g).sum()
    check(penalty, rand(*shape, seed=3))


_NORM_DTYPES = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "f16": torch.float16}


@pytest.mark.parametrize("x_dtype", sorted(_NORM_DTYPES))
@pytest.mark.parametrize("w_dtype", sorted(_NORM_DTYPES))
@pytest.mark.parametrize("bias", ["like weight", "f32"])
@pytest.mark.parametrize("op", ["layer_norm", "group_norm", "batch_norm", "batch_norm eval", "instance_norm"])
def test_norm_parameter_dtypes_as_torch(x_dtype: str, w_dtype: str, bias: str, op: str) -> None:
    """Parameters of the input's dtype, or float32 under half-precision input, are accepted (values as torch's);
    any other mix raises RuntimeError, as torch's kernels do."""
    xd, wd = _NORM_DTYPES[x_dtype], _NORM_DTYPES[w_dtype]
    bd = wd if bias == "like weight" else torch.float32
    x = rand(2, 4, 3, dtype=xd, requires_grad=False)
    w = torch.linspace(0.5, 1.5, 4, dtype=torch.float64).to(wd)
    b = torch.linspace(-0.5, 0.5, 4, dtype=torch.float64).to(bd)

    def fn(lib, x, w, b):
        F = lib.nn.functional
        if op == "layer_norm":
            return F.layer_norm(x, (3,), w[:3], b[:3])
        if op == "group_norm":
            return F.group_norm(x, 2, w, b)
        if op == "batch_norm":
            return F.batch_norm(x, None, None, w, b, training=True)
        if op == "batch_norm eval":
            return F.batch_norm(x, w, b.abs() + 0.5, training=False)
        return F.instance_norm(x, weight=w, bias=b)

    allowed = (wd is xd and bd is xd) or (xd in (torch.bfloat16, torch.float16) and wd is bd is torch.float32)
    if allowed:
        check(fn, x, w, b, backward=False)
    else:
        check_error(RuntimeError, fn, x, w, b)


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_max_pool_forward_without_indices_matches_torch(dtype):
    # Without grad and without return_indices the argmax is not computed; every way of asking for it still gets it.
    x_t = rand(2, 3, 9, 11, seed=5, dtype=dtype, requires_grad=False)
    x = to_genesis(x_t, requires_grad=False)
    F, TF = genesis.nn.functional, torch.nn.functional
    with genesis.no_grad():
        out = F.max_pool2d(x, 3, 2, 1)
        values, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    t_values, t_indices = TF.max_pool2d(x_t, 3, 2, 1, return_indices=True)
    assert out.grad_fn is None
    for got in (out, values):
        assert torch.equal(to_torch(got), t_values)
    assert torch.equal(to_torch(indices), t_indices)
    assert torch.equal(to_torch(F.max_pool1d(x[0], 3, 2)), TF.max_pool1d(x_t[0], 3, 2))
    # An input that needs no gradient, outside no_grad: no graph, the same values.
    assert torch.equal(to_torch(F.max_pool2d(x, 2)), TF.max_pool2d(x_t, 2))
    # One that does: the gradient through the saved argmax.
    check(lambda lib, t: lib.nn.functional.max_pool2d(t, 3, 2, 1), x_t.clone().requires_grad_())


@pytest.mark.parametrize("dtype,shape,kwargs", [
    (F32, (2, 6, 9, 11), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (BF16, (3, 8, 8, 8), {"kernel_size": 2}),
    (F32, (2, 5, 7, 9), {"kernel_size": (3, 2), "stride": (2, 1), "dilation": (1, 2), "ceil_mode": True}),
    (F32, (2, 3, 4, 5, 6), {"kernel_size": 2, "stride": (1, 2, 2), "padding": 1}),
], ids=["2d", "2d-bf16", "2d-dilated-ceil", "3d"])
def test_pooling_keeps_channels_last(dtype, shape, kwargs):
    """Max and average pooling of a channels_last network: values, argmax indices (in their plane, laid out as
    torch's) and the gradients as torch's, outputs channels_last (3-d average pooling: contiguous, as torch's)."""
    name = "max_pool2d" if len(shape) == 4 else "max_pool3d"
    avg = "avg" + name[3:]
    avg_kwargs = {k: v for k, v in kwargs.items() if k != "dilation"}
    avg_kwargs["padding"] = 0 if "dilation" in kwargs else kwargs.get("padding", 0)

    def pooled(lib, x):
        return getattr(lib.nn.functional, name)(x, **kwargs)

    def averaged(lib, x):
        return getattr(lib.nn.functional, avg)(x, count_include_pad=False, **avg_kwargs)

    def with_indices(lib, x):
        values, indices = getattr(lib.nn.functional, name)(x, return_indices=True, **kwargs)
        return values * (indices % 7 + 1).to(values.dtype)

    x = rand(*shape, dtype=dtype, low=-2.0, high=3.0)
    check(_channels_last_out(pooled), x)
    check(_channels_last_out(with_indices), x)
    tol = {"rtol": 2e-2, "atol": 2e-2, "grad_rtol": 2e-2, "grad_atol": 2e-2} if dtype == BF16 else {}
    if len(shape) == 4:
        check(_channels_last_out(averaged), x, **tol)
    else:  # torch's 3-d average pooling answers in the contiguous layout: so does Genesis's
        fmt3 = (genesis.channels_last_3d, torch.channels_last_3d)
        got = averaged(genesis, to_genesis(x).contiguous(memory_format=fmt3[0]))
        ref = averaged(torch, x.detach().contiguous(memory_format=fmt3[1]))
        assert got.stride() == ref.stride()
        check(averaged, x)
    fmt = genesis.channels_last if len(shape) == 4 else genesis.channels_last_3d
    _, indices = getattr(genesis.nn.functional, name)(to_genesis(x).contiguous(memory_format=fmt),
                                                      return_indices=True, **kwargs)
    t_fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    _, t_indices = getattr(torch.nn.functional, name)(x.detach().contiguous(memory_format=t_fmt),
                                                      return_indices=True, **kwargs)
    assert indices.stride() == t_indices.stride() and torch.equal(to_torch(indices), t_indices)


def _samples(*shape: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("kernel,out", [(2, (4, 5)), ((3, 2), (7, 10)), (2, 1), (3, (1, 4))])
def test_fractional_max_pool2d_as_torch(kernel, out):
    # Given the same samples, the windows, maxima, flat indices and gradients are torch's.
    x, s = rand(2, 3, 9, 11, seed=3), _samples(2, 3, 2, seed=1)
    check(lambda lib, x, s: lib.nn.functional.fractional_max_pool2d(x, kernel, output_size=out, _random_samples=s,
                                                                     return_indices=True), x, s)
    xf, sf = rand(1, 2, 10, 10, seed=5).float(), _samples(1, 2, 2, seed=3, dtype=torch.float32)
    check(lambda lib, x, s: lib.nn.functional.fractional_max_pool2d(x, 3, output_size=(6, 7), _random_samples=s),
          xf, sf)


def test_fractional_max_pool_ratio_unbatched_3d_and_module():
    x, s = rand(2, 3, 9, 11, seed=3), _samples(2, 3, 2, seed=1)
    check(lambda lib, x, s: lib.nn.functional.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.6), _random_samples=s),
          x, s)
    check(lambda lib, x, s: lib.nn.functional.fractional_max_pool2d(x[0], 2, output_size=3, _random_samples=s[:1]),
          x, s)
    check(lambda lib, x, s: lib.nn.functional.fractional_max_pool3d(x, (2, 3, 2), output_size=(3, 4, 5),
                                                                     _random_samples=s, return_indices=True),
          rand(2, 2, 7, 8, 9, seed=4), _samples(2, 2, 3, seed=2))
    check(lambda lib, x, s: lib.nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=s)(x), x, s)
    # Drawn samples: only the shape is comparable.
    g = nn.FractionalMaxPool2d(3, output_size=(4, 5), return_indices=True)(to_genesis(x))
    assert tuple(g[0].shape) == tuple(g[1].shape) == (2, 3, 4, 5) and g[1].dtype is genesis.int64


def test_fractional_max_pool_errors():
    x = rand(2, 3, 9, 11, seed=3)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.fractional_max_pool2d(x, 3, output_size=(8, 4)), x)
    check_error(ValueError, lambda lib, x: lib.nn.functional.fractional_max_pool2d(x, 3), x)
    check_error(RuntimeError, lambda lib, x, s: lib.nn.functional.fractional_max_pool2d(x, 3, output_size=4,
                                                                                        _random_samples=s),
                x, _samples(2, 3, 3, seed=0))
    check_error(ValueError, lambda lib, x: lib.nn.FractionalMaxPool2d(2, output_ratio=1.5)(x), x)
    check_error(ValueError, lambda lib, x: lib.nn.FractionalMaxPool3d(2, output_size=2, output_ratio=0.5)(x), x)


def test_group_and_instance_norm_of_strided_inputs():
    """A transposed (non-dense-row-major) input normalizes as torch's, values and gradients."""
    check(lambda lib, x, w, b: lib.nn.functional.group_norm(x.transpose(2, 3), 2, w, b), rand(2, 4, 3, 5),
          rand(4), rand(4))
    check(lambda lib, x: lib.nn.functional.instance_norm(x.transpose(2, 3)), rand(2, 4, 3, 5))


@pytest.mark.parametrize("kernel", [np.int64(2), (np.int32(2), 2), 2, (2, 2)], ids=["numpy int", "numpy in tuple",
                                                                                 "int", "tuple"])
def test_pooling_and_convolution_take_numpy_integers_as_torch(kernel):
    x = rand(2, 3, 6, 6)
    check(lambda lib, a: lib.nn.functional.max_pool2d(a, kernel, padding=1), x)
    check(lambda lib, a: lib.nn.functional.avg_pool2d(a, kernel), x)
    check(lambda lib, a, w: lib.nn.functional.conv2d(a, w, stride=kernel), x, rand(4, 3, 3, 3), rtol=1e-4, atol=1e-5)
    check(lambda lib, a: lib.nn.MaxPool2d(kernel)(a), x)
    check(lambda lib, a: lib.nn.AvgPool2d(kernel, stride=kernel)(a), x)


@pytest.mark.parametrize("kernel", [2.0, True, (2, 2.0), (True, 2), "ab", None])
def test_pooling_rejects_float_and_bool_sizes_as_torch(kernel):
    x = rand(1, 2, 4, 4)
    for _ in range(2):  # the second call meets the remembered checks of an equal int call
        check_error(TypeError, lambda lib, a: lib.nn.functional.max_pool2d(a, kernel), x, match="kernel_size")
        genesis.nn.functional.max_pool2d(to_genesis(to_torch(x)), 2)
        genesis.nn.functional.max_pool2d(to_genesis(to_torch(x)), (2, 2))
