"""The count, heavy-tailed, folded, extreme-value, relaxed, mixture and von Mises families of genesis.distributions
against torch.distributions: values, shapes, dtypes and parameter gradients of every property torch has; KL
divergences; samples by shape, support, moments, frequencies and distribution-function distance (the random streams
differ from torch's); reparameterized draws by their gradients given the same noise; argument validation."""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest
import torch

import genesis
from tests import test_distributions as shared
from tests.helpers import DEVICE, TORCH_DTYPE, check, check_error, rand, to_genesis, to_torch
from tests.test_distributions import _FixedGamma

# torch's GeneralizedPareto compares its concentration with a float32 zero, so it takes float32 parameters only.
F32 = torch.float32


def pos(*shape: int, seed: int = 0, low: float = 0.5, high: float = 2.0, requires_grad: bool = True,
        dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return rand(*shape, low=low, high=high, seed=seed, requires_grad=requires_grad, dtype=dtype)


def counts(*values: float) -> torch.Tensor:
    """A float64 tensor of trial counts (no gradient, as counts are integers)."""
    return torch.tensor(values, dtype=torch.float64)


# Classes torch keeps in submodules only.
_TORCH_EXTRA = {"LogitRelaxedBernoulli": torch.distributions.relaxed_bernoulli.LogitRelaxedBernoulli,
                "ExpRelaxedCategorical": torch.distributions.relaxed_categorical.ExpRelaxedCategorical}


def D(lib: Any, name: str) -> Any:
    """The class ``name`` of ``lib.distributions``."""
    if lib is torch and name in _TORCH_EXTRA:
        return _TORCH_EXTRA[name]
    return getattr(lib.distributions, name)


# name -> (build(lib, *params), a function making the parameters as torch tensors)
FAMILIES: dict[str, tuple[Callable, Callable[[], tuple]]] = {
    "Poisson": (lambda lib, r: D(lib, "Poisson")(r), lambda: (pos(3, 2, low=0.5, high=15.0),)),
    "BinomialProbs": (lambda lib, p: D(lib, "Binomial")(10, probs=p), lambda: (pos(2, 3, low=0.1, high=0.9),)),
    "BinomialLogits": (lambda lib, n, lg: D(lib, "Binomial")(n, logits=lg),
                       lambda: (counts(5.0, 12.0).unsqueeze(-1), rand(3, low=-2, high=2))),
    "NegativeBinomialProbs": (lambda lib, n, p: D(lib, "NegativeBinomial")(n, probs=p),
                              lambda: (pos(3, low=0.5, high=6.0), pos(2, 3, low=0.1, high=0.8))),
    "NegativeBinomialLogits": (lambda lib, n, lg: D(lib, "NegativeBinomial")(n, logits=lg),
                               lambda: (pos(3, low=0.5, high=6.0), rand(3, low=-2, high=1))),
    "GeometricProbs": (lambda lib, p: D(lib, "Geometric")(probs=p), lambda: (pos(4, low=0.1, high=0.9),)),
    "GeometricLogits": (lambda lib, lg: D(lib, "Geometric")(logits=lg), lambda: (rand(2, 3, low=-2, high=2),)),
    "Cauchy": (lambda lib, a, b: D(lib, "Cauchy")(a, b), lambda: (rand(3, 1), pos(4))),
    "StudentT": (lambda lib, df, a, b: D(lib, "StudentT")(df, a, b), lambda: (pos(4, low=4.5, high=9.0), rand(4),
                                                                               pos(2, 1))),
    "StudentTSmallDf": (lambda lib, df: D(lib, "StudentT")(df), lambda: (counts(0.5, 1.0, 1.5, 2.0, 3.0),)),
    "Pareto": (lambda lib, s, a: D(lib, "Pareto")(s, a), lambda: (pos(3), pos(3, seed=1, low=4.5, high=8.0))),
    "ParetoSmallAlpha": (lambda lib, s, a: D(lib, "Pareto")(s, a), lambda: (pos(4), counts(0.5, 1.0, 1.5, 2.5))),
    "GeneralizedPareto": (lambda lib, a, s, c: D(lib, "GeneralizedPareto")(a, s, c),
                          lambda: (rand(3, dtype=F32), pos(2, 3, dtype=F32),
                                   rand(2, 3, seed=3, low=-0.4, high=0.2, dtype=F32))),
    "GeneralizedParetoHeavy": (lambda lib, a, s, c: D(lib, "GeneralizedPareto")(a, s, c),
                               lambda: (rand(4, dtype=F32), pos(4, dtype=F32),
                                        counts(-1.0, 0.0, 0.6, 1.5).float().requires_grad_())),
    "HalfNormal": (lambda lib, s: D(lib, "HalfNormal")(s), lambda: (pos(2, 3),)),
    "HalfCauchy": (lambda lib, s: D(lib, "HalfCauchy")(s), lambda: (pos(3),)),
    "Gumbel": (lambda lib, a, b: D(lib, "Gumbel")(a, b), lambda: (rand(2, 3), pos(3))),
    "Weibull": (lambda lib, s, k: D(lib, "Weibull")(s, k), lambda: (pos(3), pos(2, 3, seed=2, low=1.2, high=3.0))),
    "Chi2": (lambda lib, df: D(lib, "Chi2")(df), lambda: (pos(4, low=0.5, high=6.0),)),
    "VonMises": (lambda lib, a, k: D(lib, "VonMises")(a, k), lambda: (rand(4, low=-3, high=3),
                                                                       counts(0.3, 2.0, 3.75, 8.0).requires_grad_())),
    "RelaxedBernoulliProbs": (lambda lib, t, p: D(lib, "RelaxedBernoulli")(t, probs=p),
                              lambda: (pos(1, low=0.3, high=1.5), pos(3, low=0.1, high=0.9))),
    "RelaxedBernoulliLogits": (lambda lib, t, lg: D(lib, "RelaxedBernoulli")(t, logits=lg),
                               lambda: (pos(3, low=0.3, high=1.5), rand(2, 3, low=-2, high=2))),
    "LogitRelaxedBernoulli": (lambda lib, t, lg: D(lib, "LogitRelaxedBernoulli")(t, logits=lg),
                              lambda: (pos(low=0.3, high=1.5), rand(3, low=-2, high=2))),
    "RelaxedOneHotLogits": (lambda lib, t, lg: D(lib, "RelaxedOneHotCategorical")(t, logits=lg),
                            lambda: (pos(low=0.3, high=1.5), rand(2, 4, low=-2, high=2))),
    "RelaxedOneHotProbs": (lambda lib, t, p: D(lib, "RelaxedOneHotCategorical")(t, probs=p),
                           lambda: (pos(low=0.5, high=2.0), pos(3, low=0.1))),
    "ExpRelaxedCategorical": (lambda lib, t, lg: D(lib, "ExpRelaxedCategorical")(t, logits=lg),
                              lambda: (pos(low=0.5, high=2.0), rand(2, 3))),
    "MixtureNormal": (lambda lib, w, a, b: D(lib, "MixtureSameFamily")(D(lib, "Categorical")(logits=w),
                                                                        D(lib, "Normal")(a, b)),
                      lambda: (rand(2, 3), rand(2, 3, seed=1, low=-3, high=3), pos(2, 3))),
    "MixtureIndependent": (lambda lib, w, a, b: D(lib, "MixtureSameFamily")(
        D(lib, "Categorical")(probs=w), D(lib, "Independent")(D(lib, "Normal")(a, b), 1)),
        lambda: (pos(2, 3, low=0.2), rand(2, 3, 2, low=-3, high=3), pos(3, 2))),
    "MixtureGamma": (lambda lib, c, w, r: D(lib, "MixtureSameFamily")(D(lib, "Categorical")(logits=w),
                                                                       D(lib, "Gamma")(c, r)),
                     lambda: (pos(2, low=1.0, high=5.0), rand(2), pos(2))),
}

# (family, property) pairs whose gradient torch does not implement in the first parameter: compared without it.
NO_FIRST_GRAD = {("Chi2", "cdf"), ("MixtureGamma", "cdf")}
PROPERTIES = ["mean", "mode", "variance", "stddev", "entropy", "log_prob", "cdf", "icdf"]
# Fewer-than-torch-checked moments: heavy tails, undefined or circular moments.
NO_MOMENTS = {"Cauchy", "GeneralizedParetoHeavy", "HalfCauchy", "StudentTSmallDf", "ParetoSmallAlpha", "VonMises",
              "LogitRelaxedBernoulli", "ExpRelaxedCategorical", "RelaxedBernoulliProbs", "RelaxedBernoulliLogits",
              "RelaxedOneHotLogits", "RelaxedOneHotProbs"}
DISCRETE = {"Poisson", "BinomialProbs", "BinomialLogits", "NegativeBinomialProbs", "NegativeBinomialLogits",
            "GeometricProbs", "GeometricLogits"}


def _value(name: str, params: tuple) -> torch.Tensor:
    return shared._value(name, params, FAMILIES)


def _property(name: str, prop: str) -> Callable:
    return shared._property(name, prop, FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_values_and_gradients(name: str) -> None:
    """Every property torch has gives torch's values, shapes, dtypes and parameter gradients; the shapes,
    constraints and flags of the distribution match torch's."""
    build, make = FAMILIES[name]
    params = make()
    value = _value(name, params)
    probs = rand(1, low=0.05, high=0.95, requires_grad=False)
    compared = []
    for prop in PROPERTIES:
        try:
            _property(name, prop)(torch, *params, value, probs)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                _property(name, prop)(genesis, *(to_genesis(p) for p in params), to_genesis(value),
                                      to_genesis(probs))
            continue
        ps = (params[0].detach(), *params[1:]) if (name, prop) in NO_FIRST_GRAD else params
        tol = (1e-7, 1e-9) if params[0].dtype is torch.float64 else (1e-5, 1e-5)
        check(_property(name, prop), *ps, value, probs, rtol=tol[0], atol=tol[1])
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


@pytest.mark.parametrize("name", ["Poisson", "BinomialLogits", "NegativeBinomialProbs", "GeometricLogits", "Cauchy",
                                  "StudentT", "Pareto", "GeneralizedPareto", "HalfNormal", "Gumbel", "Weibull",
                                  "VonMises", "RelaxedBernoulliProbs", "RelaxedOneHotLogits", "MixtureIndependent"])
def test_expand_and_float32(name: str) -> None:
    """``expand`` adds batch dimensions, and float32 parameters give float32 results, as torch."""
    build, make = FAMILIES[name]
    params = tuple(p.detach().float().requires_grad_(p.requires_grad) for p in make())
    value = _value(name, params)

    def fn(lib: Any, *args: Any) -> Any:
        *ps, v = args
        d = build(lib, *ps)
        e = d.expand((2,) + tuple(d.batch_shape))
        assert tuple(e.batch_shape) == (2,) + tuple(d.batch_shape) and e.event_shape == d.event_shape
        assert tuple(e.sample((3,)).shape) == (3, 2) + tuple(d.batch_shape) + tuple(d.event_shape)
        return e.log_prob(v)

    check(fn, *params, value, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_shapes_dtypes_and_support(name: str) -> None:
    """Samples have torch's shape and dtype, carry no gradient, and lie in the support."""
    build, make = FAMILIES[name]
    params = tuple(p.detach() for p in make())
    t_dist = build(torch, *params)
    g_dist = build(genesis, *(to_genesis(p) for p in params))
    genesis.manual_seed(1)
    for shape in [(), (3,), (2, 2)]:
        g, t = g_dist.sample(shape), t_dist.sample(shape)
        assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPE[g.dtype] == t.dtype
        assert not g.requires_grad
        assert bool(t_dist.support.check(to_torch(g)).all())
        assert bool(g_dist.support.check(g).all())


def _ks_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The two-sample Kolmogorov-Smirnov distance along dimension 0, for each batch element."""
    n = a.shape[0]
    both = torch.cat([a, b]).sort(0).values
    cdf_a = torch.searchsorted(a.sort(0).values.movedim(0, -1).contiguous(), both.movedim(0, -1).contiguous(),
                               right=True) / n
    cdf_b = torch.searchsorted(b.sort(0).values.movedim(0, -1).contiguous(), both.movedim(0, -1).contiguous(),
                               right=True) / n
    return (cdf_a - cdf_b).abs().amax(-1)


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - DISCRETE))
def test_continuous_samples_match_torch_in_distribution(name: str) -> None:
    """The two-sample Kolmogorov-Smirnov distance between Genesis's and torch's draws of every batch element (of
    every event coordinate) stays below its 0.1% critical value; moments match where they are finite."""
    build, make = FAMILIES[name]
    params = tuple(p.detach() for p in make())
    t_dist = build(torch, *params)
    g_dist = build(genesis, *(to_genesis(p) for p in params))
    n = 20000
    genesis.manual_seed(2)
    samples = to_torch(g_dist.sample((n,))).double()
    torch.manual_seed(0)
    ref = t_dist.sample((n,)).double()
    crit = 1.95 * math.sqrt(2 / n)
    distance = _ks_distance(samples.reshape(n, -1), ref.reshape(n, -1))
    assert (distance < crit).all(), f"{name}: KS distances {distance} (critical {crit:.4f})"
    if name not in NO_MOMENTS:
        mean, var = t_dist.mean.double().detach(), t_dist.variance.double().detach()
        tol = 5 * (var / n).sqrt()
        assert ((samples.mean(0) - mean).abs() <= tol).all(), f"{name}: mean {samples.mean(0)} vs {mean}"
        assert ((samples.var(0) - var).abs() <= 0.15 * var).all(), f"{name}: var {samples.var(0)} vs {var}"


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_sample_frequencies(name: str) -> None:
    """Draws are integers whose frequencies of 0..9 match torch's probabilities within five standard errors, and
    whose mean and variance match the distribution's."""
    build, make = FAMILIES[name]
    params = tuple(p.detach() for p in make())
    t_dist = build(torch, *params)
    g_dist = build(genesis, *(to_genesis(p) for p in params))
    n = 20000
    genesis.manual_seed(3)
    samples = to_torch(g_dist.sample((n,))).double()
    assert (samples == samples.round()).all() and (samples >= 0).all()
    for k in range(10):
        value = torch.full(tuple(t_dist.batch_shape), float(k), dtype=torch.float64)
        pmf = t_dist.log_prob(value).exp().detach() if bool(t_dist.support.check(value).all()) else None
        if pmf is None:
            continue
        freq = (samples == k).double().mean(0)
        assert ((freq - pmf).abs() <= 5 * (pmf * (1 - pmf) / n).sqrt() + 1e-3).all(), f"{name}: P({k})"
    mean, var = t_dist.mean.double().detach(), t_dist.variance.double().detach()
    assert ((samples.mean(0) - mean).abs() <= 5 * (var / n).sqrt()).all()
    assert ((samples.var(0) - var).abs() <= 0.1 * var).all()


@pytest.mark.parametrize("rate", [0.0, 0.01, 0.5, 3.0, 9.99, 10.0, 25.0, 300.0, 1e4])
def test_poisson_sampler_regimes(rate: float) -> None:
    """Both samplers (arrival counting below 10, PTRS above) have the Poisson mean, variance and frequencies."""
    n = 40000
    genesis.manual_seed(4)
    x = to_torch(genesis.distributions.Poisson(genesis.full((n,), rate, dtype=genesis.float64)).sample())
    assert (x == x.round()).all() and (x >= 0).all()
    if rate == 0:
        assert (x == 0).all()
        return
    assert abs(x.mean().item() - rate) <= 5 * math.sqrt(rate / n)
    # Five standard errors of the sample variance: (mu4 - sigma^4) / n with mu4 = rate (1 + 3 rate).
    assert abs(x.var().item() - rate) <= 5 * math.sqrt((rate + 2 * rate ** 2) / n)
    t = torch.distributions.Poisson(torch.tensor(rate, dtype=torch.float64))
    for k in {math.floor(rate), math.floor(rate) + 1, max(math.floor(rate - math.sqrt(rate)), 0)}:
        pmf = t.log_prob(torch.tensor(float(k), dtype=torch.float64)).exp().item()
        assert abs((x == k).double().mean().item() - pmf) <= 5 * math.sqrt(pmf * (1 - pmf) / n) + 1e-3


@pytest.mark.parametrize(("total", "p"), [(5, 0.3), (100, 0.05), (100, 0.5), (1000, 0.9), (60, 0.999), (30, 0.8),
                                          (10**6, 1e-6), (0, 0.5), (20, 0.0), (20, 1.0)])
def test_binomial_sampler_regimes(total: int, p: float) -> None:
    """Both samplers (waiting times below n·min(p, 1-p) = 10, BTRS above), with the p > 1/2 reflection, have the
    binomial mean, variance and frequencies; the degenerate cases are exact."""
    n = 40000
    genesis.manual_seed(5)
    d = genesis.distributions.Binomial(genesis.full((n,), float(total), dtype=genesis.float64),
                                       probs=genesis.full((n,), p, dtype=genesis.float64))
    x = to_torch(d.sample())
    assert (x == x.round()).all() and (x >= 0).all() and (x <= total).all()
    mean, var = total * p, total * p * (1 - p)
    if var == 0:
        assert (x == mean).all()
        return
    assert abs(x.mean().item() - mean) <= 5 * math.sqrt(var / n)
    # Five standard errors of the sample variance: (mu4 - sigma^4) / n with mu4 = npq (1 + 3 (n - 2) pq).
    mu4 = var * (1 + 3 * (total - 2) * p * (1 - p))
    assert abs(x.var().item() - var) <= 5 * math.sqrt((mu4 - var ** 2) / n)
    t = torch.distributions.Binomial(total, probs=torch.tensor(p, dtype=torch.float64))
    mode = math.floor((total + 1) * p)
    for k in {min(mode, total), max(mode - 1, 0), min(mode + 1, total)}:
        pmf = t.log_prob(torch.tensor(float(k), dtype=torch.float64)).exp().item()
        assert abs((x == k).double().mean().item() - pmf) <= 5 * math.sqrt(pmf * (1 - pmf) / n) + 1e-3


def _affine_draw(ps: list, x: torch.Tensor) -> torch.Tensor:
    """``loc + scale * eps`` with the noise ``eps`` recovered from the draw ``x``."""
    return ps[0] + ((x - ps[0]) / ps[1]).detach() * ps[1]


def _relaxed_bernoulli_draw(ps: list, x: torch.Tensor) -> torch.Tensor:
    t, logits = ps
    probs = torch.distributions.utils.clamp_probs(torch.sigmoid(logits))
    noise = (t * torch.logit(x) - (probs.log() - (-probs).log1p())).detach()
    return torch.sigmoid((noise + probs.log() - (-probs).log1p()) / t)


def _relaxed_one_hot_draw(ps: list, x: torch.Tensor) -> torch.Tensor:
    t, logits = ps
    logits = logits - logits.logsumexp(-1, keepdim=True)
    return torch.softmax((logits + (t * x.log() - logits).detach()) / t, -1)


# name -> the same draw in torch as a function of torch's parameters (the noise recovered from Genesis's draw).
RSAMPLE_CASES: dict[str, Callable] = {
    "Cauchy": _affine_draw,
    "Gumbel": _affine_draw,
    "HalfNormal": lambda ps, x: (x / ps[0]).detach() * ps[0],
    "HalfCauchy": lambda ps, x: (x / ps[0]).detach() * ps[0],
    "Weibull": lambda ps, x: ps[0] * ((x / ps[0]) ** ps[1]).detach() ** ps[1].reciprocal(),
    "Pareto": lambda ps, x: ps[0] * ((x / ps[0]).log() * ps[1]).detach().div(ps[1]).exp(),
    "Chi2": lambda ps, x: _FixedGamma.apply((ps[0] / 2).expand_as(x), (x / 2).detach()) * 2,
    "RelaxedBernoulliLogits": _relaxed_bernoulli_draw,
    "RelaxedOneHotLogits": _relaxed_one_hot_draw,
}


@pytest.mark.parametrize("name", sorted(RSAMPLE_CASES))
def test_rsample_gradients(name: str) -> None:
    """Gradients of a reparameterized draw equal torch's for the same draw (same formula, same noise)."""
    build, make = FAMILIES[name]
    shared.check_rsample_gradients(build, make(), RSAMPLE_CASES[name], seed=6, value_rtol=1e-7, grad_atol=1e-8)


def test_student_t_rsample_gradients() -> None:
    """StudentT draws ``loc + scale * X / sqrt(Z / df)``: with the same normal and Gamma draws, the gradients in all
    three parameters (df through the implicit Gamma gradient) equal torch's."""
    build, make = FAMILIES["StudentT"]
    params = make()
    g_params = [to_genesis(p) for p in params]
    dist = build(genesis, *g_params)
    genesis.manual_seed(7)
    x = dist.rsample((5,))
    genesis.manual_seed(7)  # the same stream again: the normal draw, then the chi-squared one
    shape = tuple(x.shape)
    normal = to_torch(genesis.randn(shape, dtype=genesis.float64, device=DEVICE))
    chi2 = to_torch(genesis.distributions.Chi2(dist.df.detach()).rsample((5,)))
    w = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    (x * to_genesis(w, requires_grad=False)).sum().backward()
    df, loc, scale = (p.detach().clone().requires_grad_() for p in params)
    z = _FixedGamma.apply((df / 2).expand(shape), chi2 / 2) * 2
    t_x = loc + scale * (normal * (z / df).rsqrt())
    torch.testing.assert_close(t_x.detach(), to_torch(x), rtol=1e-9, atol=1e-9)
    (t_x * w).sum().backward()
    for g, t in zip(g_params, (df, loc, scale)):
        torch.testing.assert_close(to_torch(g.grad), t.grad, rtol=1e-6, atol=1e-8)


def _build(name: str, *params: Any) -> Callable:
    return lambda lib, *ps: D(lib, name)(*ps)


# pair -> (p's family in FAMILIES or (class, params), q's) for KL(p || q).
KL_PAIRS: dict[str, tuple[tuple[str, Callable], tuple[str, Callable]]] = {
    "Poisson": (("Poisson", lambda: (pos(3, low=0.5, high=5),)), ("Poisson", lambda: (pos(3, seed=1),))),
    "Binomial": (("Binomial", lambda: (counts(8.0, 8.0, 9.0), pos(3, low=0.1, high=0.9))),
                 ("Binomial", lambda: (counts(8.0, 5.0, 9.0), pos(3, seed=2, low=0.1, high=0.9)))),
    "Geometric": (("Geometric", lambda: (pos(3, low=0.1, high=0.9),)),
                  ("Geometric", lambda: (pos(3, seed=3, low=0.1, high=0.9),))),
    "Gumbel": (("Gumbel", lambda: (rand(3), pos(3))), ("Gumbel", lambda: (rand(3, seed=1), pos(3, seed=1)))),
    "HalfNormal": (("HalfNormal", lambda: (pos(3),)), ("HalfNormal", lambda: (pos(3, seed=4),))),
    "Pareto": (("Pareto", lambda: (pos(3, low=1.0, high=2.0), pos(3))),
               ("Pareto", lambda: (counts(0.5, 1.5, 3.0), pos(3, seed=5)))),
    "Cauchy": (("Cauchy", lambda: (rand(3), pos(3))), ("Cauchy", lambda: (rand(3, seed=1), pos(3, seed=1)))),
    "Bernoulli-Poisson": (("Bernoulli", lambda: (pos(3, low=0.1, high=0.9),)), ("Poisson", lambda: (pos(3),))),
    "Poisson-Bernoulli": (("Poisson", lambda: (pos(3),)), ("Bernoulli", lambda: (pos(3, low=0.1, high=0.9),))),
    "Poisson-Binomial": (("Poisson", lambda: (pos(3),)),
                         ("Binomial", lambda: (counts(4.0, 4.0, 4.0), pos(3, low=0.1, high=0.9)))),
    "Exponential-Gumbel": (("Exponential", lambda: (pos(3),)), ("Gumbel", lambda: (rand(3), pos(3, seed=1)))),
    "Gamma-Gumbel": (("Gamma", lambda: (pos(3, low=1.0, high=3.0), pos(3))), ("Gumbel", lambda: (rand(3), pos(3)))),
    "Gumbel-Normal": (("Gumbel", lambda: (rand(3), pos(3))), ("Normal", lambda: (rand(3, seed=1), pos(3, seed=1)))),
    "Normal-Gumbel": (("Normal", lambda: (rand(3), pos(3))), ("Gumbel", lambda: (rand(3, seed=1), pos(3, seed=1)))),
    "Uniform-Gumbel": (("Uniform", lambda: (rand(3), pos(3) + 1.5)), ("Gumbel", lambda: (rand(3, seed=1), pos(3)))),
    "Pareto-Exponential": (("Pareto", lambda: (pos(3), counts(0.5, 1.0, 3.0).requires_grad_())),
                           ("Exponential", lambda: (pos(3, seed=1),))),
    "Pareto-Gamma": (("Pareto", lambda: (pos(3), counts(0.5, 2.0, 3.0).requires_grad_())),
                     ("Gamma", lambda: (pos(3, seed=1), pos(3, seed=2)))),
    "Pareto-Normal": (("Pareto", lambda: (pos(3), counts(1.5, 2.5, 4.0).requires_grad_())),
                      ("Normal", lambda: (rand(3), pos(3, seed=2)))),
    "Uniform-Pareto": (("Uniform", lambda: (pos(3, low=0.5, high=1.5), pos(3, seed=1) + 2.0)),
                       ("Pareto", lambda: (counts(0.4, 0.8, 1.2), pos(3, seed=2)))),
    "Gumbel-Uniform": (("Gumbel", lambda: (rand(3), pos(3))), ("Uniform", lambda: (rand(3), pos(3) + 1.0))),
    "Gumbel-Pareto": (("Gumbel", lambda: (rand(3), pos(3))), ("Pareto", lambda: (pos(3), pos(3)))),
    "Normal-Pareto": (("Normal", lambda: (rand(3), pos(3))), ("Pareto", lambda: (pos(3), pos(3)))),
    "Exponential-Pareto": (("Exponential", lambda: (pos(3),)), ("Pareto", lambda: (pos(3), pos(3)))),
    "Pareto-Uniform": (("Pareto", lambda: (pos(3), pos(3))), ("Uniform", lambda: (rand(3), pos(3) + 1.0))),
}


def _kl_build(lib: Any, name: str, *params: Any) -> Any:
    if name in ("Binomial", "Bernoulli", "Geometric"):
        *rest, p = params
        return D(lib, name)(*rest, probs=p)
    if name == "Uniform":
        return D(lib, name)(params[0], params[1])
    return D(lib, name)(*params)


@pytest.mark.parametrize("pair", sorted(KL_PAIRS))
def test_kl_divergence(pair: str) -> None:
    """KL divergences (finite, and infinite where q's support does not cover p's) and their gradients equal torch's."""
    (p_name, p_make), (q_name, q_make) = KL_PAIRS[pair]
    p_params, q_params = p_make(), q_make()
    k = len(p_params)

    def fn(lib: Any, *args: Any) -> Any:
        return lib.distributions.kl_divergence(_kl_build(lib, p_name, *args[:k]), _kl_build(lib, q_name, *args[k:]))

    check(fn, *p_params, *q_params, rtol=1e-7, atol=1e-9)


def test_kl_binomial_larger_q_count_raises() -> None:
    """KL between Binomials with q.total_count > p.total_count is not implemented, as torch."""
    def fn(lib: Any) -> Any:
        B = lib.distributions.Binomial
        return lib.distributions.kl_divergence(B(3, probs=lib.tensor([0.5])), B(5, probs=lib.tensor([0.5])))

    check_error(NotImplementedError, fn)


@pytest.mark.parametrize("expand", [True, False])
def test_binomial_enumerate_support_and_entropy(expand: bool) -> None:
    """``enumerate_support`` lists 0..n; an inhomogeneous total count raises NotImplementedError as torch's."""
    check(lambda lib, p: lib.distributions.Binomial(4, probs=p).enumerate_support(expand=expand),
          pos(2, 3, low=0.1, high=0.9, requires_grad=False))
    for what in ("entropy", "enumerate_support"):
        check_error(NotImplementedError, lambda lib, what=what: getattr(
            lib.distributions.Binomial(lib.tensor([2.0, 3.0]), probs=lib.tensor([0.5, 0.5])), what)())


def test_scalar_parameters_use_default_dtype() -> None:
    """Numbers as parameters give an empty batch shape and default-dtype tensors, as torch."""
    for name, args in [("Poisson", (3.0,)), ("Cauchy", (0.0, 2.0)), ("Gumbel", (1.0, 2.0)), ("HalfNormal", (2.0,)),
                       ("HalfCauchy", (1.5,)), ("Weibull", (2.0, 1.5)), ("Pareto", (1.0, 3.0)),
                       ("StudentT", (5.0,)), ("Geometric", (0.3,)), ("VonMises", (0.5, 2.0)), ("Chi2", (3.0,))]:
        v = torch.distributions.__dict__[name](*args).sample((2,))
        # Numbers make CPU parameters, as torch's: the value joins them there.
        check(lambda lib, v, name=name, args=args: D(lib, name)(*args).log_prob(v.cpu()), v)
        assert D(genesis, name)(*args).batch_shape == ()
        assert tuple(D(genesis, name)(*args).sample((4,)).shape) == (4,)


def test_mixture_sample_picks_components() -> None:
    """A mixture of well-separated components: each draw comes from one component, chosen with the mixture
    weights."""
    weights = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
    D_ = genesis.distributions
    mix = D_.MixtureSameFamily(D_.Categorical(probs=to_genesis(weights)),
                               D_.Normal(genesis.tensor([-100.0, 0.0, 100.0], dtype=genesis.float64, device=DEVICE),
                                         genesis.full((3,), 0.1, dtype=genesis.float64, device=DEVICE)))
    genesis.manual_seed(8)
    x = to_torch(mix.sample((20000,)))
    component = torch.bucketize(x, torch.tensor([-50.0, 50.0], dtype=torch.float64))
    freq = torch.bincount(component, minlength=3).double() / x.numel()
    assert ((freq - weights).abs() < 5 * (weights * (1 - weights) / x.numel()).sqrt()).all()
    assert ((x - torch.tensor([-100.0, 0.0, 100.0], dtype=torch.float64)[component]).abs() < 1.0).all()


def test_mixture_with_broadcast_weights() -> None:
    """One set of mixture weights shared by a batch of component sets (Categorical batch shape () against component
    batch (2, 3)): log_prob, mean and variance equal torch's; samples have the batch shape (torch's sampling rejects
    this case) and the mixture's mean."""
    def build(lib: Any, w: Any, a: Any, b: Any) -> Any:
        return D(lib, "MixtureSameFamily")(D(lib, "Categorical")(logits=w), D(lib, "Normal")(a, b))

    w, a, b = rand(3), rand(2, 3, low=-3, high=3), pos(2, 3)
    value = rand(4, 2, requires_grad=False, low=-3, high=3)
    check(lambda lib, w, a, b, v: (build(lib, w, a, b).log_prob(v), build(lib, w, a, b).mean,
                                   build(lib, w, a, b).variance), w, a, b, value)
    dist = build(genesis, to_genesis(w), to_genesis(a), to_genesis(b))
    genesis.manual_seed(9)
    x = to_torch(dist.sample((20000,)))
    assert tuple(x.shape) == (20000, 2)
    mean, var = to_torch(dist.mean), to_torch(dist.variance)
    assert ((x.mean(0) - mean).abs() <= 5 * (var / 20000).sqrt()).all()


def test_abs_transform() -> None:
    T = genesis.distributions.transforms
    t = T.AbsTransform()
    x = genesis.tensor([-1.5, 0.0, 2.0])
    assert t(x).tolist() == [1.5, 0.0, 2.0] and t.inv(t(x)).tolist() == [1.5, 0.0, 2.0]
    assert t == T.AbsTransform() and t != T.ExpTransform() and not t.bijective
    assert repr(t) == repr(torch.distributions.transforms.AbsTransform())
    assert repr(t.domain) == "Real()" and repr(t.codomain) == "GreaterThan(lower_bound=0.0)"


INVALID: dict[str, Callable] = {
    "Poisson rate": lambda lib: lib.distributions.Poisson(-lib.ones(2)),
    "Binomial probs": lambda lib: lib.distributions.Binomial(3, probs=lib.full((2,), 1.5)),
    "Binomial count": lambda lib: lib.distributions.Binomial(lib.full((2,), 2.5), probs=lib.full((2,), 0.5)),
    "Binomial both": lambda lib: lib.distributions.Binomial(3, probs=lib.ones(2) / 2, logits=lib.ones(2)),
    "Binomial none": lambda lib: lib.distributions.Binomial(3),
    "NegativeBinomial probs": lambda lib: lib.distributions.NegativeBinomial(2.0, probs=lib.ones(2)),
    "NegativeBinomial count": lambda lib: lib.distributions.NegativeBinomial(-lib.ones(2), probs=lib.ones(2) / 2),
    "Geometric zero": lambda lib: lib.distributions.Geometric(probs=lib.zeros(2)),
    "Geometric probs": lambda lib: lib.distributions.Geometric(probs=lib.full((2,), 1.5)),
    "StudentT df": lambda lib: lib.distributions.StudentT(lib.zeros(2)),
    "Cauchy scale": lambda lib: lib.distributions.Cauchy(lib.zeros(2), -lib.ones(2)),
    "Gumbel scale": lambda lib: lib.distributions.Gumbel(lib.zeros(2), lib.zeros(2)),
    "HalfNormal scale": lambda lib: lib.distributions.HalfNormal(-lib.ones(2)),
    "HalfCauchy scale": lambda lib: lib.distributions.HalfCauchy(-lib.ones(2)),
    "Weibull concentration": lambda lib: lib.distributions.Weibull(lib.ones(2), -lib.ones(2)),
    "Pareto alpha": lambda lib: lib.distributions.Pareto(lib.ones(2), -lib.ones(2)),
    "Chi2 df": lambda lib: lib.distributions.Chi2(-lib.ones(2)),
    "VonMises concentration": lambda lib: lib.distributions.VonMises(lib.zeros(2), -lib.ones(2)),
    "RelaxedBernoulli probs": lambda lib: lib.distributions.RelaxedBernoulli(lib.ones(()), probs=lib.full((2,), 2.0)),
    "RelaxedOneHot probs": lambda lib: lib.distributions.RelaxedOneHotCategorical(
        lib.ones(()), probs=lib.tensor([-1.0, 2.0])),
    "Mixture not categorical": lambda lib: lib.distributions.MixtureSameFamily(
        lib.distributions.Normal(lib.zeros(3), lib.ones(3)), lib.distributions.Normal(lib.zeros(3), lib.ones(3))),
    "Mixture components": lambda lib: lib.distributions.MixtureSameFamily(
        lib.distributions.Categorical(logits=lib.zeros(2)), lib.distributions.Normal(lib.zeros(3), lib.ones(3))),
    "Mixture batch": lambda lib: lib.distributions.MixtureSameFamily(
        lib.distributions.Categorical(logits=lib.zeros(2, 3)),
        lib.distributions.Normal(lib.zeros(4, 3), lib.ones(4, 3))),
    "Poisson non-integer": lambda lib: lib.distributions.Poisson(lib.ones(2)).log_prob(lib.full((2,), 0.5)),
    "Binomial above count": lambda lib: lib.distributions.Binomial(3, probs=lib.full((2,), 0.5)).log_prob(
        lib.full((2,), 4.0)),
    "Geometric negative": lambda lib: lib.distributions.Geometric(probs=lib.full((2,), 0.5)).log_prob(-lib.ones(2)),
    "Pareto below scale": lambda lib: lib.distributions.Pareto(lib.full((2,), 2.0), lib.ones(2)).log_prob(lib.ones(2)),
    "HalfNormal negative": lambda lib: lib.distributions.HalfNormal(lib.ones(2)).log_prob(-lib.ones(2)),
    "Weibull zero": lambda lib: lib.distributions.Weibull(lib.ones(2), lib.ones(2)).log_prob(lib.zeros(2)),
    "RelaxedBernoulli value": lambda lib: lib.distributions.RelaxedBernoulli(
        lib.ones(()), probs=lib.full((2,), 0.5)).log_prob(lib.full((2,), 1.5)),
    "Mixture value": lambda lib: lib.distributions.MixtureSameFamily(
        lib.distributions.Categorical(logits=lib.zeros(2)), lib.distributions.Gamma(lib.ones(2), lib.ones(2))
    ).log_prob(-lib.ones(3)),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_arguments(case: str) -> None:
    check_error(ValueError, lambda lib: INVALID[case](lib))


def test_validation_messages() -> None:
    """Messages name the parameter, the distribution and the constraint as torch's."""
    Dg = genesis.distributions
    with pytest.raises(ValueError, match=r"Expected parameter rate \(Tensor of shape \(2,\)\) of distribution "
                                         r"Poisson\(rate: genesis.Size\(\[2\]\)\) to satisfy the constraint "
                                         r"GreaterThanEq\(lower_bound=0.0\)"):
        Dg.Poisson(-genesis.ones(2))
    with pytest.raises(ValueError, match=r"Expected parameter probs .* of distribution Geometric.* to be positive"):
        Dg.Geometric(probs=genesis.zeros(2))
    with pytest.raises(ValueError, match=r"within the support \(IntegerGreaterThan\(lower_bound=0\)\)"):
        Dg.Poisson(genesis.ones(2)).log_prob(genesis.full((2,), 0.5))
    Dg.Poisson(-genesis.ones(2), validate_args=False)


# ------------------------------------------------------------------ Wishart


def _wishart_params(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    a = rand(2, 3, 3, seed=seed, requires_grad=False)
    cov = a @ a.mT + 3 * torch.eye(3, dtype=torch.float64)
    return torch.tensor([4.5, 7.0], dtype=torch.float64), cov


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_densities_and_moments(param: str) -> None:
    df, cov = _wishart_params(41)
    matrix = {"covariance_matrix": cov, "precision_matrix": torch.linalg.inv(cov),
              "scale_tril": torch.linalg.cholesky(cov)}[param].requires_grad_()
    b = rand(4, 2, 3, 3, seed=43, requires_grad=False)
    value = b @ b.mT + 0.5 * torch.eye(3, dtype=torch.float64)  # positive-definite points
    dfg = df.clone().requires_grad_()

    def make(lib, d, m):
        return lib.distributions.Wishart(d, **{param: m})

    check(lambda lib, d, m, v: make(lib, d, m).log_prob(v), dfg, matrix, value)
    check(lambda lib, d, m: make(lib, d, m).entropy(), dfg, matrix)
    check(lambda lib, d, m: make(lib, d, m).mean, dfg, matrix)
    check(lambda lib, d, m: make(lib, d, m).variance, dfg, matrix)
    check(lambda lib, d, m: make(lib, d, m).mode, dfg, matrix)
    # The exponential family's entropy (through the log-normalizer's gradient) agrees with the closed form.
    g = genesis.distributions.Wishart(to_genesis(df), covariance_matrix=to_genesis(cov))
    shared_entropy = genesis.distributions.ExponentialFamily.entropy(g)
    assert float((shared_entropy - g.entropy()).abs().max()) < 1e-9


def test_wishart_samples_scalar_df_expand_and_errors() -> None:
    _, cov = _wishart_params(42)
    genesis.manual_seed(0)
    w = genesis.distributions.Wishart(6.0, covariance_matrix=to_genesis(cov[0]))
    s = w.rsample((4000,))
    assert s.shape == (4000, 3, 3)
    assert float((s.mean(0) - w.mean).abs().max() / w.mean.abs().max()) < 0.05
    assert float((s.var(0) - w.variance).abs().max() / w.variance.abs().max()) < 0.15
    assert bool((genesis.linalg.eigvalsh(s) > 0).all())  # every sample is positive definite
    df = to_genesis(torch.tensor([4.5, 7.0], dtype=torch.float64)).requires_grad_()
    c = to_genesis(cov).requires_grad_()
    genesis.distributions.Wishart(df, covariance_matrix=c).rsample((3,)).sum().backward()
    assert df.grad is not None and c.grad is not None  # reparameterized through df and the scale
    expanded = genesis.distributions.Wishart(df.detach(), covariance_matrix=c.detach()).expand((5, 2))
    assert expanded.batch_shape == (5, 2) and expanded.sample().shape == (5, 2, 3, 3)
    with pytest.raises(ValueError):
        genesis.distributions.Wishart(1.5, covariance_matrix=to_genesis(cov[0]))
    with pytest.raises(ValueError):
        genesis.distributions.Wishart(5.0, covariance_matrix=to_genesis(cov[0]), scale_tril=to_genesis(cov[0]))
    assert genesis.distributions.wishart.Wishart is genesis.distributions.Wishart
