"""Convolutions in float32/float16/bfloat16 and channels_last layouts against a float64 torch reference; the
memory-format API; the cuDNN switches (TF32, benchmark, enabled). On ``cuda`` these run through cuDNN."""

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, rand, requires_torch_lanczos, to_genesis, to_torch

CUDNN = genesis.backends.cudnn
DTYPES = {"float32": (torch.float32, genesis.float32, 1e-5), "float16": (torch.float16, genesis.float16, 3e-3),
          "bfloat16": (torch.bfloat16, genesis.bfloat16, 1e-2)}

# (function, kwargs, input shape, weight shape, with bias)
CASES = {
    "conv2d": ("conv2d", {"padding": 1}, (2, 8, 9, 10), (16, 8, 3, 3), True),
    "conv2d_strided_dilated": ("conv2d", {"stride": 2, "padding": (1, 2), "dilation": (2, 1)}, (2, 8, 11, 12),
                               (8, 8, 3, 3), False),
    "conv2d_groups": ("conv2d", {"groups": 4, "padding": 1}, (2, 8, 7, 7), (12, 2, 3, 3), True),
    "conv2d_depthwise": ("conv2d", {"groups": 8, "padding": 1}, (2, 8, 7, 7), (8, 1, 3, 3), False),
    "conv1d": ("conv1d", {"stride": 2, "padding": 2}, (2, 8, 17), (16, 8, 5), True),
    "conv3d": ("conv3d", {"padding": 1}, (1, 4, 5, 6, 5), (8, 4, 3, 3, 3), True),
    "conv_transpose2d": ("conv_transpose2d", {"stride": 2, "padding": 1, "output_padding": 1}, (2, 8, 5, 6),
                         (8, 4, 3, 3), True),
    "conv_transpose2d_groups": ("conv_transpose2d", {"groups": 2, "stride": (2, 3), "output_padding": (1, 2)},
                                (2, 8, 5, 5), (8, 3, 3, 3), False),
    "conv_transpose1d": ("conv_transpose1d", {"stride": 2}, (2, 8, 9), (8, 4, 4), True),
}
LAYOUT_CASES = [name for name, case in CASES.items() if len(case[2]) in (4, 5)]


def rel_err(got: genesis.Tensor, ref: torch.Tensor) -> float:
    """Normwise relative error of a Genesis result against a float64 reference."""
    ref = ref.detach()
    diff = to_torch(got).double() - ref
    return float(diff.norm() / ref.norm())


def channels_last(t: genesis.Tensor | torch.Tensor, lib: object) -> object:
    fmt = lib.channels_last if t.ndim == 4 else lib.channels_last_3d
    return t.contiguous(memory_format=fmt)


def run_case(name: str, dtype_name: str, layout: str) -> None:
    """Forward and every gradient in ``dtype`` on DEVICE against float64 torch on the same rounded inputs."""
    op, kwargs, x_shape, w_shape, with_bias = CASES[name]
    t_dtype, g_dtype, tol = DTYPES[dtype_name]
    out_channels = w_shape[1] * kwargs.get("groups", 1) if "transpose" in op else w_shape[0]
    inputs = [rand(*x_shape, seed=1), rand(*w_shape, seed=2)] + ([rand(out_channels, seed=3)] if with_bias else [])
    inputs = [t.detach().to(t_dtype).double() for t in inputs]  # the reference sees the rounded values
    t_leaves = [t.clone().requires_grad_(True) for t in inputs]
    g_leaves = [to_genesis(t.to(t_dtype), requires_grad=True) for t in inputs]
    t_x, g_x = t_leaves[0], g_leaves[0]
    if layout == "channels_last":
        t_x, g_x = channels_last(t_x, torch), channels_last(g_x, genesis)
    t_out = getattr(torch.nn.functional, op)(t_x, *t_leaves[1:], **kwargs)
    g_out = getattr(genesis.nn.functional, op)(g_x, *g_leaves[1:], **kwargs)
    assert g_out.dtype is g_dtype and tuple(g_out.shape) == tuple(t_out.shape)
    if layout == "channels_last" and DEVICE == "cuda":
        # As torch on cuda: a channels_last input gives a channels_last output.
        fmt = genesis.channels_last if g_out.ndim == 4 else genesis.channels_last_3d
        assert g_out.is_contiguous(memory_format=fmt), f"output strides {g_out.stride()}"
    elif layout == "channels_last":
        with torch.no_grad():  # torch's CPU layout choice depends on the dtype
            same = getattr(torch.nn.functional, op)(t_x.to(t_dtype), *(t.to(t_dtype) for t in t_leaves[1:]), **kwargs)
        assert g_out.stride() == same.stride(), f"output strides {g_out.stride()} != torch {same.stride()}"
    assert rel_err(g_out, t_out.detach()) < tol, f"output error {rel_err(g_out, t_out.detach()):.2e}"
    gy = torch.randn(t_out.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64).to(t_dtype)
    t_out.backward(gy.double())
    g_out.backward(to_genesis(gy, requires_grad=False))
    for k, (g, t) in enumerate(zip(g_leaves, t_leaves)):
        assert g.grad is not None and g.grad.dtype is g_dtype, f"grad of input {k}"
        err = rel_err(g.grad, t.grad)
        assert err < tol, f"grad of input {k}: error {err:.2e}"


pytestmark = pytest.mark.usefixtures("full_float32")  # TF32 only where a test turns it on


@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("name", list(CASES))
def test_conv_dtypes(name, dtype_name):
    run_case(name, dtype_name, "contiguous")


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", LAYOUT_CASES)
def test_conv_channels_last(name, dtype_name):
    run_case(name, dtype_name, "channels_last")


def test_conv_channels_last_float64_and_weights():
    """Float64 (not a cuDNN type) keeps the channels_last layout too; a channels_last weight alone makes it."""
    x, w = rand(2, 3, 6, 7), rand(4, 3, 3, 3, seed=1)
    t_out = torch.nn.functional.conv2d(x.contiguous(memory_format=torch.channels_last), w)
    g_out = genesis.nn.functional.conv2d(channels_last(to_genesis(x), genesis), to_genesis(w))
    assert g_out.stride() == t_out.stride()
    t_out = torch.nn.functional.conv2d(x, w.contiguous(memory_format=torch.channels_last))
    g_out = genesis.nn.functional.conv2d(to_genesis(x), channels_last(to_genesis(w), genesis))
    assert g_out.stride() == t_out.stride()
    check(lambda lib, a, b: lib.nn.functional.conv2d(channels_last(a, lib), channels_last(b, lib), padding=1), x, w)


def test_conv_strided_and_permuted_inputs():
    check(lambda lib, x, w: lib.nn.functional.conv2d(x[:, :, ::2, 1:], w, padding=1),
          rand(2, 4, 10, 9, dtype=torch.float32), rand(6, 4, 3, 3, dtype=torch.float32, seed=1), rtol=1e-4, atol=1e-5)
    # (N, L, C) activations seen as (N, C, L): channels innermost, read in place on cuda.
    check(lambda lib, x, w: lib.nn.functional.conv1d(x.permute(0, 2, 1), w, padding=1),
          rand(2, 11, 8, dtype=torch.float32), rand(5, 8, 3, dtype=torch.float32, seed=1), rtol=1e-4, atol=1e-5)


def test_conv_module_channels_last():
    t = torch.nn.Conv2d(4, 6, 3, padding=1)
    g = genesis.nn.Conv2d(4, 6, 3, padding=1)
    g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t.state_dict().items()})
    t, g = t.to(memory_format=torch.channels_last), g.to(DEVICE).to(memory_format=genesis.channels_last)
    assert g.weight.stride() == t.weight.stride() and g.bias.stride() == t.bias.stride()
    assert isinstance(g.weight, genesis.nn.Parameter) and g.weight.is_contiguous(memory_format=genesis.channels_last)
    x = rand(2, 4, 5, 5, dtype=torch.float32, requires_grad=False)
    t_out = t(x.contiguous(memory_format=torch.channels_last))
    g_out = g(channels_last(to_genesis(x), genesis))
    assert g_out.stride() == t_out.stride()
    assert rel_err(g_out, t_out.detach().double()) < 1e-5


# ---------------------------------------------------------------- memory formats


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 4, 1)])
def test_memory_format_strides(shape):
    x = rand(*shape)
    t = x.detach().contiguous(memory_format=torch.channels_last)
    g = to_genesis(x).contiguous(memory_format=genesis.channels_last)
    assert g.stride() == t.stride()
    for fmt_t, fmt_g in ((torch.channels_last, genesis.channels_last), (torch.contiguous_format,
                                                                       genesis.contiguous_format)):
        assert g.is_contiguous(memory_format=fmt_g) == t.is_contiguous(memory_format=fmt_t)
    assert g.is_contiguous() == t.is_contiguous()
    assert torch.equal(to_torch(g), t)


def test_memory_format_conversions():
    x = rand(2, 3, 4, 5, dtype=torch.float32)
    t = x.detach().contiguous(memory_format=torch.channels_last)
    g = to_genesis(x).to(memory_format=genesis.channels_last)
    assert g.stride() == t.stride()
    assert g.to(genesis.float64).stride() == t.to(torch.float64).stride()  # preserve_format keeps the layout
    assert g.clone().stride() == t.clone().stride()
    assert g.clone(memory_format=genesis.contiguous_format).stride() == t.clone(
        memory_format=torch.contiguous_format).stride()
    assert g.contiguous().stride() == t.contiguous().stride()
    same = g.contiguous(memory_format=genesis.channels_last)
    assert same is g  # already in that format: no copy
    plain = to_genesis(x)
    assert plain.clone(memory_format=genesis.channels_last).stride() == t.stride()
    host = genesis.tensor(x.detach().numpy()).contiguous(memory_format=genesis.channels_last)
    moved = host.to(DEVICE)  # a device copy keeps the layout (preserve_format)
    assert moved.stride() == t.stride() and torch.equal(to_torch(moved), t)
    g3 = to_genesis(rand(1, 2, 3, 4, 5)).contiguous(memory_format=genesis.channels_last_3d)
    assert g3.stride() == rand(1, 2, 3, 4, 5).contiguous(memory_format=torch.channels_last_3d).stride()
    assert repr(genesis.channels_last) == "genesis.channels_last"
    # The copy is differentiable (its gradient passes through).
    check(lambda lib, a: (a.contiguous(memory_format=lib.channels_last) * 2).sum(), rand(2, 3, 4, 5))


def test_memory_format_errors():
    check_error(RuntimeError, lambda lib, x: x.contiguous(memory_format=lib.channels_last), rand(2, 3, 4),
                match="required rank 4 tensor")
    check_error(RuntimeError, lambda lib, x: x.to(memory_format=lib.channels_last_3d), rand(2, 3, 4, 5),
                match="required rank 5 tensor")
    check_error(RuntimeError, lambda lib, x: x.transpose(2, 3).contiguous(memory_format=lib.preserve_format),
                rand(2, 3, 4, 5))
    assert genesis.ones(2, 3).contiguous(memory_format=genesis.preserve_format).is_contiguous()
    with pytest.raises(TypeError):
        genesis.ones(2, 3, 4, 5).contiguous(memory_format="channels_last")


def test_conv_bad_inputs_channels_last():
    check_error(RuntimeError, lambda lib, x, w: lib.nn.functional.conv2d(channels_last(x, lib), w),
                rand(1, 3, 5, 5), rand(2, 2, 3, 3, seed=1))
    check_error(RuntimeError, lambda lib, x, w: lib.nn.functional.conv2d(x, w.to(lib.float16)),
                rand(1, 2, 5, 5, dtype=torch.float32), rand(2, 2, 3, 3, dtype=torch.float32, seed=1))
    check_error(RuntimeError, lambda lib, x, w: lib.nn.functional.conv_transpose2d(channels_last(x, lib), w),
                rand(1, 3, 5, 5, dtype=torch.float16), rand(2, 2, 3, 3, dtype=torch.float16, seed=1))


# ---------------------------------------------------------------- cuDNN switches


def _cudnn_plans() -> int | None:
    """Number of cached cuDNN plans when convolutions on DEVICE go through cuDNN, else None."""
    if DEVICE != "cuda" or not CUDNN.is_available():
        return None
    from genesis._impl.cuda import convolution_cudnn

    return convolution_cudnn.plan_count()


def test_tf32_switch():
    x, w = rand(4, 32, 12, 12, dtype=torch.float32), rand(32, 32, 3, 3, dtype=torch.float32, seed=1)
    ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    gx, gw = to_genesis(x, requires_grad=False), to_genesis(w, requires_grad=False)
    before = _cudnn_plans()
    assert CUDNN.allow_tf32 is False  # set by the fixture
    strict = genesis.nn.functional.conv2d(gx, gw, padding=1)
    assert rel_err(strict, ref) < 1e-5
    with CUDNN.flags(allow_tf32=True):
        assert CUDNN.allow_tf32 is True
        fast = genesis.nn.functional.conv2d(gx, gw, padding=1)
    assert CUDNN.allow_tf32 is False
    assert rel_err(fast, ref) < 2e-3  # TF32 keeps 10 mantissa bits: about 3e-4 here
    if before is not None:
        assert _cudnn_plans() >= before + 2  # one plan per TF32 setting


def test_cudnn_availability():
    if not genesis.cuda.is_available():
        assert CUDNN.is_available() is False and CUDNN.version() is None
    elif CUDNN.is_available():
        assert CUDNN.version() >= 8000


def test_tf32_default_on():
    import importlib

    # A fresh import has torch.backends.cudnn's defaults (the fixture restores its own values afterwards).
    fresh = importlib.reload(CUDNN)
    assert (fresh.enabled, fresh.benchmark, fresh.allow_tf32, fresh.deterministic) == (True, False, True, False)


@pytest.mark.parametrize("switch", [{"benchmark": True}, {"enabled": False}, {"deterministic": True}])
def test_cudnn_switches_give_the_same_results(switch):
    x, w = rand(2, 8, 9, 9, dtype=torch.float32), rand(8, 8, 3, 3, dtype=torch.float32, seed=1)
    b = rand(8, dtype=torch.float32, seed=2)
    with CUDNN.flags(**switch):
        check(lambda lib, *a: lib.nn.functional.conv2d(*a, stride=2, padding=1), x, w, b, rtol=1e-4, atol=1e-5)
        check(lambda lib, *a: lib.nn.functional.conv_transpose2d(*a, stride=2), x, w, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["broadcast_grad", "broadcast_first", "broadcast_second", "in_place_relu",
                                  "leaky_relu"])
def test_elementwise_results_keep_channels_last(case: str) -> None:
    """Elementwise results keep a channels_last operand's layout, also where the other operand is broadcast (a
    pooled gradient, a per-channel scale): the strides equal torch's, so a channels_last network stays so end to
    end, backward included."""
    def run(lib: object, x: object, s: object) -> tuple:
        x = x.to(memory_format=lib.channels_last).requires_grad_()
        h = x * 2
        if case == "broadcast_grad":
            y = lib.relu(h)
        elif case == "broadcast_first":
            y = s * h
        elif case == "broadcast_second":
            y = h - s
        elif case == "in_place_relu":
            y = lib.nn.functional.relu(h, inplace=True)
        else:
            y = lib.nn.functional.leaky_relu(h, 0.1)
        (g,) = lib.autograd.grad(y.mean((2, 3)).sum(), x)
        return y, g

    x, s = rand(2, 3, 4, 5, seed=4), rand(2, 3, 1, 1, seed=5)
    got, ref = run(genesis, to_genesis(x), to_genesis(s)), run(torch, x, s)
    for g, r in zip(got, ref):
        assert tuple(g.stride()) == r.stride()
        assert_same(g, r)


RESAMPLE_FORMATS = {
    "bicubic": lambda F, x: F.interpolate(x, scale_factor=2, mode="bicubic"),
    "bilinear antialias": lambda F, x: F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True),
    "bicubic antialias": lambda F, x: F.interpolate(x, scale_factor=0.5, mode="bicubic", antialias=True),
    "area": lambda F, x: F.interpolate(x, size=(3, 3), mode="area"),
    "nearest-exact": lambda F, x: F.interpolate(x, scale_factor=2, mode="nearest-exact"),
    "bilinear": lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    "pixel_unshuffle": lambda F, x: F.pixel_unshuffle(x, 2),
    "pixel_shuffle": lambda F, x: F.pixel_shuffle(x, 2),
    "lanczos": lambda F, x: F.interpolate(x, size=(4, 9), mode="lanczos", antialias=True),
    "flip": lambda F, x: x.flip(3),
    "flip channels": lambda F, x: x.flip((1, 2)),
    "constant pad": lambda F, x: F.pad(x, (1, 2, 0, 1), value=0.5),
    "constant pad with crop": lambda F, x: F.pad(x, (-1, 1, 1, 1, 1, 0)),
    "max_unpool2d": lambda F, x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=requires_torch_lanczos) if n == "lanczos" else n
                                  for n in RESAMPLE_FORMATS])
def test_resampling_keeps_channels_last(name):
    x = rand(2, 4, 6, 6, seed=3)
    fn = RESAMPLE_FORMATS[name]
    t = fn(torch.nn.functional, x.contiguous(memory_format=torch.channels_last))
    g = fn(genesis.nn.functional, to_genesis(x).contiguous(memory_format=genesis.channels_last))
    assert g.is_contiguous(memory_format=genesis.channels_last) == t.is_contiguous(memory_format=torch.channels_last)
    assert_same(g, t)


@pytest.mark.parametrize("mode", ["trilinear", "nearest"])
def test_resampling_keeps_channels_last_3d(mode):
    x = rand(2, 2, 4, 4, 4, seed=4)
    t = torch.nn.functional.interpolate(x.contiguous(memory_format=torch.channels_last_3d), scale_factor=2, mode=mode)
    g = genesis.nn.functional.interpolate(to_genesis(x).contiguous(memory_format=genesis.channels_last_3d),
                                          scale_factor=2, mode=mode)
    assert g.is_contiguous(memory_format=genesis.channels_last_3d)
    assert t.is_contiguous(memory_format=torch.channels_last_3d)
    assert_same(g, t)
