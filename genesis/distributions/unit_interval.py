"""Families on the unit interval besides Beta: ContinuousBernoulli and Kumaraswamy, both reparameterized through
their closed-form inverse CDFs."""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis import random
from genesis.autograd import no_grad
from genesis.distributions import constraints
from genesis.distributions.continuous import Uniform
from genesis.distributions.discrete import _BinaryProbs
from genesis.distributions.distribution import Distribution
from genesis.distributions.extreme_value import EULER_GAMMA
from genesis.distributions.transformed_distribution import TransformedDistribution
from genesis.distributions.transforms import AffineTransform, PowerTransform
from genesis.distributions.utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs
from genesis.nn.functional import binary_cross_entropy_with_logits
from genesis.tensor import Size, Tensor


class ContinuousBernoulli(_BinaryProbs, Distribution):
    """The continuous Bernoulli distribution on [0, 1], with density ``C(λ) λ^x (1 - λ)^(1 - x)`` (Loaiza-Ganem and
    Cunningham, "The continuous Bernoulli: fixing a pervasive error in variational autoencoders", NeurIPS 2019).

    ``λ = probs`` (or ``sigmoid(logits)``) is not a probability here; it is clamped into ``[eps, 1 - eps]``. Near
    ``λ = 1/2`` the closed forms of ``C(λ)``, the mean and the variance divide zero by zero, so inside ``lims``
    (default ``(0.499, 0.501)``) they are replaced by their Taylor expansions around 1/2, and the CDF and its inverse
    by the uniform ones, as torch.

    Args:
        probs: the parameter λ, in [0, 1].
        logits: ``logit(λ)``.
        lims: the interval around 1/2 where the Taylor expansions are used.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 lims: tuple[float, float] = (0.499, 0.501), validate_args: bool | None = None) -> None:
        batch_shape = self._set_binary_param(probs, logits)
        if probs is not None:
            # Checked before the clamp below, which would make any value pass the constraint.
            if validate_args and not bool(constraints.unit_interval.check(self.probs).all().item()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> ContinuousBernoulli:
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = Size(batch_shape)
        self._expand_binary_param(new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def probs(self) -> Tensor:
        """The parameter λ, clamped into ``[eps, 1 - eps]``."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """λ outside the unstable region, ``lims[0]`` inside it (a finite stand-in for the unused closed form)."""
        return self.probs.where(self._outside_unstable_region(), self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        """``log C(λ) = log(|log(1 - λ) - log λ| / |1 - 2λ|)``; ``log 2 + 4/3 x + 104/45 x²`` with ``x = (λ - 1/2)²``
        near 1/2."""
        cut_probs = self._cut_probs()
        below_half = cut_probs <= 0.5
        cut_probs_below_half = cut_probs.where(below_half, 0.0)
        cut_probs_above_half = cut_probs.where(cut_probs >= 0.5, 1.0)
        log_denominator = F.where(below_half, (-2.0 * cut_probs_below_half).log1p(),
                                  (2.0 * cut_probs_above_half - 1.0).log())
        log_norm = ((-cut_probs).log1p() - cut_probs.log()).abs().log() - log_denominator
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return F.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / ((-cut_probs).log1p() - cut_probs.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return F.where(self._outside_unstable_region(), mus, taylor)

    @property
    def variance(self) -> Tensor:
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / (1.0 - 2.0 * cut_probs).pow(2)
                     + 1.0 / ((-cut_probs).log1p() - cut_probs.log()).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return F.where(self._outside_unstable_region(), variances, taylor)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = random.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        """``(λ^x (1 - λ)^(1 - x) + λ - 1) / (2λ - 1)``, ``x`` itself near λ = 1/2; 0 below 0 and 1 above 1."""
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (cut_probs.pow(value) * (1.0 - cut_probs).pow(1.0 - value) + cut_probs - 1.0) / (2.0 * cut_probs - 1.0)
        unbounded_cdfs = F.where(self._outside_unstable_region(), cdfs, value)
        return F.where(value <= 0.0, F.zeros_like(value),
                       F.where(value >= 1.0, F.ones_like(value), unbounded_cdfs))

    def icdf(self, value: Tensor) -> Tensor:
        """``(log(1 - λ + u (2λ - 1)) - log(1 - λ)) / (log λ - log(1 - λ))``, ``u`` itself near λ = 1/2."""
        cut_probs = self._cut_probs()
        closed_form = (((-cut_probs + value * (2.0 * cut_probs - 1.0)).log1p() - (-cut_probs).log1p())
                       / (cut_probs.log() - (-cut_probs).log1p()))
        return F.where(self._outside_unstable_region(), closed_form, value)

    def entropy(self) -> Tensor:
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    """The ``n``-th raw moment of Kumaraswamy(a, b): ``b B(1 + n / a, b)``."""
    arg1 = 1 + n / a
    return b * (arg1.lgamma() + b.lgamma() - (arg1 + b).lgamma()).exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on [0, 1], with density ``a b x^(a-1) (1 - x^a)^(b-1)``: a Beta look-alike with a
    closed-form CDF ``1 - (1 - x^a)^b``, drawn as ``(1 - U^(1/b))^(1/a)`` for ``U ~ Uniform(0, 1)``.

    Args:
        concentration1: ``a`` (positive).
        concentration0: ``b`` (positive).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(F.full_like(self.concentration0, 0), F.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """``((a - 1) / (a b - 1))^(1/a)`` for ``a, b >= 1`` (0 for ``a = 1``), NaN otherwise, computed in log space.
        (torch's formula takes ``log(1 - b)`` for ``log(a - 1)`` and gives NaN everywhere.)"""
        a, b = self.concentration1, self.concentration0
        log_mode = a.reciprocal() * ((a - 1).log() - (a * b - 1).log())
        return log_mode.masked_fill((b < 1) | (a < 1), math.nan).exp()

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        """``(1 - 1/b) + (1 - 1/a) H_b - log a - log b`` with the harmonic number ``H_b = ψ(b + 1) + γ``."""
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = (self.concentration0 + 1).digamma() + EULER_GAMMA
        return t0 + t1 * H0 - self.concentration1.log() - self.concentration0.log()
