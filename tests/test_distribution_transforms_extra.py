"""The structured transforms of genesis.distributions.transforms (softplus, stick-breaking, Cholesky and correlation
Cholesky, positive-definite, reshape, independent, cat, stack, cumulative-distribution) and the ``biject_to`` /
``transform_to`` registries against torch's: forward values, inverses, log-Jacobians and every gradient through
them, shapes, constraints and properties, caching, equality, and the exception classes torch raises."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

import genesis
from tests.helpers import TORCH_DTYPE, assert_same, check, check_error, check_like_torch, rand, to_genesis, to_torch


def pos(*shape: int, seed: int = 0) -> torch.Tensor:
    return rand(*shape, low=0.5, high=2.0, seed=seed)


def T(lib: Any) -> Any:
    return lib.distributions.transforms


def C(lib: Any) -> Any:
    return lib.distributions.constraints


# name -> (build(lib, *params), inputs() -> (x, *params) as torch tensors, whether it has log_abs_det_jacobian)
CASES: dict[str, tuple[Callable, Callable[[], tuple], bool]] = {
    "Softplus": (lambda lib: T(lib).SoftplusTransform(), lambda: (rand(3, 4, low=-30.0, high=30.0),), True),
    "StickBreaking": (lambda lib: T(lib).StickBreakingTransform(), lambda: (rand(2, 4, low=-3.0, high=3.0),), True),
    "CorrCholesky": (lambda lib: T(lib).CorrCholeskyTransform(), lambda: (rand(2, 6, low=-2.0, high=2.0),), True),
    "CorrCholesky2x2": (lambda lib: T(lib).CorrCholeskyTransform(), lambda: (rand(3, 1),), True),
    "LowerCholesky": (lambda lib: T(lib).LowerCholeskyTransform(), lambda: (rand(2, 3, 3),), False),
    "PositiveDefinite": (lambda lib: T(lib).PositiveDefiniteTransform(), lambda: (rand(2, 3, 3),), False),
    "Reshape": (lambda lib: T(lib).ReshapeTransform((2, 3), (3, 2)), lambda: (rand(4, 2, 3),), True),
    "Independent": (lambda lib, s: T(lib).IndependentTransform(T(lib).AffineTransform(0.5, s), 2),
                    lambda: (rand(2, 3, 4), pos(4)), True),
    "Cat": (lambda lib: T(lib).CatTransform([T(lib).ExpTransform(), T(lib).identity_transform,
                                             T(lib).SoftplusTransform()], dim=-1, lengths=[2, 1, 3]),
            lambda: (rand(2, 6),), True),
    # dim 0 lies left of the pieces' one event dimension: the log-Jacobians are joined along it.
    "CatBatchDim": (lambda lib, s: T(lib).CatTransform([T(lib).IndependentTransform(T(lib).ExpTransform(), 1),
                                                         T(lib).AffineTransform(0.5, s, event_dim=1)], 0, [1, 2]),
                    lambda: (rand(3, 4), pos(4)), True),
    # dim 1 lies inside the event: the pieces' log-Jacobians are added.
    "CatEventDim": (lambda lib, s: T(lib).CatTransform([T(lib).IndependentTransform(T(lib).ExpTransform(), 1),
                                                         T(lib).AffineTransform(0.5, s, event_dim=1)], 1, [2, 2]),
                    lambda: (rand(3, 4), pos(2)), True),
    "Stack": (lambda lib, s: T(lib).StackTransform([T(lib).ExpTransform(), T(lib).TanhTransform(),
                                                    T(lib).AffineTransform(0.3, s)], dim=1),
              lambda: (rand(4, 3), pos(4)), True),
    "StackNegativeDim": (lambda lib: T(lib).StackTransform([T(lib).ExpTransform(), T(lib).SigmoidTransform()], -2),
                         lambda: (rand(2, 5),), True),
    "CumulativeDistribution": (lambda lib, loc, scale: T(lib).CumulativeDistributionTransform(
        lib.distributions.Normal(loc, scale)), lambda: (rand(2, 3), rand(3), pos(3)), True),
    "ComposeReshapeStick": (lambda lib: T(lib).ComposeTransform([T(lib).ReshapeTransform((2, 3), (6,)),
                                                                 T(lib).StickBreakingTransform()]),
                            lambda: (rand(2, 2, 3),), True),
}


def _case(name: str) -> tuple[Callable, tuple, bool]:
    build, inputs, has_jacobian = CASES[name]
    return build, inputs(), has_jacobian


def _genesis_params(params: tuple) -> list:
    return [to_genesis(p, requires_grad=False) for p in params]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_inverse_and_jacobian(name: str) -> None:
    """``t(x)``, ``t.inv(t(x))`` and both log-Jacobians equal torch's, with the gradients of x and the parameters."""
    build, inputs, has_jacobian = _case(name)

    def fn(lib: Any, x: Any, *params: Any) -> Any:
        t = build(lib, *params)
        y = t(x)
        out = [y, t.inv(y)]
        if has_jacobian:
            out += [t.log_abs_det_jacobian(x, y), t.inv.log_abs_det_jacobian(y, x)]
        return out

    check(fn, *inputs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip(name: str) -> None:
    """A bijective transform's inverse undoes it; any other is a pseudo-inverse: ``t(t.inv(t(x))) == t(x)``."""
    build, (x, *params), _ = _case(name)
    t = build(genesis, *_genesis_params(params))
    x = to_genesis(x, requires_grad=False)
    y = t(x)
    if t.bijective:
        assert_same(t.inv(y), to_torch(x), rtol=1e-7, atol=1e-9)
    else:
        assert_same(t(t.inv(y)), to_torch(y), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes(name: str) -> None:
    """``forward_shape`` / ``inverse_shape`` give the shapes of ``t(x)`` and ``x``, as torch's."""
    build, (x, *params), _ = _case(name)
    g, t = build(genesis, *_genesis_params(params)), build(torch, *params)
    y = t(x)
    assert tuple(g.forward_shape(x.shape)) == tuple(t.forward_shape(x.shape)) == tuple(y.shape)
    assert tuple(g.inverse_shape(y.shape)) == tuple(t.inverse_shape(y.shape)) == tuple(x.shape)
    assert tuple(g.inv.forward_shape(y.shape)) == tuple(x.shape)


def _attribute(transform: Any, name: str) -> Any:
    """What reading ``transform.<name>`` gives: its value (a tensor as a list), or the class of the exception raised."""
    try:
        value = getattr(transform, name)
    except (NotImplementedError, ValueError) as err:
        return type(err)
    if isinstance(value, (genesis.Tensor, torch.Tensor)):
        return (to_torch(value) if isinstance(value, genesis.Tensor) else value).tolist()
    return value


@pytest.mark.parametrize("name", sorted(CASES))
def test_properties(name: str) -> None:
    """domain, codomain, their event dimensions, event_dim, bijective, sign and repr are torch's."""
    build, (_, *params), _ = _case(name)
    g, t = build(genesis, *_genesis_params(params)), build(torch, *params)
    for transform_g, transform_t in ((g, t), (g.inv, t.inv)):
        assert repr(transform_g.domain) == repr(transform_t.domain)
        assert repr(transform_g.codomain) == repr(transform_t.codomain)
        assert transform_g.domain.event_dim == transform_t.domain.event_dim
        assert transform_g.codomain.event_dim == transform_t.codomain.event_dim
        assert transform_g.bijective == transform_t.bijective
        for attribute in ("event_dim", "sign"):
            assert _attribute(transform_g, attribute) == _attribute(transform_t, attribute)
    assert repr(g) == repr(t)
    assert g.inv.inv is g


@pytest.mark.parametrize("name", sorted(CASES))
def test_equality(name: str) -> None:
    """Two instances built alike compare equal exactly when torch's do (by type for the parameterless ones torch
    compares, by identity otherwise)."""
    build, (_, *params), _ = _case(name)
    g_params = _genesis_params(params)
    g, t = build(genesis, *g_params), build(torch, *params)
    assert (g == build(genesis, *g_params)) == (t == build(torch, *params))
    assert g == g and not g != g
    assert (g == T(genesis).ExpTransform()) == (t == T(torch).ExpTransform())


@pytest.mark.parametrize("name", sorted(CASES))
def test_cache(name: str) -> None:
    """With ``cache_size=1`` the last pair is remembered: ``t(x) is y`` and ``t.inv(y) is x``."""
    build, (x, *params), _ = _case(name)
    t = build(genesis, *_genesis_params(params))
    assert t.with_cache(0) is t
    cached = t.with_cache(1)
    x = to_genesis(x, requires_grad=False)
    y = cached(x)
    assert cached(x) is y and cached.inv(y) is x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", ["Softplus", "StickBreaking", "CorrCholesky", "Cat", "Stack"])
def test_dtypes(name: str, dtype: torch.dtype) -> None:
    """float32 stays float32 (offsets, padding and identity matrices take the input's dtype), with torch's values."""
    build, (x, *params), has_jacobian = _case(name)
    x, params = x.detach().to(dtype), [p.detach().to(dtype) for p in params]

    def fn(lib: Any, x: Any, *params: Any) -> Any:
        t = build(lib, *params)
        y = t(x)
        return [y, t.inv(y), t.log_abs_det_jacobian(x, y)] if has_jacobian else [y, t.inv(y)]

    out = check(fn, x, *params, rtol=1e-5, atol=1e-5)
    assert TORCH_DTYPE[out[0].dtype] == dtype


def test_transformed_distributions() -> None:
    """The transforms inside TransformedDistribution: a logistic normal (stick-breaking over a Normal, which becomes
    one event) and a Gaussian copula (a multivariate normal through the standard normal's cdf)."""
    def logistic_normal(lib: Any, loc: Any, scale: Any, value: Any) -> Any:
        dist = lib.distributions.TransformedDistribution(lib.distributions.Normal(loc, scale),
                                                         T(lib).StickBreakingTransform())
        return dist.log_prob(value), tuple(dist.event_shape), tuple(dist.batch_shape)

    value = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]], dtype=torch.float64)
    check(logistic_normal, rand(3), pos(3), value)

    def copula(lib: Any, loc: Any, scale: Any, value: Any) -> Any:
        base = lib.distributions.MultivariateNormal(loc, scale_tril=scale.diag_embed())
        dist = lib.distributions.TransformedDistribution(
            base, T(lib).CumulativeDistributionTransform(lib.distributions.Normal(0.0, 1.0)))
        return dist.log_prob(value)

    check(copula, rand(2), pos(2), rand(3, 2, low=0.1, high=0.9, requires_grad=False))


# name -> (constraint(lib, *params), the shape of a constrained value, params() as torch tensors)
CONSTRAINTS: dict[str, tuple[Callable, tuple, Callable[[], tuple]]] = {
    "real": (lambda lib: C(lib).real, (2, 3), tuple),
    "real_vector": (lambda lib: C(lib).real_vector, (2, 3), tuple),
    "positive": (lambda lib: C(lib).positive, (2, 3), tuple),
    "nonnegative": (lambda lib: C(lib).nonnegative, (2, 3), tuple),
    "greater_than": (lambda lib: C(lib).greater_than(-1.5), (2, 3), tuple),
    "greater_than_tensor": (lambda lib, b: C(lib).greater_than(b), (2, 3), lambda: (rand(3),)),
    "greater_than_eq": (lambda lib: C(lib).greater_than_eq(2.0), (2, 3), tuple),
    "less_than": (lambda lib: C(lib).less_than(0.5), (2, 3), tuple),
    "unit_interval": (lambda lib: C(lib).unit_interval, (2, 3), tuple),
    "interval": (lambda lib: C(lib).interval(-1.5, 2.0), (2, 3), tuple),
    "interval_unit_numbers": (lambda lib: C(lib).interval(0, 1), (2, 3), tuple),
    "interval_tensor": (lambda lib, low, width: C(lib).interval(low, low + width), (2, 3),
                        lambda: (rand(3), pos(3))),
    "half_open_interval": (lambda lib: C(lib).half_open_interval(-1.0, 3.0), (2, 3), tuple),
    "simplex": (lambda lib: C(lib).simplex, (2, 4), tuple),
    "lower_cholesky": (lambda lib: C(lib).lower_cholesky, (2, 3, 3), tuple),
    "positive_definite": (lambda lib: C(lib).positive_definite, (2, 3, 3), tuple),
    "positive_semidefinite": (lambda lib: C(lib).positive_semidefinite, (2, 3, 3), tuple),
    "corr_cholesky": (lambda lib: C(lib).corr_cholesky, (2, 3, 3), tuple),
    "independent": (lambda lib: C(lib).independent(C(lib).positive, 1), (2, 3), tuple),
    "independent_simplex": (lambda lib: C(lib).independent(C(lib).simplex, 1), (2, 3, 4), tuple),
    "cat": (lambda lib: C(lib).cat([C(lib).positive, C(lib).real, C(lib).interval(0.0, 2.0)], -1, [1, 2, 1]),
            (2, 4), tuple),
    "cat_dim0": (lambda lib: C(lib).cat([C(lib).less_than(1.0), C(lib).unit_interval], 0, [2, 1]), (3, 2), tuple),
    "stack": (lambda lib: C(lib).stack([C(lib).positive, C(lib).real, C(lib).unit_interval], -1), (2, 3), tuple),
    "stack_dim0": (lambda lib: C(lib).stack([C(lib).greater_than(1.0), C(lib).real], 0), (2, 3), tuple),
    # Not registered in either registry (torch raises NotImplementedError).
    "boolean": (lambda lib: C(lib).boolean, (2, 3), tuple),
    "lower_triangular": (lambda lib: C(lib).lower_triangular, (2, 3, 3), tuple),
}


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_registry_transforms(name: str, registry: str) -> None:
    """``biject_to(c)`` / ``transform_to(c)`` is torch's transform (same class and repr, same values, inverse,
    log-Jacobian and gradients), its outputs satisfy ``c.check``; unregistered constraints raise
    NotImplementedError as torch's."""
    make, shape, params = CONSTRAINTS[name]
    params = params()
    g_constraint, t_constraint = make(genesis, *_genesis_params(params)), make(torch, *params)
    try:
        t_transform = getattr(torch.distributions, registry)(t_constraint)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            getattr(genesis.distributions, registry)(g_constraint)
        return
    g_transform = getattr(genesis.distributions, registry)(g_constraint)
    assert type(g_transform).__name__ == type(t_transform).__name__ and repr(g_transform) == repr(t_transform)
    assert g_transform.bijective == t_transform.bijective
    if registry == "biject_to":
        assert g_transform.bijective
    x = rand(*t_transform.inverse_shape(shape), low=-2.0, high=2.0)

    def fn(lib: Any, x: Any, *params: Any) -> Any:
        t = getattr(lib.distributions, registry)(make(lib, *params))
        y = t(x)
        out = [y, t.inv(y)]
        if t.bijective:
            out.append(t.log_abs_det_jacobian(x, y))
        return out

    y = check(fn, x, *params)[0]
    assert tuple(y.shape) == shape
    assert bool(g_constraint.check(y).all())


def test_registered_constraint_classes_match_torch() -> None:
    """Both registries hold exactly the constraint classes torch registers."""
    for name in ("biject_to", "transform_to"):
        expected = {cls.__name__ for cls in getattr(torch.distributions, name)._registry}
        assert {cls.__name__ for cls in getattr(genesis.distributions, name)._registry} == expected


def test_registry_api() -> None:
    """``register`` takes a class or a singleton (as a call or a decorator) and rejects anything else; the registries
    are exported as torch's."""
    D = genesis.distributions
    assert D.biject_to is D.constraint_registry.biject_to and D.transform_to is D.constraint_registry.transform_to

    class Shifted(D.constraints.Constraint):
        def __init__(self, lower_bound: float) -> None:
            self.lower_bound = lower_bound

    registry = D.constraint_registry.ConstraintRegistry()

    @registry.register(Shifted)
    def _shifted(constraint: Shifted) -> Any:
        return D.transforms.AffineTransform(constraint.lower_bound, 1.0)

    assert isinstance(registry(Shifted(2.0)), D.transforms.AffineTransform)
    assert registry(Shifted(2.0)).loc == 2.0
    registry.register(D.constraints.simplex, lambda constraint: D.transforms.StickBreakingTransform())
    assert registry(D.constraints.simplex) == D.transforms.StickBreakingTransform()
    with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
        registry(D.constraints.real)
    with pytest.raises(TypeError, match="Expected constraint"):
        registry.register(3, _shifted)
    with pytest.raises(TypeError):
        torch.distributions.constraint_registry.ConstraintRegistry().register(3, _shifted)


# name -> (constraint(lib), value as a torch tensor)
CAT_STACK_CHECKS: dict[str, tuple[Callable, torch.Tensor]] = {
    "cat": (lambda lib: C(lib).cat([C(lib).positive, C(lib).interval(0.0, 1.0)], -1, [2, 2]),
            torch.tensor([[0.5, -1.0, 0.3, 1.5], [2.0, 3.0, 0.0, 1.0]], dtype=torch.float64)),
    "cat_events": (lambda lib: C(lib).cat([C(lib).simplex, C(lib).simplex], 0, [1, 2]),
                   torch.tensor([[0.5, 0.5], [0.2, 0.9], [1.0, 0.0]], dtype=torch.float64)),
    "stack": (lambda lib: C(lib).stack([C(lib).positive, C(lib).real], 1),
              torch.tensor([[0.5, -1.0], [-2.0, 3.0], [1.0, float("nan")]], dtype=torch.float64)),
    "stack_events": (lambda lib: C(lib).stack([C(lib).simplex, C(lib).simplex], -2),
                     torch.tensor([[[0.5, 0.5], [0.2, 0.9]], [[1.0, 0.0], [0.3, 0.7]]], dtype=torch.float64)),
}


@pytest.mark.parametrize("name", sorted(CAT_STACK_CHECKS))
def test_cat_and_stack_constraints(name: str) -> None:
    """``constraints.cat`` / ``constraints.stack`` check each piece with its constraint, as torch's."""
    make, value = CAT_STACK_CHECKS[name]
    g, t = make(genesis), make(torch)
    assert_same(g.check(to_genesis(value)), t.check(value))
    assert g.event_dim == t.event_dim and g.is_discrete == t.is_discrete


# name -> (exception class, fn(lib, *inputs), inputs as torch tensors)
ERRORS: dict[str, tuple[type[BaseException], Callable, tuple]] = {
    "reshape numel": (ValueError, lambda lib: T(lib).ReshapeTransform((2, 3), (5,)), ()),
    "reshape forward_shape": (ValueError, lambda lib: T(lib).ReshapeTransform((2, 3), (6,)).forward_shape((4, 3, 2)),
                              ()),
    "reshape too few dims": (ValueError, lambda lib: T(lib).ReshapeTransform((2, 3), (6,)).forward_shape((6,)), ()),
    "reshape inverse_shape": (ValueError, lambda lib: T(lib).ReshapeTransform((2, 3), (6,)).inverse_shape((4, 5)),
                              ()),
    "stick forward_shape": (ValueError, lambda lib: T(lib).StickBreakingTransform().forward_shape(()), ()),
    "stick inverse_shape": (ValueError, lambda lib: T(lib).StickBreakingTransform().inverse_shape(()), ()),
    "corr not triangular": (ValueError, lambda lib: T(lib).CorrCholeskyTransform().forward_shape((2, 5)), ()),
    "corr forward_shape": (ValueError, lambda lib: T(lib).CorrCholeskyTransform().forward_shape(()), ()),
    "corr not square": (ValueError, lambda lib: T(lib).CorrCholeskyTransform().inverse_shape((3, 4)), ()),
    "corr inverse_shape": (ValueError, lambda lib: T(lib).CorrCholeskyTransform().inverse_shape((3,)), ()),
    "corr event_dim": (ValueError, lambda lib: T(lib).CorrCholeskyTransform().event_dim, ()),
    "independent too few dims": (ValueError, lambda lib, x: T(lib).IndependentTransform(T(lib).ExpTransform(), 2)(x),
                                 (rand(3),)),
    "independent inverse too few dims": (
        ValueError, lambda lib, x: T(lib).IndependentTransform(T(lib).ExpTransform(), 2).inv(x), (pos(3),)),
    "cache size": (ValueError, lambda lib: T(lib).SoftplusTransform(cache_size=2), ()),
    "cat cache size": (ValueError, lambda lib: T(lib).CatTransform([T(lib).ExpTransform()], cache_size=2), ()),
    "cat not transforms": (AssertionError, lambda lib: T(lib).CatTransform([T(lib).ExpTransform(), 3]), ()),
    "cat lengths": (AssertionError, lambda lib: T(lib).CatTransform([T(lib).ExpTransform()], 0, [1, 2]), ()),
    "cat size": (AssertionError, lambda lib, x: T(lib).CatTransform([T(lib).ExpTransform()] * 2, 0, [1, 1])(x),
                 (rand(3, 2),)),
    "cat dim": (AssertionError, lambda lib, x: T(lib).CatTransform([T(lib).ExpTransform()] * 2, 2, [1, 1])(x),
                (rand(3, 2),)),
    "cat inverse size": (AssertionError, lambda lib, x: T(lib).CatTransform([T(lib).ExpTransform()], 0).inv(x),
                         (pos(3, 2),)),
    "cat jacobian size": (AssertionError, lambda lib, x: T(lib).CatTransform(
        [T(lib).ExpTransform()], 0).log_abs_det_jacobian(x, x), (rand(2, 2),)),
    "stack not transforms": (AssertionError, lambda lib: T(lib).StackTransform(["exp"]), ()),
    "stack size": (AssertionError, lambda lib, x: T(lib).StackTransform([T(lib).ExpTransform()] * 2, 0)(x),
                   (rand(3, 2),)),
    "stack dim": (AssertionError, lambda lib, x: T(lib).StackTransform([T(lib).ExpTransform()] * 2, -3)(x),
                  (rand(2, 2),)),
    "stack jacobian size": (AssertionError, lambda lib, x: T(lib).StackTransform(
        [T(lib).ExpTransform()] * 2, 1).log_abs_det_jacobian(x, x), (rand(2, 3),)),
    "cat constraint not constraints": (AssertionError, lambda lib: C(lib).cat([C(lib).real, 1.0]), ()),
    "cat constraint lengths": (AssertionError, lambda lib: C(lib).cat([C(lib).real], 0, [1, 2]), ()),
    "cat constraint dim": (AssertionError, lambda lib, x: C(lib).cat([C(lib).real], 3).check(x), (rand(1, 2),)),
    "stack constraint not constraints": (AssertionError, lambda lib: C(lib).stack([None]), ()),
    "stack constraint dim": (AssertionError, lambda lib, x: C(lib).stack([C(lib).real], 2).check(x), (rand(1, 2),)),
    "lower cholesky jacobian": (NotImplementedError, lambda lib, x: T(lib).LowerCholeskyTransform().
                                log_abs_det_jacobian(x, x), (rand(2, 2),)),
    "positive definite jacobian": (NotImplementedError, lambda lib, x: T(lib).PositiveDefiniteTransform().
                                   log_abs_det_jacobian(x, x), (rand(2, 2),)),
    "stick sign": (NotImplementedError, lambda lib: T(lib).StickBreakingTransform().sign, ()),
    "unregistered transform_to": (NotImplementedError, lambda lib: lib.distributions.transform_to(C(lib).boolean),
                                  ()),
    "no bijection onto lower_cholesky": (NotImplementedError,
                                         lambda lib: lib.distributions.biject_to(C(lib).lower_cholesky), ()),
    "register not a constraint": (TypeError, lambda lib: lib.distributions.transform_to.register(int, abs), ()),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors(case: str) -> None:
    exc, fn, inputs = ERRORS[case]
    check_error(exc, fn, *inputs)


def test_positive_definite_inverse_of_a_matrix_that_is_not() -> None:
    """The inverse takes a Cholesky factor: a matrix that is not positive-definite raises as torch's."""
    not_positive_definite = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=torch.float64)
    err = check_like_torch(lambda lib, y: T(lib).PositiveDefiniteTransform().inv(y), not_positive_definite)
    assert err is not None


MATRICES = {
    "not square": torch.tensor([[1.0, 2.0, 3.0], [2.0, 1.0, 0.0]]),
    "asymmetric within rtol": torch.tensor([[1000.0, 500.001], [500.0, 1000.0]]),
    "asymmetric": torch.tensor([[1.0, 1e-3], [0.0, 1.0]]),
    "indefinite": torch.tensor([[1.0, 2.0], [2.0, 1.0]]),
    "batch": torch.tensor([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 5.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]]]),
}


@pytest.mark.parametrize("name", ["square", "symmetric", "positive_semidefinite", "positive_definite"])
@pytest.mark.parametrize("matrix", sorted(MATRICES))
def test_matrix_constraints(name: str, matrix: str) -> None:
    """torch's matrix constraints: False (not an error) for non-square matrices, symmetry as ``isclose`` with
    ``atol=1e-6`` (relative tolerance included), positive definiteness as a successful Cholesky factorization."""
    value = MATRICES[matrix]
    assert_same(getattr(C(genesis), name).check(to_genesis(value)), getattr(C(torch), name).check(value))
    assert getattr(C(genesis), name).event_dim == 2


def test_private_inverse_transform_class() -> None:
    assert isinstance(T(genesis).ExpTransform().inv, T(genesis)._InverseTransform)
