"""The ``Transform`` base class (caching, the inverse, event-dimension and shape bookkeeping) and the transforms
that wrap other transforms: ``ComposeTransform`` (one after another) and ``IndependentTransform`` (more event
dimensions). The public names are re-exported by :mod:`genesis.distributions.transforms`.
"""

from __future__ import annotations

from typing import Any, Sequence

import genesis.ops as F
from genesis.distributions import constraints
from genesis.distributions.utils import sum_rightmost
from genesis.tensor import Tensor


class Transform:
    """Base class: caching, the inverse, and the shape and event-dimension bookkeeping."""

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv: Transform | None = None
        self._cached_x_y: tuple[Any, Any] = (None, None)

    @property
    def event_dim(self) -> int:
        """The number of event dimensions, when domain and codomain agree."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self) -> Any:
        """The sign of the Jacobian determinant, for bijective elementwise transforms."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with the given cache size."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |det dy/dx|`` over the batch (the event dimensions summed out)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The output shape for an input of ``shape``."""
        return tuple(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The input shape for an output of ``shape``."""
        return tuple(shape)


class _InverseTransform(Transform):
    """The inverse of a transform; it shares the forward transform's cache."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    @property
    def sign(self) -> Any:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Transforms applied in order: ``ComposeTransform([f, g])(x) = g(f(x))``."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # Adjust the event dimension for parts that change it, as torch.
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> Any:
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        if self._inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            inv._inv = self
            self._inv = inv
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return F.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total: Any = 0
        event_dim = self.domain.event_dim
        for part, x_i, y_i in zip(self.parts, xs[:-1], xs[1:]):
            total = total + sum_rightmost(part.log_abs_det_jacobian(x_i, y_i), event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self) -> str:
        return self.__class__.__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"



identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """A transform whose rightmost ``reinterpreted_batch_ndims`` batch dimensions become event dimensions: the values
    are the base transform's, and ``log_abs_det_jacobian`` sums those dimensions out.

    Args:
        base_transform: the transform applied.
        reinterpreted_batch_ndims: how many extra rightmost dimensions form one event.
        cache_size: 0, or 1 to remember the last ``(x, y)`` pair.
    """

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.ndim < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.ndim < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.base_transform.inverse_shape(shape)
