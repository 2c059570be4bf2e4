"""``genesis.special``: torch.special's names for the special functions Genesis computes (each differentiable).

Most are the functions of ``genesis`` under torch.special's names (``expit`` is ``sigmoid``, ``gammaln`` is
``lgamma``, ``psi`` is ``digamma``, ``polygamma`` is ``genesis.polygamma``); ``i1``, ``ndtr``, ``xlog1py``, ``entr``,
``multigammaln`` and the regularized incomplete gamma functions ``gammainc``/``gammaincc`` are defined here.
"""

from __future__ import annotations

import math

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Primitive, no_grad
from genesis.ndarray import NDArray
from genesis.ops._args import _float_operands
from genesis.ops.math_special import I1, Entr, Xlogy
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


__all__ = [
    "erf", "erfc", "erfinv", "expit", "logit", "xlogy", "gammaln", "digamma", "psi", "i0", "i1", "modified_bessel_i0",
    "modified_bessel_i1", "sinc", "exp2", "expm1", "log1p", "round", "logsumexp", "softmax", "log_softmax", "ndtr",
    "xlog1py", "entr", "multigammaln", "gammainc", "gammaincc",
]
