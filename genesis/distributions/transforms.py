"""Invertible transforms between constrained spaces, with the log-determinant of their Jacobians
(torch.distributions.transforms).

A transform ``t`` maps ``x`` in ``t.domain`` to ``y = t(x)`` in ``t.codomain``; ``t.inv`` is its inverse and
``t.log_abs_det_jacobian(x, y)`` is ``log |dy/dx|`` summed over the transform's event dimensions. With
``cache_size=1`` a transform remembers its last ``(x, y)`` pair, so ``t.inv(t(x))`` returns ``x`` itself.

This module holds the elementwise transforms, ``SoftmaxTransform`` and ``CumulativeDistributionTransform``, and
re-exports the rest: the base class, ``ComposeTransform``, ``IndependentTransform`` and ``identity_transform``
(:mod:`~genesis.distributions.transform_base`), ``ReshapeTransform``, ``CatTransform`` and ``StackTransform``
(:mod:`~genesis.distributions.shape_transforms`), and the stick-breaking and matrix transforms
(:mod:`~genesis.distributions.matrix_transforms`).
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Sequence

import genesis.ops as F
from genesis.distributions import constraints
from genesis.distributions.distribution import Distribution
from genesis.distributions.matrix_transforms import (
    CorrCholeskyTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    StickBreakingTransform,
)
from genesis.distributions.shape_transforms import CatTransform, ReshapeTransform, StackTransform
from genesis.distributions.transform_base import (  # torch's module has the private inverse class too
    ComposeTransform,
    IndependentTransform,
    Transform,
    _InverseTransform,  # noqa: F401
    identity_transform,
)
from genesis.distributions.utils import clipped_sigmoid, eps, tiny
from genesis.tensor import Tensor


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class AbsTransform(Transform):
    """``y = |x|``; not bijective, so it has no log-Jacobian (the folded distributions define their densities)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive numbers."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(exponent={self.exponent})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and _same(self.exponent, other.exponent)

    __hash__ = object.__hash__

    @property
    def sign(self) -> Any:
        return _sign(self.exponent)

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(F.broadcast_shapes(tuple(shape), tuple(getattr(self.exponent, "shape", ()))))

    inverse_shape = forward_shape


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``, clamped inside (0, 1) by the dtype's tiny and epsilon."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        y = y.clamp(min=tiny(y.dtype), max=1.0 - eps(y.dtype))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))`` (linear above ``x = 20``, as softplus); the inverse is ``log(exp(y) - 1)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return F.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-(-y).expm1()).log() + y  # log(1 - exp(-y)) + y, stable for large y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x)  # log sigmoid(x)


class TanhTransform(Transform):
    """``y = tanh(x)``; the log-Jacobian uses the stable form ``2 (log 2 - x - softplus(-2x))``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.atanh()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AffineTransform(Transform):
    """``y = loc + scale * x``, elementwise; ``event_dim`` says how many trailing dimensions form one event."""

    bijective = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        return _same(self.loc, other.loc) and _same(self.scale, other.scale)

    __hash__ = object.__hash__

    @property
    def sign(self) -> Any:
        return _sign(self.scale)

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if isinstance(self.scale, Number):
            result = F.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[:result.ndim - self.event_dim]) + (-1,)).sum(-1)
            shape = shape[:len(shape) - self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(F.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                        tuple(getattr(self.scale, "shape", ()))))

    inverse_shape = forward_shape


def _sign(a: Tensor | float) -> Tensor | int:
    """The sign of a transform parameter: an int for a number, a tensor for a tensor."""
    if isinstance(a, Number):
        return (a > 0) - (a < 0)
    return a.sign()


def _same(a: Tensor | float, b: Tensor | float) -> bool:
    """Whether two transform parameters are equal (numbers by value, tensors elementwise)."""
    if isinstance(a, Number) and isinstance(b, Number):
        return a == b
    return bool((a == b).all().item())


class SoftmaxTransform(Transform):
    """``y = softmax(x)`` over the last dimension; not bijective (the inverse is ``log``, up to a constant)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.max(-1, keepdim=True)[0]).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape)

    inverse_shape = forward_shape


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``, from the distribution's support onto (0, 1); the inverse is its ``icdf`` and the
    log-Jacobian its ``log_prob``. With a ``Normal(0, 1)`` it turns a multivariate normal into a Gaussian copula.

    Args:
        distribution: a univariate distribution with ``cdf``, ``icdf`` and ``log_prob``.
        cache_size: 0, or 1 to remember the last ``(x, y)`` pair.
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)


__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
           "identity_transform"]
