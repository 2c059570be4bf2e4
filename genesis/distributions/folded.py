"""Folded distributions: ``|x|`` for a zero-centred Normal (HalfNormal) or Cauchy (HalfCauchy) draw ``x``.

``AbsTransform`` is not bijective, so each family writes its density (twice the base density on ``x >= 0``), CDF
and inverse CDF itself, as torch.
"""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis.distributions import constraints
from genesis.distributions.continuous import Normal
from genesis.distributions.distribution import Distribution
from genesis.distributions.heavy_tailed import Cauchy
from genesis.distributions.transformed_distribution import TransformedDistribution
from genesis.distributions.transforms import AbsTransform
from genesis.tensor import Tensor


class _Folded(TransformedDistribution):
    """The shared part of the half distributions: density, CDF, inverse CDF and entropy from the base's."""

    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self) -> Tensor:
        """The scale of the base distribution."""
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return F.zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return log_prob.where(value >= 0, F.full_like(log_prob, -math.inf))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """The half-normal distribution: ``|x|`` for ``x ~ Normal(0, scale)``.

    Args:
        scale: the scale of the underlying normal (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base_dist = Normal(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> HalfNormal:
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """The half-Cauchy distribution: ``|x|`` for ``x ~ Cauchy(0, scale)``; its mean and variance are infinite.

    Args:
        scale: the scale of the underlying Cauchy distribution (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base_dist = Cauchy(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> HalfCauchy:
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return F.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance
