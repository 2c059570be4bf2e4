"""``VonMises``: the circular normal distribution on angles, ``exp(κ cos(x - loc)) / (2π I0(κ))``."""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis import dtypes, random
from genesis.autograd import no_grad
from genesis.distributions import constraints
from genesis.distributions.continuous import _expand_params, _init_params
from genesis.distributions.distribution import Distribution
from genesis.distributions.utils import lazy_property
from genesis.tensor import Tensor

# The polynomial approximations of I0 and I1 that torch uses (Abramowitz and Stegun 9.8.1-9.8.4), for x below and
# above 3.75; kept identical so that log-densities agree with torch's to rounding.
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
                  -0.1647633e-1, 0.392377e-2]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_COEF_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
                  0.1787654e-1, -0.420059e-2]
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _eval_poly(y: Tensor, coef: list[float]) -> Tensor:
    """``coef[0] + coef[1] y + ...`` by Horner's rule."""
    result = coef[-1] + 0 * y
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x: Tensor, order: int = 0) -> Tensor:
    """``log(I_order(x))`` for ``x > 0`` and ``order`` 0 or 1."""
    if order not in (0, 1):
        raise ValueError(f"_log_modified_bessel_fn: order must be 0 or 1, got {order}")
    y = (x / 3.75) ** 2
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _COEF_LARGE[order]).log()
    return small.where(x < 3.75, large)


class VonMises(Distribution):
    """The von Mises distribution on the circle. ``loc`` and values may be any real numbers and are read as angles
    modulo 2π; samples lie in [-π, π). ``mean`` and ``variance`` are the circular ones.

    Sampling is Best and Fisher's rejection method ("Efficient simulation of the von Mises distribution", 1979), in
    float64 as torch's; it is not reparameterized.

    Args:
        loc: the mean angle, in radians.
        concentration: the concentration ``κ`` (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None) -> None:
        _init_params(self, ("loc", "concentration"), (loc, concentration), validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> VonMises:
        return _expand_params(self, VonMises, batch_shape, ("loc", "concentration"), _instance)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    @property
    def _proposal_r(self) -> Tensor:
        """The parameter ``r`` of the wrapped-Cauchy envelope, in float64 (a Taylor expansion for tiny ``κ``)."""
        kappa = self.concentration.detach().to(dtypes.float64)
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho ** 2) / (2 * rho)
        return (1 / kappa + kappa).where(kappa < 1e-5, proposal_r)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            loc = self.loc.detach().to(dtypes.float64)
            kappa = self.concentration.detach().to(dtypes.float64)
            r = self._proposal_r
            x = F.zeros(shape, dtype=dtypes.float64, device=loc.device)  # filled in by accepted proposals
            pending = (kappa == kappa).expand(shape)  # NaN concentrations are never accepted: skip them
            while bool(pending.any().item()):
                u1, u2, u3 = (random.rand(shape, dtype=dtypes.float64, device=loc.device) for _ in range(3))
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = pending & (((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0))
                x = ((u3 - 0.5).sign() * f.acos()).where(accept, x)
                pending = pending & ~accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @property
    def mean(self) -> Tensor:
        """The circular mean: ``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        """The circular variance ``1 - I1(κ) / I0(κ)``."""
        ratio = _log_modified_bessel_fn(self.concentration, order=1) - _log_modified_bessel_fn(self.concentration,
                                                                                                  order=0)
        return 1 - ratio.exp()
