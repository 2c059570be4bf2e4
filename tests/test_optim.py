"""Optimizers against torch.optim: parameters after 20 steps, state dicts, param groups, bad hyperparameters."""

from __future__ import annotations

import re

import pytest
import torch

import genesis
from genesis import optim
from tests.helpers import DEVICE, assert_same, to_genesis, to_torch


def _make_params(lib: object, device: str | None = None) -> list:
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    b = torch.randn(3, generator=gen, dtype=torch.float64)
    if lib is torch:
        return [w.requires_grad_(), b.requires_grad_()]
    return [to_genesis(w, requires_grad=True), to_genesis(b, requires_grad=True)]


def _loss(lib: object, params: list, x: object) -> object:
    w, b = params
    return ((x @ w + b).tanh() ** 2).sum() + (w * w).sum() * 0.1


def _run(lib: object, make_opt, steps: int = 20, groups: bool = False) -> list:
    params = _make_params(lib)
    x_t = torch.linspace(-1, 1, 20, dtype=torch.float64).reshape(5, 4)
    x = x_t if lib is torch else to_genesis(x_t)
    if groups:
        opt = make_opt(lib.optim, [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.05}])
    else:
        opt = make_opt(lib.optim, params)
    for _ in range(steps):
        opt.zero_grad()
        _loss(lib, params, x).backward()
        opt.step()
    return params


CONFIGS = {
    "sgd": lambda o, p: o.SGD(p, lr=0.1),
    "sgd_momentum": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9),
    "sgd_dampening": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9, dampening=0.3),
    "sgd_nesterov": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "sgd_weight_decay": lambda o, p: o.SGD(p, lr=0.1, momentum=0.5, weight_decay=0.01),
    "sgd_maximize": lambda o, p: o.SGD(p, lr=0.01, momentum=0.9, maximize=True),
    "adam": lambda o, p: o.Adam(p, lr=0.05),
    "adam_amsgrad": lambda o, p: o.Adam(p, lr=0.05, amsgrad=True),
    "adam_weight_decay": lambda o, p: o.Adam(p, lr=0.05, weight_decay=0.1, betas=(0.8, 0.99), eps=1e-6),
    "adam_maximize": lambda o, p: o.Adam(p, lr=0.05, maximize=True),
    "adamw": lambda o, p: o.AdamW(p, lr=0.05),
    "adamw_amsgrad": lambda o, p: o.AdamW(p, lr=0.05, weight_decay=0.3, amsgrad=True),
    "rmsprop": lambda o, p: o.RMSprop(p, lr=0.01),
    "rmsprop_centered": lambda o, p: o.RMSprop(p, lr=0.01, centered=True),
    "rmsprop_momentum": lambda o, p: o.RMSprop(p, lr=0.01, momentum=0.9, weight_decay=0.1),
    "rmsprop_centered_momentum": lambda o, p: o.RMSprop(p, lr=0.01, alpha=0.9, centered=True, momentum=0.5),
    "rmsprop_maximize": lambda o, p: o.RMSprop(p, lr=0.01, maximize=True),
    "adagrad": lambda o, p: o.Adagrad(p, lr=0.1),
    "adagrad_lr_decay": lambda o, p: o.Adagrad(p, lr=0.1, lr_decay=0.05, weight_decay=0.1,
                                               initial_accumulator_value=0.2),
    "adagrad_maximize": lambda o, p: o.Adagrad(p, lr=0.1, maximize=True),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_torch_after_20_steps(name: str) -> None:
    g_params = _run(genesis, CONFIGS[name])
    t_params = _run(torch, CONFIGS[name])
    for g, t in zip(g_params, t_params):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["sgd_nesterov", "adam_amsgrad", "adamw", "rmsprop_centered_momentum",
                                  "adagrad_lr_decay"])
def test_per_parameter_path_matches_the_multi_tensor_path(name: str) -> None:
    """foreach=False updates parameter by parameter; the default updates their concatenation: same bits."""
    def with_foreach(flag: bool):
        return lambda o, p: _with_options(CONFIGS[name](o, p), foreach=flag)

    loop = _run(genesis, with_foreach(False))
    flat = _run(genesis, with_foreach(True))
    for a, b in zip(loop, flat):
        assert genesis.equal(a, b)


def _with_options(opt: optim.Optimizer, **options: object) -> optim.Optimizer:
    for group in opt.param_groups:
        group.update(options)
    return opt


def test_multi_tensor_state_views_and_mixed_dtypes() -> None:
    w = genesis.randn(3, 2, dtype=genesis.float64, requires_grad=True)
    b = genesis.randn(2, dtype=genesis.float64, requires_grad=True)
    h = genesis.randn(2, dtype=genesis.float32, requires_grad=True)
    opt = optim.Adam([w, b, h], lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        ((w.sum(0) + b) ** 2).sum().backward()
        (h**2).sum().backward()
        opt.step()
    assert opt.state[w]["exp_avg"].shape == w.shape and opt.state[h]["exp_avg"].dtype is genesis.float32
    assert opt.state[w]["step"] == opt.state[h]["step"] == 2
    # A step where one parameter has no gradient leaves it and its state alone.
    before, state_before = h.clone(), opt.state[h]["exp_avg"].clone()
    opt.zero_grad()
    ((w.sum(0) + b) ** 2).sum().backward()
    opt.step()
    assert genesis.equal(h, before) and genesis.equal(opt.state[h]["exp_avg"], state_before)
    assert opt.state[w]["step"] == 3 and opt.state[h]["step"] == 2


@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "rmsprop_centered", "adagrad"])
def test_param_groups_match_torch(name: str) -> None:
    g_params = _run(genesis, CONFIGS[name], groups=True)
    t_params = _run(torch, CONFIGS[name], groups=True)
    for g, t in zip(g_params, t_params):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


def test_adamw_is_adam_with_decoupled_weight_decay() -> None:
    a = _run(genesis, lambda o, p: o.AdamW(p, lr=0.05, weight_decay=0.2), steps=5)
    b = _run(genesis, lambda o, p: o.Adam(p, lr=0.05, weight_decay=0.2, decoupled_weight_decay=True), steps=5)
    c = _run(genesis, lambda o, p: o.Adam(p, lr=0.05, weight_decay=0.2), steps=5)
    assert all(genesis.equal(x, y) for x, y in zip(a, b))
    assert not genesis.allclose(a[0], c[0])
    assert issubclass(optim.AdamW, optim.Adam)


def assert_resumes_exactly(make_opt) -> None:
    """10 steps, state_dict, a fresh optimizer loads it and continues: equal to 20 uninterrupted steps."""
    straight = _run(genesis, make_opt, steps=20)
    params = _make_params(genesis)
    x = to_genesis(torch.linspace(-1, 1, 20, dtype=torch.float64).reshape(5, 4))
    opt = make_opt(optim, params)
    for _ in range(10):
        opt.zero_grad()
        _loss(genesis, params, x).backward()
        opt.step()
    saved = opt.state_dict()
    assert sorted(saved["state"]) == [0, 1]
    assert saved["param_groups"][0]["params"] == [0, 1]
    resumed = make_opt(optim, params)
    resumed.load_state_dict(saved)
    assert resumed.state[params[0]] is not opt.state[params[0]]
    for _ in range(10):
        resumed.zero_grad()
        _loss(genesis, params, x).backward()
        resumed.step()
    for a, b in zip(params, straight):
        assert genesis.equal(a, b)


@pytest.mark.parametrize("name", ["sgd_momentum", "adam_amsgrad", "rmsprop_centered_momentum", "adagrad"])
def test_state_dict_round_trip_resumes_exactly(name: str) -> None:
    assert_resumes_exactly(CONFIGS[name])


def test_state_dict_layout_matches_torch() -> None:
    t_params, g_params = _make_params(torch), _make_params(genesis)
    t_opt = torch.optim.SGD([{"params": [t_params[0]]}, {"params": [t_params[1]], "lr": 0.5}], lr=0.1, momentum=0.9)
    g_opt = optim.SGD([{"params": [g_params[0]]}, {"params": [g_params[1]], "lr": 0.5}], lr=0.1, momentum=0.9)
    for lib, params, opt in ((torch, t_params, t_opt), (genesis, g_params, g_opt)):
        x = torch.ones(5, 4, dtype=torch.float64) if lib is torch else genesis.ones(5, 4, dtype=genesis.float64,
                                                                                   device=DEVICE)
        _loss(lib, params, x).backward()
        opt.step()
    t_sd, g_sd = t_opt.state_dict(), g_opt.state_dict()
    assert [g["params"] for g in g_sd["param_groups"]] == [g["params"] for g in t_sd["param_groups"]]
    assert set(g_sd["param_groups"][1]) == set(t_sd["param_groups"][1])
    assert g_sd["param_groups"][1]["lr"] == 0.5
    assert set(g_sd["state"]) == set(t_sd["state"]) == {0, 1}
    assert_same(g_sd["state"][0]["momentum_buffer"], t_sd["state"][0]["momentum_buffer"])


@pytest.mark.parametrize("foreach", [None, False, True])
def test_sgd_without_momentum_keeps_no_state_as_torch(foreach: bool | None) -> None:
    # torch's SGD makes no state entry without momentum; a group with momentum next to it keeps its buffers.
    seen = []
    for lib in (torch, genesis):
        params = _make_params(lib)
        opt = lib.optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "momentum": 0.9}], lr=0.1,
                            foreach=foreach)
        x = torch.ones(5, 4, dtype=torch.float64) if lib is torch else genesis.ones(5, 4, dtype=genesis.float64,
                                                                                   device=DEVICE)
        for _ in range(2):
            opt.zero_grad()
            _loss(lib, params, x).backward()
            opt.step()
        state = opt.state_dict()["state"]
        seen.append((len(opt.state), {i: sorted(s) for i, s in state.items()}, params[0].detach().sum().item()))
    assert seen[0][:2] == seen[1][:2] == (1, {1: ["momentum_buffer"]})
    assert seen[0][2] == pytest.approx(seen[1][2])


@pytest.mark.skipif(DEVICE != "cpu", reason="on the CPU the update is torch's own arithmetic; GPU kernels round in "
                                           "their own order")
@pytest.mark.parametrize("kwargs", [{"momentum": 0.9, "nesterov": True, "weight_decay": 1e-4},
                                    {"momentum": 0.9, "dampening": 0.1, "maximize": True}, {"weight_decay": 0.01},
                                    {"momentum": 0.5, "fused": True}])
def test_sgd_on_the_cpu_gives_torchs_bits(kwargs: dict) -> None:
    # float32 parameters, four steps of given gradients: the same bits as torch.optim.SGD's default.
    gen = torch.Generator().manual_seed(5)
    init = [torch.randn(64, 32, generator=gen), torch.randn(32, generator=gen)]
    steps = [[torch.randn(t.shape, generator=gen) for t in init] for _ in range(4)]
    t_params = [t.clone().requires_grad_() for t in init]
    g_params = [to_genesis(t, requires_grad=True) for t in init]
    t_opt = torch.optim.SGD(t_params, lr=0.1, **{k: v for k, v in kwargs.items() if k != "fused"})
    g_opt = optim.SGD(g_params, lr=0.1, **kwargs)
    for grads in steps:
        for t, g, grad in zip(t_params, g_params, grads):
            t.grad, g.grad = grad.clone(), to_genesis(grad)
        t_opt.step()
        g_opt.step()
    for t, g in zip(t_params, g_params):
        assert torch.equal(to_torch(g).detach(), t.detach())


def test_load_state_dict_casts_to_param_and_checks_groups() -> None:
    params = _make_params(genesis)
    opt = optim.Adam(params, lr=0.1)
    _loss(genesis, params, genesis.ones(5, 4, dtype=genesis.float64, device=DEVICE)).backward()
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = sd["state"][0]["exp_avg"].float()
    other = optim.Adam(_make_params(genesis), lr=0.1)
    other.load_state_dict(sd)
    loaded = other.state[other.param_groups[0]["params"][0]]
    assert loaded["exp_avg"].dtype is genesis.float64 and loaded["step"] == 1
    one_param = optim.Adam([_make_params(genesis)[0]], lr=0.1)
    before = one_param.state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        one_param.load_state_dict(sd)
    assert one_param.state_dict() == before
    two_groups = optim.Adam([{"params": [params[0]]}, {"params": [params[1]]}])
    with pytest.raises(ValueError, match="different number of parameter groups"):
        two_groups.load_state_dict(sd)


def test_add_param_group_and_defaults() -> None:
    w, b = _make_params(genesis)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1]["lr"] == 0.01 and opt.param_groups[1]["momentum"] == 0.9
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [w]})
    # As torch, a group's own values are not validated (only the constructor's are): a wrapper optimizer such as
    # SAM passes groups holding its own keys ("rho") to an inner SGD.
    opt.add_param_group({"params": [genesis.zeros(2, requires_grad=True)], "lr": -2, "rho": 2.0})
    torch_opt = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)
    torch_opt.add_param_group({"params": [torch.zeros(2, requires_grad=True)], "lr": -2, "rho": 2.0})
    assert len(opt.param_groups) == 3 and opt.param_groups[2]["lr"] == torch_opt.param_groups[1]["lr"] == -2
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match=r"but got genesis\.(cuda\.)?DoubleTensor"):  # the tensor's type(), as torch's
        optim.SGD(w, lr=0.1)


def test_zero_grad() -> None:
    w, b = _make_params(genesis)
    opt = optim.SGD([w, b], lr=0.1)
    _loss(genesis, [w, b], genesis.ones(5, 4, dtype=genesis.float64, device=DEVICE)).backward()
    opt.zero_grad(set_to_none=False)
    assert w.grad is not None and not w.grad.any().item()
    opt.zero_grad()
    assert w.grad is None and b.grad is None


def test_step_skips_params_without_grad_and_runs_closure() -> None:
    w, b = _make_params(genesis)
    before = to_torch(b).clone()
    opt = optim.Adam([w, b], lr=0.1)
    x = genesis.ones(5, 4, dtype=genesis.float64, device=DEVICE)

    def closure() -> genesis.Tensor:
        opt.zero_grad()
        loss = (x @ w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert isinstance(loss, genesis.Tensor)
    assert torch.equal(to_torch(b), before)
    assert b not in opt.state and w in opt.state


@pytest.mark.parametrize("make, message", [
    (lambda o, p: o.SGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda o, p: o.SGD(p, lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda o, p: o.SGD(p, lr=0.1, weight_decay=-1e-3), "Invalid weight_decay value: -0.001"),
    (lambda o, p: o.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires"),
    (lambda o, p: o.Adam(p, lr=0.1, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda o, p: o.Adam(p, lr=0.1, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda o, p: o.AdamW(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda o, p: o.RMSprop(p, alpha=-0.1), "Invalid alpha value: -0.1"),
    (lambda o, p: o.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda o, p: o.Adagrad(p, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
])
def test_invalid_hyperparameters(make, message: str) -> None:
    with pytest.raises(ValueError):
        make(torch.optim, _make_params(torch))
    with pytest.raises(ValueError, match=re.escape(message)):
        make(optim, _make_params(genesis))


def test_non_leaf_param_rejected() -> None:
    w = genesis.ones(2, requires_grad=True) * 2
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w], lr=0.1)


@pytest.mark.parametrize("name", ["sgd_nesterov", "adamw_amsgrad", "rmsprop_centered_momentum", "adagrad_lr_decay"])
def test_large_and_small_parameters_together_match_torch(name: str) -> None:
    """A parameter above the multi-tensor size limit updates on its own, the small ones together; scratch buffers
    grow when a larger parameter comes after a smaller one."""
    shapes = [(3,), (5, 2), (200, 200)]
    results = []
    for lib in (genesis, torch):
        gen = torch.Generator().manual_seed(3)
        values = [torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes]
        params = [v.clone().requires_grad_() if lib is torch else to_genesis(v, requires_grad=True) for v in values]
        opt = CONFIGS[name](lib.optim, params)
        for step in range(3):
            opt.zero_grad()
            sum(((p * (step + 1)).sin() ** 2).sum() for p in params).backward()
            opt.step()
        results.append(params)
    for g, t in zip(*results):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


# capturable=True and tensor learning rates (a step captured in a CUDA graph reads both on the device). torch refuses
# capturable=True on the CPU, so the references there are its non-capturable results with the same tensor lr.
CAPTURABLE = {
    "adam": (lambda o, p, lr: o.Adam(p, lr=lr, capturable=True), lambda o, p, lr: o.Adam(p, lr=lr, foreach=False)),
    "adamw_fused": (lambda o, p, lr: o.AdamW(p, lr=lr, weight_decay=0.3, capturable=True, fused=True),
                    lambda o, p, lr: o.AdamW(p, lr=lr, weight_decay=0.3, foreach=False)),
    "adam_maximize_l2": (lambda o, p, lr: o.Adam(p, lr=lr, weight_decay=0.1, maximize=True, capturable=True),
                         lambda o, p, lr: o.Adam(p, lr=lr, weight_decay=0.1, maximize=True, foreach=False)),
    "adamw_amsgrad": (lambda o, p, lr: o.AdamW(p, lr=lr, amsgrad=True, capturable=True),
                      lambda o, p, lr: o.AdamW(p, lr=lr, amsgrad=True, foreach=False)),
}


@pytest.mark.parametrize("tensor_lr", [False, True])
@pytest.mark.parametrize("name", sorted(CAPTURABLE))
def test_capturable_and_tensor_lr_match_torch(name: str, tensor_lr: bool) -> None:
    make_g, make_t = CAPTURABLE[name]

    def lr(lib: object) -> object:
        if not tensor_lr:
            return 0.05
        return torch.tensor(0.05, dtype=torch.float64) if lib is torch else genesis.tensor(0.05, device=DEVICE)

    results = []
    for lib, make in ((genesis, make_g), (torch, make_t)):
        rate = lr(lib)
        params = _run(lib, lambda o, p, rate=rate, make=make: make(o, p, rate), steps=10)
        results.append((params, rate))
    (g_params, g_lr), (t_params, _) = results
    for g, t in zip(g_params, t_params):
        assert_same(g, t, rtol=1e-6, atol=1e-8)  # float32 step counts and bias corrections on the device


def test_capturable_step_is_a_device_tensor_counted_in_place() -> None:
    params = _make_params(genesis)
    lr = genesis.tensor(0.1, device=DEVICE)
    opt = optim.AdamW(params, lr=lr, capturable=True)
    steps = []
    for _ in range(3):
        for p in params:
            p.grad = genesis.ones_like(p)
        opt.step()
        steps.append(opt.state[params[0]]["step"])
    assert all(s is steps[0] for s in steps)  # the same tensor, counted in place (a captured step counts replays)
    assert steps[0].dtype is genesis.float32 and steps[0].dim() == 0 and float(steps[0].item()) == 3.0
    assert steps[0].device == params[0].device


def test_scheduler_fills_a_tensor_lr_in_place() -> None:
    params = _make_params(genesis)
    lr = genesis.tensor(0.1, device=DEVICE)
    opt = optim.Adam(params, lr=lr, capturable=True)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and abs(float(lr.item()) - 0.05) < 1e-7


def test_tensor_lr_must_have_one_element() -> None:
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.Adam(_make_params(genesis), lr=genesis.tensor([0.1, 0.2]))


COMPLEX_CONFIGS = {
    "sgd_momentum": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9),
    "adam": lambda o, p: o.Adam(p, lr=0.05),
    "adam_amsgrad": lambda o, p: o.Adam(p, lr=0.05, amsgrad=True),
    "adamw": lambda o, p: o.AdamW(p, lr=0.05, weight_decay=0.1),
    "adamax": lambda o, p: o.Adamax(p, lr=0.05),
    "nadam": lambda o, p: o.NAdam(p, lr=0.05),
    "radam": lambda o, p: o.RAdam(p, lr=0.05),
    "rmsprop_centered_momentum": lambda o, p: o.RMSprop(p, lr=0.01, centered=True, momentum=0.5),
    "adagrad": lambda o, p: o.Adagrad(p, lr=0.1),
    "adadelta": lambda o, p: o.Adadelta(p, lr=0.5),
    "asgd": lambda o, p: o.ASGD(p, lr=0.05),
    "rprop": lambda o, p: o.Rprop(p, lr=0.05),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CONFIGS))
def test_complex_parameters_match_torch(name: str) -> None:
    # torch updates a complex parameter as pairs of reals (g * g squares each part); its state stays complex.
    gen = torch.Generator().manual_seed(0)
    w0 = torch.randn(3, 2, generator=gen, dtype=torch.complex64)
    x = torch.randn(2, 3, generator=gen, dtype=torch.complex64)
    results = []
    for lib in (torch, genesis):
        w = w0.clone().requires_grad_() if lib is torch else to_genesis(w0, requires_grad=True)
        xl = x if lib is torch else to_genesis(x)
        opt = COMPLEX_CONFIGS[name](lib.optim, [w])
        for _ in range(4):
            opt.zero_grad()
            ((xl @ w).abs() ** 2).sum().backward()
            opt.step()
        results.append((w, opt.state[w]))
    (tw, tstate), (gw, gstate) = results
    assert_same(gw, tw.detach(), what=f"{name} parameter", rtol=1e-5, atol=1e-6)
    assert sorted(gstate) == sorted(tstate)
    for key, value in tstate.items():
        if isinstance(value, torch.Tensor) and value.ndim:
            assert_same(gstate[key], value, what=f"{name} state {key}", rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop", "adagrad"])
def test_a_parameter_listed_twice_warns_and_is_stepped_twice(name: str) -> None:
    # torch keeps duplicates (tied weights gathered from two modules) with a warning and updates them once per
    # appearance, in turn; the state dict names a parameter by its last position in its group.
    make = {"sgd": lambda o, p: o.SGD(p, lr=0.1), "adam": lambda o, p: o.Adam(p, lr=0.05),
            "rmsprop": lambda o, p: o.RMSprop(p, lr=0.01), "adagrad": lambda o, p: o.Adagrad(p, lr=0.1)}[name]
    x = torch.linspace(-1, 1, 20, dtype=torch.float64).reshape(5, 4)
    results, indices = [], []
    for lib in (torch, genesis):
        params = _make_params(lib)
        with pytest.warns(UserWarning, match="duplicate parameters"):
            opt = make(lib.optim, [params[0], params[1], params[0]])
        for _ in range(3):
            opt.zero_grad()
            _loss(lib, params, x if lib is torch else to_genesis(x)).backward()
            opt.step()
        results.append(params)
        indices.append(opt.state_dict()["param_groups"][0]["params"])
    assert indices[0] == indices[1] == [2, 1, 2]
    for t, g in zip(*results):
        assert_same(g, t)
