"""``Multinomial``: the counts of ``total_count`` independent categorical draws over ``K`` categories."""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis.autograd import no_grad
from genesis.distributions import constraints
from genesis.distributions.counts import Binomial
from genesis.distributions.discrete import Categorical
from genesis.distributions.distribution import Distribution
from genesis.distributions.utils import broadcast_all
from genesis.tensor import Size, Tensor


class Multinomial(Distribution):
    """The multinomial distribution: how often each of ``K`` categories comes up in ``total_count`` independent draws
    with probabilities ``probs`` (or ``softmax(logits)``) over the last dimension.

    ``probs`` are normalized to sum to one and ``logits`` to ``logsumexp = 0``, as in :class:`Categorical`.
    ``log_prob`` accepts counts with any total (per value), but the support checked under validation is torch's:
    non-negative counts summing to at most ``total_count``. Sampling counts ``total_count`` categorical draws, so it
    needs the single integer ``total_count`` (as torch).

    Args:
        total_count: the number of draws (an ``int``).
        probs: non-negative event weights, shape ``batch_shape + (K,)``.
        logits: unnormalized event log-probabilities, shape ``batch_shape + (K,)``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Multinomial:
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        """Normalized log-probabilities."""
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        """Normalized probabilities."""
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter tensor."""
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            probs = self.probs
            draws = self._categorical.sample((self.total_count,) + tuple(sample_shape))
            draws = draws.movedim(0, -1)  # (sample_shape, batch_shape, total_count)
            counts = F.zeros(self._extended_shape(sample_shape), dtype=probs.dtype, device=probs.device)
            return counts.scatter_add(-1, draws, F.ones(draws.shape, dtype=probs.dtype, device=probs.device))

    def log_prob(self, value: Tensor) -> Tensor:
        """``log(n! / prod(x_i!)) + sum(x_i log p_i)`` with ``n = sum(x_i)``; a zero count of an impossible category
        adds nothing (``0 · -inf`` is taken as 0)."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0.0)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers

    def entropy(self) -> Tensor:
        """torch's formula: ``n H(Categorical) - log n! + sum_i E[log x_i!]``, the last term over the binomial
        marginals ``x_i ~ Binomial(n, p_i)`` enumerated over ``1 .. n``."""
        n = self.total_count
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        binomial = Binomial(n, probs=self.probs, validate_args=False)
        support = binomial.enumerate_support(expand=False)[1:]
        binomial_probs = binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        term2 = (binomial_probs * weights).sum((0, -1))
        return term1 + term2
