"""Reflect / replicate / circular padding and instance norm (one kernel each way) against torch: values, dtypes and
every gradient (also through double backward of padding), 1-d to 3-d, strided and channels_last input, half types,
running statistics, and torch's exception classes for bad arguments. Runs on every device through
GENESIS_TEST_DEVICE."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import check, check_error, rand, to_genesis, to_torch

F32, F64 = torch.float32, torch.float64
MODES = ("reflect", "replicate", "circular")
PAD_CASES = [
    ((2, 5), (1, 2)),                      # unbatched 1-d
    ((2, 3, 6), (3, 2)),                   # 1-d
    ((2, 3, 4, 5), (1, 2, 3, 1)),          # 2-d
    ((3, 4, 5), (2, 0, 0, 3)),             # unbatched 2-d, one side zero
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 2, 1)),  # 3-d
    ((2, 3, 4, 5, 3), (0, 2, 1, 1, 0, 0)),  # 3-d, the depth unpadded
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape, pad", PAD_CASES)
def test_pad_values_and_gradients(mode: str, shape: tuple, pad: tuple) -> None:
    check(lambda lib, x: lib.nn.functional.pad(x, pad, mode=mode), rand(*shape))


@pytest.mark.parametrize("mode", MODES)
def test_pad_full_width_negative_and_strided(mode: str) -> None:
    width = 4 if mode == "reflect" else 5  # reflect pads less than the dim, the others up to all of it
    check(lambda lib, x: lib.nn.functional.pad(x, (width, width), mode=mode), rand(2, 3, 5))
    check(lambda lib, x: lib.nn.functional.pad(x, (-1, 2, 1, -2), mode=mode), rand(2, 3, 6, 7))
    check(lambda lib, x: lib.nn.functional.pad(x.transpose(2, 3), (2, 1, 1, 2), mode=mode), rand(2, 3, 5, 4))
    check(lambda lib, x: lib.nn.functional.pad(x[:, :, ::2], (1, 1, 1, 1), mode=mode), rand(2, 3, 8, 4))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, F32])
def test_pad_half_types_and_float32(mode: str, dtype: torch.dtype) -> None:
    check(lambda lib, x: lib.nn.functional.pad(x, (2, 1, 1, 2), mode=mode), rand(2, 3, 5, 4, dtype=dtype))


@pytest.mark.parametrize("mode", MODES)
def test_pad_integers_and_double_backward(mode: str) -> None:
    x = torch.arange(40).reshape(2, 4, 5)
    check(lambda lib, x: lib.nn.functional.pad(x, (2, 1, 1, 3), mode=mode), x)
    t = rand(2, 3, 5, dtype=F64)
    g = to_genesis(t)
    out = genesis.nn.functional.pad(g, (2, 3), mode=mode)
    (grad,) = genesis.autograd.grad((out * out).sum(), g, create_graph=True)
    (gg,) = genesis.autograd.grad(grad.sum(), g)
    tout = torch.nn.functional.pad(t, (2, 3), mode=mode)
    (tgrad,) = torch.autograd.grad((tout * tout).sum(), t, create_graph=True)
    (tgg,) = torch.autograd.grad(tgrad.sum(), t)
    torch.testing.assert_close(to_torch(grad), tgrad)
    torch.testing.assert_close(to_torch(gg), tgg)


@pytest.mark.parametrize("mode", MODES)
def test_pad_many_tiles(mode: str) -> None:
    """Rows wider than one tile of the cuda kernels and more rows than one tile holds (partly masked tiles both
    ways), channels_last rows of channels, and replicate's long edge lists inside wide rows."""
    check(lambda lib, x: lib.nn.functional.pad(x, (4, 5, 2, 3), mode=mode), rand(2, 3, 20, 300))
    _check_channels_last(mode, (2, 40, 9, 30), (1, 1, 1, 1))
    wide = 9 if mode == "reflect" else 10
    check(lambda lib, x: lib.nn.functional.pad(x, (wide, 7, 3, 2), mode=mode), rand(1, 2, 10, 290))


def _check_channels_last(mode: str, shape: tuple, pad: tuple) -> None:
    """Padding of channels_last input against torch: values, the input gradient and (reflect, replicate) the
    output's layout."""
    t = rand(*shape).to(memory_format=torch.channels_last).detach().requires_grad_()
    g = to_genesis(t).contiguous(memory_format=genesis.channels_last).detach().requires_grad_()
    out = genesis.nn.functional.pad(g, pad, mode=mode)
    tout = torch.nn.functional.pad(t, pad, mode=mode)
    torch.testing.assert_close(to_torch(out), tout)
    dy = rand(*tout.shape, requires_grad=False, seed=3)
    out.backward(to_genesis(dy))
    tout.backward(dy)
    torch.testing.assert_close(to_torch(g.grad), t.grad)
    if mode != "circular":  # torch's circular padding is a composite whose layout differs by device; not compared
        layout = tout.is_contiguous(memory_format=torch.channels_last)
        assert out.is_contiguous(memory_format=genesis.channels_last) == layout, "the output's layout differs"


@pytest.mark.parametrize("mode", MODES)
def test_pad_channels_last(mode: str) -> None:
    _check_channels_last(mode, (2, 3, 4, 5), (1, 2, 2, 1))


def test_pad_errors() -> None:
    x = rand(2, 3, 4)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.pad(x, (4, 0), mode="reflect"), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.pad(x, (0, 5), mode="circular"), x)
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.pad(x, (1, 1, 1, 1, 1, 1), mode="replicate"),
                x)
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.pad(x, (1, 1), mode="reflect"),
                torch.ones(2, 3, 4, dtype=torch.bool))


INSTANCE_CASES = [(2, 3, 7), (2, 4, 5, 6), (1, 2, 3, 4, 5), (3, 2, 1, 9)]


@pytest.mark.parametrize("shape", INSTANCE_CASES)
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_values_and_gradients(shape: tuple, affine: bool) -> None:
    c = shape[1]
    params = (rand(c, seed=1), rand(c, seed=2)) if affine else ()
    check(lambda lib, x, *wb: lib.nn.functional.instance_norm(x, None, None, *wb), rand(*shape) * 3 + 1, *params)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, F32])
def test_instance_norm_half_types_and_float32(dtype: torch.dtype) -> None:
    w, b = rand(3, dtype=dtype, seed=1), rand(3, dtype=dtype, seed=2)
    check(lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w, bias=b), rand(2, 3, 5, 6, dtype=dtype),
          w, b)


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_running_stats(use_input_stats: bool) -> None:
    x = rand(3, 4, 5, 6, requires_grad=False) * 2 + 0.5
    w, b = rand(4, seed=1), rand(4, seed=2)
    rm, rv = rand(4, requires_grad=False, seed=3), rand(4, requires_grad=False, seed=4).abs() + 0.5
    grm, grv = to_genesis(rm), to_genesis(rv)

    def run(lib, x, w, b):
        mean, var = (grm, grv) if lib is genesis else (rm, rv)
        return lib.nn.functional.instance_norm(x, mean, var, w, b, use_input_stats=use_input_stats, momentum=0.3)

    check(run, x.requires_grad_(), w, b)
    torch.testing.assert_close(to_torch(grm), rm)
    torch.testing.assert_close(to_torch(grv), rv)


def test_instance_norm_modules_and_channels_last() -> None:
    for name, shape in (("InstanceNorm1d", (2, 3, 8)), ("InstanceNorm2d", (2, 3, 4, 5)),
                        ("InstanceNorm3d", (2, 3, 2, 3, 4))):
        def run(lib, x, name=name):
            return getattr(lib.nn, name)(3, affine=True, track_running_stats=True).double().to(x.device)(x)
        check(run, rand(*shape))
    t = rand(2, 3, 4, 5).to(memory_format=torch.channels_last)
    check(lambda lib, x: lib.nn.functional.instance_norm(x), t)


def test_norm_planes_split_over_programs() -> None:
    """Planes too few for the device and long enough (8192 elements or more) are split over several programs on
    cuda (statistics merged from chunks): instance norm with running statistics, in float64 and float32, and group
    norm with two channels per group."""
    x = rand(2, 3, 96, 96) * 3 + 1
    w, b = rand(3, seed=1), rand(3, seed=2)
    rm, rv = rand(3, requires_grad=False, seed=3), rand(3, requires_grad=False, seed=4).abs() + 0.5
    grm, grv = to_genesis(rm), to_genesis(rv)

    def run(lib, x, w, b):
        mean, var = (grm, grv) if lib is genesis else (rm, rv)
        return lib.nn.functional.instance_norm(x, mean, var, w, b, momentum=0.2)

    check(run, x, w, b)
    torch.testing.assert_close(to_torch(grm), rm)
    torch.testing.assert_close(to_torch(grv), rv)
    single = [t.detach().to(F32).requires_grad_() for t in (x, w, b)]
    check(lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w, bias=b), *single)
    check(lambda lib, x, w, b: lib.nn.functional.group_norm(x, 2, w, b), rand(1, 4, 64, 64) * 2 - 1,
          rand(4, seed=5), rand(4, seed=6))


def test_instance_norm_errors() -> None:
    check_error(ValueError, lambda lib, x: lib.nn.functional.instance_norm(x), rand(1, 3, 1))
    check_error(RuntimeError, lambda lib, x, w: lib.nn.functional.instance_norm(x, weight=w), rand(2, 3, 4),
                rand(4, seed=1))


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_amounts_must_be_integers_as_torch(mode: str) -> None:
    for lib in (torch, genesis):
        x = lib.ones(1, 2, 3)
        with pytest.raises(TypeError, match="must be tuple of ints, but found element of type float at pos 0"):
            lib.nn.functional.pad(x, (1.5, 1), mode=mode)
        assert tuple(lib.nn.functional.pad(x, [1, np.int64(1)], mode=mode).shape) == (1, 2, 5)
