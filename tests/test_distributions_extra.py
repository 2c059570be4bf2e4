"""Multinomial, LowRankMultivariateNormal, ContinuousBernoulli, Kumaraswamy, InverseGamma, FisherSnedecor and
LKJCholesky against torch.distributions: values, shapes, dtypes and parameter gradients of every property torch has;
expand; samples by shape, support, moments and a two-sample Kolmogorov-Smirnov distance to torch's draws;
reparameterized draws by their gradients given the same noise; argument validation; and every KL pair of torch's
registry whose two families exist in Genesis, by value and gradient."""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest
import torch

import genesis
from tests import test_distributions as shared
from tests.helpers import DEVICE, TORCH_DTYPE, check, check_error, rand, to_genesis, to_torch
from tests.test_distributions import _FixedGamma, _lower
from tests.test_distributions_more import _ks_distance


def pos(*shape: int, seed: int = 0, low: float = 0.5, high: float = 2.0, requires_grad: bool = True) -> torch.Tensor:
    return rand(*shape, low=low, high=high, seed=seed, requires_grad=requires_grad)


def values(*xs: float, requires_grad: bool = True) -> torch.Tensor:
    """A float64 tensor of chosen parameter values (to reach regimes such as infinite moments)."""
    return torch.tensor(xs, dtype=torch.float64, requires_grad=requires_grad)


def D(lib: Any, name: str) -> Any:
    return getattr(lib.distributions, name)


# name -> (build(lib, *params), a function making the parameters as torch tensors)
FAMILIES: dict[str, tuple[Callable, Callable[[], tuple]]] = {
    "MultinomialProbs": (lambda lib, p: D(lib, "Multinomial")(10, probs=p), lambda: (pos(2, 3, low=0.1),)),
    "MultinomialLogits": (lambda lib, lg: D(lib, "Multinomial")(6, logits=lg), lambda: (rand(3, 4, low=-2),)),
    "LowRankMVN": (lambda lib, m, w, d: D(lib, "LowRankMultivariateNormal")(m, w, d),
                   lambda: (rand(2, 3), rand(3, 2, seed=1), pos(2, 3))),
    "LowRankMVNBroadcast": (lambda lib, m, w, d: D(lib, "LowRankMultivariateNormal")(m, w, d),
                            lambda: (rand(3), rand(2, 3, 1, seed=1), pos(3))),
    "ContinuousBernoulliProbs": (lambda lib, p: D(lib, "ContinuousBernoulli")(probs=p),
                                 lambda: (values(0.1, 0.3, 0.4995, 0.5, 0.5007, 0.8),)),
    "ContinuousBernoulliLogits": (lambda lib, lg: D(lib, "ContinuousBernoulli")(logits=lg),
                                  lambda: (rand(2, 3, low=-3, high=3),)),
    "ContinuousBernoulliLims": (lambda lib, p: D(lib, "ContinuousBernoulli")(probs=p, lims=(0.4, 0.6)),
                                lambda: (values(0.2, 0.45, 0.55, 0.7),)),
    "Kumaraswamy": (lambda lib, a, b: D(lib, "Kumaraswamy")(a, b), lambda: (pos(3, low=0.8, high=3.0),
                                                                             pos(2, 3, seed=1, low=0.8, high=3.0))),
    "InverseGamma": (lambda lib, c, r: D(lib, "InverseGamma")(c, r), lambda: (pos(3, low=6.0, high=9.0), pos(2, 1))),
    "InverseGammaSmall": (lambda lib, c, r: D(lib, "InverseGamma")(c, r), lambda: (values(0.5, 1.5, 2.5), pos(3))),
    "FisherSnedecor": (lambda lib, a, b: D(lib, "FisherSnedecor")(a, b), lambda: (pos(3, low=2.0, high=8.0),
                                                                                   pos(2, 3, low=20.0, high=30.0))),
    "FisherSnedecorSmall": (lambda lib, a, b: D(lib, "FisherSnedecor")(a, b),
                            lambda: (values(1.0, 3.0, 5.0), values(1.5, 3.0, 5.0))),
    "LKJCholesky": (lambda lib, c: D(lib, "LKJCholesky")(3, c), lambda: (pos(2, low=0.5, high=3.0),)),
    "LKJCholeskyDim4": (lambda lib, c: D(lib, "LKJCholesky")(4, c), lambda: (pos(low=1.5, high=2.5),)),
    "LKJCholeskyDim2": (lambda lib, c: D(lib, "LKJCholesky")(2, c), lambda: (pos(3, low=0.3, high=3.0),)),
}

# (family, property) pairs whose gradient in the first parameter torch does not implement: compared without it.
NO_FIRST_GRAD = {("InverseGamma", "cdf"), ("InverseGammaSmall", "cdf")}
# torch's Kumaraswamy.mode is NaN for every parameter: tested on its own below.
NOT_AS_TORCH = {("Kumaraswamy", "mode")}
# torch's Multinomial.entropy takes lgamma(n + 1) of an int64 tensor, so in float32 (relative error ~1e-7 of a term
# of size ~15); Genesis computes it in float64.
RTOL = {("MultinomialProbs", "entropy"): 1e-6, ("MultinomialLogits", "entropy"): 1e-6}
PROPERTIES = ["mean", "mode", "variance", "stddev", "entropy", "log_prob", "cdf", "icdf"]
# Infinite or undefined moments: compared by distribution only. Inside ContinuousBernoulli's wide Taylor region the
# draws are uniform (the inverse CDF is the identity there, as torch's) while the moments are Taylor expansions.
NO_MOMENTS = {"InverseGammaSmall", "FisherSnedecorSmall", "ContinuousBernoulliLims"}
# torch's onion sampler draws wrong row norms for dim >= 3 (see test_lkj_correlations): not compared with torch.
NOT_TORCH_SAMPLES = {"LKJCholesky", "LKJCholeskyDim4"}
DISCRETE = {"MultinomialProbs", "MultinomialLogits"}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_values_and_gradients(name: str) -> None:
    """Every property torch has gives torch's values, shapes, dtypes and parameter gradients; the shapes,
    constraints and flags of the distribution match torch's."""
    build, make = FAMILIES[name]
    params = make()
    value = shared._value(name, params, FAMILIES)
    probs = rand(1, low=0.05, high=0.95, requires_grad=False)
    compared = []
    for prop in PROPERTIES:
        if (name, prop) in NOT_AS_TORCH:
            continue
        try:
            shared._property(name, prop, FAMILIES)(torch, *params, value, probs)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                shared._property(name, prop, FAMILIES)(genesis, *(to_genesis(p) for p in params),
                                                       to_genesis(value), to_genesis(probs))
            continue
        ps = (params[0].detach(), *params[1:]) if (name, prop) in NO_FIRST_GRAD else params
        check(shared._property(name, prop, FAMILIES), *ps, value, probs, rtol=RTOL.get((name, prop), 1e-7),
              atol=1e-9)
        compared.append(prop)
    assert "log_prob" in compared
    t_dist = build(torch, *params)
    g_dist = build(genesis, *(to_genesis(p) for p in params))
    assert tuple(g_dist.batch_shape) == tuple(t_dist.batch_shape)
    assert tuple(g_dist.event_shape) == tuple(t_dist.event_shape)
    assert repr(g_dist.support).split("(")[0] == repr(t_dist.support).split("(")[0]
    assert g_dist.support.is_discrete == t_dist.support.is_discrete
    assert g_dist.support.event_dim == t_dist.support.event_dim
    assert sorted(g_dist.arg_constraints) == sorted(t_dist.arg_constraints)
    assert g_dist.has_rsample == t_dist.has_rsample
    assert g_dist.has_enumerate_support == t_dist.has_enumerate_support


@pytest.mark.parametrize("name", ["LowRankMVN", "LowRankMVNBroadcast"])
def test_low_rank_matrices(name: str) -> None:
    """The covariance, precision (Woodbury) and Cholesky factor equal torch's, with gradients."""
    build, make = FAMILIES[name]
    for prop in ["covariance_matrix", "precision_matrix", "scale_tril", "variance"]:
        check(lambda lib, *ps, prop=prop: getattr(build(lib, *ps), prop), *make(), rtol=1e-7, atol=1e-9)
    # The low-rank covariance is the covariance of a full MultivariateNormal with the same log-density.
    m, w, d = make()
    full = torch.distributions.MultivariateNormal(m, covariance_matrix=w @ w.mT + torch.diag_embed(d))
    g_dist = build(genesis, to_genesis(m), to_genesis(w), to_genesis(d))
    x = full.sample((4,))
    torch.testing.assert_close(to_torch(g_dist.log_prob(to_genesis(x))), full.log_prob(x).detach())


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_expand_and_float32(name: str) -> None:
    """``expand`` adds batch dimensions, and float32 parameters give float32 results, as torch."""
    build, make = FAMILIES[name]
    params = tuple(p.detach().float().requires_grad_(p.requires_grad) for p in make())
    value = shared._value(name, params, FAMILIES)

    def fn(lib: Any, *args: Any) -> Any:
        *ps, v = args
        d = build(lib, *ps)
        e = d.expand((2,) + tuple(d.batch_shape))
        assert tuple(e.batch_shape) == (2,) + tuple(d.batch_shape) and e.event_shape == d.event_shape
        assert tuple(e.sample((3,)).shape) == (3, 2) + tuple(d.batch_shape) + tuple(d.event_shape)
        return e.log_prob(v)

    check(fn, *params, value, rtol=1e-5, atol=1e-5)


def _both(name: str) -> tuple[Any, Any]:
    """The family ``name`` in torch and in Genesis, with the same parameters (no gradient)."""
    build, make = FAMILIES[name]
    params = tuple(p.detach() for p in make())
    return build(torch, *params), build(genesis, *(to_genesis(p) for p in params))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_shapes_dtypes_and_support(name: str) -> None:
    """Samples have torch's shape and dtype, carry no gradient, and lie in the support."""
    t_dist, g_dist = _both(name)
    genesis.manual_seed(1)
    for shape in [(), (3,), (2, 2)]:
        g, t = g_dist.sample(shape), t_dist.sample(shape)
        assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPE[g.dtype] == t.dtype
        assert not g.requires_grad
        assert bool(t_dist.support.check(to_torch(g)).all())
        assert bool(g_dist.support.check(g).all())


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - DISCRETE - NOT_TORCH_SAMPLES))
def test_continuous_samples_match_torch_in_distribution(name: str) -> None:
    """The two-sample Kolmogorov-Smirnov distance between Genesis's and torch's draws of every batch element and event
    coordinate stays below its 0.1% critical value; sample means and variances match the distribution's where the
    fourth moment is finite."""
    t_dist, g_dist = _both(name)
    n = 20000
    genesis.manual_seed(2)
    samples = to_torch(g_dist.sample((n,))).double()
    torch.manual_seed(0)
    ref = t_dist.sample((n,)).double()
    crit = 1.95 * math.sqrt(2 / n)
    distance = _ks_distance(samples.reshape(n, -1), ref.reshape(n, -1))
    assert (distance < crit).all(), f"{name}: KS distances {distance} (critical {crit:.4f})"
    if name in NO_MOMENTS or name.startswith("LKJ"):
        return
    mean, var = t_dist.mean.double().detach(), t_dist.variance.double().detach()
    tol = 5 * (var / n).sqrt()
    assert ((samples.mean(0) - mean).abs() <= tol).all(), f"{name}: mean {samples.mean(0)} vs {mean}"
    assert ((samples.var(0) - var).abs() <= 0.15 * var).all(), f"{name}: var {samples.var(0)} vs {var}"


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_multinomial_samples(name: str) -> None:
    """Draws are non-negative integer counts summing to ``total_count``, with the multinomial mean, variance and
    covariance ``-n p_i p_j``, and the binomial frequencies of each category's count."""
    t_dist, g_dist = _both(name)
    n = 20000
    genesis.manual_seed(3)
    samples = to_torch(g_dist.sample((n,))).double()
    total = t_dist.total_count
    assert (samples == samples.round()).all() and (samples >= 0).all() and (samples.sum(-1) == total).all()
    probs, mean, var = t_dist.probs.detach(), t_dist.mean.detach(), t_dist.variance.detach()
    assert ((samples.mean(0) - mean).abs() <= 5 * (var / n).sqrt()).all()
    assert ((samples.var(0) - var).abs() <= 0.1 * var).all()
    centered = samples - samples.mean(0)
    cov01 = (centered[..., 0] * centered[..., 1]).mean(0)
    expected = -total * probs[..., 0] * probs[..., 1]
    assert ((cov01 - expected).abs() <= 5 * (var[..., 0] * var[..., 1] / n).sqrt()).all()
    marginal = torch.distributions.Binomial(total, probs=probs)
    for k in range(total + 1):
        pmf = marginal.log_prob(torch.full_like(probs, float(k))).exp()
        freq = (samples == k).double().mean(0)
        assert ((freq - pmf).abs() <= 5 * (pmf * (1 - pmf) / n).sqrt() + 1e-3).all(), f"{name}: P({k})"


def test_multinomial_edge_cases() -> None:
    """A zero-probability category with a zero count adds nothing to ``log_prob``; the entropy after ``expand``;
    ``total_count`` given as a tensor is rejected as by torch."""
    probs = values(0.0, 0.3, 0.7)
    counts = torch.tensor([[0.0, 2.0, 3.0], [0.0, 5.0, 0.0]], dtype=torch.float64)
    check(lambda lib, p, v: D(lib, "Multinomial")(5, probs=p).log_prob(v), probs, counts)
    # torch's expanded Multinomial has no entropy (AttributeError: its binomial is not carried over).
    logits = rand(3, 4)
    expanded = D(genesis, "Multinomial")(4, logits=to_genesis(logits)).expand((2, 3)).entropy()
    torch.testing.assert_close(to_torch(expanded), torch.distributions.Multinomial(
        4, logits=logits.detach().expand(2, 3, 4)).entropy(), rtol=1e-6, atol=0)
    check_error(NotImplementedError, lambda lib: D(lib, "Multinomial")(lib.tensor(3), probs=lib.ones(3)))


def test_continuous_bernoulli_taylor_region() -> None:
    """On a grid crossing both edges of ``lims``, every quantity (closed form outside, Taylor expansion inside)
    equals torch's with gradients; ``cdf`` is 0 below 0 and 1 above 1 (validation off)."""
    grid = torch.linspace(0.495, 0.505, 21, dtype=torch.float64).requires_grad_()
    x = torch.tensor([-0.5, 0.0, 0.25, 0.75, 1.0, 1.5], dtype=torch.float64).unsqueeze(-1)

    def fn(lib: Any, p: Any, x: Any) -> Any:
        d = D(lib, "ContinuousBernoulli")(probs=p, validate_args=False)
        return d.mean, d.variance, d.entropy(), d.log_prob(x.clamp(0, 1)), d.cdf(x), d.icdf(x.clamp(0, 1))

    # The closed form's gradient cancels near the Taylor region's edges: 1e-6 relative there, as CUDA's log1p/exp
    # round differently from the CPU's.
    check(fn, grid, x, rtol=1e-7, atol=1e-9, grad_rtol=1e-6)


def test_kumaraswamy_mode() -> None:
    """The mode ``((a - 1) / (ab - 1))^(1/a)`` maximizes torch's density (for a, b >= 1), 0 at a = 1, NaN where a or
    b is below 1; torch's own formula gives NaN everywhere."""
    a, b = values(2.0, 3.0, 1.0, 1.5, 0.5, 2.0), values(2.0, 1.5, 3.0, 4.0, 2.0, 0.7)
    mode = to_torch(D(genesis, "Kumaraswamy")(to_genesis(a), to_genesis(b)).mode)
    grid = torch.linspace(1e-4, 1 - 1e-4, 200001, dtype=torch.float64).unsqueeze(-1)
    argmax = grid[torch.distributions.Kumaraswamy(a.detach(), b.detach()).log_prob(grid).argmax(0), 0]
    interior = [0, 1, 3]
    torch.testing.assert_close(mode[interior], argmax[interior], rtol=0, atol=1e-4)
    assert mode[2] == 0 and torch.isnan(mode[4:]).all()
    assert torch.isnan(torch.distributions.Kumaraswamy(a, b).mode).all()


@pytest.mark.parametrize("dim", [3, 4])
def test_lkj_correlations(dim: int) -> None:
    """Every correlation of ``L Lᵀ`` has the LKJ marginal ``(r + 1) / 2 ~ Beta(a, a)``, ``a = η - 1 + dim / 2``
    (the density depends on ``det(M)`` only, so all pairs share it): Kolmogorov-Smirnov distance to that CDF below
    its 0.1% critical value, mean 0 and variance ``1 / (2η + dim - 1)``; the diagonal is 1. torch's draws fail this
    for the rows below the second."""
    n = 20000
    eta = values(0.5, 2.0, 6.0, requires_grad=False)
    genesis.manual_seed(4)
    L = to_torch(D(genesis, "LKJCholesky")(dim, to_genesis(eta)).sample((n,)))
    M = L @ L.mT
    torch.testing.assert_close(M.diagonal(dim1=-2, dim2=-1), torch.ones(n, 3, dim, dtype=torch.float64))
    rows, cols = torch.tril_indices(dim, dim, -1)
    r = M[..., rows, cols]  # (n, 3, pairs)
    var = (1 / (2 * eta + dim - 1)).unsqueeze(-1)
    assert (r.mean(0).abs() <= 5 * (var / n).sqrt()).all()
    assert ((r.var(0) - var).abs() <= 0.05 * var).all()
    a = (eta - 1 + dim / 2).unsqueeze(-1)
    u = ((r + 1) / 2).sort(0).values
    cdf = _beta_cdf(a, u)
    ecdf = torch.arange(1, n + 1, dtype=torch.float64).reshape(n, 1, 1) / n
    distance = torch.maximum((ecdf - cdf).abs(), (ecdf - 1 / n - cdf).abs()).amax(0)
    assert (distance < 1.95 / math.sqrt(n)).all(), f"KS distances {distance}"
    torch.manual_seed(0)
    t_L = torch.distributions.LKJCholesky(dim, eta).sample((n,))
    assert ((t_L @ t_L.mT)[..., dim - 1, 0].var(0) - var[:, 0]).abs().max() > 0.1 * var.min()


def _beta_cdf(a: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The CDF of Beta(a, a) at ``u`` (shape (n, 3, pairs)) by the trapezoid rule on a fine grid (a >= 1 here, so the
    density is bounded)."""
    grid = torch.linspace(0, 1, 200001, dtype=torch.float64)[1:-1]
    log_pdf = torch.distributions.Beta(a.unsqueeze(-1), a.unsqueeze(-1)).log_prob(grid)  # (3, 1, grid)
    pdf = log_pdf.exp()
    cum = torch.cat([torch.zeros(3, 1, 1, dtype=torch.float64),
                     torch.cumulative_trapezoid(pdf, grid, dim=-1)], -1)
    cum = cum / cum[..., -1:]
    idx = torch.searchsorted(grid.contiguous(), u.movedim(0, -1).contiguous()).clamp(max=grid.numel() - 1)
    return cum.expand(-1, u.shape[-1], -1).gather(-1, idx).movedim(-1, 0)


def _fixed_standard_normal(shape: tuple) -> torch.Tensor:
    return to_torch(genesis.randn(shape, dtype=genesis.float64, device=DEVICE))


def _low_rank_draw(ps: list, x: torch.Tensor, seed: int) -> torch.Tensor:
    """The same draw in torch: the noise regenerated from the seed, in rsample's order (factor noise first)."""
    m, w, d = ps
    genesis.manual_seed(seed)
    eps_w = _fixed_standard_normal(tuple(x.shape[:-1]) + (w.shape[-1],))
    eps_d = _fixed_standard_normal(tuple(x.shape))
    return m + (w @ eps_w.unsqueeze(-1)).squeeze(-1) + d.sqrt() * eps_d


def _fisher_draw(ps: list, x: torch.Tensor, seed: int) -> torch.Tensor:
    """The same draw in torch: both Gamma draws regenerated from the seed, with torch's implicit gradients."""
    df1, df2 = torch.broadcast_tensors(*ps)
    genesis.manual_seed(seed)
    shape = tuple(x.shape)
    g1 = D(genesis, "Gamma")(to_genesis(df1 * 0.5), to_genesis(df1)).rsample((5,))
    g2 = D(genesis, "Gamma")(to_genesis(df2 * 0.5), to_genesis(df2)).rsample((5,))
    x1 = _FixedGamma.apply((df1 * 0.5).expand(shape), to_torch(g1) * df1.detach()) / df1
    x2 = _FixedGamma.apply((df2 * 0.5).expand(shape), to_torch(g2) * df2.detach()) / df2
    return x1 / x2


def _inverse_cdf_draw(name: str) -> Callable:
    """The same draw in torch through its inverse CDF, the uniform noise recovered from the draw."""
    def draw(ps: list, x: torch.Tensor, seed: int) -> torch.Tensor:
        d = FAMILIES[name][0](torch, *ps)
        return d.icdf(d.cdf(x).detach())
    return draw


# name -> the same draw in torch as a function of torch's parameters, Genesis's draw and the seed used.
RSAMPLE_CASES: dict[str, Callable] = {
    "LowRankMVN": _low_rank_draw,
    "LowRankMVNBroadcast": _low_rank_draw,
    "ContinuousBernoulliProbs": _inverse_cdf_draw("ContinuousBernoulliProbs"),
    "ContinuousBernoulliLogits": _inverse_cdf_draw("ContinuousBernoulliLogits"),
    "Kumaraswamy": lambda ps, x, seed: (1 - ((1 - x.pow(ps[0])).pow(ps[1])).detach().pow(ps[1].reciprocal()))
    .pow(ps[0].reciprocal()),
    "InverseGamma": lambda ps, x, seed: ps[1] / _FixedGamma.apply(ps[0].expand_as(x), (ps[1] / x).detach()),
    "FisherSnedecor": _fisher_draw,
}


@pytest.mark.parametrize("name", sorted(RSAMPLE_CASES))
def test_rsample_gradients(name: str) -> None:
    """Gradients of a reparameterized draw equal torch's for the same draw (same formula, same noise)."""
    build, make = FAMILIES[name]
    shared.check_rsample_gradients(build, make(), lambda ps, x: RSAMPLE_CASES[name](ps, x, 6), seed=6,
                                   value_rtol=1e-7, grad_atol=1e-8)


# Parameters for every family of torch's KL registry: build(lib, *params) and make(seed), three batch elements.
_EXP_NORMAL: dict[Any, type] = {}


def _exp_family_normal(lib: Any, loc: Any, scale: Any) -> Any:
    """A normal distribution written as a user's ExponentialFamily subclass (one class per library): natural
    parameters and log-normalizer only, so that its entropy and KL come from the Bregman divergence."""
    if lib not in _EXP_NORMAL:
        _EXP_NORMAL[lib] = _exp_normal_class(lib)
    return _EXP_NORMAL[lib](loc, scale)


def _exp_normal_class(lib: Any) -> type:
    class ExpNormal(lib.distributions.ExponentialFamily):
        arg_constraints: dict = {}

        def __init__(self, loc: Any, scale: Any) -> None:
            self.loc, self.scale = loc, scale
            super().__init__(loc.shape, validate_args=False)

        @property
        def _natural_params(self) -> tuple:
            return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(-2)

        def _log_normalizer(self, x: Any, y: Any) -> Any:
            return -0.25 * x.pow(2) / y + 0.5 * lib.log(-math.pi / y)

        @property
        def _mean_carrier_measure(self) -> float:
            return 0.0

    return ExpNormal


KL_FAMILIES: dict[str, tuple[Callable, Callable[[int], tuple]]] = {
    "ExponentialFamily": (_exp_family_normal, lambda s: (rand(3, seed=s), pos(3, seed=s + 5))),
    "Bernoulli": (lambda lib, p: D(lib, "Bernoulli")(probs=p), lambda s: (pos(3, seed=s, low=0.1, high=0.9),)),
    "Beta": (lambda lib, a, b: D(lib, "Beta")(a, b), lambda s: (pos(3, seed=s, high=3.0), pos(3, seed=s + 7))),
    "Binomial": (lambda lib, n, p: D(lib, "Binomial")(n, probs=p),
                 lambda s: (values(5.0, 5.0, 5.0, requires_grad=False), pos(3, seed=s, low=0.1, high=0.9))),
    "Categorical": (lambda lib, lg: D(lib, "Categorical")(logits=lg), lambda s: (rand(3, 4, seed=s),)),
    "Cauchy": (lambda lib, a, b: D(lib, "Cauchy")(a, b), lambda s: (rand(3, seed=s), pos(3, seed=s))),
    "ContinuousBernoulli": (lambda lib, p: D(lib, "ContinuousBernoulli")(probs=p),
                            lambda s: (values(0.2, 0.4999, 0.8) if s == 0 else values(0.35, 0.6, 0.5003),)),
    "Dirichlet": (lambda lib, c: D(lib, "Dirichlet")(c), lambda s: (pos(3, 4, seed=s),)),
    "Exponential": (lambda lib, r: D(lib, "Exponential")(r), lambda s: (pos(3, seed=s),)),
    "Gamma": (lambda lib, c, r: D(lib, "Gamma")(c, r), lambda s: (pos(3, seed=s, high=3.0), pos(3, seed=s + 7))),
    "Geometric": (lambda lib, p: D(lib, "Geometric")(probs=p), lambda s: (pos(3, seed=s, low=0.1, high=0.9),)),
    "Gumbel": (lambda lib, a, b: D(lib, "Gumbel")(a, b), lambda s: (rand(3, seed=s), pos(3, seed=s))),
    "HalfNormal": (lambda lib, sc: D(lib, "HalfNormal")(sc), lambda s: (pos(3, seed=s),)),
    "Independent": (lambda lib, a, b: D(lib, "Independent")(D(lib, "Normal")(a, b), 1),
                    lambda s: (rand(3, 2, seed=s), pos(3, 2, seed=s))),
    "Laplace": (lambda lib, a, b: D(lib, "Laplace")(a, b), lambda s: (rand(3, seed=s), pos(3, seed=s))),
    "LowRankMultivariateNormal": (lambda lib, m, w, d: D(lib, "LowRankMultivariateNormal")(m, w, d),
                                  lambda s: (rand(3, 4, seed=s), rand(3, 4, 2, seed=s), pos(3, 4, seed=s))),
    "MultivariateNormal": (lambda lib, m, a: D(lib, "MultivariateNormal")(m, scale_tril=_lower(lib, a)),
                           lambda s: (rand(3, 4, seed=s), rand(4, 4, seed=s) * 0.5)),
    "Normal": (lambda lib, a, b: D(lib, "Normal")(a, b), lambda s: (rand(3, seed=s), pos(3, seed=s))),
    "OneHotCategorical": (lambda lib, lg: D(lib, "OneHotCategorical")(logits=lg), lambda s: (rand(3, 4, seed=s),)),
    "Pareto": (lambda lib, sc, a: D(lib, "Pareto")(sc, a), lambda s: (pos(3, seed=s), pos(3, seed=s, low=2.5, high=5))),
    "Poisson": (lambda lib, r: D(lib, "Poisson")(r), lambda s: (pos(3, seed=s, high=5.0),)),
    "TransformedDistribution": (lambda lib, a, b: D(lib, "LogNormal")(a, b), lambda s: (rand(3, seed=s),
                                                                                         pos(3, seed=s))),
    "Uniform": (lambda lib, a, b: D(lib, "Uniform")(a, a + b), lambda s: (pos(3, seed=s, low=0.05, high=0.4),
                                                                           pos(3, seed=s + 7, low=0.1, high=0.5))),
}


def _torch_kl_pairs() -> list[tuple[str, str]]:
    """The pairs of torch's KL registry whose two families exist in genesis.distributions."""
    names = set(genesis.distributions.__all__)
    pairs = {(p.__name__, q.__name__) for p, q in torch.distributions.kl._KL_REGISTRY}
    return sorted((p, q) for p, q in pairs if p in names and q in names)


def test_kl_registry_matches_torch() -> None:
    """Genesis registers every pair torch does among the families both have, and no pair torch lacks."""
    g_registry = genesis.distributions.kl._KL_REGISTRY
    ours = {(p.__name__, q.__name__) for p, q in g_registry
            if getattr(genesis.distributions, p.__name__, None) is p
            and getattr(genesis.distributions, q.__name__, None) is q}
    theirs = set(_torch_kl_pairs())
    assert theirs - ours == set(), f"missing KL pairs: {sorted(theirs - ours)}"
    assert ours - theirs == set(), f"KL pairs torch does not register: {sorted(ours - theirs)}"
    assert len(theirs) >= 86


def test_exponential_family_entropy_is_the_bregman_one() -> None:
    check(lambda lib, loc, scale: _exp_family_normal(lib, loc, scale).entropy(), rand(3, seed=2), pos(3, seed=3))


@pytest.mark.parametrize("pair", _torch_kl_pairs(), ids=lambda pq: "-".join(pq))
def test_kl_registry_values(pair: tuple[str, str]) -> None:
    """Each registered pair gives torch's divergence (finite, or inf where q's support misses p's) and gradients."""
    (p_build, p_make), (q_build, q_make) = KL_FAMILIES[pair[0]], KL_FAMILIES[pair[1]]
    p_params, q_params = p_make(0), q_make(1)
    k = len(p_params)

    def fn(lib: Any, *args: Any) -> Any:
        return lib.distributions.kl_divergence(p_build(lib, *args[:k]), q_build(lib, *args[k:]))

    check(fn, *p_params, *q_params, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize(("p_name", "q_name"), [("Normal", "Laplace"), ("Uniform", "Normal"),
                                                ("Laplace", "Normal"), ("Gamma", "Normal"),
                                                ("ContinuousBernoulli", "Normal"), ("Uniform", "Beta")])
def test_kl_finite_pairs_against_monte_carlo(p_name: str, q_name: str) -> None:
    """The closed forms agree with a Monte Carlo estimate ``mean(log p(x) - log q(x))`` over Genesis's own draws."""
    (p_build, p_make), (q_build, q_make) = KL_FAMILIES[p_name], KL_FAMILIES[q_name]
    p = p_build(genesis, *(to_genesis(x, requires_grad=False) for x in p_make(0)))
    q = q_build(genesis, *(to_genesis(x, requires_grad=False) for x in q_make(1)))
    genesis.manual_seed(5)
    x = p.sample((40000,))
    log_ratio = to_torch(p.log_prob(x) - q.log_prob(x))
    kl = to_torch(genesis.distributions.kl_divergence(p, q))
    assert torch.isfinite(kl).all()
    assert ((log_ratio.mean(0) - kl).abs() <= 5 * log_ratio.std(0) / math.sqrt(40000) + 1e-9).all()


def test_kl_low_rank_matches_full_covariance() -> None:
    """The Woodbury-based low-rank KLs equal the full-covariance KL between the same two normals."""
    # Factors without the batch dimension of the diagonals: a case torch's LowRank-MVN KL fails on.
    m1, w1, d1 = rand(3, 4), rand(4, 2), pos(3, 4)
    m2, w2, d2 = rand(3, 4, seed=1), rand(4, 2, seed=1), pos(3, 4, seed=1)
    LR, MVN = D(genesis, "LowRankMultivariateNormal"), D(genesis, "MultivariateNormal")
    p = LR(to_genesis(m1), to_genesis(w1), to_genesis(d1))
    q = LR(to_genesis(m2), to_genesis(w2), to_genesis(d2))
    p_full, q_full = MVN(p.loc, p.covariance_matrix), MVN(q.loc, q.covariance_matrix)
    expected = to_torch(genesis.distributions.kl_divergence(p_full, q_full))
    for a, b in [(p, q), (p_full, q), (p, q_full)]:
        torch.testing.assert_close(to_torch(genesis.distributions.kl_divergence(a, b)), expected)


INVALID: dict[str, Callable] = {
    "Multinomial probs": lambda lib: D(lib, "Multinomial")(3, probs=lib.tensor([-1.0, 2.0, 1.0])),
    "Multinomial both": lambda lib: D(lib, "Multinomial")(3, probs=lib.ones(3), logits=lib.ones(3)),
    "Multinomial above count": lambda lib: D(lib, "Multinomial")(3, probs=lib.ones(3)).log_prob(
        lib.tensor([2.0, 1.0, 1.0])),
    "Multinomial negative": lambda lib: D(lib, "Multinomial")(3, probs=lib.ones(3)).log_prob(
        lib.tensor([-1.0, 2.0, 1.0])),
    "LowRank loc": lambda lib: D(lib, "LowRankMultivariateNormal")(lib.zeros(()), lib.ones(1, 1), lib.ones(1)),
    "LowRank factor dim": lambda lib: D(lib, "LowRankMultivariateNormal")(lib.zeros(2), lib.ones(2), lib.ones(2)),
    "LowRank factor rows": lambda lib: D(lib, "LowRankMultivariateNormal")(lib.zeros(2), lib.ones(3, 1),
                                                                            lib.ones(2)),
    "LowRank diag shape": lambda lib: D(lib, "LowRankMultivariateNormal")(lib.zeros(2), lib.ones(2, 1), lib.ones(3)),
    "LowRank diag positive": lambda lib: D(lib, "LowRankMultivariateNormal")(lib.zeros(2), lib.zeros(2, 1),
                                                                              -lib.ones(2)),
    "LowRank batch": lambda lib: D(lib, "LowRankMultivariateNormal")(lib.zeros(3, 2), lib.ones(4, 2, 1),
                                                                      lib.ones(2)),
    "LowRank KL shapes": lambda lib: lib.distributions.kl_divergence(
        D(lib, "LowRankMultivariateNormal")(lib.zeros(2), lib.ones(2, 1), lib.ones(2)),
        D(lib, "LowRankMultivariateNormal")(lib.zeros(3), lib.ones(3, 1), lib.ones(3))),
    "ContinuousBernoulli probs": lambda lib: D(lib, "ContinuousBernoulli")(probs=lib.full((2,), 1.5),
                                                                           validate_args=True),
    "ContinuousBernoulli both": lambda lib: D(lib, "ContinuousBernoulli")(probs=lib.ones(2) / 2, logits=lib.ones(2)),
    "ContinuousBernoulli value": lambda lib: D(lib, "ContinuousBernoulli")(probs=lib.full((2,), 0.3)).log_prob(
        lib.full((2,), 1.5)),
    "Kumaraswamy concentration": lambda lib: D(lib, "Kumaraswamy")(-lib.ones(2), lib.ones(2)),
    "Kumaraswamy value": lambda lib: D(lib, "Kumaraswamy")(lib.ones(2), lib.ones(2)).log_prob(lib.full((2,), 1.5)),
    "InverseGamma rate": lambda lib: D(lib, "InverseGamma")(lib.ones(2), -lib.ones(2)),
    "InverseGamma value": lambda lib: D(lib, "InverseGamma")(lib.ones(2), lib.ones(2)).log_prob(-lib.ones(2)),
    "FisherSnedecor df": lambda lib: D(lib, "FisherSnedecor")(lib.zeros(2), lib.ones(2)),
    "FisherSnedecor value": lambda lib: D(lib, "FisherSnedecor")(lib.ones(2), lib.ones(2)).log_prob(-lib.ones(2)),
    "LKJ dim": lambda lib: D(lib, "LKJCholesky")(1, lib.ones(())),
    "LKJ concentration": lambda lib: D(lib, "LKJCholesky")(3, -lib.ones(())),
    "LKJ value": lambda lib: D(lib, "LKJCholesky")(2, lib.ones(())).log_prob(lib.ones(2, 2).tril()),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_arguments(case: str) -> None:
    check_error(ValueError, lambda lib: INVALID[case](lib))


def test_validation_switches() -> None:
    """ContinuousBernoulli checks ``probs`` before clamping only when asked, as torch (whose default accepts 1.5 and
    clamps it); validation off accepts out-of-support values everywhere."""
    p = genesis.full((2,), 1.5)
    d = D(genesis, "ContinuousBernoulli")(probs=p)
    assert float(d.probs.max().item()) < 1 and float(torch.distributions.ContinuousBernoulli(
        probs=torch.full((2,), 1.5)).probs.max()) < 1
    D(genesis, "Kumaraswamy")(-genesis.ones(2), genesis.ones(2), validate_args=False)
    D(genesis, "Multinomial")(3, probs=genesis.ones(3), validate_args=False).log_prob(genesis.tensor([5.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"Expected parameter concentration"):
        D(genesis, "LKJCholesky")(3, -genesis.ones(()))


def test_scalar_parameters_use_default_dtype() -> None:
    """Numbers as parameters give an empty batch shape and default-dtype tensors, as torch."""
    for name, args in [("ContinuousBernoulli", (0.3,)), ("Kumaraswamy", (2.0, 3.0)), ("InverseGamma", (3.0, 2.0)),
                       ("FisherSnedecor", (3.0, 5.0))]:
        v = torch.distributions.__dict__[name](*args).sample((2,))
        # Numbers make CPU parameters, as torch's: the value joins them there.
        check(lambda lib, v, name=name, args=args: D(lib, name)(*args).log_prob(v.cpu()), v)
        assert D(genesis, name)(*args).batch_shape == ()
        assert tuple(D(genesis, name)(*args).sample((4,)).shape) == (4,)
    check(lambda lib: D(lib, "LKJCholesky")(3, 2.0).log_prob(lib.eye(3)))


def test_logistic_normal_and_straight_through_one_hot() -> None:
    check(lambda lib, loc, scale, x: lib.distributions.LogisticNormal(loc, scale).log_prob(x),
          rand(2, 3, seed=4), pos(2, 3, seed=5),
          torch.tensor([[0.2, 0.3, 0.1, 0.4], [0.1, 0.1, 0.5, 0.3]], dtype=torch.float64))
    d = genesis.distributions.LogisticNormal(to_genesis(rand(3, seed=4)), to_genesis(pos(3, seed=5)))
    assert tuple(d.event_shape) == (4,) and tuple(d.rsample((5,)).shape) == (5, 4)
    logits = to_genesis(rand(2, 4, seed=6), requires_grad=True)
    st = genesis.distributions.OneHotCategoricalStraightThrough(logits=logits)
    sample = st.rsample((3,))
    assert tuple(sample.shape) == (3, 2, 4) and bool((sample.detach().sum(-1) == 1).all())
    (sample * to_genesis(torch.arange(4.0))).sum().backward()  # the gradient reaches the logits through probs
    assert logits.grad is not None and bool(logits.grad.abs().sum() > 0)


def test_torch_module_names_of_the_distributions() -> None:
    import importlib

    for name in ("normal", "categorical", "one_hot_categorical", "relaxed_bernoulli", "exp_family", "studentT"):
        torch_module = importlib.import_module(f"torch.distributions.{name}")
        ours = importlib.import_module(f"genesis.distributions.{name}")
        assert set(torch_module.__all__) == set(ours.__all__)
        assert all(getattr(ours, cls) is getattr(genesis.distributions, cls) for cls in ours.__all__)
