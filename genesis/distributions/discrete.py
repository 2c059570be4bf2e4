"""Discrete distributions parameterized by probabilities or logits: Bernoulli, Categorical, OneHotCategorical.

Each takes exactly one of ``probs`` and ``logits``; the other is derived on first use (``lazy_property``). Sampling
is not differentiable (``has_rsample`` is False): policy gradients use ``log_prob`` of the sample, whose gradient
reaches the parameters.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Sequence

import genesis.ops as F
from genesis import dtypes, random
from genesis.autograd import no_grad
from genesis.distributions import constraints
from genesis.distributions.distribution import Distribution
from genesis.distributions.utils import broadcast_all, lazy_property, logits_to_probs, lowest, probs_to_logits
from genesis.nn.functional import binary_cross_entropy_with_logits
from genesis.tensor import Size, Tensor


def _one_of(probs: Tensor | float | None, logits: Tensor | float | None) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class _BinaryProbs:
    """A success probability given as ``probs`` or ``logits`` (exactly one): the other is derived on first use.

    Shared by Bernoulli and the families built on independent binary trials (Binomial, NegativeBinomial, Geometric,
    LogitRelaxedBernoulli).
    """

    _param: Tensor

    def _set_binary_param(self, probs: Tensor | float | None, logits: Tensor | float | None) -> Size:
        """Store the given one of ``probs``/``logits`` as a tensor; return the batch shape (empty for a number)."""
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        (self._param,) = broadcast_all(given)
        setattr(self, "probs" if probs is not None else "logits", self._param)
        return Size() if isinstance(given, Number) else self._param.shape

    def _expand_binary_param(self, new: _BinaryProbs, batch_shape: Size) -> None:
        """Give ``new`` this distribution's ``probs`` and/or ``logits`` (those that exist), expanded."""
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(batch_shape))
                new._param = getattr(new, name)

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds ``log(p / (1 - p))``."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of a one (a success)."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter tensor."""
        return self._param.shape


class Bernoulli(_BinaryProbs, Distribution):
    """The Bernoulli distribution: 1 with probability ``probs`` (or ``sigmoid(logits)``), else 0.

    Args:
        probs: the probability of a one, in [0, 1].
        logits: the log-odds of a one.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        batch_shape = self._set_binary_param(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Bernoulli:
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = Size(batch_shape)
        self._expand_binary_param(new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return F.full_like(mode, math.nan).where(self.probs == 0.5, mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            return random.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = F.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Categorical(Distribution):
    """A categorical distribution over ``0 .. K-1``, parameterized by the last dimension of ``probs`` or ``logits``.

    ``probs`` are normalized to sum to one and ``logits`` to ``logsumexp = 0`` along the last dimension.

    Args:
        probs: non-negative event weights, shape ``batch_shape + (K,)``.
        logits: unnormalized event log-probabilities, shape ``batch_shape + (K,)``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.ndim > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Categorical:
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        """Normalized log-probabilities."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        """Normalized probabilities."""
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter tensor."""
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return F.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return F.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        sample_shape = Size(sample_shape)
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = random.multinomial(probs_2d, max(math.prod(sample_shape), 1), True).t()
            if math.prod(sample_shape) == 0:
                samples_2d = samples_2d[:0]
            return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.to(dtypes.int64).unsqueeze(-1)
        value, log_pmf = F.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        # Zero-probability events have logits -inf; clamping to the dtype's lowest keeps 0 * logit = 0.
        logits = self.logits.clamp(min=lowest(self.logits.dtype))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = F.arange(self._num_events, dtype=dtypes.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """A categorical distribution whose samples are one-hot vectors of length ``K``.

    Args:
        probs: non-negative event weights, shape ``batch_shape + (K,)``.
        logits: unnormalized event log-probabilities, shape ``batch_shape + (K,)``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> OneHotCategorical:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        """Normalized probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """Normalized log-probabilities."""
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter tensor."""
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = F.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """:class:`OneHotCategorical` whose ``rsample`` passes gradients straight through (Bengio et al., 2013): the
    one-hot sample in the forward pass, the gradient of ``probs`` in the backward pass."""

    has_rsample = True

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached: the same tensor for every call
        return samples + (probs - probs.detach())
