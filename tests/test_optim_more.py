"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and LBFGS against torch.optim: parameters after several steps with
their options, state-dict round trips, hyperparameter checks."""

from __future__ import annotations

import importlib

import pytest
import torch

import genesis
from genesis import optim
from tests.helpers import DEVICE, assert_same, to_genesis
from tests.test_optim import _make_params, _run, assert_resumes_exactly

CONFIGS = {
    "adadelta": lambda o, p: o.Adadelta(p),
    "adadelta_options": lambda o, p: o.Adadelta(p, lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1),
    "adadelta_maximize": lambda o, p: o.Adadelta(p, lr=0.1, maximize=True),
    "adamax": lambda o, p: o.Adamax(p, lr=0.05),
    "adamax_options": lambda o, p: o.Adamax(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "adamax_maximize": lambda o, p: o.Adamax(p, lr=0.01, maximize=True),
    "nadam": lambda o, p: o.NAdam(p, lr=0.05),
    "nadam_options": lambda o, p: o.NAdam(p, lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.01),
    "nadamw": lambda o, p: o.NAdam(p, lr=0.05, weight_decay=0.2, decoupled_weight_decay=True),
    "radam": lambda o, p: o.RAdam(p, lr=0.05),
    "radam_options": lambda o, p: o.RAdam(p, lr=0.05, betas=(0.5, 0.9), eps=1e-6, weight_decay=0.1),
    "radamw": lambda o, p: o.RAdam(p, lr=0.05, betas=(0.5, 0.9), weight_decay=0.2, decoupled_weight_decay=True),
    "asgd": lambda o, p: o.ASGD(p, lr=0.05),
    "asgd_averaging": lambda o, p: o.ASGD(p, lr=0.05, lambd=1e-2, alpha=0.5, t0=5, weight_decay=0.1),
    "asgd_maximize": lambda o, p: o.ASGD(p, lr=0.01, maximize=True),
    "rprop": lambda o, p: o.Rprop(p, lr=0.05),
    "rprop_options": lambda o, p: o.Rprop(p, lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)),
    "rprop_maximize": lambda o, p: o.Rprop(p, lr=0.01, maximize=True),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_torch_after_20_steps(name: str) -> None:
    for g, t in zip(_run(genesis, CONFIGS[name]), _run(torch, CONFIGS[name])):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["adadelta", "nadam", "radamw", "asgd_averaging", "rprop"])
def test_param_groups_match_torch(name: str) -> None:
    for g, t in zip(_run(genesis, CONFIGS[name], groups=True), _run(torch, CONFIGS[name], groups=True)):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["adadelta_options", "adamax", "nadam_options", "radam", "asgd_averaging",
                                  "rprop_options"])
def test_multi_tensor_path_matches_torch(name: str) -> None:
    """foreach=True updates the concatenation of the parameters (the GPU default): the same results."""
    def make(o, p):
        opt = CONFIGS[name](o, p)
        if o is optim:
            for group in opt.param_groups:
                group["foreach"] = True
        return opt

    for g, t in zip(_run(genesis, make), _run(torch, CONFIGS[name])):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


# Updates whose every rounding is torch's (the weight decay and ``param.add_(d, alpha=-lr)`` rounded once, addcdiv's
# ``(value * t1) / t2``): float32 parameters end bit for bit as torch's. Those with an ``addcmul_`` (RMSprop, Adagrad,
# Adadelta, NAdam, RAdam) differ in the last bit, where torch's CPU kernel fuses the multiply-add.
BITWISE = {
    "sgd_dampening_weight_decay": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3),
    "sgd_nesterov_weight_decay": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2),
    "sgd_maximize": lambda o, p: o.SGD(p, lr=0.05, momentum=0.5, maximize=True, weight_decay=1e-2),
    "adamax": lambda o, p: o.Adamax(p, lr=0.02, weight_decay=1e-3),
    "asgd": lambda o, p: o.ASGD(p, lr=0.05, lambd=1e-3, t0=3, weight_decay=1e-3),
    "rprop": lambda o, p: o.Rprop(p, lr=0.01),
}


@pytest.mark.skipif(DEVICE != "cpu", reason="the roundings compared are those of torch's CPU kernels")
@pytest.mark.parametrize("name", sorted(BITWISE))
def test_float32_steps_round_as_torchs(name: str) -> None:
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(4099, generator=gen)  # past any vector width: the vector and scalar tails both run
    grads = [torch.randn(4099, generator=gen) for _ in range(6)]
    results = []
    for lib, convert in ((torch, torch.clone), (genesis, to_genesis)):
        p = lib.nn.Parameter(convert(start))
        opt = BITWISE[name](lib.optim, [p])
        for g in grads:
            p.grad = convert(g)
            opt.step()
        results.append(p.detach())
    assert_same(results[1], results[0], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["adadelta_options", "adamax", "nadam", "radam", "asgd_averaging", "rprop"])
def test_state_dict_round_trip_resumes_exactly(name: str) -> None:
    assert_resumes_exactly(CONFIGS[name])


def _rosenbrock(lib: object, xy: object) -> object:
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def _lbfgs_run(lib: object, steps: int, **options: object) -> tuple[object, list[float]]:
    start = torch.tensor([-1.5, 2.0], dtype=torch.float64)
    xy = start.clone().requires_grad_() if lib is torch else to_genesis(start, requires_grad=True)
    opt = lib.optim.LBFGS([xy], **options)
    losses = []

    def closure() -> object:
        opt.zero_grad()
        loss = _rosenbrock(lib, xy)
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
    return xy, losses


@pytest.mark.parametrize("options", [{"max_iter": 5}, {"line_search_fn": "strong_wolfe"},
                                     {"lr": 0.5, "max_iter": 5, "history_size": 3},
                                     {"line_search_fn": "strong_wolfe", "max_iter": 4, "history_size": 2}],
                         ids=["plain", "strong_wolfe", "short_history", "wolfe_short_history"])
def test_lbfgs_matches_torch(options: dict) -> None:
    """Four steps on Rosenbrock's function. Without a line search, long runs there amplify last-bit differences of
    the dot products (vectorized sums) into visible ones, so the plain case runs five iterations per step."""
    g_xy, g_losses = _lbfgs_run(genesis, 4, **options)
    t_xy, t_losses = _lbfgs_run(torch, 4, **options)
    assert_same(g_xy, t_xy, rtol=1e-9, atol=1e-10)
    assert g_losses == pytest.approx(t_losses, rel=1e-9, abs=1e-12)


def test_lbfgs_strong_wolfe_minimizes_rosenbrock() -> None:
    xy, _ = _lbfgs_run(genesis, 10, line_search_fn="strong_wolfe")
    assert genesis.allclose(xy.detach(), genesis.tensor([1.0, 1.0], dtype=genesis.float64, device=DEVICE),
                            atol=1e-5)


def test_lbfgs_state_and_arguments() -> None:
    w = genesis.randn(3, requires_grad=True, device=DEVICE)
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [w]}, {"params": [genesis.randn(2, requires_grad=True)]}])
    with pytest.raises(ValueError, match="strong_wolfe"):
        optim.LBFGS([w], line_search_fn="armijo")
    opt = optim.LBFGS([w], max_iter=3)

    def closure() -> genesis.Tensor:
        opt.zero_grad()
        loss = (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    state = opt.state[w]
    assert state["n_iter"] >= 1 and state["func_evals"] >= state["n_iter"]
    assert opt.state_dict()["param_groups"][0]["history_size"] == 100


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: optim.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
    (lambda p: optim.Adadelta(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.Adamax(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.NAdam(p, momentum_decay=-0.1), "Invalid momentum_decay value: -0.1"),
    (lambda p: optim.RAdam(p, eps=-1e-3), "Invalid epsilon value: -0.001"),
    (lambda p: optim.ASGD(p, weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
    (lambda p: optim.Rprop(p, etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
])
def test_bad_hyperparameters_raise_as_torch(make, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        make(_make_params(genesis))


def test_lbfgs_state_dict_round_trip_resumes_exactly() -> None:
    straight, _ = _lbfgs_run(genesis, 4, line_search_fn="strong_wolfe", max_iter=3)
    start = torch.tensor([-1.5, 2.0], dtype=torch.float64)
    xy = to_genesis(start, requires_grad=True)
    opt = optim.LBFGS([xy], line_search_fn="strong_wolfe", max_iter=3)

    def closure() -> genesis.Tensor:
        opt.zero_grad()
        loss = _rosenbrock(genesis, xy)
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    resumed = optim.LBFGS([xy], line_search_fn="strong_wolfe", max_iter=3)
    resumed.load_state_dict(opt.state_dict())
    opt = resumed  # the closure zeroes the gradients through the optimizer in use
    for _ in range(2):
        resumed.step(closure)
    assert genesis.equal(xy, straight)


def _sam_like(lib):
    """A user's optimizer written the way SAM/Lion copies are: ``self.state[p]`` on first sight, its own names."""

    class SignDescent(lib.optim.Optimizer):
        def __init__(self, params, lr=0.1, rho=2.0, momentum=-0.5):
            super().__init__(params, dict(lr=lr, rho=rho, momentum=momentum))

        @lib.no_grad()
        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]  # {} the first time, as torch's defaultdict
                    state["count"] = state.get("count", 0) + 1
                    p.sub_(group["lr"] * group["rho"] * p.grad.sign() / state["count"])

    return SignDescent


def test_user_optimizer_gets_torch_base_class_behaviour():
    """A subclass of Optimizer reads state[p] before writing it, and names rho=2.0 / momentum=-0.5 that the built-in
    optimizers would reject: torch's base class allows both, so Genesis's must too."""
    results = []
    for lib in (torch, genesis):
        w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        opt = _sam_like(lib)([w])
        for _ in range(3):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        results.append((w.detach().tolist(), opt.state[w]["count"], len(opt.state_dict()["state"])))
    assert results[0] == results[1]
    with pytest.raises(ValueError, match="Invalid momentum value"):
        optim.SGD([genesis.zeros(2, requires_grad=True)], lr=0.1, momentum=-0.5)  # the built-ins still check


def test_user_optimizer_keeps_its_own_step_count_through_a_state_dict():
    # torch's base class loads "step" as saved when the subclass counts its own steps (an int here).
    counts = []
    for lib in (torch, genesis):
        SignDescent = _sam_like(lib)
        w = lib.tensor([1.0, -2.0], requires_grad=True)
        opt = SignDescent([w])
        (w * w).sum().backward()
        opt.step()
        opt.state[w]["step"] = 7
        again = SignDescent([w])
        again.load_state_dict(opt.state_dict())
        counts.append(again.state[w]["step"])
    assert counts == [7, 7] and type(counts[1]) is int


def _hook_log(lib) -> list:
    """The calls of every kind of optimizer hook over a step, a state_dict() and a load_state_dict()."""
    log: list = []
    w = lib.tensor([1.0, -2.0], requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1)
    module = importlib.import_module(f"{lib.__name__}.optim.optimizer")  # torch.optim hides it as an attribute
    handles = [
        module.register_optimizer_step_pre_hook(lambda o, a, k: log.append(("global pre", len(a)))),
        module.register_optimizer_step_post_hook(lambda o, a, k: log.append("global post")),
        opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", o is opt)) or (a, {"closure": None})),
        opt.register_step_post_hook(lambda o, a, k: log.append(("post", sorted(k)))),
        opt.register_state_dict_pre_hook(lambda o: log.append("sd pre")),
        opt.register_state_dict_pre_hook(lambda o: log.append("sd pre first"), prepend=True),
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1}),
        opt.register_load_state_dict_pre_hook(lambda o, sd: log.append(sorted(sd)) or
                                              {k: v for k, v in sd.items() if k != "extra"}),
        opt.register_load_state_dict_post_hook(lambda o: log.append("load post")),
    ]
    (w * w).sum().backward()
    opt.step()
    state = opt.state_dict()
    log.append(sorted(state))
    opt.load_state_dict(state)
    for handle in handles:
        handle.remove()
    opt.step()
    log.append(w.detach().tolist())
    return log


def test_optimizer_hooks_run_as_torchs():
    assert _hook_log(genesis) == _hook_log(torch)
    opt = optim.SGD([genesis.zeros(2, requires_grad=True)], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: "not a pair")
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        opt.step()


def test_optimizers_live_in_torchs_module_paths():
    """``from torch.optim.adamw import AdamW`` and the like (also names in a checkpoint's safe globals) give the
    classes of ``genesis.optim``."""
    import importlib
    import inspect

    for name in dir(torch.optim):
        obj = getattr(torch.optim, name)
        if inspect.isclass(obj) and hasattr(genesis.optim, name) and obj.__module__.startswith("torch.optim."):
            module = importlib.import_module("genesis" + obj.__module__[len("torch"):])
            assert getattr(module, name, None) is getattr(genesis.optim, name), obj.__module__
