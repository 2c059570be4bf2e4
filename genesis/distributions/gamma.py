"""The Gamma family: Gamma, Chi2 (a Gamma with rate 1/2), Dirichlet (normalized Gamma draws), Beta (a
two-category Dirichlet), InverseGamma (reciprocal Gamma draws) and FisherSnedecor (a ratio of Gamma draws).

Samples come from :func:`genesis.random._standard_gamma` and are reparameterized: gradients reach the
concentrations through the implicit reparameterization of the Gamma draws (and the normalization for Dirichlet
and Beta).
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Sequence

import genesis.ops as F
from genesis import random, special
from genesis.distributions import constraints
from genesis.distributions.continuous import _expand_params, _init_params
from genesis.distributions.distribution import Distribution
from genesis.distributions.transformed_distribution import TransformedDistribution
from genesis.distributions.transforms import PowerTransform
from genesis.distributions.utils import broadcast_all, tiny
from genesis.tensor import Size, Tensor, tensor


class Gamma(Distribution):
    """The Gamma distribution with density ``rate^a x^(a-1) exp(-rate x) / Γ(a)`` (``a`` the concentration).

    Args:
        concentration: the shape parameter ``a`` (positive).
        rate: the inverse scale (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None) -> None:
        _init_params(self, ("concentration", "rate"), (concentration, rate), validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Gamma:
        return _expand_params(self, Gamma, batch_shape, ("concentration", "rate"), _instance)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return random._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.to(self.rate.dtype) if isinstance(value, Tensor) else value
        return (F.xlogy(self.concentration, self.rate) + F.xlogy(self.concentration - 1, value)
                - self.rate * value - self.concentration.lgamma())

    def cdf(self, value: Tensor) -> Tensor:
        """``P(concentration, rate * value)``, the regularized lower incomplete gamma function."""
        if self._validate_args:
            self._validate_sample(value)
        return special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    Args:
        df: the degrees of freedom (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Chi2:
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self) -> Tensor:
        """The degrees of freedom."""
        return self.concentration * 2


class Dirichlet(Distribution):
    """The Dirichlet distribution over the probability simplex, with concentration vector ``concentration``.

    Args:
        concentration: positive concentrations, shape ``batch_shape + (K,)``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        gammas = random._standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        return (gammas / gammas.sum(-1, keepdim=True)).clamp(min=tiny(gammas.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return F.xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, keepdim=True)
        # With every concentration below 1 the density peaks at a vertex: the largest concentration's.
        all_below_one = (self.concentration < 1).all(-1, keepdim=True)
        vertex = F.one_hot(mode.argmax(-1), concm1.shape[-1]).to(mode.dtype)
        return vertex.where(all_below_one, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma() - ((c - 1.0) * c.digamma()).sum(-1)


class Beta(Distribution):
    """The Beta distribution on [0, 1] with density proportional to ``x^(c1-1) (1-x)^(c0-1)``.

    Args:
        concentration1: the first concentration ``c1`` (often alpha).
        concentration0: the second concentration ``c0`` (often beta).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            concentration1_concentration0 = tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            concentration1_concentration0 = F.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(concentration1_concentration0, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Beta:
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self) -> Tensor:
        """The first concentration ``c1``."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        """The second concentration ``c0``."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = F.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()


class InverseGamma(TransformedDistribution):
    """The inverse Gamma distribution: ``1 / X`` for ``X ~ Gamma(concentration, rate)``, with density
    ``rate^a x^(-a-1) exp(-rate / x) / Γ(a)``. The mean is infinite for ``a <= 1`` and the variance for ``a <= 2``.

    Args:
        concentration: the shape parameter ``a`` (positive).
        rate: the scale of ``1 / X`` (positive; the rate of ``X``).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None) -> None:
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -F.ones((), dtype=base_dist.rate.dtype, device=base_dist.rate.device)
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> InverseGamma:
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self) -> Tensor:
        """The shape parameter ``a``."""
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        """The rate of the underlying Gamma (the scale of this distribution)."""
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        result = self.rate / (self.concentration - 1)
        return result.where(self.concentration > 1, math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return result.where(self.concentration > 2, math.inf)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()


class FisherSnedecor(Distribution):
    """The F-distribution with ``df1`` and ``df2`` degrees of freedom: ``(X1 / df1) / (X2 / df2)`` for independent
    ``Xi ~ Chi2(dfi)``, drawn as a ratio of ``Gamma(dfi / 2, dfi)`` draws (reparameterized in both parameters). The
    mean is NaN for ``df2 <= 2``, the variance for ``df2 <= 4`` and the mode for ``df1 <= 2``, as torch.

    Args:
        df1: the numerator's degrees of freedom (positive).
        df2: the denominator's degrees of freedom (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Tensor | float, df2: Tensor | float, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        scalar = isinstance(df1, Number) and isinstance(df2, Number)
        super().__init__(Size() if scalar else self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> FisherSnedecor:
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        df2 = self.df2.where(self.df2 > 2, math.nan)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return mode.where(self.df1 > 2, math.nan)

    @property
    def variance(self) -> Tensor:
        df2 = self.df2.where(self.df2 > 4, math.nan)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        # X1 ~ Gamma(df1 / 2, df1) is Chi2(df1) / df1, and likewise X2: their ratio is F(df1, df2).
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        smallest = tiny(x2.dtype)
        return (x1 / x2.clamp(min=smallest)).clamp(min=smallest)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
