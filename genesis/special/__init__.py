"""``genesis.special``: torch.special's functions, under torch.special's names.

Most elementwise ones are the functions of ``genesis`` (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``, ``psi``
is ``digamma``, ``polygamma`` is ``genesis.polygamma``); ``i1``, ``ndtr``, ``xlog1py``, ``entr``, ``multigammaln``,
the regularized incomplete gamma functions ``gammainc``/``gammaincc``, the normal distribution's ``ndtri`` (its
quantile function) and ``log_ndtr``, the scaled complementary error function ``erfcx`` and the Hurwitz zeta function
are defined here; the Bessel and Airy functions in ``_bessel`` and the orthogonal polynomials in ``_polynomials``.
Every function is differentiable except the polynomials and ``airy_ai``, which torch does not differentiate either.
"""

from __future__ import annotations

import math

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Function, Primitive, no_grad
from genesis.ndarray import NDArray
from genesis.ops._args import _float_operands, check_real_kernel
from genesis.ops.math_special import I1, Entr, Xlogy
from genesis.special._bessel import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    i0e,
    i1e,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from genesis.special._common import _float_input, _float_pair, _polynomial
from genesis.special._polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from genesis.tensor import Tensor

erf = F.erf
erfc = F.erfc
erfinv = F.erfinv
expit = F.sigmoid
logit = F.logit
xlogy = F.xlogy
gammaln = F.lgamma
digamma = F.digamma
psi = F.digamma
polygamma = F.polygamma
i0 = F.i0
modified_bessel_i0 = F.i0
sinc = F.sinc
exp2 = F.exp2
expm1 = F.expm1
log1p = F.log1p
round = F.round
logsumexp = F.logsumexp
softmax = F.softmax
log_softmax = F.log_softmax


def i1(input: Tensor) -> Tensor:
    """Modified Bessel function of the first kind of order 1; integer inputs promote to the default float dtype."""
    return I1.apply(input)


modified_bessel_i1 = i1


def xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` unless ``other`` is NaN."""
    check_real_kernel("xlog1py", "xlog1py_cpu", input, other, bools=True)
    input, other = _float_operands("xlog1py", input, other)
    return Xlogy.apply(input, other, True)


def entr(input: Tensor) -> Tensor:
    """Elementwise entropy ``-x log(x)``: 0 at 0, -inf for negative x; integers promote to the default float dtype."""
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    return Entr.apply(input)


def multigammaln(input: Tensor, p: int) -> Tensor:
    """Multivariate log-gamma, as :func:`genesis.mvlgamma`."""
    return F.mvlgamma(input, p)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal distribution function ``P(Z <= x) = erfc(-x / sqrt(2)) / 2``."""
    return 0.5 * F.erfc(input * (-1 / math.sqrt(2.0)))


# Cephes ndtri's rational approximations, the ones torch uses: P0/Q0 for |p - 1/2| <= 1/2 - exp(-2); P1/Q1 and
# P2/Q2 in 1/z, z = sqrt(-2 log p), for z < 8 and z >= 8 (p down to exp(-32) and beyond).
_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
             -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
             1.59056225126211695515e1, -1.18331621121330003142e0)
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
             1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
             -3.80806407691578277194e-2, -9.33259480895457427372e-4)
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
             2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
             2.89247864745380683936e-6, 6.79019408009981274425e-9)
_EXP_MINUS_2 = 0.13533528323661269189
_SQRT_2PI = math.sqrt(2 * math.pi)


class _Ndtri(Function):
    """The standard normal quantile, Cephes's algorithm in the input's dtype (as torch's ``calc_ndtri``); its
    derivative ``sqrt(2 pi) exp(ndtri(p)^2 / 2)`` is torch's formula."""

    @staticmethod
    def forward(ctx, p: Tensor) -> Tensor:
        upper = p > 1 - _EXP_MINUS_2
        y = F.where(upper, 1 - p, p)  # the tails are computed on the smaller of p and 1 - p
        w = p - 0.5
        w2 = w * w
        central = (w + w * (w2 * _polynomial(w2, _NDTRI_P0) / _polynomial(w2, _NDTRI_Q0))) * _SQRT_2PI
        x = F.sqrt(-2 * F.log(F.where((y > 0) & (y <= _EXP_MINUS_2), y, _EXP_MINUS_2)))
        z = 1 / x
        near = z * _polynomial(z, _NDTRI_P1) / _polynomial(z, _NDTRI_Q1)
        far = z * _polynomial(z, _NDTRI_P2) / _polynomial(z, _NDTRI_Q2)
        tail = x - F.log(x) / x - F.where(x < 8, near, far)
        out = F.where(y > _EXP_MINUS_2, central, F.where(upper, tail, -tail))
        out = F.where(p == 0, -math.inf, F.where(p == 1, math.inf, out))
        out = F.where((p >= 0) & (p <= 1), out, math.nan)  # NaN outside [0, 1] and for NaN
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (out,) = ctx.saved_tensors
        return grad * _SQRT_2PI * F.exp(out * out * 0.5)


def ndtri(input: Tensor) -> Tensor:
    """The quantile function of the standard normal distribution: x with ``ndtr(x) = input``; -inf at 0, inf at 1,
    NaN outside [0, 1]. Cephes's rational approximations (accurate to float64 precision down to 1e-300, as torch's),
    not ``sqrt(2) erfinv(2p - 1)``, which loses the tails. Integers promote to the default float dtype."""
    return _Ndtri.apply(_float_input("ndtri", input))


class _LogNdtr(Function):
    """``log(ndtr(x))`` without underflow; the derivative ``exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi)`` is torch's."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        t = x * (1 / math.sqrt(2.0))
        right = F.log1p(-0.5 * F.erfc(t))  # x >= -1: ndtr(x) >= 0.16, so log1p keeps the digits near 0
        middle = F.log(0.5 * F.erfc(-t))  # -10 <= x < -1: erfc(-t) is accurate and far from underflow
        # x < -10: log of the asymptotic series of Mills' ratio, ndtr(x) = phi(x) / -x * sum_k (-1)^k (2k-1)!! / x^2k,
        # whose 20 terms reach float64 precision there.
        far_x = F.where(x < -10, x, -10.0)
        inverse_square = 1 / (far_x * far_x)
        term = series = F.ones_like(far_x)
        for k in range(1, 21):
            term = term * (-(2 * k - 1)) * inverse_square
            series = series + term
        far = -0.5 * far_x * far_x - F.log(-far_x) - 0.5 * math.log(2 * math.pi) + F.log(series)
        out = F.where(x < -10, far, F.where(x < -1, middle, right))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        x, out = ctx.saved_tensors
        return grad * (1 / _SQRT_2PI) * F.exp(-(out + x * x * 0.5))


def log_ndtr(input: Tensor) -> Tensor:
    """``log(ndtr(input))``, accurate where ndtr underflows (large negative input) and where it is close to 1;
    integers promote to the default float dtype."""
    return _LogNdtr.apply(_float_input("log_ndtr", input))


class _SpecialErfcx(Function):
    """``exp(x^2) erfc(x)``; torch's derivative ``2x erfcx(x) - 2 / sqrt(pi)``."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        r = x.abs()
        # |x| < 6: exp(x^2) erfc(|x|), with x^2 split exactly into hi^2 + lo (hi holding half the mantissa, Dekker's
        # split), so that exp keeps full precision where a rounded x^2 would lose x^2 ulps.
        c = r * (134217729.0 if x.dtype == dtypes.float64 else 4097.0)
        hi = c - (c - r)
        lo = r - hi
        near = F.exp(hi * hi) * F.exp(lo * (hi + hi + lo)) * F.erfc(r)
        # |x| >= 6: the continued fraction 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))), 16 levels
        # deep reach float64 precision there (it tends to 1 / (x sqrt(pi)) and needs no exp).
        t = r
        for k in range(16, 0, -1):
            t = r + 0.5 * k / t
        positive = F.where(r < 6.0, near, (1 / math.sqrt(math.pi)) / t)
        # x < 0: erfcx(x) = 2 exp(x^2) - erfcx(-x), with torch's branches (the second term vanishes below -6.1, the
        # first overflows below -26.7).
        twice = 2.0 * F.exp(x * x)
        negative = F.where(x < -26.7, math.inf, F.where(x < -6.1, twice, twice - positive))
        out = F.where(x < 0, negative, positive)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        x, out = ctx.saved_tensors
        return (2.0 * x * out - 2.0 / math.sqrt(math.pi)) * grad


def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function ``exp(x^2) erfc(x)``, accurate where erfc underflows (large x, where
    it tends to ``1 / (x sqrt(pi))``); +inf below -26.7. Integers promote to the default float dtype."""
    return _SpecialErfcx.apply(_float_input("erfcx", input))


def _incomplete_gamma(a: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """``(P(a, x), Q(a, x))``, the regularized lower and upper incomplete gamma functions, in float64.

    Where ``x < a + 1`` the power series of P converges fast, elsewhere the continued fraction of Q (modified Lentz);
    both run for every element, in rounds of 16 terms until every element has converged (Numerical Recipes, 6.2).
    """
    a, x = F.broadcast_tensors(a.to(dtypes.float64), x.to(dtypes.float64))
    valid = (a > 0) & (x > 0) & (x < math.inf)
    a_safe, x_safe = a.where(valid, 1.0), x.where(valid, 1.0)
    prefactor = (a_safe * x_safe.log() - x_safe - a_safe.lgamma()).exp()
    use_series = x_safe < a_safe + 1
    tiny = 1e-300
    term = total = 1.0 / a_safe
    b = x_safe + 1 - a_safe
    c, d = F.full_like(x_safe, 1 / tiny), 1.0 / b
    h = d
    n = 0
    while n < 2000:
        for _ in range(16):
            n += 1
            term = term * x_safe / (a_safe + n)
            total = total + term
            an, b = -n * (n - a_safe), b + 2
            d = an * d + b
            d = d.where(d.abs() >= tiny, tiny)
            c = b + an / c
            c = c.where(c.abs() >= tiny, tiny)
            d = 1.0 / d
            delta = d * c
            h = h * delta
        done = (term.abs() < total.abs() * 1e-16).where(use_series, (delta - 1).abs() < 1e-16)
        if bool(done.all().item()):
            break
    p_series = (prefactor * total).clamp(max=1.0)
    q_fraction = (prefactor * h).clamp(max=1.0)
    p = p_series.where(use_series, 1 - q_fraction)
    q = (1 - p_series).where(use_series, q_fraction)
    # Limits: P(a, 0) = 0 and P(a, inf) = 1 for a > 0; P(0, x) = 1 for x > 0, as torch; NaN elsewhere.
    edge_p = F.full_like(p, math.nan)
    edge_p = edge_p.where(~((a > 0) & (x == 0)), 0.0).where(~((a > 0) & (x == math.inf)), 1.0)
    edge_p = edge_p.where(~((a == 0) & (x > 0)), 1.0)
    p, q = p.where(valid, edge_p), q.where(valid, 1 - edge_p)
    return p, q


class _IncompleteGamma(Primitive):
    """``P(a, x)`` (or ``Q(a, x)`` with ``upper``); differentiable in ``x`` only, as torch."""

    @staticmethod
    def forward(ctx, a: NDArray, x: NDArray, upper: bool) -> NDArray:
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        with no_grad():
            p, q = _incomplete_gamma(Tensor._wrap(a), Tensor._wrap(x))
        return (q if upper else p).to(x.dtype).ndarray

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            name = "igammac" if ctx.upper else "igamma"
            raise RuntimeError(f"derivative for {name} with respect to input (the order a) is not implemented")
        # dP/dx = x^(a-1) e^(-x) / Γ(a), the Gamma(a) density; Q = 1 - P.
        density = (F.xlogy(a - 1, x) - x - a.lgamma()).exp()
        return None, grad * (-density if ctx.upper else density), None


def gammainc(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The regularized lower incomplete gamma function ``P(a, x) = γ(a, x) / Γ(a)`` (``a = input``, ``x = other``).

    Differentiable in ``other``; the derivative in ``input`` raises, as torch's.
    """
    a, x = _float_operands("gammainc", input, other)
    return _IncompleteGamma.apply(a, x, False)


def gammaincc(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, computed directly for accuracy."""
    a, x = _float_operands("gammaincc", input, other)
    return _IncompleteGamma.apply(a, x, True)


# Cephes zeta.c: the Euler-Maclaurin corrections' denominators (2k)! / B_2k, and its stopping threshold.
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
           -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042e-16


def _hurwitz_zeta(x: Tensor, q: Tensor) -> Tensor:
    """``zeta(x, q) = sum_k (q + k)^-x`` in float64, by Cephes's algorithm as torch runs it: the terms k = 0, 1, ...
    up to the first ``k >= 9`` with ``q + k > 9``, then the tail integral and up to 12 Euler-Maclaurin corrections; each
    element stops where its next term is below machine epsilon relative to its sum (which decides the values at
    infinite x). +inf at x = 1 and at the poles (q a non-positive integer), NaN for x < 1 and for q < 0 with x not an
    integer. One host read sizes the sum for negative q (about -q terms)."""
    x, q = F.broadcast_tensors(x, q)
    pole = (q <= 0) & (q == F.floor(q))
    undefined = (q < 0) & ~pole & (x != F.floor(x))
    regular = F.isfinite(q) & ~pole & ~undefined & (x > 1)
    low = float(F.where(regular, q, 9.0).amin().item()) if q.numel() else 9.0
    count = max(9, math.floor(9 - low) + 1)
    s = q ** -x
    a, b = q, F.zeros_like(q)
    done = F.zeros_like(q, dtype=dtypes.bool_)
    for i in range(count):
        running = ~done & ((a <= 9) | (i < 9))
        a = F.where(running, a + 1, a)
        b = F.where(running, a ** -x, b)
        s = F.where(running, s + b, s)
        done = done | (running & (-_MACHEP * s < b) & (b < _MACHEP * s))
    w = a
    s = F.where(done, s, s + b * w / (x - 1) - 0.5 * b)
    c, k = F.ones_like(q), 0.0
    for denominator in _ZETA_A:
        c = c * (x + k)
        b = b / w
        t = c * b / denominator
        s = F.where(done, s, s + t)
        done = done | ((t / s).abs() < _MACHEP)
        k += 1.0
        c = c * (x + k)
        b = b / w
        k += 1.0
    s = F.where(undefined, math.nan, s)
    return F.where(x == 1, math.inf, F.where(x < 1, math.nan, F.where(pole, math.inf, s)))


class _SpecialZeta(Function):
    """The Hurwitz zeta function, computed in float64; differentiable in ``q`` only (``-x zeta(x + 1, q)``), as
    torch."""

    @staticmethod
    def forward(ctx, x: Tensor, q: Tensor) -> Tensor:
        ctx.save_for_backward(x, q)
        return _hurwitz_zeta(x.to(dtypes.float64), q.to(dtypes.float64)).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[None, Tensor]:
        x, q = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError("the derivative for 'zeta' is not implemented.")
        return None, grad * -x * _SpecialZeta.apply(x + 1.0, q)


def zeta(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The Hurwitz zeta function ``zeta(x, q) = sum_{k >= 0} (q + k)^-x`` (``x = input``, ``q = other``); the Riemann
    zeta function at ``q = 1``. Integers promote to the default float dtype; float16 and bfloat16 raise, as torch."""
    x, q = _float_pair("zeta", input, other)
    return _SpecialZeta.apply(x, q)


__all__ = [
    "erf", "erfc", "erfinv", "erfcx", "expit", "logit", "xlogy", "gammaln", "digamma", "psi", "polygamma", "zeta", "i0",
    "i1", "i0e", "i1e", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
    "spherical_bessel_j0", "airy_ai", "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p", "sinc", "exp2", "expm1", "log1p",
    "round", "logsumexp", "softmax", "log_softmax", "ndtr", "xlog1py", "entr", "multigammaln", "gammainc", "gammaincc",
    "ndtri", "log_ndtr",
]
