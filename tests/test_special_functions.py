"""torch.special's Bessel and Airy functions, ``i0e``/``i1e``, ``erfcx``, the Hurwitz ``zeta`` and the orthogonal
polynomials against torch: values on grids that cross every branch point of Cephes's approximations in float64 and
float32, the edges (0, +-inf, NaN, poles, negative degrees), dtype promotion and refusals, and the gradients torch has
(for the Bessel functions torch does not differentiate, the derivatives against their closed forms in torch)."""

import pytest
import torch

import genesis
from tests.helpers import DEVICE, check, check_error, to_genesis, to_torch

NAN, INF = float("nan"), float("inf")
EDGES = [-INF, -1e300, -1.0, -0.0, 0.0, 1e-310, 1e-5, 5.0, 8.0, 1e300, INF, NAN]

# name -> (rtol, atol) in float64. The oscillating functions lose relative precision near their zeros, in torch as
# here (the phase x - pi/4 is rounded and sin/cos differ in the last bit): there the absolute error, about 1e-15 of
# the amplitude, is what is compared.
UNARY = {
    "bessel_j0": (1e-13, 1e-16), "bessel_j1": (1e-13, 1e-16), "bessel_y0": (1e-13, 1e-15),
    "bessel_y1": (1e-13, 1e-15), "airy_ai": (1e-13, 1e-14), "spherical_bessel_j0": (1e-14, 1e-300),
    "modified_bessel_k0": (1e-14, 1e-300), "modified_bessel_k1": (1e-14, 1e-300),
    "scaled_modified_bessel_k0": (1e-14, 1e-300), "scaled_modified_bessel_k1": (1e-14, 1e-300),
    "i0e": (1e-14, 1e-300), "i1e": (1e-14, 1e-300), "erfcx": (1e-14, 1e-300),
}


def _grid64() -> torch.Tensor:
    """Both signs of 1e-300 ... 1e3 and of a fine grid over [0, 30], with every branch point of the approximations
    (1e-5, 2, 2.09, 5, 6, 6.1, 8, 26.7, 50, 103.892) and a few on either side."""
    points = torch.tensor([1e-5, 2.0, 2.09, 5.0, 6.0, 6.1, 8.0, 26.7, 50.0, 103.8, 103.9, 5e7, 1e10],
                          dtype=torch.float64)
    points = torch.cat([points, points.nextafter(torch.zeros(())), points.nextafter(torch.full((), INF))])
    magnitudes = torch.cat([torch.logspace(-300, 3, 400, dtype=torch.float64),
                            torch.linspace(0, 30, 601, dtype=torch.float64), points])
    return torch.cat([magnitudes, -magnitudes])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_values_float64(name: str) -> None:
    rtol, atol = UNARY[name]
    check(lambda lib, x: getattr(lib.special, name)(x), _grid64(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_values_float32_edges_and_integers(name: str) -> None:
    # float32 over the moderate range (past |x| of 30 the phase of the oscillating ones keeps no float32 digits)
    x = torch.cat([torch.logspace(-30, 1.5, 100), -torch.logspace(-30, 1.5, 100), torch.linspace(-8, 8, 161)])
    check(lambda lib, x: getattr(lib.special, name)(x), x, rtol=2e-5, atol=1e-6)
    check(lambda lib, x: getattr(lib.special, name)(x), torch.tensor(EDGES, dtype=torch.float64))
    check(lambda lib, x: getattr(lib.special, name)(x), torch.tensor([-3, 0, 1, 7]))  # the default float dtype
    check(lambda lib, x: getattr(lib.special, name)(x), torch.tensor([True, False]))


@pytest.mark.parametrize("name", sorted(set(UNARY) - {"i0e", "i1e"}))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.complex64])
def test_refused_dtypes_and_non_tensors(name: str, dtype: torch.dtype) -> None:
    check_error(NotImplementedError, lambda lib, x: getattr(lib.special, name)(x), torch.ones(3, dtype=dtype))
    check_error(TypeError, lambda lib: getattr(lib.special, name)(1.5))


@pytest.mark.parametrize("name", ["i0e", "i1e"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_scaled_i_in_half_precision(name: str, dtype: torch.dtype) -> None:
    """float16 and bfloat16 compute in float32, as torch's kernels; torch differentiates i0e there, not i1e."""
    x = torch.linspace(-12, 12, 49).to(dtype).requires_grad_(True)
    if name == "i0e":
        check(lambda lib, x: lib.special.i0e(x), x)
    else:
        check(lambda lib, x: lib.special.i1e(x), x.detach())
        check_error(NotImplementedError, lambda lib, x: lib.special.i1e(x).sum().backward(), x)


@pytest.mark.parametrize("name", ["i0e", "i1e", "erfcx"])
def test_gradients_as_torch(name: str) -> None:
    x = torch.cat([torch.linspace(-30, 30, 121, dtype=torch.float64),
                   torch.tensor([0.0, 1e-20, -1e-20, 8.0, -8.0, 6.0, -6.1, 1e3])]).requires_grad_(True)
    # erfcx's derivative 2x erfcx(x) - 2/sqrt(pi) cancels about 2x^2 of its digits for large x, in torch as here.
    check(lambda lib, x: getattr(lib.special, name)(x), x, rtol=1e-13, atol=1e-300, grad_rtol=1e-11)
    check(lambda lib, x: getattr(lib.special, name)(x), torch.linspace(-9, 9, 37).requires_grad_(True))


def test_scaled_i_second_derivative() -> None:
    t_x = torch.tensor([-9.0, -0.5, 0.3, 4.0, 11.0], dtype=torch.float64, requires_grad=True)
    g_x = to_genesis(t_x)
    for name in ("i0e", "i1e"):
        (t_grad,) = torch.autograd.grad(getattr(torch.special, name)(t_x).sum(), t_x, create_graph=True)
        (g_grad,) = genesis.autograd.grad(getattr(genesis.special, name)(g_x).sum(), g_x, create_graph=True)
        (t_second,) = torch.autograd.grad(t_grad.sum(), t_x)
        (g_second,) = genesis.autograd.grad(g_grad.sum(), g_x)
        torch.testing.assert_close(to_torch(g_second), t_second, rtol=1e-12, atol=1e-15)


# Derivatives torch does not have, as closed forms in torch's functions (away from 0, where they are singular or
# lose digits): J0' = -J1, J1' = J0 - J1/x, K1' = -K0 - K1/x, (e^x K0)' = e^x (K0 - K1), j0' = (x cos x - sin x)/x^2.
_S = torch.special
DERIVATIVES = {
    "bessel_j0": lambda x: -_S.bessel_j1(x),
    "bessel_j1": lambda x: _S.bessel_j0(x) - _S.bessel_j1(x) / x,
    "bessel_y0": lambda x: -_S.bessel_y1(x),
    "bessel_y1": lambda x: _S.bessel_y0(x) - _S.bessel_y1(x) / x,
    "modified_bessel_k0": lambda x: -_S.modified_bessel_k1(x),
    "modified_bessel_k1": lambda x: -_S.modified_bessel_k0(x) - _S.modified_bessel_k1(x) / x,
    "scaled_modified_bessel_k0": lambda x: _S.scaled_modified_bessel_k0(x) - _S.scaled_modified_bessel_k1(x),
    "scaled_modified_bessel_k1": lambda x: (_S.scaled_modified_bessel_k1(x) * (1 - 1 / x)
                                            - _S.scaled_modified_bessel_k0(x)),
    "spherical_bessel_j0": lambda x: (x * torch.cos(x) - torch.sin(x)) / (x * x),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_bessel_derivatives(name: str) -> None:
    x = torch.cat([torch.linspace(0.05, 30, 300, dtype=torch.float64), torch.tensor([0.6, 2.0, 5.0, 8.0])])
    if name in ("bessel_j0", "bessel_j1", "spherical_bessel_j0"):
        x = torch.cat([x, -x])
    g_x = to_genesis(x, requires_grad=True)
    getattr(genesis.special, name)(g_x).sum().backward()
    torch.testing.assert_close(to_torch(g_x.grad), DERIVATIVES[name](x), rtol=1e-12, atol=1e-15)


def test_bessel_derivatives_at_zero_and_second_order() -> None:
    x = to_genesis(torch.tensor([0.0, 1e-3, -0.05], dtype=torch.float64), requires_grad=True)
    (j1_grad,) = genesis.autograd.grad(genesis.special.bessel_j1(x).sum(), x)
    (j0_grad,) = genesis.autograd.grad(genesis.special.spherical_bessel_j0(x).sum(), x)
    torch.testing.assert_close(to_torch(j1_grad)[0], torch.tensor(0.5, dtype=torch.float64))
    z = x.detach()
    series = -z / 3 + z**3 / 30 - z**5 / 840  # j0' near 0, to the x^7 term
    torch.testing.assert_close(to_torch(j0_grad), to_torch(series), rtol=1e-12, atol=1e-14)
    # J0'' = -J1' = J1/x - J0, through the recorded backward
    x = to_genesis(torch.tensor([0.5, 3.0, 7.0], dtype=torch.float64), requires_grad=True)
    (first,) = genesis.autograd.grad(genesis.special.bessel_j0(x).sum(), x, create_graph=True)
    (second,) = genesis.autograd.grad(first.sum(), x)
    t = torch.tensor([0.5, 3.0, 7.0], dtype=torch.float64)
    torch.testing.assert_close(to_torch(second), _S.bessel_j1(t) / t - _S.bessel_j0(t), rtol=1e-13, atol=1e-15)


def test_airy_ai_has_no_gradient_as_torch() -> None:
    x = torch.tensor([-1.0, 2.0], requires_grad=True)
    check(lambda lib, x: lib.special.airy_ai(x), x)
    assert not genesis.special.airy_ai(to_genesis(x)).requires_grad


def test_erfcx_far_tails() -> None:
    """Above 6 the continued fraction, up to 1e300 (where it is 1 / (x sqrt(pi))); below -26.7, +inf."""
    x = torch.cat([torch.logspace(0, 300, 301, dtype=torch.float64),
                   -torch.logspace(-3, 1.5, 100, dtype=torch.float64)])
    check(lambda lib, x: lib.special.erfcx(x), x, rtol=1e-14, atol=1e-300)


# ------------------------------------------------------------------------------------------------- Hurwitz zeta


def test_zeta_values_and_edges() -> None:
    x = torch.tensor([1.0, 1.0000001, 1.01, 1.5, 2.0, 3.0, 7.0, 20.0, 100.0, 1e3, 1e20, INF, NAN, 0.5, -2.0, 0.0],
                     dtype=torch.float64)
    q = torch.cat([torch.tensor([1.0, 0.5, 1e-300, 3.7, 9.0, 9.5, 1e10, 1e300, INF, -INF, NAN, 0.0, -1.0, -2.5,
                                 -40.25, -3.0], dtype=torch.float64), torch.logspace(-5, 5, 21, dtype=torch.float64)])
    check(lambda lib, x, q: lib.special.zeta(x, q), x[:, None], q, rtol=1e-13, atol=1e-300)
    check(lambda lib, x, q: lib.special.zeta(x, q), x[:, None].float(), q.float())


def test_zeta_promotion_and_scalars() -> None:
    check(lambda lib, q: lib.special.zeta(2, q), torch.tensor([1.0, 2.0, 0.25]))
    check(lambda lib, x: lib.special.zeta(x, 1), torch.tensor([2.0, 3.0, 4.5], dtype=torch.float64))
    check(lambda lib, x, q: lib.special.zeta(x, q), torch.tensor([2, 3]), torch.tensor([1, 2]))
    check_error(NotImplementedError, lambda lib, x: lib.special.zeta(x, x), torch.ones(2, dtype=torch.float16))
    check_error(TypeError, lambda lib: lib.special.zeta(2.0, 1.0))


def test_zeta_gradient_in_q_only() -> None:
    q = torch.tensor([0.1, 0.7, 2.0, 15.0], dtype=torch.float64, requires_grad=True)
    check(lambda lib, x, q: lib.special.zeta(x, q), torch.tensor([2.5, 3.0, 4.0, 1.5], dtype=torch.float64), q,
          rtol=1e-13)
    x = torch.tensor([2.5, 3.0], dtype=torch.float64, requires_grad=True)
    check_error(RuntimeError, lambda lib, x: lib.special.zeta(x, 2.0).sum().backward(), x, match="zeta")


# -------------------------------------------------------------------------------------- orthogonal polynomials

POLYNOMIALS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]
# Degrees across every rule: negative, fractional (truncated), 0 and 1, both sides of the trigonometric forms
# (from 5, 7 or 9), the Hermite limits (128, 512), and NaN, +-inf and 1e30 (all count as negative).
DEGREES = [-3.0, -1.0, -0.5, 0.0, 0.7, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 12.0, 30.0, 60.0, 128.0, 129.0,
           512.0, 513.0, NAN, INF, -INF, 1e30]
POINTS = [-3.0, -1.5, -1.0, -0.7, -0.2, 0.0, 1e-20, 0.3, 0.5, 0.75, 0.9, 1.0, 1.25, 2.0, 3.0, INF, -INF, NAN]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_values(name: str) -> None:
    x = torch.tensor(POINTS, dtype=torch.float64)[:, None]
    n = torch.tensor(DEGREES, dtype=torch.float64)
    # The trigonometric forms round n theta: at degree 512 they agree to about 1e-12 of their scale (1 to 2n + 1).
    check(lambda lib, x, n: getattr(lib.special, name)(x, n), x, n, rtol=1e-11, atol=1e-12)
    # float32, to degree 30 (torch's float32 recurrences are contracted into fused multiply-adds, which changes the
    # last bits where they cancel). Just inside the ends of the interval the trigonometric forms are ill-conditioned
    # in float32, and CUDA's acos/sin round otherwise than the CPU's (torch's CPU is the oracle): 1e-3 there.
    x, n = torch.linspace(-1.2, 1.2, 25)[:, None], torch.arange(-1.0, 31.0, 3.0)
    tolerance = 1e-4 if DEVICE == "cpu" else 1e-3
    check(lambda lib, x, n: getattr(lib.special, name)(x, n), x, n, rtol=tolerance, atol=1e-4)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_degree_as_number_and_promotion(name: str) -> None:
    x = torch.linspace(-2, 2, 9, dtype=torch.float64)
    check(lambda lib, x: getattr(lib.special, name)(x, 4), x, rtol=1e-13)
    check(lambda lib, n: getattr(lib.special, name)(0.25, n), torch.tensor([0, 1, 5, 11]))
    check(lambda lib, x, n: getattr(lib.special, name)(x, n), torch.tensor([[0], [1], [2]]), torch.tensor([1, 2, 3]))
    check(lambda lib, x, n: getattr(lib.special, name)(x, n), torch.tensor([0.5, 2.0]),
          torch.tensor([2.0, 3.0], dtype=torch.float64))
    check_error(NotImplementedError, lambda lib, x: getattr(lib.special, name)(x, 2), torch.ones(2, dtype=torch.half))
    check_error(TypeError, lambda lib: getattr(lib.special, name)(0.5, 2))


def test_polynomials_have_no_gradient_as_torch() -> None:
    x = to_genesis(torch.tensor([0.3, 0.9], requires_grad=True))
    for name in POLYNOMIALS:
        assert not getattr(genesis.special, name)(x, 3).requires_grad
