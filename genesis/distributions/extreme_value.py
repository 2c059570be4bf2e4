"""Extreme-value distributions built as transformed distributions: Gumbel (maxima) and Weibull (minima).

Both are reparameterized: draws are transformed uniform (Gumbel) or exponential (Weibull) draws, and ``cdf``/``icdf``
come from :class:`TransformedDistribution`.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Sequence

import genesis.ops as F
from genesis.distributions import constraints
from genesis.distributions.continuous import Exponential, Uniform
from genesis.distributions.distribution import Distribution
from genesis.distributions.transformed_distribution import TransformedDistribution
from genesis.distributions.transforms import AffineTransform, ExpTransform, PowerTransform
from genesis.distributions.utils import broadcast_all, eps, tiny
from genesis.tensor import Tensor

EULER_GAMMA = 0.57721566490153286060  # the Euler-Mascheroni constant (torch's ``euler_constant``)


class Gumbel(TransformedDistribution):
    """The Gumbel distribution: ``loc - scale * log(-log(u))`` for ``u ~ Uniform(tiny, 1 - eps)``, with density
    ``exp(-(z + exp(-z))) / scale``, ``z = (x - loc) / scale``.

    Args:
        loc: the location (the mode).
        scale: the scale (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        low, high = tiny(self.loc.dtype), 1 - eps(self.loc.dtype)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base_dist = Uniform(low, high, validate_args=validate_args)
        else:
            base_dist = Uniform(F.full_like(self.loc, low), F.full_like(self.loc, high), validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-F.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Tensor) -> Tensor:
        # Written directly rather than through the transforms, for precision (as torch).
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + EULER_GAMMA)


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: ``scale * E^(1 / concentration)`` for ``E ~ Exponential(1)``, with
    density ``(k / λ) (x / λ)^(k-1) exp(-(x / λ)^k)`` (``λ`` the scale, ``k`` the concentration).

    Args:
        scale: the scale ``λ`` (positive).
        concentration: the shape ``k`` (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(F.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Weibull:
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal), AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * (1 + self.concentration_reciprocal).lgamma().exp()

    @property
    def mode(self) -> Tensor:
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * ((1 + 2 * self.concentration_reciprocal).lgamma().exp()
                                    - (2 * (1 + self.concentration_reciprocal).lgamma()).exp())

    def entropy(self) -> Tensor:
        k_inv = self.concentration_reciprocal
        return EULER_GAMMA * (1 - k_inv) + (self.scale * k_inv).log() + 1
