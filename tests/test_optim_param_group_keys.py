"""Parameter-group keys of the optimizers against torch's: the groups, ``defaults`` and state dicts hold the same keys
(and every optimizer's constructor torch's keywords), torch's state dicts (saved or in memory, with or without
``differentiable``) load, Genesis's ``master_weights`` appears only where it is on, ``differentiable=True`` is
refused, and ``capturable=True`` (device-side step counts) updates as the host-counted step does."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, to_genesis, to_torch

NAMES = ["SGD", "Adam", "AdamW"]
ALL = ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop",
       "SGD"]


def _params(lib: Any) -> list:
    gen = torch.Generator().manual_seed(0)
    values = [torch.randn(3, 2, generator=gen, dtype=torch.float64), torch.randn(2, generator=gen, dtype=torch.float64)]
    if lib is torch:
        return [v.requires_grad_(True) for v in values]
    return [to_genesis(v, requires_grad=True) for v in values]


def _step(lib: Any, opt: Any, params: list) -> None:
    opt.zero_grad()
    ((params[0] * params[0]).sum() + params[1].sum()).backward()
    opt.step()


@pytest.mark.parametrize("name", NAMES)
def test_group_keys_match_torch(name: str) -> None:
    t_params, g_params = _params(torch), _params(genesis)
    t_opt = getattr(torch.optim, name)([{"params": [t_params[0]]}, {"params": [t_params[1]], "lr": 0.5}], lr=0.1)
    g_opt = getattr(genesis.optim, name)([{"params": [g_params[0]]}, {"params": [g_params[1]], "lr": 0.5}], lr=0.1)
    _step(torch, t_opt, t_params)
    _step(genesis, g_opt, g_params)
    assert set(g_opt.defaults) == set(t_opt.defaults)
    for t_group, g_group in zip(t_opt.param_groups, g_opt.param_groups):
        assert set(g_group) == set(t_group)
        assert {k: v for k, v in g_group.items() if k != "params"} == {k: v for k, v in t_group.items()
                                                                        if k != "params"}
    t_sd, g_sd = t_opt.state_dict(), g_opt.state_dict()
    assert [set(g) for g in g_sd["param_groups"]] == [set(t) for t in t_sd["param_groups"]]


@pytest.mark.parametrize("name", [n for n in ALL if n != "Adafactor"])
def test_groups_print_as_torch(name: str) -> None:
    """The default groups as a program prints them: torch's key order and torch's values, ``0`` (not ``0.0``) where
    torch's defaults are integers."""
    t_opt = getattr(torch.optim, name)([_params(torch)[0]])
    g_opt = getattr(genesis.optim, name)([_params(genesis)[0]])
    for t_group, g_group in ((t_opt.defaults, g_opt.defaults), (t_opt.state_dict()["param_groups"][0],
                                                                  g_opt.state_dict()["param_groups"][0])):
        assert list(g_group) == list(t_group)
        assert repr(g_group) == repr(t_group)


@pytest.mark.parametrize("name", NAMES)
def test_torch_state_dict_loads_and_resumes(name: str, tmp_path) -> None:
    """torch's state dict (through torch.save and genesis.load) loads; the groups keep torch's keys and the run goes
    on as torch's."""
    t_params, g_params = _params(torch), _params(genesis)
    t_opt = getattr(torch.optim, name)(t_params, lr=0.1)
    _step(torch, t_opt, t_params)
    torch.save(t_opt.state_dict(), tmp_path / "opt.pt")
    g_params = [to_genesis(t.detach(), requires_grad=True) for t in t_params]
    g_opt = getattr(genesis.optim, name)(g_params, lr=0.1)
    g_opt.load_state_dict(genesis.load(tmp_path / "opt.pt"))
    assert set(g_opt.param_groups[0]) == set(t_opt.param_groups[0])
    for _ in range(2):
        _step(torch, t_opt, t_params)
        _step(genesis, g_opt, g_params)
    for g, t in zip(g_params, t_params):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


def test_older_state_dict_without_torch_flags_gets_the_defaults() -> None:
    """A state dict without ``differentiable`` (older torch or Genesis) and with Genesis's old
    ``master_weights=False`` loads to torch's keys, as torch's ``__setstate__`` fills the flags."""
    params = _params(genesis)
    opt = genesis.optim.AdamW(params, lr=0.1)
    _step(genesis, opt, params)
    sd = opt.state_dict()
    for group in sd["param_groups"]:
        del group["differentiable"]
        group["master_weights"] = False
    fresh = genesis.optim.AdamW(_params(genesis), lr=0.1)
    fresh.load_state_dict(sd)
    reference = torch.optim.AdamW(_params(torch), lr=0.1)
    assert set(fresh.param_groups[0]) == set(reference.param_groups[0])
    assert fresh.param_groups[0]["differentiable"] is False


def test_master_weights_key_only_where_on() -> None:
    params = [genesis.zeros(4, dtype=genesis.bfloat16, device=DEVICE, requires_grad=True)]
    opt = genesis.optim.AdamW(params, lr=0.1, master_weights=True)
    assert opt.param_groups[0]["master_weights"] is True
    assert set(opt.param_groups[0]) - set(torch.optim.AdamW([torch.zeros(1, requires_grad=True)]).param_groups[0]) \
        == {"master_weights"}
    params[0].grad = genesis.ones(4, dtype=genesis.bfloat16, device=DEVICE)
    opt.step()
    assert opt.state[params[0]]["master_param"].dtype is genesis.float32
    restored = genesis.optim.AdamW([params[0].detach().clone().requires_grad_(True)], lr=0.1)
    restored.load_state_dict(opt.state_dict())
    assert restored.param_groups[0]["master_weights"] is True
    assert restored.state[restored.param_groups[0]["params"][0]]["exp_avg"].dtype is genesis.float32


def test_differentiable_true_is_refused() -> None:
    params = _params(genesis)
    opt = genesis.optim.SGD(params, lr=0.1)
    opt.param_groups[0]["differentiable"] = True
    params[0].grad = genesis.ones_like(params[0])
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        opt.step()


@pytest.mark.parametrize("name", ALL)
def test_constructor_keywords_and_group_keys_of_every_optimizer(name: str) -> None:
    t_cls, g_cls = getattr(torch.optim, name), getattr(genesis.optim, name)
    t_keys = set(inspect.signature(t_cls.__init__).parameters)
    g_keys = set(inspect.signature(g_cls.__init__).parameters) - {"master_weights"}  # Genesis's own, off by default
    assert g_keys == t_keys
    t_opt, g_opt = t_cls(_params(torch), lr=0.1), g_cls(_params(genesis), lr=0.1)
    assert set(g_opt.param_groups[0]) == set(t_opt.param_groups[0])


@pytest.mark.parametrize("name", [n for n in ALL if "capturable" in inspect.signature(
    getattr(torch.optim, n).__init__).parameters])
def test_capturable_steps_update_as_host_counted_ones(name: str) -> None:
    results = []
    for capturable in (False, True):
        params = _params(genesis)
        opt = getattr(genesis.optim, name)(params, lr=0.05, capturable=capturable)
        for _ in range(3):
            _step(genesis, opt, params)
        results.append([p.detach() for p in params])
    # The device-side count is float32 (torch's), so bias corrections derived from it round at float32 precision.
    for host, device in zip(*results):
        assert_same(device, to_torch(host), rtol=1e-5, atol=1e-6)


def _named_groups(lib: Any) -> list:
    """What a named-parameter optimizer holds and saves, and the errors of mixing names, as seen by a user."""
    model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Linear(3, 1))
    opt = lib.optim.AdamW(model[0].named_parameters(), lr=0.1)
    seen = [sorted(opt.param_groups[0]), opt.param_groups[0]["param_names"]]
    opt.add_param_group({"params": model[1].named_parameters(), "lr": 0.01})
    seen.append(opt.state_dict()["param_groups"][1]["param_names"])
    for bad in ({"params": [model[1].weight]}, {"params": [("w", model[1].weight), model[1].bias]}):
        try:
            lib.optim.SGD(model[0].named_parameters(), lr=0.1).add_param_group(bad)
        except ValueError as err:
            seen.append(str(err))
    # A state dict saved without names keeps the optimizer's own.
    plain = lib.optim.AdamW(model[0].parameters(), lr=0.1).state_dict()
    opt = lib.optim.AdamW(model[0].named_parameters(), lr=0.1)
    opt.load_state_dict(plain)
    seen.append(opt.param_groups[0]["param_names"])
    return seen


def test_named_parameters_give_groups_param_names_as_torch() -> None:
    assert _named_groups(genesis) == _named_groups(torch)
