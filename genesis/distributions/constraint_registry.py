"""Registries from constraints to transforms (``torch.distributions.constraint_registry``).

Two global :class:`ConstraintRegistry` objects take a constraint and return a transform from ``constraints.real``
onto it:

- ``biject_to(constraint)``: a bijective transform with ``log_abs_det_jacobian``, for samplers that move in an
  unconstrained space (HMC): ``sample = biject_to(dist.support)(unconstrained)``.
- ``transform_to(constraint)``: a transform that need not be bijective, for unconstrained optimization of
  constrained parameters: ``scale = transform_to(Normal.arg_constraints["scale"])(unconstrained)``.

They differ on the simplex (``StickBreakingTransform``, one dimension fewer, against ``SoftmaxTransform``, which acts
mostly coordinate-wise and suits optimizers like Adam) and on lower Cholesky factors and positive-(semi)definite
matrices, which only ``transform_to`` covers. ``registry.register(constraint, factory)`` adds a constraint class (or
the class of a singleton constraint); used as a decorator, the factory takes the constraint and returns a transform.
"""

from __future__ import annotations

from numbers import Number
from typing import Any, Callable

from genesis.distributions import constraints
from genesis.distributions.transforms import (
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SigmoidTransform,
    SoftmaxTransform,
    StackTransform,
    StickBreakingTransform,
    Transform,
    identity_transform,
)

Factory = Callable[[Any], Transform]


class ConstraintRegistry:
    """A table from constraint classes to factories that build a transform onto a given constraint."""

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint: Any, factory: Factory | None = None) -> Any:
        """Register ``factory`` for a constraint class, or for the class of a constraint instance.

        Args:
            constraint: a ``Constraint`` subclass or instance.
            factory: takes a constraint of that class and returns a ``Transform``; without it, ``register`` returns
                a decorator that registers the function it decorates.

        Returns:
            ``factory`` (or the decorator).
        """
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> Transform:
        """A transform from ``constraints.real`` onto ``constraint``; ``NotImplementedError`` for an unregistered
        constraint class."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint: constraints.Constraint) -> Transform:
    return identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: Any) -> Transform:
    return IndependentTransform(biject_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: Any) -> Transform:
    return IndependentTransform(transform_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint: Any) -> Transform:
    # Also ``positive`` and ``nonnegative``, instances of these classes: exp then a shift by 0, as in torch (whose
    # earlier ExpTransform entry for them is replaced by this one).
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint: Any) -> Transform:
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint: Any) -> Transform:
    lower_is_0 = isinstance(constraint.lower_bound, Number) and constraint.lower_bound == 0
    upper_is_1 = isinstance(constraint.upper_bound, Number) and constraint.upper_bound == 1
    if lower_is_0 and upper_is_1:
        return SigmoidTransform()
    scale = constraint.upper_bound - constraint.lower_bound
    return ComposeTransform([SigmoidTransform(), AffineTransform(constraint.lower_bound, scale)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: constraints.Constraint) -> Transform:
    return StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: constraints.Constraint) -> Transform:
    return SoftmaxTransform()


# No bijection onto lower Cholesky factors (as torch): LowerCholeskyTransform drops the upper triangle.
@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: constraints.Constraint) -> Transform:
    return LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint: constraints.Constraint) -> Transform:
    return PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint: constraints.Constraint) -> Transform:
    return CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint: Any) -> Transform:
    return CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint: Any) -> Transform:
    return CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint: Any) -> Transform:
    return StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint: Any) -> Transform:
    return StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)


__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]
