"""``Distribution``: the base class of every probability distribution (torch.distributions.Distribution).

A distribution has a ``batch_shape`` (independent, differently parameterized distributions side by side) and an
``event_shape`` (the shape of one draw). ``sample(sample_shape)`` returns ``sample_shape + batch_shape +
event_shape``; ``log_prob(value)`` returns the broadcast batch shape. With argument validation on (the default, as
torch, unless Python runs with ``-O``), parameters are checked against ``arg_constraints`` at construction and values
against ``support`` in ``log_prob``/``cdf``, raising torch's ``ValueError`` messages.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

from genesis.autograd import enable_grad, grad, no_grad
from genesis.distributions import constraints
from genesis.distributions.utils import lazy_property
from genesis.tensor import Size, Tensor


def _all_true(valid: Tensor) -> bool:
    return bool(valid.all().item())


class Distribution:
    """Base class: shapes, sampling with ``sample_shape``, argument validation and the derived quantities."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions built without an explicit ``validate_args``."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}`"
                              " or initialize the distribution with `validate_args=False` to turn off validation.",
                              stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # a constraint that depends on other parameters cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # the parameter is derived from the one given
                value = getattr(self, param)
                with no_grad():
                    valid = constraint.check(value)
                if not _all_true(valid):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Distribution:
        """A new distribution with its batch dimensions expanded to ``batch_shape`` (parameters are views)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """The constraint each parameter must satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint:
        """The constraint of the values the distribution takes."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: the square root of the variance."""
        return self.variance.sqrt()

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """Draw ``sample_shape`` samples (no gradient); shape ``sample_shape + batch_shape + event_shape``."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """Draw reparameterized samples: gradients flow back to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))``, kept for torch's older API."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability density (or mass) at ``value``, over the broadcast batch shape."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution along dimension 0 (expanded over the batch if ``expand``)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, over the batch shape."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: Sequence[int] = ()) -> Size:
        """``sample_shape + batch_shape + event_shape``."""
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """Check that ``value`` is a tensor whose shape fits the event and batch shapes and that lies in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        actual_shape = value.shape
        expected_shape = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please initialize "
                          "the distribution with `validate_args=False` to turn off validation.", stacklevel=2)
            return
        with no_grad():
            valid = support.check(value)
        if not _all_true(valid):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _get_checked_instance(self, cls: type, _instance: Distribution | None = None) -> Any:
        """A bare instance for ``expand`` to fill in (a subclass with its own ``__init__`` must define ``expand``)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        params = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].shape}"
                         for p in params)
        return f"{self.__class__.__name__}({args})"


class ExponentialFamily(Distribution):
    """Base class of distributions of the exponential family, ``p(x) = h(x) exp(<t(x), theta> - F(theta))``.

    A subclass gives its natural parameters ``theta`` (``_natural_params``), the log-normalizer ``F``
    (``_log_normalizer``) and ``E[log h(x)]`` (``_mean_carrier_measure``); ``entropy`` then follows from the
    Bregman divergence of ``F``, its gradient taken by autograd, as in torch.
    """

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> Tensor | float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with enable_grad():
            log_norm = self._log_normalizer(*params)
            gradients = grad(log_norm.sum(), params, create_graph=True)
        result = result + log_norm
        for p, g in zip(params, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
