"""The standard normal distribution's ``special.ndtri`` (quantile) and ``special.log_ndtr`` against torch: values
deep in both tails in float64 and float32, the edges, dtype promotion and refusals, first and second derivatives."""

import math

import pytest
import torch

import genesis
from tests.helpers import check, check_error, rand, to_genesis

NAN, INF = float("nan"), float("inf")


def _grid64() -> torch.Tensor:
    """Probabilities from 1e-300 to 1 - 1e-16: every branch of Cephes's ndtri (central, z < 8, z >= 8, both tails)."""
    return torch.cat([torch.logspace(-300, -1, 400, dtype=torch.float64), torch.linspace(0.01, 0.99, 99,
                      dtype=torch.float64), 1 - torch.logspace(-16, -1, 200, dtype=torch.float64)])


def test_ndtri_float64_tails() -> None:
    check(lambda lib, p: lib.special.ndtri(p), _grid64(), rtol=1e-13, atol=1e-13)
    # The range the quantile is usually asked for, (1e-30, 1 - 1e-7), to float64 precision.
    p = torch.cat([torch.logspace(-30, -1, 300, dtype=torch.float64), 1 - torch.logspace(-7, -1, 100,
                   dtype=torch.float64)])
    check(lambda lib, p: lib.special.ndtri(p), p, rtol=1e-14, atol=1e-14)


def test_ndtri_float32() -> None:
    p = torch.cat([torch.logspace(-37, -1, 200), torch.linspace(0.01, 0.99, 99), 1 - torch.logspace(-7, -1, 50)])
    check(lambda lib, p: lib.special.ndtri(p), p)


def test_ndtri_edges_and_integers() -> None:
    edges = torch.tensor([0.0, 1.0, -0.5, 1.5, NAN, 0.5, -INF, INF], dtype=torch.float64)
    check(lambda lib, p: lib.special.ndtri(p), edges)
    check(lambda lib, p: lib.special.ndtri(p), torch.tensor([0, 1, 2]))  # promoted to the default float dtype


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["ndtri", "log_ndtr"])
def test_half_precision_is_refused_as_torch(name: str, dtype: torch.dtype) -> None:
    check_error(NotImplementedError, lambda lib, x: getattr(lib.special, name)(x), rand(4, dtype=dtype, low=0.1,
                high=0.9))


def test_ndtri_gradient() -> None:
    p = torch.tensor([1e-20, 1e-5, 0.02, 0.3, 0.5, 0.8, 0.99, 1 - 1e-9], dtype=torch.float64, requires_grad=True)
    check(lambda lib, p: lib.special.ndtri(p), p, rtol=1e-12)
    check(lambda lib, p: lib.special.ndtri(p), rand(3, 4, low=0.05, high=0.95, dtype=torch.float32))


@pytest.mark.parametrize("name, values", [("ndtri", [0.001, 0.2, 0.6, 0.97]), ("log_ndtr", [-40.0, -3.0, 0.5, 6.0])])
def test_second_derivative(name: str, values: list) -> None:
    t_x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    g_x = to_genesis(t_x)
    (t_grad,) = torch.autograd.grad(getattr(torch.special, name)(t_x).sum(), t_x, create_graph=True)
    (g_grad,) = genesis.autograd.grad(getattr(genesis.special, name)(g_x).sum(), g_x, create_graph=True)
    (t_second,) = torch.autograd.grad(t_grad.sum(), t_x)
    (g_second,) = genesis.autograd.grad(g_grad.sum(), g_x)
    # log_ndtr's second derivative at -40 cancels about 1e-3 of its digits (x + d/dx log_ndtr is about 1/x), in
    # torch's formula as in Genesis's.
    torch.testing.assert_close(torch.from_numpy(g_second.detach().cpu().numpy()), t_second, rtol=1e-8, atol=1e-12)


def test_log_ndtr_values() -> None:
    """Every branch: the asymptotic series below -10, log(erfc) on [-10, -1), log1p above, far into both tails."""
    x = torch.cat([-torch.logspace(1, 8, 100, dtype=torch.float64), torch.linspace(-12, 40, 521, dtype=torch.float64)])
    check(lambda lib, x: lib.special.log_ndtr(x), x, rtol=1e-12, atol=1e-300)
    check(lambda lib, x: lib.special.log_ndtr(x), torch.linspace(-60, 15, 301), rtol=1e-5, atol=1e-30)


def test_log_ndtr_edges_and_integers() -> None:
    edges = torch.tensor([-INF, INF, NAN, -1e300, 0.0, -1.0, -10.0], dtype=torch.float64)
    check(lambda lib, x: lib.special.log_ndtr(x), edges)
    check(lambda lib, x: lib.special.log_ndtr(x), torch.tensor([-40, 0, 3]))


def test_log_ndtr_gradient() -> None:
    x = torch.tensor([-50.0, -10.5, -9.5, -4.0, -1.0, 0.0, 2.0, 9.0], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: lib.special.log_ndtr(x), x, rtol=1e-12)
    # torch's formula exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi) subtracts two numbers near 5e7 at x = -1e4: both
    # libraries keep about 8 digits there.
    far = torch.tensor([-1e4, -1e3], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x: lib.special.log_ndtr(x), far, rtol=1e-12, grad_rtol=1e-6)
    # float32 below about -8 holds the same cancellation (a few 1e-5 in both libraries).
    check(lambda lib, x: lib.special.log_ndtr(x), rand(3, 4, low=-20.0, high=5.0, dtype=torch.float32),
          grad_rtol=2e-4)


def test_ndtri_inverts_ndtr() -> None:
    x = torch.linspace(-30, 2, 65, dtype=torch.float64)  # above, p rounds too close to 1 to invert
    p = genesis.special.ndtr(to_genesis(x))
    back = torch.from_numpy(genesis.special.ndtri(p).cpu().numpy())
    torch.testing.assert_close(back, x, rtol=1e-12, atol=1e-12)
    assert math.isclose(genesis.special.ndtri(genesis.tensor(0.975, dtype=genesis.float64)).item(),
                        1.959963984540054, rel_tol=1e-15)
