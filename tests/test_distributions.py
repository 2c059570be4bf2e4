"""genesis.distributions against torch.distributions: values, shapes, dtypes and gradients of log_prob, entropy,
the moments, cdf/icdf and KL divergences; sampling by moments (the random streams differ); reparameterized samples
by their gradients given the same draw; argument validation with torch's exception classes."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import pytest
import torch

import genesis
from tests.helpers import DEVICE, TORCH_DTYPE, check, check_error, rand, to_genesis, to_torch


def pos(*shape: int, seed: int = 0, low: float = 0.5, high: float = 2.0) -> torch.Tensor:
    return rand(*shape, low=low, high=high, seed=seed)


def _spd(lib: Any, a: Any) -> Any:
    """A positive-definite matrix from any square one: A Aᵀ + I."""
    return a @ a.transpose(-2, -1) + lib.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _lower(lib: Any, a: Any) -> Any:
    """A lower-triangular matrix with a positive diagonal (A's entries are in [-1, 1))."""
    return a.tril() + 2 * lib.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _tr(lib: Any) -> Any:
    return lib.distributions.transforms


# name -> (build(lib, *params), a function making the parameters as torch tensors)
FAMILIES: dict[str, tuple[Callable, Callable[[], tuple]]] = {
    "Normal": (lambda lib, a, b: lib.distributions.Normal(a, b), lambda: (rand(3, 1), pos(4))),
    "LogNormal": (lambda lib, a, b: lib.distributions.LogNormal(a, b), lambda: (rand(3, 1), pos(4))),
    "Uniform": (lambda lib, a, b: lib.distributions.Uniform(a, a + b), lambda: (rand(2, 3), pos(2, 3, seed=1))),
    "Exponential": (lambda lib, r: lib.distributions.Exponential(r), lambda: (pos(5),)),
    "Laplace": (lambda lib, a, b: lib.distributions.Laplace(a, b), lambda: (rand(4), pos(2, 4))),
    "Gamma": (lambda lib, c, r: lib.distributions.Gamma(c, r), lambda: (pos(3, low=0.3, high=4.0), pos(2, 1))),
    "Beta": (lambda lib, a, b: lib.distributions.Beta(a, b), lambda: (pos(4), pos(4, seed=3, low=0.6))),
    "Dirichlet": (lambda lib, c: lib.distributions.Dirichlet(c), lambda: (pos(2, 4, low=0.4, high=3.0),)),
    "BernoulliProbs": (lambda lib, p: lib.distributions.Bernoulli(probs=p), lambda: (pos(3, 2, low=0.1, high=0.9),)),
    "BernoulliLogits": (lambda lib, lg: lib.distributions.Bernoulli(logits=lg), lambda: (rand(5, low=-3, high=3),)),
    "CategoricalProbs": (lambda lib, p: lib.distributions.Categorical(probs=p), lambda: (pos(2, 5, low=0.1),)),
    "CategoricalLogits": (lambda lib, lg: lib.distributions.Categorical(logits=lg), lambda: (rand(3, 4, low=-2),)),
    "OneHotCategorical": (lambda lib, lg: lib.distributions.OneHotCategorical(logits=lg), lambda: (rand(2, 3),)),
    "MVNScaleTril": (lambda lib, m, a: lib.distributions.MultivariateNormal(m, scale_tril=_lower(lib, a)),
                     lambda: (rand(2, 3), rand(3, 3))),
    "MVNCovariance": (lambda lib, m, a: lib.distributions.MultivariateNormal(m, covariance_matrix=_spd(lib, a)),
                      lambda: (rand(3), rand(2, 3, 3))),
    "MVNPrecision": (lambda lib, m, a: lib.distributions.MultivariateNormal(m, precision_matrix=_spd(lib, a)),
                     lambda: (rand(2, 3), rand(3, 3))),
    "Independent": (lambda lib, a, b: lib.distributions.Independent(lib.distributions.Normal(a, b), 1),
                    lambda: (rand(3, 4), pos(4))),
    "AffineSigmoid": (lambda lib, a, b, s: lib.distributions.TransformedDistribution(
        lib.distributions.Normal(a, b), [_tr(lib).AffineTransform(0.5, s), _tr(lib).SigmoidTransform()]),
        lambda: (rand(3), pos(3), pos(3, seed=5))),
    "Tanh": (lambda lib, a, b: lib.distributions.TransformedDistribution(
        lib.distributions.Normal(a, b), _tr(lib).TanhTransform()), lambda: (rand(3), pos(3, high=1.0))),
    "ExpPower": (lambda lib, a, b: lib.distributions.TransformedDistribution(
        lib.distributions.Normal(a, b), _tr(lib).ComposeTransform([_tr(lib).ExpTransform(),
                                                                    _tr(lib).PowerTransform(-2.0)])),
        lambda: (rand(3), pos(3))),
    "AffineEvent": (lambda lib, a, b, s: lib.distributions.TransformedDistribution(
        lib.distributions.Normal(a, b), _tr(lib).AffineTransform(1.0, s, event_dim=1)),
        lambda: (rand(2, 3), pos(3), pos(3, seed=2))),
}

# Properties whose gradient in the first parameter torch does not implement (it raises): compared without it.
NO_FIRST_GRAD = {("Gamma", "cdf")}
# Heavy tails: the sample variance converges too slowly to compare; medians are compared instead.
HEAVY = {"LogNormal", "ExpPower"}
PROPERTIES = ["mean", "mode", "variance", "stddev", "entropy", "log_prob", "cdf", "icdf"]


def _value(name: str, params: tuple, families: dict | None = None) -> torch.Tensor:
    """A valid value for ``log_prob``: a torch sample of shape (2,) + batch + event (``families``: a table like
    ``FAMILIES``, which is the default)."""
    build = (families or FAMILIES)[name][0]
    torch.manual_seed(0)
    with torch.no_grad():
        return build(torch, *params).sample((2,))


def _property(name: str, prop: str, families: dict | None = None) -> Callable:
    """``fn(lib, *params, value, probs)`` computing one property of the family ``name`` (of ``families``, by default
    ``FAMILIES``)."""
    def fn(lib: Any, *args: Any) -> Any:
        *params, v, q = args
        d = (families or FAMILIES)[name][0](lib, *params)
        if prop == "log_prob":
            return d.log_prob(v)
        if prop == "cdf":
            return d.cdf(v)
        if prop == "icdf":
            return d.icdf(q)
        if prop == "entropy":
            return d.entropy()
        return getattr(d, prop)
    return fn


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_values_and_gradients(name: str) -> None:
    """Every property torch has gives torch's values, shapes, dtypes and parameter gradients."""
    build, make = FAMILIES[name]
    params = make()
    value = _value(name, params)
    probs = rand(1, low=0.05, high=0.95, requires_grad=False)
    t_dist = build(torch, *params)
    compared = 0
    for prop in PROPERTIES:
        try:
            _property(name, prop)(torch, *params, value, probs)
        except NotImplementedError:
            continue
        ps = (params[0].detach(), *params[1:]) if (name, prop) in NO_FIRST_GRAD else params
        check(_property(name, prop), *ps, value, probs, rtol=1e-7, atol=1e-9)
        compared += 1
    assert compared >= 1
    g_dist = build(genesis, *(to_genesis(p) for p in params))
    assert tuple(g_dist.batch_shape) == tuple(t_dist.batch_shape)
    assert tuple(g_dist.event_shape) == tuple(t_dist.event_shape)
    # Supports that hold parameters print tensors, whose reprs differ by module name: compare the kind.
    assert repr(g_dist.support).split("(")[0] == repr(t_dist.support).split("(")[0]
    assert sorted(g_dist.arg_constraints) == sorted(t_dist.arg_constraints)
    assert g_dist.has_rsample == t_dist.has_rsample
    assert g_dist.has_enumerate_support == t_dist.has_enumerate_support


@pytest.mark.parametrize("name", ["Normal", "Gamma", "CategoricalLogits", "MVNScaleTril", "Independent", "Tanh"])
def test_expand_and_float32(name: str) -> None:
    """``expand`` adds batch dimensions, and float32 parameters give float32 results as torch."""
    build, make = FAMILIES[name]
    params = tuple(p.detach().float().requires_grad_() for p in make())
    value = _value(name, params)

    def fn(lib: Any, *args: Any) -> Any:
        *ps, v = args
        d = build(lib, *ps)
        e = d.expand((2,) + tuple(d.batch_shape))
        return e.log_prob(v), e.entropy() if name != "Tanh" else e.log_prob(v)

    check(fn, *params, value)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_shapes_and_moments(name: str) -> None:
    """Samples have torch's shape and dtype, and their mean and variance match the distribution's."""
    build, make = FAMILIES[name]
    params = tuple(p.detach() for p in make())
    t_dist = build(torch, *params)
    g_dist = build(genesis, *(to_genesis(p) for p in params))
    genesis.manual_seed(1)
    for shape in [(), (3,), (2, 2)]:
        g, t = g_dist.sample(shape), t_dist.sample(shape)
        assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPE[g.dtype] == t.dtype
        assert not g.requires_grad
    n = 20000
    samples = to_torch(g_dist.sample((n,))).double()
    try:
        mean, var = t_dist.mean.double(), t_dist.variance.double()
    except NotImplementedError:
        mean = var = None
    if mean is None or not torch.isfinite(mean).all():
        # Categorical and transformed distributions: compare with torch's own samples.
        torch.manual_seed(0)
        ref = t_dist.sample((n,)).double()
        mean, var = ref.mean(0), ref.var(0)
    tol = 5 * (var / n).sqrt() + 1e-6
    assert ((samples.mean(0) - mean).abs() <= tol).all(), f"{name}: mean {samples.mean(0)} vs {mean}"
    if name in HEAVY:
        torch.manual_seed(0)
        ref = t_dist.sample((n,)).double()
        # Five standard errors of the difference of two sample medians, on the log scale.
        tol = 5 * 1.2533 * math.sqrt(2 / n) * ref.log().std(0)
        assert ((samples.median(0).values.log() - ref.median(0).values.log()).abs() <= tol).all()
    else:
        assert ((samples.var(0) - var).abs() <= 0.1 * var + 1e-6).all(), f"{name}: var {samples.var(0)} vs {var}"
    assert bool(t_dist.support.check(samples).all())


@pytest.mark.parametrize("concentration", [0.05, 0.5, 1.0, 3.0, 30.0])
def test_gamma_sampler_moments(concentration: float) -> None:
    """The Marsaglia-Tsang sampler (with the boost below 1) has the Gamma mean and variance."""
    genesis.manual_seed(2)
    n = 40000
    alpha = genesis.full((n,), concentration, dtype=genesis.float64, device=DEVICE)
    x = to_torch(genesis.random._standard_gamma(alpha))
    assert (x > 0).all()
    tol = 5 * math.sqrt(concentration / n)
    assert abs(x.mean().item() - concentration) < tol
    assert abs(x.var().item() - concentration) < 0.1 * concentration
    # The CDF at a few points: Kolmogorov-Smirnov distance against torch's Gamma.
    grid = torch.quantile(x, torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9], dtype=torch.float64))
    cdf = torch.special.gammainc(torch.tensor(concentration, dtype=torch.float64), grid)
    assert (cdf - torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9], dtype=torch.float64)).abs().max() < 0.02


class _FixedGamma(torch.autograd.Function):
    """torch's standard Gamma with a given draw: its backward is torch's implicit reparameterization gradient."""

    @staticmethod
    def forward(ctx: Any, alpha: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(alpha, x)
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        alpha, x = ctx.saved_tensors
        return grad * torch._standard_gamma_grad(alpha, x), None


def _rsample_case(name: str) -> tuple[Callable, Callable]:
    """(the family's Genesis rsample from parameters, the same draw in torch as a function of torch's parameters)."""
    cases = {
        "Normal": lambda ps, x: ps[0] + ((x - ps[0]) / ps[1]).detach() * ps[1],
        "Laplace": lambda ps, x: ps[0] + ((x - ps[0]) / ps[1]).detach() * ps[1],
        "Uniform": lambda ps, x: ps[0] + ((x - ps[0]) / ps[1]).detach() * ps[1],
        "Exponential": lambda ps, x: (x * ps[0]).detach() / ps[0],
        "LogNormal": lambda ps, x: (ps[0] + ((x.log() - ps[0]) / ps[1]).detach() * ps[1]).exp(),
        "Gamma": lambda ps, x: _FixedGamma.apply(ps[0].expand_as(x), (x * ps[1]).detach()) / ps[1],
        "MVNScaleTril": lambda ps, x: ps[0] + (_lower(torch, ps[1]) @ torch.linalg.solve_triangular(
            _lower(torch, ps[1]), (x - ps[0]).unsqueeze(-1), upper=False).detach()).squeeze(-1),
        "Independent": lambda ps, x: ps[0] + ((x - ps[0]) / ps[1]).detach() * ps[1],
    }
    return FAMILIES[name][0], cases[name]


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Uniform", "Exponential", "LogNormal", "Gamma",
                                  "MVNScaleTril", "Independent"])
def test_rsample_gradients(name: str) -> None:
    """Gradients of a reparameterized draw equal torch's for the same draw (same formula, same noise)."""
    build, torch_draw = _rsample_case(name)
    check_rsample_gradients(build, FAMILIES[name][1](), torch_draw, seed=3, value_rtol=1e-9, grad_atol=1e-9)


def check_rsample_gradients(build: Callable, params: Sequence[torch.Tensor], torch_draw: Callable, seed: int,
                            value_rtol: float, grad_atol: float) -> None:
    """Draw five samples with ``build(genesis, *params).rsample`` and backpropagate a random weighting of them;
    ``torch_draw(torch_params, x)`` rebuilds the draw ``x`` in torch (same formula, same noise): its values and every
    parameter's gradient equal Genesis's."""
    g_params = [to_genesis(p) for p in params]
    genesis.manual_seed(seed)
    x = build(genesis, *g_params).rsample((5,))
    assert x.requires_grad
    w = torch.randn(tuple(x.shape), dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    (x * to_genesis(w, requires_grad=False)).sum().backward()
    t_params = [p.detach().clone().requires_grad_() for p in params]
    t_x = torch_draw(t_params, to_torch(x))
    torch.testing.assert_close(t_x.detach(), to_torch(x), rtol=value_rtol, atol=1e-9)
    (t_x * w).sum().backward()
    for g, t in zip(g_params, t_params):
        assert g.grad is not None
        torch.testing.assert_close(to_torch(g.grad), t.grad, rtol=1e-6, atol=grad_atol)


@pytest.mark.parametrize("name", ["Dirichlet", "Beta"])
def test_rsample_gradients_through_normalized_gammas(name: str) -> None:
    """Dirichlet and Beta draws are normalized Gamma draws: the gradient of their sample mean approaches the gradient
    of the exact mean (torch's Dirichlet uses another approximation of the same gradient)."""
    build, make = FAMILIES[name]
    params = make()
    weights = torch.tensor([1.0, -1.0, 2.0, 0.5], dtype=torch.float64)  # the last dimension of both families
    g_params = [to_genesis(p) for p in params]
    genesis.manual_seed(4)
    g_mean = build(genesis, *g_params).rsample((4000,)).mean(0)
    (g_mean * to_genesis(weights, requires_grad=False)).sum().backward()
    t_params = [p.detach().clone().requires_grad_() for p in params]
    (build(torch, *t_params).mean * weights).sum().backward()
    for g, t in zip(g_params, t_params):
        # 4000 draws leave an error of about 0.006 on gradients of size 0.2-0.6.
        torch.testing.assert_close(to_torch(g.grad), t.grad, rtol=0.0, atol=0.015)


KL_PAIRS: dict[str, tuple[str, str]] = {
    "Normal": ("Normal", "Normal"), "Categorical": ("CategoricalLogits", "CategoricalProbs"),
    "Bernoulli": ("BernoulliProbs", "BernoulliLogits"), "Beta": ("Beta", "Beta"), "Gamma": ("Gamma", "Gamma"),
    "Dirichlet": ("Dirichlet", "Dirichlet"), "Exponential": ("Exponential", "Exponential"),
    "Laplace": ("Laplace", "Laplace"), "Uniform": ("Uniform", "Uniform"), "MVN": ("MVNScaleTril", "MVNCovariance"),
    "Independent": ("Independent", "Independent"), "OneHotCategorical": ("OneHotCategorical", "OneHotCategorical"),
    "LogNormal": ("LogNormal", "LogNormal"),
}


@pytest.mark.parametrize("pair", sorted(KL_PAIRS))
def test_kl_divergence(pair: str) -> None:
    p_name, q_name = KL_PAIRS[pair]
    (p_build, p_make), (q_build, q_make) = FAMILIES[p_name], FAMILIES[q_name]
    p_params = p_make()
    q_params = tuple(rand(*x.shape, seed=9) * 0.3 + x.detach() if pair not in ("Categorical", "Bernoulli")
                     else x.detach().clone().requires_grad_() for x in q_make())
    if pair == "Categorical":
        q_params = (pos(3, 4, low=0.1, seed=4),)
    if pair == "MVN":
        q_params = (rand(2, 3, seed=6), rand(2, 3, 3, seed=7))
    if pair == "Bernoulli":
        q_params = (rand(3, 2, low=-2, high=2, seed=8),)
    k = len(p_params)

    def fn(lib: Any, *args: Any) -> Any:
        return lib.distributions.kl_divergence(p_build(lib, *args[:k]), q_build(lib, *args[k:]))

    check(fn, *p_params, *q_params, rtol=1e-7, atol=1e-9)


def test_kl_infinite_and_registry() -> None:
    """Disjoint supports give inf; a registered pair is used; an unknown pair raises NotImplementedError."""
    check(lambda lib, a, b: lib.distributions.kl_divergence(lib.distributions.Uniform(a, a + 1),
                                                            lib.distributions.Uniform(b, b + 1)),
          rand(3), rand(3, seed=1))
    D = genesis.distributions
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Cauchy(0.0, 1.0))

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Gamma)
    def _kl(p: Any, q: Any) -> genesis.Tensor:
        return genesis.tensor(7.0)

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Gamma(1.0, 1.0)).item() == 7.0
    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 0.0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


@pytest.mark.parametrize("name", ["Bernoulli", "Categorical", "OneHotCategorical"])
@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support(name: str, expand: bool) -> None:
    params = rand(2, 3, requires_grad=False)

    def fn(lib: Any, p: Any) -> Any:
        return getattr(lib.distributions, name)(logits=p).enumerate_support(expand=expand)

    check(fn, params)


def test_policy_gradient_step() -> None:
    """``dist = Categorical(logits=net(x)); a = dist.sample(); loss = -(dist.log_prob(a) * R).sum()``: the loss and
    the network's gradients equal torch's for the same actions."""
    t_net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).double()
    g_net = genesis.nn.Sequential(genesis.nn.Linear(4, 16), genesis.nn.Tanh(), genesis.nn.Linear(16, 3)).double()
    g_net.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t_net.state_dict().items()})
    g_net.to(DEVICE)
    x, reward = rand(8, 4, requires_grad=False), rand(8, requires_grad=False)
    dist = genesis.distributions.Categorical(logits=g_net(to_genesis(x)))
    action = dist.sample()
    assert action.dtype is genesis.int64 and tuple(action.shape) == (8,)
    loss = -(dist.log_prob(action) * to_genesis(reward)).sum()
    loss.backward()
    t_dist = torch.distributions.Categorical(logits=t_net(x))
    t_loss = -(t_dist.log_prob(to_torch(action)) * reward).sum()
    t_loss.backward()
    torch.testing.assert_close(to_torch(loss), t_loss.detach())
    for (name, g), (_, t) in zip(g_net.named_parameters(), t_net.named_parameters()):
        torch.testing.assert_close(to_torch(g.grad), t.grad, msg=name)


INVALID: dict[str, Callable] = {
    "Normal scale": lambda lib: lib.distributions.Normal(lib.zeros(2), -lib.ones(2)),
    "Normal NaN loc": lambda lib: lib.distributions.Normal(lib.full((2,), math.nan), lib.ones(2)),
    "Gamma": lambda lib: lib.distributions.Gamma(lib.zeros(2), lib.ones(2)),
    "Exponential": lambda lib: lib.distributions.Exponential(-lib.ones(2)),
    "Beta": lambda lib: lib.distributions.Beta(lib.ones(2), -lib.ones(2)),
    "Dirichlet": lambda lib: lib.distributions.Dirichlet(-lib.ones(3)),
    "Dirichlet scalar": lambda lib: lib.distributions.Dirichlet(lib.ones(())),
    "Uniform": lambda lib: lib.distributions.Uniform(lib.ones(2), lib.zeros(2)),
    "Bernoulli probs": lambda lib: lib.distributions.Bernoulli(probs=lib.full((2,), 1.5)),
    "Bernoulli both": lambda lib: lib.distributions.Bernoulli(probs=lib.ones(2) / 2, logits=lib.ones(2)),
    "Bernoulli none": lambda lib: lib.distributions.Bernoulli(),
    "Categorical probs": lambda lib: lib.distributions.Categorical(probs=lib.tensor([-1.0, 2.0, 1.0])),
    "Categorical scalar": lambda lib: lib.distributions.Categorical(logits=lib.ones(())),
    "MVN two": lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), lib.eye(2), scale_tril=lib.eye(2)),
    "MVN not PD": lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), -lib.eye(2)),
    "MVN not tril": lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), scale_tril=lib.ones(2, 2)),
    "MVN loc": lambda lib: lib.distributions.MultivariateNormal(lib.zeros(()), lib.eye(2)),
    "Independent": lambda lib: lib.distributions.Independent(lib.distributions.Normal(lib.zeros(2), lib.ones(2)), 2),
    "log_prob support": lambda lib: lib.distributions.Exponential(lib.ones(2)).log_prob(-lib.ones(2)),
    "log_prob simplex": lambda lib: lib.distributions.Dirichlet(lib.ones(3)).log_prob(lib.ones(3)),
    "log_prob category": lambda lib: lib.distributions.Categorical(logits=lib.ones(3)).log_prob(lib.tensor(3)),
    "log_prob event": lambda lib: lib.distributions.Dirichlet(lib.ones(3)).log_prob(lib.ones(4) / 4),
    "log_prob broadcast": lambda lib: lib.distributions.Normal(lib.zeros(3), lib.ones(3)).log_prob(lib.zeros(2)),
    "log_prob not tensor": lambda lib: lib.distributions.Normal(lib.zeros(3), lib.ones(3)).log_prob(0.5),
    "MVN KL shapes": lambda lib: lib.distributions.kl_divergence(
        lib.distributions.MultivariateNormal(lib.zeros(2), lib.eye(2)),
        lib.distributions.MultivariateNormal(lib.zeros(3), lib.eye(3))),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_arguments(case: str) -> None:
    check_error(ValueError, lambda lib: INVALID[case](lib))


def test_validation_messages_and_switch() -> None:
    """Messages name the parameter, the distribution and the constraint as torch's; validation can be turned off."""
    D = genesis.distributions
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"Normal\(loc: genesis.Size\(\[2\]\), scale: genesis.Size\(\[2\]\)\) to "
                                         r"satisfy the constraint GreaterThan\(lower_bound=0.0\)"):
        D.Normal(genesis.zeros(2), -genesis.ones(2))
    with pytest.raises(ValueError, match=r"to be within the support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        D.Exponential(genesis.ones(2)).log_prob(-genesis.ones(2))
    D.Normal(genesis.zeros(2), -genesis.ones(2), validate_args=False)
    try:
        D.Distribution.set_default_validate_args(False)
        D.Exponential(-genesis.ones(2)).log_prob(-genesis.ones(2))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


@pytest.mark.parametrize("transform", ["Exp", "Affine", "Sigmoid", "Tanh", "Power", "Softmax", "Compose"])
def test_transforms(transform: str) -> None:
    """Forward, inverse and log|det J| of each transform equal torch's, with gradients."""
    def build(lib: Any, s: Any) -> Any:
        T = lib.distributions.transforms
        return {"Exp": lambda: T.ExpTransform(), "Affine": lambda: T.AffineTransform(0.3, s),
                "Sigmoid": lambda: T.SigmoidTransform(), "Tanh": lambda: T.TanhTransform(),
                "Power": lambda: T.PowerTransform(s), "Softmax": lambda: T.SoftmaxTransform(),
                "Compose": lambda: T.ComposeTransform([T.AffineTransform(0.3, s), T.ExpTransform()])}[transform]()

    def fn(lib: Any, x: Any, s: Any) -> Any:
        t = build(lib, s)
        x = x.abs() + 0.1 if transform == "Power" else x
        y = t(x)
        out = [y, t.inv(y)]
        if transform != "Softmax":
            out.append(t.log_abs_det_jacobian(x, y))
            out.append(t.inv.log_abs_det_jacobian(y, x))
        return out

    check(fn, rand(2, 3, low=-0.9, high=0.9), pos(3))
    g, t = build(genesis, to_genesis(pos(3))), build(torch, pos(3))
    assert repr(g.domain) == repr(t.domain) and repr(g.codomain) == repr(t.codomain)
    assert g.bijective == t.bijective


def test_transform_cache_and_equality() -> None:
    T = genesis.distributions.transforms
    t = T.ExpTransform().with_cache(1)
    x = genesis.tensor([0.5, 1.0])
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    with pytest.raises(ValueError, match="cache_size"):
        T.ExpTransform(cache_size=2)


def test_scalar_parameters_use_default_dtype() -> None:
    """Numbers as parameters give an empty batch shape and default-dtype tensors, as torch."""
    check(lambda lib: lib.distributions.Normal(0.0, 2.0).log_prob(lib.tensor([0.5, -1.0])))
    check(lambda lib: lib.distributions.Beta(2.0, 3.0).entropy())
    assert genesis.distributions.Gamma(2.0, 1.0).batch_shape == ()
