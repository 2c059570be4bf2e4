"""Heavy-tailed continuous distributions: Cauchy, StudentT, Pareto and GeneralizedPareto (some moments are infinite or
undefined)."""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis import random
from genesis.distributions import constraints
from genesis.distributions.continuous import Exponential, _expand_params, _init_params
from genesis.distributions.distribution import Distribution
from genesis.distributions.gamma import Chi2
from genesis.distributions.transformed_distribution import TransformedDistribution
from genesis.distributions.transforms import AffineTransform, ExpTransform
from genesis.distributions.utils import broadcast_all
from genesis.tensor import Size, Tensor


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution with density ``1 / (π scale (1 + ((x - loc) / scale)²))``: the ratio of two
    independent zero-mean normals. Its mean is undefined (NaN) and its variance infinite.

    Args:
        loc: the mode and median.
        scale: the half width at half maximum (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        _init_params(self, ("loc", "scale"), (loc, scale), validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Cauchy:
        return _expand_params(self, Cauchy, batch_shape, ("loc", "scale"), _instance)

    @property
    def mean(self) -> Tensor:
        return F.full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return F.full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = random.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (math.pi * (u - 0.5)).tan() * self.scale  # the inverse CDF of a uniform draw

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``.

    Draws are ``loc + scale * X / sqrt(Z / df)`` with ``X ~ Normal(0, 1)`` and ``Z ~ Chi2(df)``, reparameterized in all
    three parameters (in ``df`` through the Gamma draw's implicit gradient). The mean is NaN for ``df <= 1``; the
    variance is infinite for ``1 < df <= 2`` and NaN for ``df <= 1``.

    Args:
        df: the degrees of freedom (positive).
        loc: the location (default 0).
        scale: the scale (positive, default 1).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Tensor | float, loc: Tensor | float = 0.0, scale: Tensor | float = 1.0,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> StudentT:
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return F.full_like(self.loc, math.nan).where(self.df <= 1, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        finite = self.df > 2
        df = self.df.where(finite, 3.0)  # keeps the unused branch (and its gradient) finite
        var = self.scale.pow(2) * df / (df - 2)
        var = var.where(finite, F.full_like(var, math.inf))
        return var.where(self.df > 1, F.full_like(var, math.nan))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        x = random.randn(self._extended_shape(sample_shape), dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * (z / self.df).rsqrt())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + (0.5 * self.df).lgamma()
             - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y ** 2.0 / self.df).log1p() - z

    def entropy(self) -> Tensor:
        lbeta = (0.5 * self.df).lgamma() + math.lgamma(0.5) - (0.5 * (self.df + 1)).lgamma()
        return (self.scale.log() + 0.5 * (self.df + 1) * ((0.5 * (self.df + 1)).digamma() - (0.5 * self.df).digamma())
                + 0.5 * self.df.log() + lbeta)


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution: ``scale * exp(E)`` for ``E ~ Exponential(alpha)``, with density
    ``alpha scale^alpha / x^(alpha + 1)`` on ``x >= scale``. The mean is infinite for ``alpha <= 1`` and the variance
    for ``alpha <= 2`` (torch's formulas clamp ``alpha``, giving inf there).

    Args:
        scale: the minimum value (positive).
        alpha: the tail index (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale: Tensor | float, alpha: Tensor | float, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Pareto:
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.alpha = self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution, the limit law of exceedances over a high threshold: with
    ``z = (x - loc) / scale`` and ``c = concentration``, the survival function is ``(1 + c z)^(-1 / c)`` (``exp(-z)``
    at ``c = 0``) on ``x >= loc``, bounded above by ``loc - scale / c`` when ``c < 0``. Special cases: Exponential
    (``loc = 0, c = 0``), Pareto (``c > 0, loc = scale / c``) and Uniform (``c = -1``). Draws are the inverse CDF of
    uniform draws, reparameterized in all three parameters. Formulas as torch (after TensorFlow Probability).

    Args:
        loc: the lower end of the support.
        scale: the scale (positive).
        concentration: the shape ``c`` (real); the tail is heavy for ``c > 0``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        _init_params(self, ("loc", "scale", "concentration"), (loc, scale, concentration), validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> GeneralizedPareto:
        return _expand_params(self, GeneralizedPareto, batch_shape, ("loc", "scale", "concentration"), _instance)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        upper = F.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)

    def _safe_concentration(self) -> tuple[Tensor, Tensor]:
        """(whether c is 0, c with 1 in its place there): the c = 0 branch is the limit, kept finite elsewhere."""
        c = self.concentration
        zero = F.isclose(c, F.zeros_like(c))
        return zero, F.where(zero, F.ones_like(c), c)

    @property
    def mean(self) -> Tensor:
        finite = self.concentration < 1
        c = F.where(finite, self.concentration, 0.5)
        return F.where(finite, self.loc + self.scale / (1 - c), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        finite = self.concentration < 0.5
        c = F.where(finite, self.concentration, 0.25)
        return F.where(finite, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)), math.nan)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = random.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._safe_concentration()
        y = 1 / c + F.ones_like(z)
        nonzero = F.where(y == 0, y, y * (c * z).log1p())
        return -self.scale.log() - F.where(zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log P(X > value)``."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._safe_concentration()
        return F.where(zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log P(X <= value)``."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        zero, c = self._safe_concentration()
        log_u = (-value).log1p()
        return F.where(zero, self.loc - self.scale * log_u, self.loc + self.scale / c * (-c * log_u).expm1())

    def entropy(self) -> Tensor:
        return F.broadcast_to(self.scale.log() + self.concentration + 1, self._batch_shape)
