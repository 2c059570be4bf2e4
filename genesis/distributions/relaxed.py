"""Continuous relaxations of discrete distributions (the Concrete / Gumbel-softmax distributions of Maddison et al.
and Jang et al., 2017): RelaxedBernoulli and RelaxedOneHotCategorical, with the unconstrained LogitRelaxedBernoulli
and ExpRelaxedCategorical they transform.

Draws are reparameterized: Logistic or Gumbel noise added to the logits and divided by the ``temperature``, so
gradients reach the logits (or probabilities) and the temperature.
"""

from __future__ import annotations

from numbers import Number
from typing import Sequence

import genesis.ops as F
from genesis import random
from genesis.distributions import constraints
from genesis.distributions.discrete import Categorical, _BinaryProbs
from genesis.distributions.distribution import Distribution
from genesis.distributions.transformed_distribution import TransformedDistribution
from genesis.distributions.transforms import ExpTransform, SigmoidTransform
from genesis.distributions.utils import broadcast_all, clamp_probs
from genesis.tensor import Size, Tensor, tensor


def _as_tensor(temperature: Tensor | float, like: Tensor) -> Tensor:
    """The temperature as a tensor of ``like``'s dtype and device (torch requires a tensor; a number is accepted)."""
    if isinstance(temperature, Number):
        return tensor(float(temperature), dtype=like.dtype, device=like.device)
    return temperature


class _RelaxedParams:
    """The parameters of a relaxed distribution, read from the unconstrained base distribution it transforms."""

    base_dist: Distribution

    @property
    def temperature(self) -> Tensor:
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        """The logits (log-odds, or normalized log-probabilities for the categorical one)."""
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        """The probabilities (of a one, or normalized over the categories)."""
        return self.base_dist.probs


class LogitRelaxedBernoulli(_BinaryProbs, Distribution):
    """The logit of a RelaxedBernoulli draw: ``(logit(u) + logits) / temperature`` for ``u ~ Uniform(0, 1)``.

    Args:
        temperature: the relaxation temperature (positive); low temperatures approach a Bernoulli's logit.
        probs: the probability of a one, in [0, 1].
        logits: the log-odds of a one.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        batch_shape = self._set_binary_param(probs, logits)
        self.temperature = _as_tensor(temperature, self._param)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> LogitRelaxedBernoulli:
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = Size(batch_shape)
        new.temperature = self.temperature
        self._expand_binary_param(new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(random.rand(shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(_RelaxedParams, TransformedDistribution):
    """The relaxed (Concrete) Bernoulli distribution on (0, 1): ``sigmoid`` of a LogitRelaxedBernoulli draw.

    Args:
        temperature: the relaxation temperature (positive); low temperatures approach a Bernoulli.
        probs: the probability of a one, in [0, 1].
        logits: the log-odds of a one.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> RelaxedBernoulli:
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical draw: ``log_softmax((logits + g) / temperature)`` for Gumbel noise ``g``.

    Args:
        temperature: the relaxation temperature (positive).
        probs: non-negative event weights, shape ``batch_shape + (K,)``.
        logits: unnormalized event log-probabilities, shape ``batch_shape + (K,)``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # the true support is a submanifold of it
    has_rsample = True

    def __init__(self, temperature: Tensor | float, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = _as_tensor(temperature, self._categorical._param)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> ExpRelaxedCategorical:
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = Size(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter tensor."""
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        """Normalized log-probabilities."""
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        """Normalized probabilities."""
        return self._categorical.probs

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(random.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = F.full_like(self.temperature, float(k)).lgamma() + self.temperature.log() * (k - 1)
        score = logits - value * self.temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedParams, TransformedDistribution):
    """The relaxed one-hot categorical (Concrete, Gumbel-softmax) distribution on the simplex: ``exp`` of an
    ExpRelaxedCategorical draw, i.e. ``softmax((logits + g) / temperature)`` for Gumbel noise ``g``.

    Args:
        temperature: the relaxation temperature (positive); low temperatures approach one-hot vectors.
        probs: non-negative event weights, shape ``batch_shape + (K,)``.
        logits: unnormalized event log-probabilities, shape ``batch_shape + (K,)``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Tensor | float, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> RelaxedOneHotCategorical:
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)
