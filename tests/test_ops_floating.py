"""polygamma (function, method, in place, torch.special), frexp and nextafter against torch: values on every dtype,
special values, gradients and errors; composite ops that round as torch's kernels do."""

import math

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, rand, to_genesis, to_torch, torch_differentiates

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
POINTS = [-3.7, -2.5, -0.999, -1e-8, 1e-3, 0.3, 1.0, 2.5, 7.3, 30.0, 1e6, -100.25]


# ------------------------------------------------------------------ polygamma


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7, 12])
def test_polygamma_values_float64(n: int) -> None:
    # Far orders at negative points cancel large terms (torch's own value is off by 1e-5 relative at n = 12, x = -2.5).
    points = POINTS if n <= 7 else [p for p in POINTS if p > 0]
    check(lambda lib, t: lib.polygamma(n, t), torch.tensor(points, dtype=torch.float64), rtol=1e-12, backward=False)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_poles_and_special_values(n: int) -> None:
    x = torch.tensor([0.0, -1.0, -2.0, math.inf, -math.inf, math.nan], dtype=torch.float64)
    check(lambda lib, t: lib.polygamma(n, t), x, backward=False)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma_gradient_is_the_next_order(n: int) -> None:
    x = rand(5, low=0.2, high=4.0)
    check(lambda lib, t: lib.polygamma(n, t), x, rtol=1e-11)


def test_digamma_and_trigamma_have_second_derivatives() -> None:
    x = rand(4, low=0.5, high=3.0)
    check(lambda lib, t: lib.autograd.grad(lib.digamma(t).sum(), t, create_graph=True)[0], x, rtol=1e-11)
    check(lambda lib, t: lib.autograd.grad(lib.polygamma(1, t).sum(), t, create_graph=True)[0], x, rtol=1e-11)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_polygamma_dtypes(dtype: torch.dtype) -> None:
    x = torch.tensor([1, 2, 5], dtype=dtype)
    for n in (0, 1, 2, 5):
        check(lambda lib, t, n=n: lib.polygamma(n, t), x, rtol=2e-6)


def test_polygamma_method_inplace_and_special() -> None:
    x = rand(3, 4, low=0.5, high=5.0)
    check(lambda lib, t: t.polygamma(2), x, rtol=1e-11)
    check(lambda lib, t: t.clone().polygamma_(3), x, rtol=1e-11)
    check(lambda lib, t: lib.special.polygamma(2, t), x, rtol=1e-11)


def test_polygamma_errors() -> None:
    check_error(RuntimeError, lambda lib, t: lib.polygamma(-1, t), rand(3))
    check_error(TypeError, lambda lib, t: lib.polygamma(1.5, t), rand(3))


# ------------------------------------------------------------------ frexp


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_frexp_values(dtype: torch.dtype) -> None:
    values = [0.0, -0.0, 1.0, 1.5, -3.5, 0.75, 1e-6, 1000.0, -65504.0, math.inf, -math.inf, math.nan]
    if dtype in (torch.float32, torch.float64, torch.bfloat16):
        values += [1e-40, 3e38, 1e-38]
    if dtype is torch.float64:
        values += [1e-310, 5e-324, 1 - 2 ** -53, 1.7e308]
    check(lambda lib, t: lib.frexp(t), torch.tensor(values, dtype=torch.float64).to(dtype), backward=False)


def test_frexp_gradient_result_type_and_method() -> None:
    x = rand(3, 4) * 100
    check(lambda lib, t: lib.frexp(t).mantissa, x)
    check(lambda lib, t: t.frexp(), x)
    result = genesis.frexp(to_genesis(x))
    assert type(result)._fields == torch.return_types.frexp.__match_args__
    assert result.exponent.dtype is genesis.int32 and not result.exponent.requires_grad
    m, e = result
    torch.testing.assert_close(to_torch(m * genesis.exp2(e.to(m.dtype))), x.detach())


def test_frexp_of_integers_raises() -> None:
    check_error(RuntimeError, lambda lib, t: lib.frexp(t), torch.tensor([1, 2]))


# ------------------------------------------------------------------ nextafter

PAIRS = [(1.0, 2.0), (1.0, 0.0), (0.0, -1.0), (0.0, 1.0), (-0.0, 0.0), (0.0, -0.0), (2.0, 1.0), (-2.0, -3.0),
         (-2.0, 0.0), (0.5, 0.0), (-0.5, 0.0), (0.5, 1.0), (math.inf, 0.0), (-math.inf, 0.0), (1e-45, 0.0),
         (3.4028234663852886e38, math.inf), (65504.0, math.inf), (math.nan, 1.0), (1.0, math.nan), (1.0, 1.0),
         (3.0, -math.inf), (-7.25, 100.0)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nextafter_matches_c(dtype: torch.dtype) -> None:
    a = torch.tensor([p[0] for p in PAIRS], dtype=torch.float64).to(dtype)
    b = torch.tensor([p[1] for p in PAIRS], dtype=torch.float64).to(dtype)
    g = genesis.nextafter(to_genesis(a), to_genesis(b))
    expected = torch.nextafter(a, b)
    assert_same(g, expected, rtol=0, atol=0)
    # Bit for bit, the sign of zero included (not the sign of NaN).
    numbers = ~expected.isnan()
    assert torch.equal(torch.signbit(to_torch(g))[numbers], torch.signbit(expected)[numbers])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_nextafter_steps_through_random_values(dtype: torch.dtype) -> None:
    a = (torch.randn(200, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 10 ** torch.randint(
        -30, 30, (200,), generator=torch.Generator().manual_seed(2))).to(dtype)
    b = torch.randn(200, generator=torch.Generator().manual_seed(3), dtype=dtype)
    assert_same(genesis.nextafter(to_genesis(a), to_genesis(b)), torch.nextafter(a, b), rtol=0, atol=0)


def test_nextafter_gradient_promotion_and_method() -> None:
    grads = torch_differentiates(lambda x: torch.nextafter(x, x * 2))
    check(lambda lib, a, b: lib.nextafter(a, b), rand(3, 4), rand(4), backward=grads)
    check(lambda lib, a, b: a.nextafter(b), rand(3).float(), rand(3, seed=1), backward=grads)
    check(lambda lib, a, b: a.clone().nextafter_(b), rand(5), rand(5, seed=2, requires_grad=False), backward=grads)
    # No gradient where the value does not move (input == other).
    same = rand(5)
    check(lambda lib, a, b: lib.nextafter(a, b), same, same.detach().clone(), backward=grads)


def test_nextafter_errors() -> None:
    check_error(NotImplementedError, lambda lib, a, b: lib.nextafter(a, b), torch.tensor([1]), torch.tensor([2]))
    check_error(TypeError, lambda lib, a: lib.nextafter(a, 2.0), rand(3))


def test_nextafter_on_the_device() -> None:
    x = genesis.tensor([1.0, -1.0], device=DEVICE)
    out = genesis.nextafter(x, genesis.zeros(2, device=DEVICE))
    assert out.device == x.device and out.tolist() == [1 - 2 ** -24, -1 + 2 ** -24]


# ------------------------------------------------------------------ rounding order of composite ops


def test_addcdiv_rounds_as_torchs() -> None:
    # torch's kernel computes (value * tensor1) / tensor2 + input; value * (tensor1 / tensor2) differs in the last
    # bit of about a tenth of float32 elements (optimizer updates drift apart).
    a, b, c = (rand(4096, seed=s, dtype=torch.float32, requires_grad=False) for s in (40, 41, 42))
    exact = {"rtol": 0, "atol": 0} if DEVICE == "cpu" else {}
    for value in (0.1, -0.013, 1.0, 3):
        check(lambda lib, a, b, c, value=value: lib.addcdiv(a, b, c, value=value), a, b, c, **exact)
        check(lambda lib, a, b, c, value=value: a.clone().addcdiv_(b, c, value=value), a, b, c, **exact)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_precision_addcmul_and_addcdiv_round_once(dtype) -> None:
    # torch's kernels compute half types in float32 (addcmul's last step a fused multiply-add) and round once; three
    # roundings to the half type differed in a few percent of the elements.
    a, b, c = (rand(4096, seed=s, dtype=torch.float32, requires_grad=False).to(dtype) for s in (43, 44, 45))
    exact = {"rtol": 0, "atol": 0} if DEVICE == "cpu" else {}
    for value in (0.3, 1, -2.7):
        check(lambda lib, a, b, c, value=value: lib.addcmul(a, b, c, value=value), a, b, c, **exact)
        check(lambda lib, a, b, c, value=value: a.clone().addcmul_(b, c, value=value), a, b, c, **exact)
        check(lambda lib, a, b, c, value=value: lib.addcdiv(a, b, c, value=value), a, b, c.abs() + 0.5, **exact)
        check(lambda lib, a, b, c, value=value: a.clone().addcdiv_(b, c, value=value), a, b, c.abs() + 0.5, **exact)


@pytest.mark.parametrize("dtype, big", [(torch.float16, 1.0e3), (torch.bfloat16, 3.0e19), (torch.float32, 3.0e19)],
                         ids=str)
def test_division_gradient_of_the_denominator_stays_finite(dtype, big: float) -> None:
    # torch computes the denominator's gradient as -grad * ((a / b) / b): a / (b * b) lost it to an overflow of
    # b * b (a half-precision box area of 300 x 300 already), giving zeros in place of small gradients.
    a = torch.tensor([1.0, -2.0, 1.0e3, big], dtype=dtype)
    b = torch.tensor([300.0, -700.0, big, big], dtype=dtype, requires_grad=True)
    tiny = {"atol": 1e-30}  # the gradients are small: compare them relatively
    check(lambda lib, a, b: a / b, a, b, **tiny)
    check(lambda lib, a, b: (a / b).sum(), a, b, **tiny)
    check(lambda lib, b: lib.div(-2, b), b, **tiny)


def test_division_gradient_of_the_denominator_rounds_as_torchs() -> None:
    a = rand(4096, seed=46, dtype=torch.float32, requires_grad=False)
    b = rand(4096, seed=47, low=0.5, high=3.0, dtype=torch.float32, requires_grad=True)
    gb = to_genesis(b).detach().requires_grad_()
    (to_genesis(a) / gb).sum().backward()
    (a / b).sum().backward()
    if DEVICE == "cpu":
        assert torch.equal(to_torch(gb.grad), b.grad)
    else:
        assert_same(gb.grad, b.grad)
