"""Distributions over counts (non-negative integers): Poisson, Binomial, NegativeBinomial, Geometric.

Samples are floats holding integers, in the parameters' dtype, as torch. They are drawn with Genesis's uniform
numbers through vectorized rejection loops (one device-to-host read of "anything pending?" per round), so they run
on every device: Poisson by exponential inter-arrival times below rate 10 and Hörmann's transformed rejection (PTRS)
above, Binomial by geometric waiting times below ``n * min(p, 1 - p) = 10`` and Hörmann's BTRS above. Sampling is
not differentiable (``has_rsample`` is False), as torch.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Sequence

import genesis.ops as F
from genesis import dtypes, random
from genesis.autograd import no_grad
from genesis.distributions import constraints
from genesis.distributions.discrete import _BinaryProbs, _one_of
from genesis.distributions.distribution import Distribution
from genesis.distributions.gamma import Gamma
from genesis.distributions.utils import broadcast_all, lazy_property, tiny
from genesis.nn.functional import binary_cross_entropy_with_logits, logsigmoid
from genesis.tensor import Size, Tensor

# Below this mean the samplers count events one by one; above it they use transformed rejection (as torch, numpy).
_REJECTION_THRESHOLD = 10.0


def _any(mask: Tensor) -> bool:
    return bool(mask.any().item())


def _uniform(like: Tensor) -> Tensor:
    return random.rand(like.shape, dtype=dtypes.float64, device=like.device)


def _poisson(rate: Tensor) -> Tensor:
    """Poisson draws with the given rates (``torch.poisson``), in ``rate``'s dtype; no gradient.

    Rates below 10 count exponential inter-arrival times until they pass the rate; larger rates use PTRS (W. Hörmann,
    "The transformed rejection method for generating Poisson random variables", 1993), which accepts about 90% of its
    proposals. Non-finite rates are returned as they are.
    """
    with no_grad():
        lam = rate.detach().to(dtypes.float64)
        finite = lam.isfinite()
        out = F.zeros_like(lam)
        # Small rates: the number of unit-rate arrivals within time ``lam``.
        pending = finite & (lam > 0) & (lam < _REJECTION_THRESHOLD)
        arrival = F.zeros_like(lam)
        while _any(pending):
            arrival = arrival - _uniform(lam).log()
            pending = pending & (arrival < lam)
            out = out + pending.to(dtypes.float64)
        # Large rates: PTRS.
        pending = finite & (lam >= _REJECTION_THRESHOLD)
        big = lam.where(pending, _REJECTION_THRESHOLD)  # keeps the constants finite where unused
        log_lam = big.log()
        b = 0.931 + 2.53 * big.sqrt()
        a = -0.059 + 0.02483 * b
        log_inv_alpha = (1.1239 + 1.1328 / (b - 3.4)).log()
        v_r = 0.9277 - 3.6224 / (b - 2)
        while _any(pending):
            u = _uniform(lam) - 0.5
            v = _uniform(lam)
            us = 0.5 - u.abs()
            k = ((2 * a / us + b) * u + big + 0.43).floor()
            quick = (us >= 0.07) & (v <= v_r)
            rejected = (k < 0) | ((us < 0.013) & (v > us))
            kc = k.clamp(min=0)
            log_ratio = -big + kc * log_lam - (kc + 1).lgamma()
            log_v = v.log() + log_inv_alpha - (a / (us * us) + b).log()
            accept = pending & (quick | (~rejected & (log_v <= log_ratio)))
            out = k.where(accept, out)
            pending = pending & ~accept
        out = out.where(finite, lam)
        return out.to(rate.dtype)


def _binomial(count: Tensor, probs: Tensor) -> Tensor:
    """Binomial draws of ``count`` trials with success probability ``probs`` (``torch.binomial``); no gradient.

    Draws with ``p > 1/2`` are ``n`` minus draws with ``1 - p``. Small means ``n p < 10`` count geometric waiting
    times between successes until they pass ``n`` trials; larger ones use BTRS (W. Hörmann, "The generation of
    binomial random variates", 1993) with the exact log-density ratio as the final test. A non-finite count or a NaN
    probability gives NaN.
    """
    with no_grad():
        n, p = (t.detach().to(dtypes.float64) for t in F.broadcast_tensors(count, probs))
        valid = n.isfinite() & (p == p)
        flip = p > 0.5
        q = (1 - p).where(flip, p)
        out = F.zeros_like(n)
        # Small means: successes are separated by Geometric(q) waiting times.
        pending = valid & (n > 0) & (q > 0) & (n * q < _REJECTION_THRESHOLD)
        log1m_q = (-q.where(pending, 0.5)).log1p()
        trials = F.zeros_like(n)
        while _any(pending):
            trials = trials + (_uniform(n).log() / log1m_q).ceil()
            pending = pending & (trials <= n)
            out = out + pending.to(dtypes.float64)
        # Large means: BTRS.
        pending = valid & (n * q >= _REJECTION_THRESHOLD)
        nb, qb = n.where(pending, 2 * _REJECTION_THRESHOLD), q.where(pending, 0.5)
        m = ((nb + 1) * qb).floor()
        log_r = (qb / (1 - qb)).log()
        stddev = (nb * qb * (1 - qb)).sqrt()
        b = 1.15 + 2.53 * stddev
        a = -0.0873 + 0.0248 * b + 0.01 * qb
        c = nb * qb + 0.5
        alpha = (2.83 + 5.1 / b) * stddev
        v_r = 0.92 - 4.2 / b
        log_f_m = (m + 1).lgamma() + (nb - m + 1).lgamma()
        while _any(pending):
            u = _uniform(n) - 0.5
            v = _uniform(n)
            us = 0.5 - u.abs()
            k = ((2 * a / us + b) * u + c).floor()
            inside = (k >= 0) & (k <= nb)
            kc = k.clamp(min=0).minimum(nb)
            quick = (us >= 0.07) & (v <= v_r)
            # log(f(k) / f(m)) for the binomial probabilities f.
            log_ratio = log_f_m - (kc + 1).lgamma() - (nb - kc + 1).lgamma() + (kc - m) * log_r
            accept = pending & inside & (quick | ((v * alpha / (a / (us * us) + b)).log() <= log_ratio))
            out = k.where(accept, out)
            pending = pending & ~accept
        out = (n - out).where(flip, out)
        out = out.where(valid, F.full_like(out, math.nan))
        return out.to(probs.dtype)


def _init_trials(self: Distribution, total_count: Tensor | float, probs: Tensor | float | None,
                 logits: Tensor | float | None, validate_args: bool | None) -> None:
    """The shared body of Binomial's and NegativeBinomial's ``__init__``: broadcast ``total_count`` with the given
    parameter, cast it to the parameter's dtype and set the batch shape."""
    _one_of(probs, logits)
    name = "probs" if probs is not None else "logits"
    total, param = broadcast_all(total_count, probs if probs is not None else logits)
    setattr(self, name, param)
    self.total_count = total.type_as(param)
    self._param = param
    Distribution.__init__(self, param.shape, validate_args=validate_args)


def _expand_trials(self: Any, cls: type, batch_shape: Sequence[int], _instance: Distribution | None) -> Any:
    """The shared body of ``expand`` for parameters ``probs`` or ``logits`` (and ``total_count`` if present)."""
    new = self._get_checked_instance(cls, _instance)
    batch_shape = Size(batch_shape)
    if "total_count" in self.__dict__:
        new.total_count = self.total_count.expand(batch_shape)
    self._expand_binary_param(new, batch_shape)
    Distribution.__init__(new, batch_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new


class Poisson(Distribution):
    """The Poisson distribution: ``P(k) = rate^k e^(-rate) / k!`` on the non-negative integers.

    Args:
        rate: the mean number of events (non-negative).
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, Number) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Poisson:
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return _poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return F.xlogy(value, rate) - rate - (value + 1).lgamma()


class Binomial(_BinaryProbs, Distribution):
    """The number of successes in ``total_count`` independent trials with success probability ``probs`` (or
    ``sigmoid(logits)``).

    Args:
        total_count: the number of trials (a non-negative integer), broadcastable with the probability.
        probs: the success probability, in [0, 1].
        logits: the log-odds of success.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Tensor | int = 1, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        _init_trials(self, total_count, probs, logits, validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Binomial:
        return _expand_trials(self, Binomial, batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().minimum(self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return _binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_factorial_n = (n + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (n - value + 1).lgamma()
        # k log p + (n - k) log(1 - p) = k logit - n max(logit, 0) - n log1p(exp(-|logit|)); the max is written so
        # that its gradient at 0 is 1/2, as torch's.
        clamp_by_zero = (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2
        normalize = n * clamp_by_zero + n * (-logits.abs()).exp().log1p() - log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize

    def _homogeneous_count(self, what: str) -> int:
        total_count = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total_count = self._homogeneous_count("enumerate_support")
        values = F.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class NegativeBinomial(_BinaryProbs, Distribution):
    """The number of successes before ``total_count`` failures in independent trials with success probability
    ``probs`` (or ``sigmoid(logits)``); a Gamma-Poisson mixture, so ``total_count`` may be any non-negative real.

    Args:
        total_count: the number of failures that stops the trials (non-negative).
        probs: the success probability, in [0, 1).
        logits: the log-odds of success.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        _init_trials(self, total_count, probs, logits, validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> NegativeBinomial:
        return _expand_trials(self, NegativeBinomial, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def _gamma(self) -> Gamma:
        """The Gamma distribution of the Poisson rate: ``Gamma(total_count, exp(-logits))``."""
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            return _poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -(n + value).lgamma() + (1.0 + value).lgamma() + n.lgamma()
        # lgamma(0) is inf: the point n + k = 0 has probability one and log-normalization 0.
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization


class Geometric(_BinaryProbs, Distribution):
    """The number of failures before the first success in independent trials: ``P(k) = (1 - p)^k p``.

    Args:
        probs: the success probability, in (0, 1].
        logits: the log-odds of success.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(self._set_binary_param(probs, logits), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            if not bool((value > 0).all().item()):
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n{value}")

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Geometric:
        return _expand_trials(self, Geometric, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return F.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            u = random.rand(shape, dtype=self.probs.dtype, device=self.probs.device).clamp(min=tiny(self.probs.dtype))
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 and k = 0: the term k log(1 - p) is 0 * -inf; torch zeroes p there.
        probs = probs.masked_fill((probs == 1) & (value == 0), 0.0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
