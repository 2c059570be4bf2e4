"""Tensor methods torch scripts use that the op themes add: ``fill_diagonal_``, ``put``/``put_``, ``narrow_copy``,
``cfloat``/``cdouble``, ``resize_as_``, ``is_inference``, ``share_memory_``/``is_shared``, the random fills
``cauchy_``/``log_normal_``/``geometric_``/``exponential_``, and ``genesis.poisson``."""

import math
import multiprocessing
import os

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis, to_torch, torch_differentiates


def _index(lib, values: list) -> object:
    return lib.tensor(values, device=DEVICE) if lib is genesis else torch.tensor(values)


# ------------------------------------------------------------------ fill_diagonal_


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((5, 3), False), ((5, 3), True), ((7, 3), True),
                                         ((4, 3), True), ((3, 5), True), ((3, 3, 3), False), ((2, 2, 2, 2), True),
                                         ((1, 4), False)])
def test_fill_diagonal(shape: tuple, wrap: bool) -> None:
    check(lambda lib, a: (a * 1).fill_diagonal_(2.5, wrap), rand(*shape))
    check(lambda lib, a: (a * 1).fill_diagonal_(-1, wrap=wrap), rand(*shape))


def test_fill_diagonal_dtypes_views_and_result() -> None:
    check(lambda lib, a: a.clone().fill_diagonal_(7), torch.arange(12).reshape(4, 3))
    check(lambda lib, a: a.clone().fill_diagonal_(True), torch.zeros(3, 3, dtype=torch.bool))
    check(lambda lib, a: a.t().clone().fill_diagonal_(0.5), rand(4, 3))
    x = to_genesis(rand(3, 3, requires_grad=False))
    assert x.fill_diagonal_(1.0) is x
    check_error(RuntimeError, lambda lib, a: a.fill_diagonal_(1.0), rand(3, requires_grad=False))
    check_error(RuntimeError, lambda lib, a: a.fill_diagonal_(1.0), rand(3, 3, 4, requires_grad=False))
    check_error(RuntimeError, lambda lib, a: a.fill_diagonal_(1.0), rand(3, 3))  # a leaf that requires grad


# ------------------------------------------------------------------ put, put_, narrow_copy


def test_put_values_and_gradients() -> None:
    check(lambda lib, a, s: lib.put(a, _index(lib, [0, 5, -2]), s), rand(2, 3), rand(3))
    check(lambda lib, a, s: a.put(_index(lib, [[1, 1], [4, 0]]), s, accumulate=True), rand(2, 3), rand(2, 2))
    check(lambda lib, a, s: (a * 1).put_(_index(lib, [1, 1, 4]), s, True), rand(2, 3), rand(3))
    check(lambda lib, a, s: a.t().put(_index(lib, [1, 2]), s), rand(2, 3), rand(2))
    check(lambda lib, a, s: lib.put(a, _index(lib, [0]), s), rand(), rand(1))
    check(lambda lib, a: a.clone().put_(_index(lib, [0, 3]), _index(lib, [7, 8])), torch.arange(4))


@pytest.mark.parametrize("index, source, error", [
    ([6], [1.0], IndexError), ([-7], [1.0], IndexError), ([0, 1], [1.0], IndexError),
])
def test_put_errors(index: list, source: list, error: type) -> None:
    check_error(error, lambda lib, a, s: lib.put(a, _index(lib, index), s), rand(2, 3),
                torch.tensor(source, dtype=torch.float64))


def test_put_type_errors() -> None:
    check_error(RuntimeError, lambda lib, a, s: lib.put(a, _index(lib, [0.0]), s), rand(2, 3), rand(1))
    check_error(RuntimeError, lambda lib, a, s: lib.put(a, _index(lib, [0]).int(), s), rand(2, 3), rand(1))
    check_error(RuntimeError, lambda lib, a, s: lib.put(a, _index(lib, [0]), s), rand(2, 3), rand(1).float())
    check_error(IndexError, lambda lib, a, s: lib.put(a, _index(lib, [0]), s), rand(0), rand(1))


def test_narrow_copy() -> None:
    grads = torch_differentiates(lambda x: torch.narrow_copy(x, 0, 0, 1))
    check(lambda lib, a: lib.narrow_copy(a, 1, 1, 2), rand(3, 4), backward=grads)
    check(lambda lib, a: a.narrow_copy(0, 1, 2), rand(3, 4), backward=grads)
    check(lambda lib, a: a.narrow_copy(0, -2, 2), rand(3, 4), backward=False)
    x = to_genesis(rand(3, 4, requires_grad=False))
    copy = genesis.narrow_copy(x, 0, 0, 2)
    assert copy.is_contiguous() and copy.data_ptr() != x.data_ptr()
    check_error(RuntimeError, lambda lib, a: lib.narrow_copy(a, 0, 2, 5), rand(3, 4))


# ------------------------------------------------------------------ conversions, resize_as_, new_empty_strided


def test_complex_conversions() -> None:
    check(lambda lib, a: a.cfloat(), rand(3))
    check(lambda lib, a: a.cdouble(), rand(3).float())
    check(lambda lib, a: a.cfloat(), torch.arange(3), backward=False)
    assert genesis.cfloat is genesis.complex64 and genesis.cdouble is genesis.complex128


def test_resize_as() -> None:
    for template in ((2, 2), (2, 5), (0,)):
        check(lambda lib, a, t=template: a.clone().resize_as_(lib.zeros(t))[:4] if t == (2, 2) else
              a.clone().resize_as_(lib.zeros(t)).shape, torch.arange(6.0))
    got = to_genesis(torch.arange(24.0)).resize_as_(genesis.ones(2, 3, 2, 2), memory_format=genesis.channels_last)
    expected = torch.arange(24.0).resize_as_(torch.ones(2, 3, 2, 2), memory_format=torch.channels_last)
    assert got.stride() == expected.stride()
    template = to_genesis(torch.ones(3, 2)).t()
    assert to_genesis(torch.arange(6.0)).resize_as_(template, memory_format=genesis.preserve_format).stride() == \
        torch.arange(6.0).resize_as_(torch.ones(3, 2).t(), memory_format=torch.preserve_format).stride()
    check_error(RuntimeError, lambda lib, a: a.resize_as_(lib.zeros(2)), rand(3))


# ------------------------------------------------------------------ is_inference


def test_is_inference() -> None:
    with genesis.inference_mode():
        made = genesis.ones(2, device=DEVICE)
        computed = made * 2
    assert made.is_inference() and computed.is_inference()
    assert made[0].is_inference() and made.detach().is_inference()
    assert not (made + 1).is_inference() and not genesis.ones(1, device=DEVICE).is_inference()
    with genesis.no_grad():
        assert not genesis.ones(1, device=DEVICE).is_inference()
    with genesis.inference_mode(False):
        assert not genesis.ones(1, device=DEVICE).is_inference()
    with torch.inference_mode():
        assert torch.ones(1).is_inference() and torch.ones(1)[0].is_inference()


def test_inference_tensors_refuse_requires_grad_outside_inference_mode() -> None:
    for lib in (torch, genesis):
        with lib.inference_mode():
            made = lib.ones(2)
        with pytest.raises(RuntimeError, match="inference tensor outside InferenceMode"):
            made.requires_grad_()
        assert lib.ones(2).requires_grad_().requires_grad  # an ordinary tensor still may


def test_inference_tensors_cannot_be_saved_for_backward() -> None:
    for lib in (torch, genesis):
        with lib.inference_mode():
            made = lib.ones(2, device=DEVICE)
        w = lib.ones(2, device=DEVICE, requires_grad=True)
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            made * w  # the product's backward needs the inference tensor
        (made + w).sum().backward()  # a sum saves nothing: allowed
        (made.clone() * w).sum().backward()  # the documented way around
        assert w.grad.tolist() == [2.0, 2.0]


# ------------------------------------------------------------------ share_memory_


@pytest.mark.skipif(DEVICE != "cpu", reason="GPU tensors are shared already (share_memory_ is a no-op there)")
def test_share_memory_moves_to_memory_forked_processes_see() -> None:
    x = to_genesis(torch.arange(6.0).reshape(2, 3)).t()
    assert not x.is_shared()
    assert x.share_memory_() is x and x.is_shared() and x[1].is_shared()
    assert x.stride() == (1, 3) and x.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert x.share_memory_() is x  # already shared: a no-op
    context = multiprocessing.get_context("fork")
    child = context.Process(target=lambda: x.add_(100))
    child.start()
    child.join()
    assert child.exitcode == 0
    assert x.tolist() == [[100.0, 103.0], [101.0, 104.0], [102.0, 105.0]]


@pytest.mark.skipif(DEVICE != "cpu", reason="host memory")
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.int64, genesis.bool, genesis.complex64])
def test_share_memory_of_every_dtype_and_shape(dtype: object) -> None:
    for shape in ((3,), (0,), ()):
        t = genesis.ones(shape, dtype=dtype)
        before = t.tolist()
        t.share_memory_()
        assert t.is_shared() and t.tolist() == before and t.dtype is dtype


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_share_memory_keeps_autograd() -> None:
    w = genesis.ones(3, requires_grad=True, device=DEVICE)
    w.share_memory_()
    (w * 2).sum().backward()
    assert w.requires_grad and w.grad.tolist() == [2.0, 2.0, 2.0]


# ------------------------------------------------------------------ random fills, poisson


def test_random_fills_follow_their_distributions() -> None:
    genesis.manual_seed(0)
    n = 20000
    x = genesis.empty(n, dtype=genesis.float64, device=DEVICE)
    cauchy = to_torch(x.cauchy_(1.0, 2.0))
    assert abs(cauchy.median().item() - 1.0) < 0.1 and abs((cauchy - 1).abs().median().item() - 2.0) < 0.15
    lognormal = to_torch(x.log_normal_(0.5, 0.25))
    assert lognormal.min() > 0 and abs(lognormal.log().mean().item() - 0.5) < 0.01
    assert abs(lognormal.log().std().item() - 0.25) < 0.01
    geometric = to_torch(x.geometric_(0.25))
    assert geometric.min() == 1 and torch.equal(geometric, geometric.round())
    assert abs(geometric.mean().item() - 4.0) < 0.1
    counts = to_torch(genesis.empty(n, dtype=genesis.int32, device=DEVICE).geometric_(0.5))
    assert counts.dtype == torch.int32 and abs(counts.double().mean().item() - 2.0) < 0.05
    exponential = to_torch(x.exponential_(4.0))
    assert exponential.min() >= 0 and abs(exponential.mean().item() - 0.25) < 0.01


def test_random_fills_take_a_generator() -> None:
    for method, args in (("cauchy_", ()), ("log_normal_", ()), ("geometric_", (0.3,)), ("exponential_", ())):
        a = getattr(genesis.empty(5, device=DEVICE), method)(*args, generator=genesis.Generator(DEVICE).manual_seed(4))
        b = getattr(genesis.empty(5, device=DEVICE), method)(*args, generator=genesis.Generator(DEVICE).manual_seed(4))
        assert genesis.equal(a, b), method


@pytest.mark.parametrize("call, error", [
    (lambda t: t.cauchy_(0.0, 0.0), RuntimeError), (lambda t: t.cauchy_(0.0, -1.0), RuntimeError),
    (lambda t: t.log_normal_(1.0, 0.0), RuntimeError), (lambda t: t.geometric_(0.0), RuntimeError),
    (lambda t: t.geometric_(1.0), RuntimeError), (lambda t: t.geometric_(1.5), RuntimeError),
    (lambda t: t.exponential_(0.0), RuntimeError), (lambda t: t.exponential_(-1.0), RuntimeError),
])
def test_random_fill_parameter_errors(call, error) -> None:
    check_error(error, lambda lib, t: call(t), rand(3, requires_grad=False))


def test_random_fill_dtype_errors() -> None:
    check_error(RuntimeError, lambda lib, t: t.cauchy_(), torch.zeros(3, dtype=torch.int64))
    check_error(RuntimeError, lambda lib, t: t.exponential_(), torch.zeros(3, dtype=torch.int64))
    check_error(NotImplementedError, lambda lib, t: t.log_normal_(), torch.zeros(3, dtype=torch.int64))
    check_error(NotImplementedError, lambda lib, t: t.geometric_(0.5), torch.zeros(3, dtype=torch.bool))
    check_error(RuntimeError, lambda lib, t: t.cauchy_(), rand(3))  # a leaf that requires grad


def test_poisson() -> None:
    rates = genesis.tensor([0.0, 0.5, 3.0, 40.0, 300.0], dtype=genesis.float64, device=DEVICE).repeat(4000, 1)
    draws = genesis.poisson(rates, genesis.Generator(DEVICE).manual_seed(1))
    assert draws.dtype is genesis.float64 and draws.shape == rates.shape
    values = to_torch(draws)
    assert torch.equal(values, values.round()) and values.min() >= 0 and values[:, 0].max() == 0
    torch.testing.assert_close(values.mean(0), torch.tensor([0.0, 0.5, 3.0, 40.0, 300.0], dtype=torch.float64),
                               rtol=0.02, atol=0.03)
    torch.testing.assert_close(values.var(0), torch.tensor([0.0, 0.5, 3.0, 40.0, 300.0], dtype=torch.float64),
                               rtol=0.08, atol=0.03)
    again = genesis.poisson(rates, genesis.Generator(DEVICE).manual_seed(1))
    assert genesis.equal(draws, again)
    assert genesis.poisson(genesis.tensor([2.0], dtype=genesis.float16, device=DEVICE)).dtype is genesis.float16


def test_poisson_gradient_is_zero_and_generator_advances() -> None:
    check(lambda lib, r: lib.poisson(r) * 0, rand(4, low=1.0, high=3.0))
    generator = genesis.Generator(DEVICE).manual_seed(2)
    first = genesis.poisson(genesis.full((50,), 5.0, device=DEVICE), generator)
    second = genesis.poisson(genesis.full((50,), 5.0, device=DEVICE), generator)
    assert not genesis.equal(first, second)
    default_before = genesis.random.default_generator(DEVICE).get_state().tolist()
    genesis.poisson(genesis.full((5,), 5.0, device=DEVICE), genesis.Generator(DEVICE))
    assert genesis.random.default_generator(DEVICE).get_state().tolist() == default_before


def test_poisson_errors() -> None:
    check_error(RuntimeError, lambda lib, r: lib.poisson(r), torch.tensor([-1.0]))
    check_error(RuntimeError, lambda lib, r: lib.poisson(r), torch.tensor([math.nan]))
    check_error(NotImplementedError, lambda lib, r: lib.poisson(r), torch.tensor([1, 2]))


def test_poisson_of_infinite_rates() -> None:
    # torch's CPU kernel returns an undefined integer there; Genesis returns the rate.
    assert genesis.poisson(genesis.tensor([math.inf], device=DEVICE)).tolist() == [math.inf]
    assert_same(genesis.poisson(to_genesis(torch.zeros(2, 3))), torch.poisson(torch.zeros(2, 3)))
