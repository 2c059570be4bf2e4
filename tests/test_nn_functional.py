"""nn.functional against torch.nn.functional: values, dtypes and every input gradient (float64 unless noted)."""

import contextlib
import math

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import genesis
import genesis.nn.functional as F
from tests.helpers import ACC, DEVICE, assert_same, check, check_bits, check_error, rand, to_genesis, to_torch


def fn(name: str, *args: object, **kwargs: object):
    """A check() function calling ``name`` from lib.nn.functional with extra arguments."""
    return lambda lib, *xs: getattr(lib.nn.functional, name)(*xs, *args, **kwargs)


@pytest.mark.parametrize("name,kwargs", [
    ("relu", {}), ("relu6", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {"alpha": 0.7}), ("selu", {}),
    ("celu", {"alpha": 1.3}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
    ("sigmoid", {}), ("tanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 0.7}), ("hardsigmoid", {}),
    ("hardswish", {}), ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 1.0}), ("softsign", {}),
    ("logsigmoid", {}), ("tanhshrink", {}), ("threshold", {"threshold": 0.1, "value": -2.0}),
])
def test_activations(name, kwargs):
    x = rand(4, 7, low=-3, high=3)
    # torch's CPU celu and hardsigmoid backward round a coefficient (1/alpha, 1/6) to float32: ~3e-8 relative.
    check(fn(name, **kwargs), x, grad_rtol=1e-7 if name in ("celu", "hardsigmoid") else None)


@pytest.mark.parametrize("name,kwargs", [
    ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("relu6", {}), ("hardsigmoid", {}),
    ("hardswish", {}), ("rrelu", {"training": False}), ("leaky_relu", {}), ("relu", {}), ("elu", {}),
    ("celu", {"alpha": 2.0}), ("threshold", {"threshold": 1.0, "value": 0.0}), ("softshrink", {}),
    ("hardshrink", {}),
])
def test_activations_at_their_kinks_and_nan(name, kwargs):
    # torch's choice at each kink: hardtanh (relu6, hardsigmoid, hardswish) pass no gradient at their bounds,
    # rrelu in evaluation takes the slope at 0 as leaky_relu does. NaN stays NaN through every one.
    x = torch.tensor([-6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 7.0], dtype=torch.float64,
                     requires_grad=True)
    rtol = 1e-7 if name in ("hardsigmoid", "celu") else None
    check(fn(name, **kwargs), x, grad_rtol=rtol)
    if name in ("hardtanh", "relu6", "elu", "celu", "threshold"):
        check(lambda lib, x: getattr(lib.nn.functional, name)(x * 1.0, **kwargs, inplace=True), x, grad_rtol=rtol)
    check(lambda lib, x: getattr(lib.nn.functional, name)(x, **kwargs), torch.tensor([float("nan"), 1.0]),
          backward=False)


def test_threshold_of_integers_keeps_their_dtype():
    x = torch.tensor([-2, 0, 1, 3])
    check(fn("threshold", 1, -2.5), x, backward=False)
    check(fn("threshold", 0.5, 7.9), x.int(), backward=False)
    check(lambda lib, x: lib.nn.functional.threshold_(x.clone(), 1, 2.5), x, backward=False)


FUSED_GRADIENT_ACTIVATIONS = [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {})]
# leaky_relu's fused kernels too; its second derivative is zero (a zero tensor, as torch's). The activations with
# parameters run one kernel each way as well (the backend's activation / activation_backward).
FUSED_KERNEL_ACTIVATIONS = FUSED_GRADIENT_ACTIVATIONS + [
    ("leaky_relu", {"negative_slope": 0.2}), ("leaky_relu", {"negative_slope": 1.5}), ("elu", {"alpha": 0.7}),
    ("selu", {}), ("celu", {"alpha": 1.3}), ("hardswish", {}), ("hardsigmoid", {}), ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}), ("mish", {}), ("logsigmoid", {}), ("softshrink", {"lambd": 0.3}),
    ("hardshrink", {"lambd": 0.3}), ("hardtanh", {"min_val": -2.0, "max_val": 1.5}),
    ("threshold", {"threshold": 0.4, "value": -1.0})]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name,kwargs", FUSED_KERNEL_ACTIVATIONS)
def test_activation_gradient_kernels(name, kwargs, dtype):
    # One backend kernel computes these gradients (gelu_backward ...), over both tails.
    x = rand(8, 33, low=-12, high=12, dtype=dtype)
    # torch's CPU celu and hardsigmoid gradients round a coefficient (1/alpha, 1/6) to float32.
    rtol = 1e-6 if dtype == torch.float64 and name in ("celu", "hardsigmoid") else None
    check(fn(name, **kwargs), x, grad_rtol=rtol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,kwargs", [a for a in FUSED_KERNEL_ACTIVATIONS if a[0] != "hardsigmoid"])
def test_activation_second_derivatives(name, kwargs, dtype):
    # (torch has no derivative of hardsigmoid_backward; Genesis's is zero.)
    # With create_graph the gradient is the differentiable composite, so it can be differentiated again. In float32
    # the second derivatives of both libraries cancel terms differently (~1e-6 apart near 0).
    def f(lib, x, w):
        y = getattr(lib.nn.functional, name)(x, **kwargs)
        (g,) = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        return g
    celu = {"rtol": 1e-6, "grad_rtol": 1e-6} if name == "celu" else {}  # torch's 1/alpha rounded to float32
    check(f, rand(6, 9, low=-4, high=4, dtype=dtype), rand(6, 9, dtype=dtype, seed=1),
          grad_atol=1e-5 if dtype == torch.float32 else None, **celu)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("dim", [0, -1])
def test_glu_kernels_and_second_derivative(dim, dtype):
    # One kernel forward, one per half backward (the halves along dim 0 are strided views); with create_graph the
    # gradient is differentiable again.
    x = rand(6, 10, low=-6, high=6, dtype=dtype)
    check(fn("glu", dim=dim), x)
    if dtype == torch.float64:
        def f(lib, x, w):
            (g,) = lib.autograd.grad((lib.nn.functional.glu(x, dim) * w).sum(), x, create_graph=True)
            return g
        check(f, x, rand(*((3, 10) if dim == 0 else (6, 5)), seed=1))


@pytest.mark.parametrize("name,kwargs", [("elu", {}), ("elu", {"alpha": 0.5}), ("celu", {"alpha": 2.0}),
                                         ("selu", {})])
def test_elu_family_at_zero_nan_and_infinities(name, kwargs):
    # torch's kernels: at 0 the negative side's slope with no curvature; NaN on the positive side (slope 1 or
    # scale); -inf's gradient 0, never NaN.
    def second(lib, x):
        (g,) = lib.autograd.grad(getattr(lib.nn.functional, name)(x, **kwargs).sum(), x, create_graph=True)
        return g
    x = torch.tensor([0.0, -0.0, 0.3, -0.3, 2.0, math.nan, -math.inf, math.inf], dtype=torch.float64,
                     requires_grad=True)
    check(second, x)


PIECEWISE_LINEAR = [("relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("hardtanh", {}), ("relu6", {}),
                    ("threshold", {"threshold": 0.1, "value": -2.0}), ("hardshrink", {}), ("softshrink", {})]


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("name,kwargs", PIECEWISE_LINEAR)
def test_piecewise_linear_second_derivative_reaches_the_bias_as_zeros(name, kwargs, inplace):
    # A gradient penalty (WGAN-GP, R1): the gradient's own gradient reaches the bias under the activation as a
    # zero tensor in torch (its derivative of the gradient node for the input is zeros_like), not as none, so an
    # optimizer still steps that bias.
    if inplace and name in ("hardshrink", "softshrink"):
        pytest.skip("no in-place form")

    def penalty(lib, x, w, b):
        extra = {"inplace": True} if inplace else {}
        h = getattr(lib.nn.functional, name)(x * w + b, **kwargs, **extra)
        (g,) = lib.autograd.grad((h * w).sum(), x, create_graph=True)
        gw, gb = lib.autograd.grad((g * g).sum(), (w, b), create_graph=True, allow_unused=True)
        assert gb is not None
        return gw, gb
    check(penalty, rand(3, 5, low=-2, high=2), rand(5, seed=1), rand(5, seed=2))


@pytest.mark.parametrize("name,kwargs", PIECEWISE_LINEAR)
def test_piecewise_linear_node_names(name, kwargs):
    x = torch.tensor([-2.0, 0.3, 0.05, 2.0], dtype=torch.float64, requires_grad=True)
    expected = type(getattr(torch.nn.functional, name)(x, **kwargs).grad_fn).__name__
    assert type(getattr(F, name)(to_genesis(x), **kwargs).grad_fn).__name__ == expected


@pytest.mark.parametrize("name", ["relu", "silu", "leaky_relu", "hardtanh", "elu", "mish"])
def test_inplace_activations(name):
    def f(lib, x):
        y = x * 1.0
        out = getattr(lib.nn.functional, name)(y, inplace=True)
        assert out is y
        return y
    check(f, rand(3, 5, low=-2, high=2))


def test_softmax_family_and_glu_prelu():
    x = rand(3, 4, 5)
    for dim in (0, 1, -1):
        check(fn("softmax", dim=dim), x)
        check(fn("log_softmax", dim=dim), x)
        check(fn("softmin", dim=dim), x)
    check(fn("softmax", dim=-1, dtype=torch.float32), rand(2, 3, dtype=torch.float32))
    check(lambda lib, x: lib.nn.functional.softmax(x, dim=1, dtype=lib.float64), rand(2, 3, dtype=torch.float32))
    check(fn("glu", dim=1), rand(3, 6))
    check(lambda lib, x, w: lib.nn.functional.prelu(x, w), rand(2, 3, 4), rand(3))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_without_dim_warns_and_takes_torchs_legacy_dim(name):
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
        check(fn(name), rand(2, 3))
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
        getattr(F, name)(to_genesis(rand(3, 4, 5)))


def test_linear_and_bilinear():
    check(lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), rand(5, 4), rand(3, 4), rand(3))
    check(lambda lib, x, w: lib.nn.functional.linear(x, w), rand(2, 5, 4), rand(3, 4))
    check(lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), rand(4), rand(3, 4), rand(3))
    check(lambda lib, a, b, w, c: lib.nn.functional.bilinear(a, b, w, c), rand(2, 3, 4), rand(2, 3, 5),
          rand(6, 4, 5), rand(6))
    check_error(RuntimeError, lambda lib, x, w: lib.nn.functional.linear(x, w), rand(5, 4), rand(3, 5))


def test_out_arguments():
    x, w = rand(3, 4, requires_grad=False), rand(5, 4, requires_grad=False)
    gx, gw = to_genesis(x), to_genesis(w)
    out = genesis.empty(3, 5, dtype=genesis.float64, device=DEVICE)
    r = F.linear(gx, gw, out=out)
    assert r is out
    torch.testing.assert_close(to_torch(out), torch.nn.functional.linear(x, w))
    out = genesis.empty(3, 4, dtype=genesis.float64, device=DEVICE)
    assert F.silu(gx, out=out) is out
    torch.testing.assert_close(to_torch(out), torch.nn.functional.silu(x))
    assert F.rms_norm(gx, (4,), out=out) is out
    torch.testing.assert_close(to_torch(out), torch.nn.functional.rms_norm(x, (4,)))
    up = rand(3, 4, requires_grad=False, seed=3)
    assert F.swiglu(gx, to_genesis(up), out=out) is out
    torch.testing.assert_close(to_torch(out), torch.nn.functional.silu(x) * up)
    with pytest.raises(RuntimeError, match="shape"):
        F.silu(gx, out=genesis.empty(2, 2, dtype=genesis.float64, device=DEVICE))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        F.linear(gx.requires_grad_(), gw, out=genesis.empty(3, 5, dtype=genesis.float64, device=DEVICE))


def test_layer_norm_and_rms_norm():
    check(lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (5,), w, b), rand(3, 4, 5), rand(5), rand(5))
    check(lambda lib, x: lib.nn.functional.layer_norm(x, (4, 5), eps=1e-3), rand(3, 4, 5))
    check(lambda lib, x, w: lib.nn.functional.rms_norm(x, (5,), w, 1e-6), rand(3, 4, 5), rand(5))
    check(lambda lib, x: lib.nn.functional.rms_norm(x, [5]), rand(2, 5))
    check(lambda lib, x, w: lib.nn.functional.rms_norm(x, [5], w), rand(2, 5, dtype=torch.float32),
          rand(5, dtype=torch.float32))
    check(lambda lib, x, w: lib.nn.functional.rms_norm(x, [5], w), rand(2, 5, dtype=torch.bfloat16),
          rand(5, dtype=torch.bfloat16), backward=False)
    check(lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (5,), w, b), rand(3, 5, dtype=torch.bfloat16),
          rand(5, dtype=torch.bfloat16), rand(5, dtype=torch.bfloat16), backward=False)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.layer_norm(x, (4,)), rand(3, 5))


@pytest.mark.parametrize("shape", [(6, 33), (3, 7, 40)])
def test_layer_norm_float32_gradients_are_torchs_bits(shape):
    # torch's kernel sums the bias gradient in its own order, which ``grad.sum`` does not reproduce bit for bit.
    if DEVICE != "cpu":
        pytest.skip("CPU path: the CUDA kernel reduces the parameters' gradients in its own order")

    def grads(lib, x, w, b, g):
        x, w, b = (t.detach().requires_grad_() for t in (x, w, b))
        lib.nn.functional.layer_norm(x, shape[-1:], w, b).backward(g)
        return lib.cat([x.grad.flatten(), w.grad, b.grad])

    n = shape[-1]
    check_bits(grads, rand(*shape, dtype=torch.float32), rand(n, dtype=torch.float32, seed=1),
               rand(n, dtype=torch.float32, seed=2), rand(*shape, dtype=torch.float32, seed=3))


def test_layer_norm_fused_entry_cases():
    f32 = torch.float32
    ln = lambda lib, x, *p: lib.nn.functional.layer_norm(x, (4, 5), *p)  # noqa: E731
    check(ln, rand(3, 4, 5, dtype=f32), rand(4, 5, dtype=f32), rand(4, 5, dtype=f32))  # rows flattened
    check(ln, rand(0, 4, 5, dtype=f32), rand(4, 5, dtype=f32))  # empty: the composite
    check(lambda lib, x, w: lib.nn.functional.rms_norm(x, [5], w), rand(2, 3, 5, dtype=f32), rand(5, dtype=f32))
    check_error(RuntimeError, lambda lib, x, w: lib.nn.functional.layer_norm(x, (5,), w), rand(3, 5, dtype=f32),
                rand(4, dtype=f32))
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.layer_norm(x, (2, 5)), rand(3, 5, dtype=f32))
    # One node from the input and the parameters.
    x, w, b = (to_genesis(t) for t in (rand(2, 3, 5, dtype=f32), rand(5, dtype=f32), rand(5, dtype=f32)))
    out = F.layer_norm(x, (5,), w, b)
    assert out.grad_fn.name() == "NativeLayerNormBackward0"
    assert [n.name() for n, _ in out.grad_fn.next_functions if n is not None] == [ACC] * 3


@pytest.mark.parametrize("name", ["layer_norm", "rms_norm"])
def test_bfloat16_norm_gradients_match_float64_reference(name):
    # torch's bf16 CPU backward rounds intermediates to bf16 (errors up to ~15% on small entries); Genesis
    # accumulates in float32, so its gradient is compared with the float64 result rounded to bf16.
    x, w = rand(3, 5, dtype=torch.bfloat16), rand(5, dtype=torch.bfloat16)
    g_out = torch.randn(3, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(torch.bfloat16)
    xd, wd = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    (getattr(torch.nn.functional, name)(xd, (5,), wd) * g_out.double()).sum().backward()
    gx, gw = to_genesis(x), to_genesis(w)
    (getattr(F, name)(gx, (5,), gw) * to_genesis(g_out)).sum().backward()
    for got, want in ((gx.grad, xd.grad), (gw.grad, wd.grad)):
        assert got.dtype is genesis.bfloat16
        torch.testing.assert_close(to_torch(got).double(), want, rtol=1e-2, atol=1e-2)


def test_embedding_and_one_hot():
    idx = torch.tensor([[0, 2, 1], [3, 2, 0]])
    check(lambda lib, w, i: lib.nn.functional.embedding(i, w), rand(5, 3), idx)
    check(lambda lib, w, i: lib.nn.functional.embedding(i, w, padding_idx=2), rand(5, 3), idx)
    check(lambda lib, w, i: lib.nn.functional.embedding(i, w, scale_grad_by_freq=True), rand(5, 3), idx)
    check(lambda lib, i: lib.nn.functional.one_hot(i, 5), idx)
    check_error(IndexError, lambda lib, w, i: lib.nn.functional.embedding(i, w), rand(3, 3), idx)


@pytest.mark.parametrize("case", ["0-d", "1-d", "3-d", "transposed", "int32", "empty"])
def test_embedding_index_shapes_one_node(case):
    idx = {"0-d": torch.tensor(3), "1-d": torch.tensor([4, 0, 4]),
           "3-d": torch.tensor([[[0, 2], [1, 1]], [[3, 2], [0, 4]]]),
           "transposed": torch.tensor([[0, 2, 1], [3, 2, 0]]).T,
           "int32": torch.tensor([[1, 4], [4, 0]], dtype=torch.int32),
           "empty": torch.zeros(2, 0, dtype=torch.long)}[case]
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        check(lambda lib, w, i: lib.nn.functional.embedding(i, w), rand(5, 3, dtype=dtype), idx)
    check(lambda lib, w, i: lib.nn.functional.embedding(i, w, padding_idx=4), rand(5, 3), idx)
    check(lambda lib, w, i: lib.nn.functional.embedding(i, w, scale_grad_by_freq=True), rand(5, 3), idx)
    # One node from the weight to the rows, whatever the index's shape.
    out = F.embedding(to_genesis(idx), to_genesis(rand(5, 3)))
    assert out.grad_fn.name() == "EmbeddingBackward0"
    assert [n.name() for n, _ in out.grad_fn.next_functions if n is not None] == [ACC]


def test_embedding_double_backward():
    idx = torch.tensor([[0, 2, 2], [4, 2, 0]])

    def f(lib, w, v):
        i = idx if lib is torch else to_genesis(idx)
        (g,) = lib.autograd.grad(lib.nn.functional.embedding(i, w), w, v, create_graph=True)
        return g * g
    check(f, rand(5, 3), rand(2, 3, 3, seed=1))


def test_embedding_max_norm_renormalizes_in_place():
    w = rand(5, 3, requires_grad=False) * 4
    idx = torch.tensor([0, 2, 2])
    gw = to_genesis(w)
    out = F.embedding(to_genesis(idx), gw, max_norm=1.0)
    t_out = torch.nn.functional.embedding(idx, w, max_norm=1.0)
    torch.testing.assert_close(to_torch(out), t_out, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(to_torch(gw), w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_embedding_max_norm_rounds_the_scale_as_torch(dtype: torch.dtype, norm_type: float) -> None:
    # torch divides max_norm by each norm in double and rounds the scale to the weight's dtype: bit for bit on the
    # CPU, where the norms are summed in torch's order. A GPU sums them in another order: equal within tolerance.
    w = (torch.arange(40, dtype=torch.float64).reshape(10, 4) / 7 + 0.13).to(dtype)
    idx = torch.tensor([[1, 2, 9], [1, 7, 3]])
    gw = to_genesis(w)
    out = F.embedding(to_genesis(idx), gw, max_norm=1.7, norm_type=norm_type)
    t_out = torch.nn.functional.embedding(idx, w, max_norm=1.7, norm_type=norm_type)
    if DEVICE == "cpu":
        assert torch.equal(to_torch(gw), w) and torch.equal(to_torch(out), t_out)
    else:
        assert_same(gw, w, what="renormalized weight")
        assert_same(out, t_out)


def test_dropout_statistics_and_modes():
    genesis.manual_seed(0)
    x = genesis.ones(200, 100, device=DEVICE)
    y = F.dropout(x, 0.3)
    kept = float((y != 0).float().mean())
    assert abs(kept - 0.7) < 0.02
    assert float(y.max()) == pytest.approx(1 / 0.7)
    assert F.dropout(x, 0.3, training=False) is x
    assert float(F.dropout(x, 1.0).abs().sum()) == 0
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)
    z = F.dropout2d(genesis.ones(4, 50, 3, 3, device=DEVICE), 0.5)
    per_channel = z.reshape(4, 50, 9)
    assert bool(((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all())
    genesis.manual_seed(1)
    a = F.dropout(x, 0.5)
    genesis.manual_seed(1)
    b = F.dropout(x, 0.5)
    assert bool((a == b).all())
    xg = genesis.ones(10, 10, device=DEVICE, requires_grad=True)
    out = F.dropout(xg, 0.5)
    out.sum().backward()
    assert bool(((xg.grad == 0) == (out == 0)).all())


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.float64])
def test_dropout_regenerates_its_mask(dtype):
    """One node that saves no mask: the backward reproduces the forward's mask and scale, also for strided input."""
    genesis.manual_seed(3)
    base = genesis.randn(37, 64, device=DEVICE, dtype=dtype)
    x = base.t().detach().requires_grad_()  # strided: the mask follows the elements' row-major order
    out = F.dropout(x, 0.25)
    assert "DropoutBackward" in repr(out.grad_fn) and not out.grad_fn.saved_tensors
    genesis.manual_seed(3)
    genesis.randn(37, 64, device=DEVICE, dtype=dtype)  # the same generator position as above
    keep = genesis.rand(64, 37, device=DEVICE) >= 0.25
    scale = 1 / 0.75
    expected = genesis.where(keep, x.detach().float() * scale, 0.0)
    assert_same(out.float(), to_torch(expected), rtol=1e-2 if dtype is genesis.bfloat16 else 1e-6, atol=1e-6)
    weights = genesis.randn(64, 37, device=DEVICE, dtype=dtype)
    (out * weights).sum().backward()
    expected_grad = genesis.where(keep, weights.float() * scale, 0.0)
    assert_same(x.grad.float(), to_torch(expected_grad), rtol=1e-2 if dtype is genesis.bfloat16 else 1e-6,
                atol=1e-6)
    with pytest.raises(RuntimeError, match="dropout"):
        F.dropout(genesis.ones(3, dtype=genesis.int64, device=DEVICE), 0.5)


def test_dropout_double_backward():
    genesis.manual_seed(4)
    x = genesis.randn(50, device=DEVICE, dtype=genesis.float64, requires_grad=True)
    out = F.dropout(x, 0.4)
    (g,) = genesis.autograd.grad((out * out).sum(), x, create_graph=True)  # 2 * out * mask * scale
    (gg,) = genesis.autograd.grad(g.sum(), x)
    kept = to_torch(out.detach()) != 0
    expected = torch.where(kept, torch.full((50,), 2 / 0.6**2, dtype=torch.float64), torch.zeros(50,
                           dtype=torch.float64))
    torch.testing.assert_close(to_torch(gg), expected)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(mode):
    check(lambda lib, x: lib.nn.functional.pad(x, (1, 2, 2, 1), mode=mode), rand(2, 3, 4, 5))
    check(lambda lib, x: lib.nn.functional.pad(x, (2, 1), mode=mode), rand(2, 3, 4))
    if mode == "constant":
        check(lambda lib, x: lib.nn.functional.pad(x, (1, -1, 0, 2), value=3.5), rand(3, 4))


def test_normalize_cosine_pairwise():
    check(fn("normalize"), rand(3, 4))
    check(fn("normalize", p=1.0, dim=0), rand(3, 4))
    check(lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b), rand(3, 4), rand(3, 4, seed=1))
    check(lambda lib, a, b: lib.nn.functional.pairwise_distance(a, b), rand(3, 4), rand(3, 4, seed=1))


def test_unfold_fold():
    check(lambda lib, x: lib.nn.functional.unfold(x, 3), rand(2, 3, 5, 6))
    check(lambda lib, x: lib.nn.functional.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(2, 1)),
          rand(2, 2, 6, 7))
    check(lambda lib, x: lib.nn.functional.fold(x, (5, 6), 3), rand(2, 27, 12))
    check(lambda lib, x: lib.nn.functional.fold(x, (6, 7), (2, 3), dilation=(2, 1), padding=1, stride=(2, 1)),
          rand(2, 12, 21))
    # bool windows as torch's; integer ones have no im2col / col2im kernel in torch
    check(lambda lib, x: lib.nn.functional.unfold(x > 0, 2), rand(2, 3, 4, 5, requires_grad=False))
    check(lambda lib, x: lib.nn.functional.fold(x > 0, (3, 4), 2), rand(2, 12, 6, requires_grad=False))
    for dtype, name in ((torch.uint8, "Byte"), (torch.int32, "Int"), (torch.int64, "Long")):
        check_error(NotImplementedError, lambda lib, x: lib.nn.functional.unfold(x, 2),
                    torch.ones(1, 2, 4, 4, dtype=dtype), match=f"^\"im2col_out_cpu\" not implemented for '{name}'$")
        check_error(NotImplementedError, lambda lib, x: lib.nn.functional.fold(x, (3, 4), 2),
                    torch.ones(1, 8, 6, dtype=dtype), match=f"^\"col2im_out_cpu\" not implemented for '{name}'$")


def test_scaled_dot_product_attention():
    q, k, v = rand(2, 3, 5, 4), rand(2, 3, 6, 4, seed=1), rand(2, 3, 6, 4, seed=2)
    sdpa = "scaled_dot_product_attention"
    check(fn(sdpa), q, k, v)
    check(fn(sdpa, scale=0.3), q, k, v)
    check(fn(sdpa, is_causal=True), q, rand(2, 3, 5, 4, seed=1), rand(2, 3, 5, 4, seed=2))
    bool_mask = torch.rand(5, 6, generator=torch.Generator().manual_seed(0)) > 0.3
    bool_mask[:, 0] = True
    check(lambda lib, q, k, v, m: lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m),
          q, k, v, bool_mask)
    check(lambda lib, q, k, v, m: lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m),
          q, k, v, rand(2, 1, 5, 6, seed=4))
    kv = rand(2, 1, 6, 4, seed=1), rand(2, 1, 6, 4, seed=2)
    check(fn(sdpa, enable_gqa=True), rand(2, 4, 5, 4), *kv)
    square_mask = bool_mask[:, :5]
    check(lambda lib, q, k, v, m: lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                                 is_causal=True),
          q, k[..., :5, :], v[..., :5, :], square_mask)
    check_error(RuntimeError, lambda lib, q, k, v, m: lib.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=m), q, k, v, bool_mask.long(), match="attn_mask dtype")
    # A float mask is float32 or the query's dtype.
    check_error(RuntimeError, lambda lib, q, k, v, m: lib.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=m), q.float(), k.float(), v.float(), rand(5, 6, seed=4), match="attn_mask dtype")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("kv_heads", [4, 2])
def test_sdpa_cpu_kernel_with_a_finite_minimum_padding_mask(dtype, kv_heads):
    # HF's decoders mask left padding by adding finfo.min, so a padded query may attend no key and its weights are
    # uniform. torch's CPU flash kernel rounds that row's log-sum-exp (min + log S) to min, and so gives it S times
    # the softmax's gradient: Genesis runs that kernel where torch's dispatcher does, with its node name.
    if DEVICE != "cpu":
        pytest.skip("torch's CPU kernel is the oracle of the padded rows")
    lo = torch.finfo(dtype).min
    mask = torch.triu(torch.full((6, 6), lo, dtype=dtype), 1).expand(2, 1, 6, 6).clone()
    mask[1, :, :, :2] = lo
    q, k, v = rand(2, 4, 6, 8, dtype=dtype), rand(2, kv_heads, 6, 8, dtype=dtype, seed=1), \
        rand(2, kv_heads, 6, 8, dtype=dtype, seed=2)

    def f(lib, q, k, v, m):
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=kv_heads != 4)
    out = check(f, q, k, v, mask)
    assert type(out.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    # Where torch runs its composite (a 3-D mask here), so does Genesis.
    out = check(f, q, k, v, mask[0])
    assert type(out.grad_fn).__name__ != "ScaledDotProductFlashAttentionForCpuBackward0"


def _torch_composite(lib):
    """torch's composite attention where ``lib`` is torch (the oracle where its CPU kernel has no answer)."""
    return sdpa_kernel(SDPBackend.MATH) if lib is torch else contextlib.nullcontext()


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_second_derivatives_through_the_fused_kernel(causal):
    # create_graph differentiates the fused node's gradients in tensor ops (torch's CPU kernel has no double
    # backward).
    def f(lib, q, k, v, w, m):
        with _torch_composite(lib):
            out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None if causal else m,
                                                                 is_causal=causal, enable_gqa=True)
        return lib.autograd.grad((out * w).sum(), (q, k, v), create_graph=True)
    check(f, rand(2, 4, 5, 8), rand(2, 2, 5, 8, seed=1), rand(2, 2, 5, 8, seed=2),
          rand(2, 4, 5, 8, seed=3, requires_grad=False), rand(1, 1, 5, 5, seed=4, requires_grad=False))


def test_sdpa_negative_scale_with_a_causal_mask():
    # torch's CPU kernel scales its causal mask's -inf by the scale and answers NaN here.
    def f(lib, q, k, v):
        with _torch_composite(lib):
            return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=-0.3)
    check(f, rand(2, 3, 5, 8), rand(2, 3, 5, 8, seed=1), rand(2, 3, 5, 8, seed=2))


def test_scaled_dot_product_attention_dropout_is_used():
    q = genesis.randn(1, 1, 8, 4, device=DEVICE)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.0)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.9)
    assert not bool((a == b).all())


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_functional_fused_and_half_precision(training):
    def f(lib, x, w, b):
        mean, var = lib.zeros(3, dtype=x.dtype, device=x.device), lib.ones(3, dtype=x.dtype, device=x.device)
        out = lib.nn.functional.batch_norm(x, mean, var, w, b, training=training, momentum=0.2)
        return out, mean, var
    check(f, rand(4, 3, 5), rand(3), rand(3, seed=1))
    # bf16 input keeps float32 statistics; forward and running statistics as torch's.
    check(f, rand(4, 3, 5, dtype=torch.bfloat16), rand(3, dtype=torch.bfloat16),
          rand(3, dtype=torch.bfloat16, seed=1), backward=False)
    check(lambda lib, x: lib.nn.functional.group_norm(x, 2), rand(2, 4, 3, dtype=torch.bfloat16), backward=False)


def test_bad_arguments_raise_like_torch():
    x = rand(1, 2, 4, 4)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.pad(x, (1, 2, 3)), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.pad(x, (1,) * 10), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect", value=2.0), x)
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.pad(x, (1, 1), mode="foo"), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.pad(x, (4, 4, 0, 0), mode="reflect"), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.unfold(x, 3, stride=0), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.unfold(x, 5), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.fold(x.reshape(1, 2, 16), (4, 4), 3), x)
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.glu(x, 1), rand(2, 3))
    check_error(ValueError, lambda lib, x: lib.nn.functional.dropout(x, -0.1), x)
    check_error(NotImplementedError, lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2, mode="linear"),
                x)
    check_error(RuntimeError, lambda lib, w: lib.nn.functional.embedding(lib.tensor([[0.5]]), w), rand(3, 2))
    check_error(RuntimeError, lambda lib, x: lib.nn.functional.group_norm(x, 3), rand(2, 4, 3))
    check_error(ValueError, lambda lib, x: lib.nn.functional.batch_norm(x, None, None, training=True), rand(1, 3))


def test_multihead_attention_is_causal_needs_a_mask():
    q = rand(3, 1, 8, requires_grad=False)
    for lib in (torch, genesis):
        torch.manual_seed(0)
        m = lib.nn.MultiheadAttention(8, 2)
        x = q if lib is torch else to_genesis(q)
        with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
            m(x, x, x, is_causal=True)


THETA = torch.tensor([[[0.9, 0.2, 0.1], [-0.3, 1.1, -0.2]], [[1.2, -0.1, 0.3], [0.25, 0.8, 0.05]]],
                     dtype=torch.float64)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_identity_affine_grid_is_torchs_to_the_bit(align_corners, dtype):
    # An identity grid puts every point on a pixel centre, where bilinear sampling has a kink: the side a coordinate
    # rounds to picks the gradient of theta, so the coordinates must be torch's exactly.
    theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=dtype)
    for size in ((1, 1, 24, 24), (1, 1, 7, 10), (1, 1, 1, 5)):
        expected = torch.nn.functional.affine_grid(theta, size, align_corners=align_corners)
        got = F.affine_grid(to_genesis(theta), size, align_corners=align_corners)
        assert_same(got, expected, what=f"identity grid {size}", rtol=0, atol=0)
    if dtype is torch.float32:  # torch's float32 rounding of the source positions (its fused multiply-add)
        for n in (24, 11, 19):
            image = (torch.arange(n, dtype=dtype) ** 2).expand(1, 1, n, n)

            def sampled(lib, t, img, n=n):
                grid = lib.nn.functional.affine_grid(t, (1, 1, n, n), align_corners=align_corners)
                return lib.nn.functional.grid_sample(img, grid, align_corners=align_corners)

            # The side of each kink is what this checks; on a GPU the gradient's float32 sum of ~1e5-sized terms
            # runs in another order than on the CPU, hence the wider relative tolerance there.
            tolerance = {} if DEVICE == "cpu" else {"rtol": 1e-4}
            check(sampled, theta.clone().requires_grad_(), image.contiguous(), **tolerance)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(align_corners):
    check(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 3, 4, 7), align_corners=align_corners),
          THETA.clone().requires_grad_(True))
    theta3 = torch.tensor([[[1.0, 0.1, 0.0, 0.2], [0.0, 0.9, 0.1, 0.0], [0.2, 0.0, 1.1, -0.1]]], dtype=torch.float64)
    check(lambda lib, t: lib.nn.functional.affine_grid(t, (1, 2, 3, 4, 5), align_corners=align_corners),
          theta3.requires_grad_(True))
    check_error(NotImplementedError, lambda lib, t: lib.nn.functional.affine_grid(t, (2, 3, 4)), THETA)
    check_error(RuntimeError, lambda lib, t: lib.nn.functional.affine_grid(t, (3, 3, 4, 4)), THETA)
    check_error(ValueError, lambda lib, t: lib.nn.functional.affine_grid(t[:, :, :2], (2, 3, 4, 4)), THETA)


@pytest.mark.parametrize("size", [(2, 3, 4, 7), (2, 2, 3, 4, 5)], ids=["2d", "3d"])
def test_affine_grid_is_one_node_that_saves_nothing(size):
    # torch's AffineGridGeneratorBackward0 needs no saved tensor: one grid backpropagated through twice (two losses
    # on it, each with its own autograd.grad call, no retain_graph), and its gradient differentiable again
    spatial = len(size) - 2
    theta = torch.eye(spatial, spatial + 1, dtype=torch.float64).repeat(size[0], 1, 1)
    theta = (theta + rand(size[0], spatial, spatial + 1, seed=3, requires_grad=False) * 0.2).requires_grad_()

    def grads(lib, t):
        grid = lib.nn.functional.affine_grid(t, size, align_corners=False)
        first = lib.autograd.grad((grid * grid).sum(), t)[0]
        second = lib.autograd.grad(grid.sin().sum(), t, create_graph=True)[0]
        return grid.grad_fn.name(), first, second, lib.autograd.grad(second.pow(2).sum(), t)[0]

    g_name, *g_grads = grads(genesis, to_genesis(theta))
    t_name, *t_grads = grads(torch, theta)
    assert g_name == t_name == "AffineGridGeneratorBackward0"
    for g, t in zip(g_grads, t_grads):
        assert_same(g, t)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bilinear_and_nearest(padding_mode, align_corners):
    # Points inside and outside the image; gradients reach the image and the grid (zero for nearest), as torch's
    gen = torch.Generator().manual_seed(5)
    grid = (torch.rand(2, 4, 7, 2, generator=gen, dtype=torch.float64) * 2.8 - 1.4).requires_grad_(True)
    image = rand(2, 3, 5, 6, seed=6)
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, padding_mode=padding_mode,
                                                          align_corners=align_corners), image, grid)
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode="nearest", padding_mode=padding_mode,
                                                          align_corners=align_corners), image, grid)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bicubic(padding_mode, align_corners):
    # 4x4 taps with torch's A = -0.75, the padding rule applied to each tap: points inside, outside and far outside
    # (several reflections), images one pixel high or wide, and points on pixels, half-way and on the borders
    def sample(lib, x, g):
        return lib.nn.functional.grid_sample(x, g, mode="bicubic", padding_mode=padding_mode,
                                             align_corners=align_corners)
    gen = torch.Generator().manual_seed(8)
    grid = (torch.rand(2, 4, 7, 2, generator=gen, dtype=torch.float64) * 2.8 - 1.4).requires_grad_(True)
    check(sample, rand(2, 3, 5, 6, seed=9), grid)
    far = (torch.rand(1, 3, 5, 2, generator=gen, dtype=torch.float64) * 9.0 - 4.5).requires_grad_(True)
    for shape in [(1, 2, 1, 4), (1, 2, 3, 1), (1, 1, 1, 1)]:
        check(sample, rand(*shape, seed=10), far)
    coords = torch.tensor([-1.0, 1.0, 0.0, -0.5, 0.5, 0.25, 1.5, -3.0], dtype=torch.float64)
    points = torch.cartesian_prod(coords, coords).reshape(1, 1, -1, 2).requires_grad_(True)
    check(sample, rand(1, 2, 4, 5, seed=11), points)


def test_grid_sample_bicubic_float32_and_spatial_transformer():
    # float32 grid gradients sum 16 taps per channel with cancellation: absolute tolerance 2e-5
    gen = torch.Generator().manual_seed(12)
    grid = (torch.rand(2, 3, 4, 2, generator=gen) * 2.4 - 1.2).requires_grad_(True)
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode="bicubic", padding_mode="reflection",
                                                          align_corners=False),
          rand(2, 3, 6, 5, dtype=torch.float32, seed=13), grid, grad_atol=2e-5)
    check(lambda lib, x, t: lib.nn.functional.grid_sample(
        x, lib.nn.functional.affine_grid(t, (2, 3, 4, 7), align_corners=False), mode="bicubic", align_corners=False),
        rand(2, 3, 5, 6, seed=14), THETA.clone().requires_grad_(True))


def test_spatial_transformer_round_trip():
    # An STN's use: affine_grid then grid_sample, differentiated in the image and the transform; the identity map
    # reproduces the image (its points fall on pixel centres, where bilinear sampling has no derivative: values only)
    identity = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=torch.float64).repeat(2, 1, 1)
    image = rand(2, 3, 5, 6, seed=7)
    check(lambda lib, x, t: lib.nn.functional.grid_sample(
        x, lib.nn.functional.affine_grid(t, x.shape, align_corners=False), align_corners=False),
        image, THETA.clone().requires_grad_(True))
    g_out = genesis.nn.functional.grid_sample(
        to_genesis(image), genesis.nn.functional.affine_grid(to_genesis(identity.detach()), (2, 3, 5, 6)))
    torch.testing.assert_close(to_torch(g_out), image.detach())


COSINE_CASES = {
    "small norms": ([[3e-5, 4e-5]], [[4e-5, 3e-5]]),
    "norms below eps": ([[1e-9, 0.0]], [[1e-9, 0.0]]),
    "ordinary": ([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], [[0.5, -1.0, 2.0], [2.0, 2.0, 2.0]]),
}


@pytest.mark.parametrize("name", list(COSINE_CASES))
def test_cosine_similarity_clamps_each_norm(name):
    a, b = COSINE_CASES[name]
    x1 = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    x2 = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    check(lambda lib, x1, x2: lib.nn.functional.cosine_similarity(x1, x2), x1, x2)


def test_cosine_similarity_broadcasts_and_refuses_integers():
    check(lambda lib, x1, x2: lib.nn.functional.cosine_similarity(x1, x2, dim=-1), rand(3, 1, 4, seed=1),
          rand(1, 5, 4, seed=2))
    check(lambda lib, x1, x2: lib.nn.functional.cosine_similarity(x1, x2), torch.tensor([[1, 2]]),
          torch.tensor([[2.0, 1.0]]))
    check_error(RuntimeError, lambda lib, x1, x2: lib.nn.functional.cosine_similarity(x1, x2),
                torch.tensor([[1, 2]]), torch.tensor([[2, 1]]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_sdpa_half_precision_accumulates_in_float32(dtype):
    # torch's CPU kernel computes half-precision attention in float32 and rounds once; so does Genesis's CPU path.
    if DEVICE != "cpu":
        pytest.skip("CPU path: the CUDA flash kernels round the attention weights to the input's dtype before the "
                    "second product, as flash attention does, so their error is not the CPU kernel's")
    n = 2 * 4 * 64 * 32
    q = (torch.linspace(-50, 50, n, dtype=torch.float64).sin() * 2).view(2, 4, 64, 32)
    k = (torch.linspace(-31, 77, n, dtype=torch.float64).cos() * 2).view(2, 4, 64, 32)
    v = torch.linspace(-13, 41, n, dtype=torch.float64).sin().view(2, 4, 64, 32)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = torch.nn.functional.scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype), is_causal=True)
    g = F.scaled_dot_product_attention(*(to_genesis(x).to(getattr(genesis, str(dtype).split(".")[-1]))
                                         for x in (q, k, v)), is_causal=True)
    torch_error = (t.double() - ref).abs().mean().item()
    genesis_error = (to_torch(g).double() - ref).abs().mean().item()
    assert genesis_error <= 1.25 * torch_error, (genesis_error, torch_error)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name,kwargs", [
    ("mish", {}), ("hardswish", {}), ("hardsigmoid", {}), ("selu", {}), ("elu", {"alpha": 0.7}),
    ("celu", {"alpha": 1.3}), ("glu", {}), ("softsign", {}), ("tanhshrink", {}),
])
def test_half_precision_activations_round_as_torch(name, kwargs, dtype):
    # torch's kernels compute the many-step activations in float32 and round once; softsign and tanhshrink are
    # Python compositions in torch, rounded at every step: bit-exact either way.
    x = ((torch.arange(4 * 64, dtype=torch.float32).reshape(4, 64) * 0.731).sin() * 6).to(dtype)
    check_bits(fn(name, **kwargs), x)
