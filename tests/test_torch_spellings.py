"""torch's other spellings of ops, legacy tensor methods, device predicates and process settings, against torch:
values, dtypes, shapes, gradients and the errors torch raises."""

import warnings

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, check_like_torch, rand, to_genesis


@pytest.mark.parametrize("name", ["is_mps", "is_xpu", "is_ipu", "is_maia", "is_mtia", "is_vulkan", "is_mkldnn",
                                  "is_quantized", "is_nested"])
def test_device_predicates_are_false_properties(name: str) -> None:
    assert getattr(genesis.ones(2, device=DEVICE), name) is getattr(torch.ones(2), name) is False
    assert isinstance(getattr(genesis.Tensor, name), property)


def test_output_nr() -> None:
    for lib in (genesis, torch):
        a = lib.ones(3, requires_grad=True)
        first, second = (a * 1).split(2)
        assert (a.output_nr, first.output_nr, second.output_nr) == (0, 0, 1)


def test_process_settings() -> None:
    assert genesis.set_flush_denormal(False) == torch.set_flush_denormal(False)
    assert genesis.get_num_interop_threads() == torch.get_num_interop_threads()
    with pytest.raises(RuntimeError, match="positive integer"):
        genesis.set_num_interop_threads(0)
    assert genesis.is_anomaly_enabled() is False and genesis.is_anomaly_check_nan_enabled() is True
    genesis.set_anomaly_enabled(True, False)
    try:
        assert genesis.is_anomaly_enabled() and not genesis.is_anomaly_check_nan_enabled()
        assert genesis.autograd.is_anomaly_enabled()
    finally:
        genesis.set_anomaly_enabled(False)
    assert not genesis.is_anomaly_enabled() and genesis.is_anomaly_check_nan_enabled()


def test_deprecated_autocast_queries() -> None:
    with pytest.warns(DeprecationWarning):
        assert genesis.is_autocast_cpu_enabled() is False
    with pytest.warns(DeprecationWarning):
        assert genesis.get_autocast_gpu_dtype() == genesis.float16
    with genesis.autocast("cpu", dtype=genesis.float16), pytest.warns(DeprecationWarning):
        assert genesis.is_autocast_cpu_enabled()
        assert genesis.get_autocast_cpu_dtype() == genesis.float16
    with pytest.warns(DeprecationWarning):
        assert genesis.get_autocast_cpu_dtype() == genesis.bfloat16


def test_activation_methods_and_ger() -> None:
    check(lambda lib, x, w: x.prelu(w), rand(2, 3, 4), rand(3))
    check(lambda lib, x: x.hardshrink(0.3), rand(5))
    check(lambda lib, a, b: a.ger(b), rand(3), rand(4))


def test_igamma() -> None:
    a, x = rand(4, low=0.5, high=3.0, requires_grad=False), rand(4, low=0.1, high=4.0)
    check(lambda lib, a, x: lib.igamma(a, x), a, x)
    check(lambda lib, a, x: lib.igammac(a, x), a, x)


def test_unsafe_splits() -> None:
    check(lambda lib, x: lib.unsafe_split(x, 2), rand(5, 2))
    check(lambda lib, x: x.unsafe_split(2, 1), rand(2, 5))
    check(lambda lib, x: x.unsafe_chunk(2), rand(5))
    check(lambda lib, x: lib.unsafe_chunk(x, 3, 1), rand(2, 7))
    check(lambda lib, x: x.unsafe_split_with_sizes([2, 3]), rand(5))


def test_out_of_place_resize() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, x: x.resize(3, 2) * 2, rand(6))
        check(lambda lib, x: x.resize_as(lib.ones(6)), rand(2, 3))
        check_like_torch(lambda lib, x: x.resize(4, 4), rand(2, 3, requires_grad=False))
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        genesis.ones(4, device=DEVICE).resize(2, 2)


@pytest.mark.skipif(DEVICE != "cpu", reason="apply_, map_ and map2_ are CPU-only in torch")
def test_elementwise_python_maps() -> None:
    check(lambda lib, x: x.clone().apply_(lambda v: v * 2 + 1), rand(2, 3, requires_grad=False))
    check(lambda lib, x: lib.ones(3, dtype=lib.int64).apply_(lambda v: v * 2.7), rand(1, requires_grad=False))
    check(lambda lib, x, y: x.clone().map_(y, lambda a, b: a - b), rand(2, 3, requires_grad=False),
          rand(3, requires_grad=False))
    check(lambda lib, x, y, z: x.clone().map2_(y, z, lambda a, b, c: a * b + c), rand(2, 3, requires_grad=False),
          rand(3, requires_grad=False), rand(2, 1, requires_grad=False))
    check_error(RuntimeError, lambda lib, x: x.apply_(lambda v: v), rand(3), match="requires grad")
    check_error(RuntimeError, lambda lib, x, y: x.map_(y, lambda a, b: a), rand(3, requires_grad=False),
                rand(2, requires_grad=False))


def test_nonzero_static() -> None:
    x = torch.tensor([[0, 1, 0], [2, 0, 3]])
    for size, fill in ((6, -1), (2, -1), (4, 7), (0, -1)):
        check(lambda lib, x, size=size, fill=fill: lib.nonzero_static(x, size=size, fill_value=fill), x)
        check(lambda lib, x, size=size, fill=fill: x.nonzero_static(size=size, fill_value=fill), x)
    check_error(RuntimeError, lambda lib, x: x.nonzero_static(size=-1), x, match="non-negative")


def test_as_strided_in_place_and_scatter() -> None:
    def restride(lib, x):
        y = x * 1
        out = y.as_strided_((2, 2), (1, 2), 1)
        assert out is y
        return y * 3

    check(restride, rand(6))
    check(lambda lib, x: lib.as_strided_(x.clone(), (3,), (2,)), rand(6))
    check(lambda lib, x, s: lib.as_strided_scatter(x, s, (2, 2), (1, 2), 1), rand(6, requires_grad=False), rand(2, 2))
    check(lambda lib, x, s: x.as_strided_scatter(s, (3,), (2,)), rand(2, 3, requires_grad=False), rand(3))
    # torch 2.13's gradient for the input is not the derivative (it passes the gradient at the overwritten
    # elements): here the input receives it where it is kept, zero where src replaced it.
    x = genesis.arange(6.0, device=DEVICE, requires_grad=True)
    (genesis.as_strided_scatter(x, genesis.ones(2, 2, device=DEVICE), (2, 2), (1, 2), 1) * x.detach()).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 5.0]
    check_error(RuntimeError, lambda lib, x: x.as_strided_((2,), (-1,)), rand(4, requires_grad=False))
    check_error(RuntimeError, lambda lib, x: x.as_strided_((2,), (1,)), rand(4))  # a leaf that requires grad


@pytest.mark.skipif(DEVICE != "cpu", reason="Genesis's sparse tensors are CPU tensors")
def test_sparse_queries_of_strided_and_sparse_tensors() -> None:
    x = rand(2, 3, requires_grad=False)
    g = to_genesis(x)
    assert (g.dense_dim(), g.sparse_dim()) == (x.dense_dim(), x.sparse_dim())
    for name in ("is_coalesced", "indices", "values", "coalesce"):
        check_error(RuntimeError, lambda lib, t, name=name: getattr(t, name)(), x, match="but got Strided")
    assert g.to_sparse_coo().layout is genesis.sparse_coo
    assert_same(g.to_sparse_coo().to_dense(), x.to_sparse_coo().to_dense())
    i, v = [[0, 1, 1], [1, 0, 0]], [1.0, 2.0, 3.0]
    gs, ts = genesis.sparse_coo_tensor(i, v, (2, 2)), torch.sparse_coo_tensor(i, v, (2, 2))
    assert (gs.sparse_dim(), gs.dense_dim(), gs.is_coalesced()) == (ts.sparse_dim(), ts.dense_dim(), ts.is_coalesced())
    assert_same(gs.coalesce().values(), ts.coalesce().values())


@pytest.mark.parametrize("name", ["asin", "acos", "atan", "sinh", "cosh", "tan", "asinh", "atanh", "arcsin", "arccos",
                                  "arctan", "arcsinh", "arctanh", "erfc", "i0", "log2", "log10", "logit",
                                  "nan_to_num", "deg2rad", "rad2deg", "negative", "conj_physical"])
def test_inplace_unary_functions(name: str) -> None:
    x = rand(5, low=0.1, high=0.9, requires_grad=False)
    out = check(lambda lib, x: getattr(lib, f"{name}_")(x), x.clone())
    g = to_genesis(x)
    assert getattr(genesis, f"{name}_")(g) is g
    assert_same(out, getattr(torch, name)(x))


def test_inplace_functions_with_arguments() -> None:
    check(lambda lib, x: lib.acosh_(x), rand(4, low=1.5, high=3.0, requires_grad=False))
    check(lambda lib, x: lib.arccosh_(x), rand(4, low=1.5, high=3.0, requires_grad=False))
    check(lambda lib, x: lib.clamp_min_(x, 0.1), rand(5, requires_grad=False))
    check(lambda lib, x: lib.clamp_max_(x, 0.1), rand(5, requires_grad=False))
    check(lambda lib, x, y: lib.xlogy_(x, y), rand(4, requires_grad=False), rand(4, low=0.5, requires_grad=False))
    check(lambda lib, x, y: lib.ldexp_(x, y), rand(4, requires_grad=False), torch.tensor([1, 2, 0, -1]))
    a, b = torch.tensor([12, 18, 7]), torch.tensor([8, 12, 3])
    check(lambda lib, x, y: lib.gcd_(x, y), a.clone(), b)
    check(lambda lib, x, y: lib.lcm_(x, y), a.clone(), b)


def test_detach_and_fill_functions() -> None:
    check(lambda lib, x: lib.detach(x) * 2, rand(3))
    check(lambda lib, x: lib.fill(x, 2.5) * x, rand(3))
    check(lambda lib, x, v: lib.fill(x, v) * x, rand(3), rand(1).reshape(()))
    for lib in (genesis, torch):
        x = lib.ones(2, requires_grad=True) * 1
        assert lib.detach_(x) is x and not x.requires_grad


def test_legacy_norms() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, x: lib.frobenius_norm(x, (1, 2), True), rand(2, 3, 4))
        check(lambda lib, x: lib.frobenius_norm(x, (0,)), rand(2, 3))
        check(lambda lib, x: lib.nuclear_norm(x), rand(3, 3), rtol=1e-6, atol=1e-8)
        check(lambda lib, x: lib.nuclear_norm(x, True), rand(3, 4), rtol=1e-6, atol=1e-8)
        check(lambda lib, x: lib.nuclear_norm(x, (1, 2), True), rand(2, 3, 3), rtol=1e-6, atol=1e-8)
        check_error(RuntimeError, lambda lib, x: lib.frobenius_norm(x, (0, 1, 2)), rand(2, 2, 2), match="at most 2")
    with pytest.warns(UserWarning, match="deprecated"):
        genesis.nuclear_norm(genesis.eye(2, device=DEVICE))


def test_binomial() -> None:
    count = to_genesis(torch.full((4000,), 10.0), requires_grad=False)
    prob = to_genesis(torch.full((4000,), 0.3), requires_grad=False)
    draws = genesis.binomial(count, prob)
    assert draws.dtype == genesis.float32 and tuple(draws.shape) == (4000,)
    assert abs(float(draws.mean().item()) - 3.0) < 0.15
    assert float(draws.min().item()) >= 0 and float(draws.max().item()) <= 10
    gen = genesis.Generator(DEVICE).manual_seed(3)
    first = genesis.binomial(count, prob, generator=gen)
    gen.manual_seed(3)
    assert genesis.equal(first, genesis.binomial(count, prob, generator=gen))
    check_error(ValueError, lambda lib, c, p: lib.binomial(c, p), torch.tensor([10]), torch.tensor([0.5]),
                match="floating-point dtypes for count, got: Long")


def test_empty_permuted() -> None:
    for size, layout in (((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 0, 3), (2, 0, 1)), ((4,), (0,))):
        g, t = genesis.empty_permuted(size, layout, device=DEVICE), torch.empty_permuted(size, layout)
        assert (tuple(g.shape), g.stride()) == (tuple(t.shape), t.stride())
    assert genesis.empty_permuted((2, 3), (1, 0), dtype=genesis.float64).dtype == genesis.float64
    for layout in ((0, 0), (0, 5), (0,)):
        check_like_torch(lambda lib, _, layout=layout: lib.empty_permuted((2, 3), layout), rand(1))


def test_lazy_layers_hold_uninitialized_parameters_and_buffers() -> None:
    for lib in (genesis, torch):
        m = lib.nn.LazyLinear(3)
        w = m.weight
        assert isinstance(w, lib.nn.parameter.UninitializedParameter) and isinstance(w, lib.nn.Parameter)
        assert repr(w) == "<UninitializedParameter>"
        m(lib.ones(2, 4))
        assert type(m.weight) is lib.nn.Parameter and m.weight is w and tuple(w.shape) == (3, 4)
        bn = lib.nn.LazyBatchNorm1d()
        assert isinstance(bn.running_mean, lib.nn.parameter.UninitializedBuffer)
        bn(lib.ones(4, 3))
        assert type(bn.running_mean) is lib.Tensor and tuple(bn.running_mean.shape) == (3,)


def test_uninitialized_parameter_materializes() -> None:
    for lib in (genesis, torch):
        p = lib.nn.parameter.UninitializedParameter(dtype=lib.float64)
        assert p.requires_grad and p.dtype == lib.float64
        p.materialize((2, 3))
        assert type(p) is lib.nn.Parameter and tuple(p.shape) == (2, 3) and p.dtype == lib.float64
        b = lib.nn.parameter.UninitializedBuffer()
        assert not b.requires_grad
        b.materialize(4)
        assert type(b) is lib.Tensor and tuple(b.shape) == (4,)


def test_deprecated_scale_first_overloads() -> None:
    """The pre-1.5 optimizer idiom ``exp_avg.mul_(b1).add_(1 - b1, grad)``: torch still takes the scale first in
    ``add``/``sub`` (alpha) and ``addcmul``/``addcdiv`` (value), function, method and in-place, with a warning."""
    x, a, b = rand(3, 4), rand(4, seed=1), rand(3, 1, seed=2, low=0.5, high=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, x, a: lib.add(x, 0.5, a), x, a)
        check(lambda lib, x, a: x.sub(-2, a), x, a)
        check(lambda lib, x, a: x.clone().add_(0.25, a), x, a)
        check(lambda lib, x, a: x.clone().sub_(3, a), x, a)
        check(lambda lib, x, a, b: lib.addcmul(x, 0.5, a, b), x, a, b)
        check(lambda lib, x, a, b: x.addcdiv(-2, a, b), x, a, b)
        check(lambda lib, x, a, b: x.clone().addcmul_(0.1, a, b), x, a, b)
        check(lambda lib, x, a, b: x.clone().addcdiv_(-0.3, a, b), x, a, b)
        check_like_torch(lambda lib, x, a, b: x.addcmul(0.5, a, b, b), x, a, b)
    g = genesis.ones(2)
    with pytest.warns(UserWarning, match=r"This overload of addcdiv_ is deprecated:\n\taddcdiv_\(Number value"):
        g.addcdiv_(2.0, g, g)
    assert g.tolist() == [3.0, 3.0]


def test_zero_dim_tensor_alpha_is_a_number() -> None:
    """``p.add_(update, alpha=-lr * trust_ratio)`` (LARS/LAMB written by hand): a 0-dim tensor that requires no
    gradient is the number alpha, with no deprecation warning; any other tensor alpha is a TypeError."""
    x, a = rand(3, 4), rand(4, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(lambda lib, x, a: lib.add(x, a, alpha=lib.tensor(-0.5)), x, a)
        check(lambda lib, x, a: x.sub(a, alpha=lib.tensor(2.0, dtype=lib.float64)), x, a)
        check(lambda lib, x, a: x.clone().add_(a, alpha=lib.tensor(0.25)), x, a)
        check(lambda lib, x, a: x.clone().sub_(a, alpha=lib.tensor(3)), x, a)
    with pytest.warns(UserWarning, match="This overload of add_ is deprecated"):
        check(lambda lib, x, a: x.clone().add_(lib.tensor(0.5), a), x, a)
    check_error(TypeError, lambda lib, x, a: x.add_(a, alpha=lib.tensor([0.5, 1.0])), x, a)
    check_error(TypeError, lambda lib, x, a: lib.sub(x, a, alpha=lib.tensor(0.5, requires_grad=True)), x, a)
    check_error(RuntimeError, lambda lib: lib.arange(3).add(lib.arange(3), alpha=lib.tensor(0.5)))
