"""Convolution, pooling and resampling against torch: functions, modules (weights copied), argument errors."""

import pytest
import torch

import genesis
import genesis.nn as nn
from tests.helpers import DEVICE, check, check_error, check_module, rand, to_genesis, to_torch


def conv_fn(name: str, **kwargs: object):
    return lambda lib, x, w, *b: getattr(lib.nn.functional, name)(x, w, *b, **kwargs)


@pytest.mark.parametrize("kwargs", [
    {}, {"stride": 2}, {"padding": 1}, {"padding": (2, 0)}, {"dilation": 2}, {"stride": (2, 1), "padding": (1, 2)},
    {"padding": "same"}, {"padding": "valid"}, {"padding": "same", "dilation": (1, 2)},
])
def test_conv2d(kwargs):
    check(conv_fn("conv2d", **kwargs), rand(2, 3, 7, 8), rand(4, 3, 3, 3, seed=1), rand(4, seed=2))


def test_conv2d_groups_even_kernel_same_and_unbatched():
    check(conv_fn("conv2d", groups=2, padding=1), rand(2, 4, 6, 6), rand(6, 2, 3, 3, seed=1), rand(6, seed=2))
    check(conv_fn("conv2d", groups=4), rand(1, 4, 5, 5), rand(4, 1, 2, 2, seed=1))
    check(conv_fn("conv2d", padding="same"), rand(2, 2, 5, 6), rand(3, 2, 2, 4, seed=1))
    check(conv_fn("conv2d", stride=2), rand(3, 7, 7), rand(2, 3, 3, 3, seed=1))


def test_conv1d_conv3d():
    check(conv_fn("conv1d", stride=2, padding=1), rand(2, 3, 9), rand(4, 3, 3, seed=1), rand(4, seed=2))
    check(conv_fn("conv1d", groups=3, dilation=2), rand(2, 3, 9), rand(6, 1, 3, seed=1))
    check(conv_fn("conv3d", padding=1), rand(1, 2, 4, 5, 4), rand(3, 2, 3, 3, 3, seed=1), rand(3, seed=2))


@pytest.mark.parametrize("kwargs", [
    {}, {"stride": 2}, {"stride": 2, "padding": 1, "output_padding": 1}, {"dilation": 2, "padding": 1},
    {"groups": 2, "stride": (2, 3), "output_padding": (1, 2)},
])
def test_conv_transpose2d(kwargs):
    check(conv_fn("conv_transpose2d", **kwargs), rand(2, 4, 5, 4), rand(4, 3, 3, 3, seed=1), rand(
        3 * kwargs.get("groups", 1), seed=2))


def test_conv_transpose1d_3d():
    check(conv_fn("conv_transpose1d", stride=2), rand(2, 3, 5), rand(3, 2, 3, seed=1), rand(2, seed=2))
    check(conv_fn("conv_transpose3d", stride=2, padding=1), rand(1, 2, 3, 3, 3), rand(2, 2, 3, 3, 3, seed=1))


def test_conv_float32():
    # Full float32 precision, as torch's CPU oracle (TF32 is covered in test_nn_conv_layouts.py).
    with genesis.backends.cudnn.flags(allow_tf32=False):
        check(conv_fn("conv2d", padding=1), rand(2, 3, 8, 8, dtype=torch.float32),
              rand(5, 3, 3, 3, dtype=torch.float32, seed=1), rand(5, dtype=torch.float32, seed=2),
              rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bad", [
    {"stride": 0}, {"stride": -1}, {"padding": -1}, {"dilation": 0}, {"groups": 0},
])
def test_conv_bad_arguments(bad):
    check_error(RuntimeError, conv_fn("conv2d", **bad), rand(1, 2, 5, 5), rand(2, 2, 3, 3, seed=1))
    check_error(RuntimeError, conv_fn("conv_transpose2d", **bad), rand(1, 2, 5, 5), rand(2, 2, 3, 3, seed=1))


def test_conv_error_messages():
    with pytest.raises(RuntimeError, match="non-positive stride"):
        nn.functional.conv2d(genesis.ones(1, 2, 5, 5), genesis.ones(2, 2, 3, 3), stride=0)
    with pytest.raises(RuntimeError, match="negative padding"):
        nn.functional.conv2d(genesis.ones(1, 2, 5, 5), genesis.ones(2, 2, 3, 3), padding=-1)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 3, 5, 5\] to have 2 channels, but got 3"):
        nn.functional.conv2d(genesis.ones(1, 3, 5, 5), genesis.ones(2, 2, 3, 3))
    check_error(RuntimeError, conv_fn("conv2d"), rand(1, 3, 5, 5), rand(2, 2, 3, 3, seed=1))
    check_error(RuntimeError, conv_fn("conv2d"), rand(1, 2, 2, 2), rand(2, 2, 3, 3, seed=1))
    check_error(RuntimeError, conv_fn("conv2d"), rand(1, 2, 5, 5), rand(2, 2, 3, 3, seed=1), rand(3, seed=2))
    check_error(RuntimeError, conv_fn("conv_transpose2d", stride=2, output_padding=2), rand(1, 2, 5, 5),
                rand(2, 2, 3, 3, seed=1))
    with pytest.raises(ValueError):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError):
        nn.Conv2d(4, 4, 3, stride=2, padding="same")
    # The functional form raises RuntimeError (the module ValueError), as torch's.
    check_error(RuntimeError, conv_fn("conv2d", stride=2, padding="same"), rand(1, 2, 5, 5), rand(2, 2, 3, 3, seed=1))


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.Conv2d(3, 4, 3),
    lambda lib: lib.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2, bias=False),
    lambda lib: lib.nn.Conv2d(3, 4, 3, padding="same", padding_mode="reflect"),
    lambda lib: lib.nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular"),
    lambda lib: lib.nn.Conv2d(3, 4, 3, padding=2, padding_mode="replicate"),
    lambda lib: lib.nn.Conv1d(3, 4, 5, stride=2, padding=2),
    lambda lib: lib.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
    lambda lib: lib.nn.ConvTranspose2d(4, 6, 2, stride=2, groups=2, dilation=1, bias=False),
])
def test_conv_modules(make):
    t = make(torch).double()
    g = make(genesis).to(DEVICE, genesis.float64)
    assert repr(g) == repr(t)
    assert list(g.state_dict()) == list(t.state_dict())
    assert [tuple(p.shape) for p in g.parameters()] == [tuple(p.shape) for p in t.parameters()]
    ndim = 3 if isinstance(t, torch.nn.Conv1d) else 4
    x = rand(2, 4 if "Transpose" in type(t).__name__ or t.in_channels == 4 else 3, *(6,) * (ndim - 2))
    check_module(g, t, x)


def test_conv_transpose_output_size():
    t = torch.nn.ConvTranspose2d(2, 3, 3, stride=2).double()
    g = nn.ConvTranspose2d(2, 3, 3, stride=2).to(DEVICE, genesis.float64)
    x = rand(1, 2, 4, 4)
    check_module(g, t, x, call=lambda m, x: m(x, output_size=[10, 10]))
    with pytest.raises(ValueError):
        g(genesis.ones(1, 2, 4, 4, dtype=genesis.float64, device=DEVICE), output_size=[12, 12])


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}, {"kernel_size": (2, 3), "stride": (1, 2)},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True}, {"kernel_size": 2, "dilation": 2},
])
def test_max_pool2d(kwargs):
    check(lambda lib, x: lib.nn.functional.max_pool2d(x, **kwargs), rand(2, 3, 7, 8))
    check(lambda lib, x: lib.nn.functional.max_pool2d(x, **kwargs, return_indices=True), rand(2, 3, 7, 8))


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True}, {"kernel_size": 2, "divisor_override": 3},
])
def test_avg_pool2d(kwargs):
    check(lambda lib, x: lib.nn.functional.avg_pool2d(x, **kwargs), rand(2, 3, 7, 8))


def test_pool_1d_3d_unbatched_and_lp():
    check(lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 2, 1), rand(2, 3, 9))
    check(lambda lib, x: lib.nn.functional.avg_pool1d(x, 2), rand(2, 3, 9))
    check(lambda lib, x: lib.nn.functional.max_pool3d(x, 2), rand(1, 2, 4, 4, 4))
    check(lambda lib, x: lib.nn.functional.avg_pool3d(x, 2, 1), rand(1, 2, 3, 4, 4))
    check(lambda lib, x: lib.nn.functional.max_pool2d(x, 2), rand(3, 6, 6))
    check(lambda lib, x: lib.nn.functional.lp_pool2d(x, 2.0, 2), rand(1, 2, 4, 4, low=0.1, high=1.0))


def test_pool_errors():
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.max_pool2d(x, 3, padding=2), rand(1, 1, 6, 6))
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.max_pool2d(x, 2, stride=0), rand(1, 1, 6, 6))
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.avg_pool2d(x, 7), rand(1, 1, 6, 6))
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.max_pool2d(x, 2), rand(6, 6))


@pytest.mark.parametrize("size", [1, 2, 3, (2, 5), (None, 3)])
def test_adaptive_pools(size):
    check(lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, size), rand(2, 3, 7, 6))
    check(lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, size), rand(2, 3, 7, 6))
    check(lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 3), rand(2, 3, 7))


def test_pool_modules():
    for make in (lambda lib: lib.nn.MaxPool2d(3, 2, 1), lambda lib: lib.nn.AvgPool2d(2),
                 lambda lib: lib.nn.AdaptiveAvgPool2d((1, 1)), lambda lib: lib.nn.AdaptiveAvgPool2d(3),
                 lambda lib: lib.nn.MaxPool1d(2), lambda lib: lib.nn.AdaptiveMaxPool2d(2),
                 lambda lib: lib.nn.Upsample(scale_factor=2), lambda lib: lib.nn.PixelShuffle(2),
                 lambda lib: lib.nn.Upsample(size=(5, 7), mode="bilinear", align_corners=True)):
        t, g = make(torch), make(genesis)
        assert repr(g) == repr(t)
        x = rand(2, 4, 6) if isinstance(t, torch.nn.MaxPool1d) else rand(2, 4, 6, 6)
        check_module(g, t, x)


@pytest.mark.parametrize("kwargs", [
    {"scale_factor": 2}, {"size": (5, 9)}, {"scale_factor": (1.5, 0.5)}, {"size": (3, 4), "mode": "nearest-exact"},
    {"scale_factor": 2, "mode": "bilinear"}, {"size": (5, 9), "mode": "bilinear"},
    {"size": (5, 9), "mode": "bilinear", "align_corners": True}, {"scale_factor": 0.5, "mode": "bilinear"},
    {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True},
])
def test_interpolate_2d(kwargs):
    check(lambda lib, x: lib.nn.functional.interpolate(x, **kwargs), rand(2, 3, 4, 6))


def test_interpolate_1d_3d_and_errors():
    check(lambda lib, x: lib.nn.functional.interpolate(x, size=7, mode="linear"), rand(2, 3, 4))
    check(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2, mode="trilinear", align_corners=False),
          rand(1, 2, 2, 3, 2))
    check(lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=3), rand(1, 2, 3))
    check_error(ValueError, lambda lib, x: lib.nn.functional.interpolate(x), rand(1, 2, 3, 3))
    check_error(ValueError, lambda lib, x: lib.nn.functional.interpolate(x, size=4, align_corners=True),
                rand(1, 2, 3, 3))


def test_digits_cnn_training_step_matches_torch():
    def make(lib):
        n = lib.nn
        return n.Sequential(n.Conv2d(1, 8, 3, padding=1), n.BatchNorm2d(8), n.ReLU(), n.MaxPool2d(2),
                            n.Conv2d(8, 16, 3, padding=1), n.BatchNorm2d(16), n.ReLU(), n.AdaptiveAvgPool2d(1),
                            n.Flatten(), n.Linear(16, 10))
    t = make(torch).double()
    g = make(genesis).to(DEVICE, genesis.float64)
    assert list(g.state_dict()) == list(t.state_dict())
    check_module(g, t, rand(4, 1, 8, 8))


@pytest.mark.parametrize("name,weight_shape,kwargs", [
    ("conv1d", (6, 4, 3), {"padding": 1}),
    ("conv2d", (6, 4, 3, 3), {"stride": 2, "padding": 1}),
    ("conv3d", (6, 4, 3, 3, 3), {}),
    ("conv_transpose1d", (4, 6, 3), {"stride": 2, "output_padding": 1}),
    ("conv_transpose2d", (4, 6, 3, 3), {"padding": 1}),
    ("conv_transpose3d", (4, 6, 2, 2, 2), {"stride": 2}),
])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "unbatched"])
def test_conv_out_writes_into_the_given_tensor(name, weight_shape, kwargs, layout):
    """out= (inference code reusing memory) writes the result into a preallocated tensor, row-major or
    channels_last, and returns it; the values equal torch's."""
    nd = len(weight_shape) - 2
    if layout == "channels_last" and nd != 2:
        pytest.skip("channels_last is a 4-d layout")
    spatial = (7,) * nd
    x = rand(*((4,) if layout == "unbatched" else (2, 4)), *spatial, dtype=torch.float32)
    w = rand(*weight_shape, dtype=torch.float32, seed=1)
    b = rand(weight_shape[1 if "transpose" in name else 0], dtype=torch.float32, seed=2)
    with genesis.backends.cudnn.flags(allow_tf32=False):
        want = getattr(torch.nn.functional, name)(x, w, b, **kwargs)
        out = genesis.empty(*want.shape, device=DEVICE)
        if layout == "channels_last":
            out = out.contiguous(memory_format=genesis.channels_last)
        with genesis.no_grad():
            got = getattr(genesis.nn.functional, name)(to_genesis(x), to_genesis(w), to_genesis(b), **kwargs,
                                                       out=out)
    assert got is out
    assert out.stride() == (tuple(want.contiguous(memory_format=torch.channels_last).stride())
                            if layout == "channels_last" else tuple(want.contiguous().stride()))
    torch.testing.assert_close(to_torch(out), want.detach(), rtol=1e-4, atol=1e-4)


def test_conv_out_errors():
    x, w = genesis.randn(1, 2, 5, 5, device=DEVICE), genesis.randn(3, 2, 3, 3, device=DEVICE)
    F = genesis.nn.functional
    with genesis.no_grad():
        with pytest.raises(RuntimeError, match=r"conv2d: out has shape \(1, 3, 4, 4\) but the result has shape"):
            F.conv2d(x, w, out=genesis.empty(1, 3, 4, 4, device=DEVICE))
        with pytest.raises(RuntimeError, match="conv2d: out has dtype genesis.float64"):
            F.conv2d(x, w, out=genesis.empty(1, 3, 3, 3, dtype=genesis.float64, device=DEVICE))
        with pytest.raises(RuntimeError, match=r"conv2d: out must be dense"):
            F.conv2d(x, w, out=genesis.empty(1, 3, 3, 6, device=DEVICE)[..., ::2])
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        F.conv2d(x, w.requires_grad_(), out=genesis.empty(1, 3, 3, 3, device=DEVICE))


def _penalty(op):
    """A gradient penalty through ``op``: the squared gradient of the output's cube with respect to every input."""
    def fn(lib, *inputs):
        out = op(lib, *inputs)
        grads = lib.autograd.grad((out ** 3).sum(), inputs, create_graph=True)
        return sum((g * g).sum() for g in grads) + out.sum()
    return fn


@pytest.mark.parametrize("name, op, shapes", [
    ("conv2d strided", lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, stride=2, padding=1),
     [(2, 3, 7, 7), (4, 3, 3, 3), (4,)]),
    ("conv2d grouped dilated", lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, dilation=2, groups=2),
     [(1, 4, 8, 8), (6, 2, 3, 3), (6,)]),
    ("conv1d", lambda lib, x, w, b: lib.nn.functional.conv1d(x, w, b, padding=2), [(2, 3, 9), (5, 3, 4), (5,)]),
    ("conv_transpose2d", lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                                                  output_padding=1),
     [(2, 3, 4, 4), (3, 2, 3, 3), (2,)]),
])
def test_convolution_double_backward(name, op, shapes):
    # Gradient penalties (WGAN-GP, R1) differentiate the convolution's gradient again, in every input.
    inputs = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    check(_penalty(op), *inputs)


def test_argument_checks_hold_on_every_call():
    # The checked arguments are kept per call signature: a bad call raises every time, list arguments (not
    # hashable) are checked at every call, and an unbatched call after a batched one of the same layer is its own.
    x, w = rand(2, 3, 6, 5), rand(4, 3, 3, 3, seed=1)
    for _ in range(2):
        check(lambda lib, a, b: lib.nn.functional.conv2d(a, b, stride=[2, 1], padding=[1, 0]), x, w)
        check(lambda lib, a, b: lib.nn.functional.conv2d(a, b, padding="same", dilation=(2, 1)), x, w)
        check(lambda lib, a, b: lib.nn.functional.conv2d(a[0], b, padding=1), x, w)
        check_error(RuntimeError, lambda lib, a, b: lib.nn.functional.conv2d(a, b, groups=2), x, w)
        check_error(RuntimeError, lambda lib, a, b: lib.nn.functional.conv2d(a, b, padding=[0, 0], dilation=[3, 3]),
                    x, w)
