"""nn.init: torch's bounds, moments and gains; in place, without autograd, from Genesis's generator."""

import contextlib
import math

import pytest
import torch

import genesis
import genesis.nn as nn
from tests.helpers import DEVICE, to_torch


def param(*shape: int) -> nn.Parameter:
    return nn.Parameter(genesis.empty(*shape, device=DEVICE))


@pytest.mark.parametrize("name,param_", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
    ("leaky_relu", 0.2), ("selu", None),
])
def test_calculate_gain(name, param_):
    assert nn.init.calculate_gain(name, param_) == pytest.approx(torch.nn.init.calculate_gain(name, param_))
    with pytest.raises(ValueError):
        nn.init.calculate_gain("swishy")


def test_fills_run_in_place_under_no_grad_on_leaf_parameters():
    p = param(3, 4)
    assert nn.init.constant_(p, 2.5) is p
    assert to_torch(p).eq(2.5).all() and p.requires_grad and p.grad_fn is None and p.is_leaf
    nn.init.zeros_(p)
    assert to_torch(p).eq(0).all()
    nn.init.ones_(p)
    assert to_torch(p).eq(1).all()
    nn.init.eye_(p)
    assert torch.equal(to_torch(p), torch.eye(3, 4))
    w = param(4, 2, 3, 3)
    nn.init.dirac_(w, groups=2)
    t = torch.empty(4, 2, 3, 3)
    torch.nn.init.dirac_(t, groups=2)
    assert torch.equal(to_torch(w), t)


def moments(t: genesis.Tensor) -> tuple[float, float, float, float]:
    x = to_torch(t).double()
    return x.mean().item(), x.std().item(), x.min().item(), x.max().item()


def test_uniform_and_normal():
    genesis.manual_seed(0)
    mean, std, lo, hi = moments(nn.init.uniform_(param(200, 200), -2.0, 3.0))
    assert -2.0 <= lo and hi < 3.0 and abs(mean - 0.5) < 0.05 and abs(std - 5 / math.sqrt(12)) < 0.05
    mean, std, _, _ = moments(nn.init.normal_(param(200, 200), 1.0, 0.5))
    assert abs(mean - 1.0) < 0.01 and abs(std - 0.5) < 0.01
    mean, std, lo, hi = moments(nn.init.trunc_normal_(param(200, 200), 0.0, 1.0, -0.5, 1.5))
    assert -0.5 <= lo and hi <= 1.5
    ref = torch.nn.init.trunc_normal_(torch.empty(200, 200, dtype=torch.float64), 0.0, 1.0, -0.5, 1.5)
    assert abs(mean - ref.mean().item()) < 0.02 and abs(std - ref.std().item()) < 0.02


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, 5.0, 6.0), (3.0, 1.0, -1.0, 1.0), (0.0, 1.0, -0.1, 0.1),
                                            (0.0, 0.02, 0.05, 0.07)])
def test_trunc_normal_narrow_and_tail_intervals(mean, std, a, b):
    # Intervals that hold little of the normal's mass (far in a tail: torch draws on [a, b] and rejects by the
    # density instead of redrawing normals, which would run for hours): the truncated normal's moments, and torch's
    # warning where the mean lies more than two std outside [a, b]
    genesis.manual_seed(0)
    far = mean < a - 2 * std or mean > b + 2 * std
    with pytest.warns(UserWarning, match="mean is more than 2 std from") if far else contextlib.nullcontext():
        got, got_std, lo, hi = moments(nn.init.trunc_normal_(param(100, 100), mean, std, a, b))
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = [math.exp(-v * v / 2) / math.sqrt(2 * math.pi) for v in (alpha, beta)]
    mass = (math.erf(beta / math.sqrt(2)) - math.erf(alpha / math.sqrt(2))) / 2
    expected = mean + std * (pdf[0] - pdf[1]) / mass
    variance = std ** 2 * (1 + (alpha * pdf[0] - beta * pdf[1]) / mass - ((pdf[0] - pdf[1]) / mass) ** 2)
    assert a <= lo and hi <= b
    assert abs(got - expected) < 0.02 * (b - a) and abs(got_std - math.sqrt(variance)) < 0.02 * (b - a)


def test_trunc_normal_and_uniform_refuse_an_empty_interval():
    message = r"^uniform_ expects to return a \[from, to\) range, but found from=2 > to=1$"
    with pytest.raises(RuntimeError, match=message):
        torch.empty(3).uniform_(2.0, 1.0)
    with pytest.raises(RuntimeError):  # torch 2.13's message is the one above; older ones name the normal CDF's values
        torch.nn.init.trunc_normal_(torch.empty(3, 3), a=2.0, b=1.0)
    with pytest.raises(RuntimeError, match=message):
        genesis.empty(3).uniform_(2.0, 1.0)
    with pytest.raises(RuntimeError, match=message):
        genesis.nn.init.trunc_normal_(genesis.empty(3, 3), a=2.0, b=1.0)
    with pytest.raises(ValueError, match=r"^Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]$"):
        nn.init.kaiming_normal_(param(3, 3), mode="fan_avg")


@pytest.mark.parametrize("shape", [(300, 200), (64, 32, 3, 3)])
def test_xavier_and_kaiming_bounds_and_std(shape):
    genesis.manual_seed(1)
    fan_in = shape[1] * math.prod(shape[2:])
    fan_out = shape[0] * math.prod(shape[2:])
    a = math.sqrt(6 / (fan_in + fan_out)) * 2.0
    _, std, lo, hi = moments(nn.init.xavier_uniform_(param(*shape), gain=2.0))
    assert -a <= lo and hi <= a and abs(std - a / math.sqrt(3)) < 0.03 * a
    _, std, _, _ = moments(nn.init.xavier_normal_(param(*shape)))
    assert abs(std - math.sqrt(2 / (fan_in + fan_out))) < 0.03 * std
    bound = math.sqrt(2.0) * math.sqrt(3 / fan_in)
    _, std, lo, hi = moments(nn.init.kaiming_uniform_(param(*shape), nonlinearity="relu"))
    assert -bound <= lo and hi <= bound and abs(std - bound / math.sqrt(3)) < 0.03 * bound
    _, std, _, _ = moments(nn.init.kaiming_normal_(param(*shape), mode="fan_out", nonlinearity="relu"))
    assert abs(std - math.sqrt(2 / fan_out)) < 0.03 * std
    with pytest.raises(ValueError):
        nn.init.kaiming_uniform_(param(*shape), mode="fan_avg")
    with pytest.raises(ValueError):
        nn.init.xavier_uniform_(param(5))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 2, 2)])
def test_orthogonal(shape):
    w = nn.init.orthogonal_(param(*shape), gain=1.5)
    flat = to_torch(w).double().reshape(shape[0], -1)
    gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    torch.testing.assert_close(gram, 2.25 * torch.eye(gram.shape[0], dtype=torch.float64), rtol=1e-5, atol=1e-5)


def test_sparse_and_generator_reproducibility():
    w = nn.init.sparse_(param(10, 6), sparsity=0.3)
    zeros_per_col = (to_torch(w) == 0).sum(0)
    assert (zeros_per_col >= 3).all()
    g1 = genesis.Generator().manual_seed(3)
    g2 = genesis.Generator().manual_seed(3)
    a = nn.init.normal_(param(5, 5), generator=g1)
    b = nn.init.normal_(param(5, 5), generator=g2)
    assert torch.equal(to_torch(a), to_torch(b))


@pytest.mark.parametrize("name", ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                                  "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"])
def test_deprecated_aliases_warn_and_fill(name: str) -> None:
    # torch still ships the initializers without the underscore (old tutorials call them), with a FutureWarning.
    assert name in torch.nn.init.__all__ and name in nn.init.__all__
    t = genesis.zeros(4, 3, 3, 3, device=DEVICE) if name == "dirac" else genesis.zeros(6, 5, device=DEVICE)
    args = {"constant": (0.5,), "sparse": (0.2,)}.get(name, ())
    with pytest.warns(FutureWarning, match=f"nn.init.{name}` is now deprecated"):
        out = getattr(nn.init, name)(t, *args)
    assert out is t and bool((t != 0).any())


def test_deprecated_clip_grad_norm() -> None:
    p = nn.Parameter(genesis.ones(2, device=DEVICE))
    p.grad = genesis.tensor([3.0, 4.0], device=DEVICE)
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        total = nn.utils.clip_grad_norm([p], 1.0)
    assert abs(total.item() - 5.0) < 1e-6 and abs(p.grad.norm().item() - 1.0) < 1e-5
