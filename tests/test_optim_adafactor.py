"""Adafactor against torch.optim.Adafactor: trajectories (matrices, vectors, 3-d parameters), options, state dicts
moved between the libraries, and torch's argument errors."""

from __future__ import annotations

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, to_genesis, to_torch


def _params(lib: object, dtype: torch.dtype) -> list:
    gen = torch.Generator().manual_seed(0)
    values = [torch.randn(6, 4, generator=gen, dtype=dtype), torch.randn(4, generator=gen, dtype=dtype),
              torch.randn(2, 3, 5, generator=gen, dtype=dtype)]
    if lib is torch:
        return [v.requires_grad_(True) for v in values]
    return [to_genesis(v, requires_grad=True) for v in values]


def _steps(lib: object, opt: object, params: list, n: int) -> None:
    for _ in range(n):
        opt.zero_grad()
        sum((w * w * w).sum() + w.sum() for w in params).backward()
        opt.step()


@pytest.mark.parametrize("options", [{}, {"weight_decay": 0.1, "maximize": True, "eps": (1e-20, 1e-2)},
                                     {"lr": 0.3, "beta2_decay": -0.5, "d": 2.0}])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_trajectory_matches_torch(options: dict, dtype: torch.dtype) -> None:
    t_params, g_params = _params(torch, dtype), _params(genesis, dtype)
    t_opt = torch.optim.Adafactor(t_params, **options)
    g_opt = genesis.optim.Adafactor(g_params, **options)
    _steps(torch, t_opt, t_params, 6)
    _steps(genesis, g_opt, g_params, 6)
    tolerance = {"rtol": 1e-12, "atol": 1e-12} if dtype is torch.float64 else {"rtol": 1e-5, "atol": 1e-6}
    for g, t in zip(g_params, t_params):
        assert_same(g.detach(), t.detach(), **tolerance)
    assert set(g_opt.param_groups[0]) == set(t_opt.param_groups[0])
    assert [sorted(g_opt.state[p]) for p in g_params] == [sorted(t_opt.state[p]) for p in t_params]


def test_torch_state_dict_loads_and_continues() -> None:
    t_params, g_params = _params(torch, torch.float64), _params(genesis, torch.float64)
    t_opt = torch.optim.Adafactor(t_params, lr=0.05)
    _steps(torch, t_opt, t_params, 3)
    with genesis.no_grad():
        for g, t in zip(g_params, t_params):
            g.copy_(to_genesis(t.detach()))
    g_opt = genesis.optim.Adafactor(g_params, lr=0.05)
    state = t_opt.state_dict()
    g_opt.load_state_dict({"state": {k: {n: to_genesis(v) for n, v in s.items()} for k, s in state["state"].items()},
                           "param_groups": state["param_groups"]})
    _steps(torch, t_opt, t_params, 2)
    _steps(genesis, g_opt, g_params, 2)
    for g, t in zip(g_params, t_params):
        assert_same(g.detach(), t.detach(), rtol=1e-12, atol=1e-12)
    assert to_torch(g_opt.state_dict()["state"][0]["row_var"]).shape == t_opt.state_dict()["state"][0]["row_var"].shape


@pytest.mark.parametrize("kwargs, message", [({"lr": -1.0}, "Learning rate"), ({"beta2_decay": 0.5}, "beta2_decay"),
                                             ({"eps": (-1.0, 1e-3)}, "epsilon1"), ({"eps": (None, -1.0)}, "epsilon2"),
                                             ({"d": 0.5}, "Clipping threshold"), ({"weight_decay": -1.0}, "weight")])
def test_invalid_arguments_raise_as_torch(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        torch.optim.Adafactor(_params(torch, torch.float64), **kwargs)
    with pytest.raises(ValueError, match=message):
        genesis.optim.Adafactor(_params(genesis, torch.float64), **kwargs)


def test_complex_parameters_are_refused() -> None:
    w = genesis.nn.Parameter(genesis.randn(3, 2, dtype=genesis.complex64, device=DEVICE))
    opt = genesis.optim.Adafactor([w])
    w.grad = genesis.ones_like(w)
    with pytest.raises(RuntimeError, match="complex"):
        opt.step()
