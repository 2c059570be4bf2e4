"""Learning-rate schedulers against torch.optim.lr_scheduler: the get_last_lr sequence step for step."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

import genesis
from genesis import optim
from genesis.optim import lr_scheduler

STEPS = 60


def _optimizer(lib: object, kind: str = "sgd") -> object:
    w = lib.zeros(3, requires_grad=True)
    b = lib.zeros(2, requires_grad=True)
    groups = [{"params": [w]}, {"params": [b], "lr": 0.03}]
    if kind == "adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def _schedulers(lib: object, opt: object, name: str) -> object:
    s = lib.optim.lr_scheduler
    if name == "lambda":
        return s.LambdaLR(opt, lambda e: 1.0 / (1 + e))
    if name == "lambda_per_group":
        return s.LambdaLR(opt, [lambda e: 0.9**e, lambda e: 1.0 + e % 3])
    if name == "step":
        return s.StepLR(opt, step_size=7, gamma=0.5)
    if name == "multistep":
        return s.MultiStepLR(opt, milestones=[5, 12, 12, 40], gamma=0.3)
    if name == "exponential":
        return s.ExponentialLR(opt, gamma=0.93)
    if name == "cosine":
        return s.CosineAnnealingLR(opt, T_max=17, eta_min=0.001)
    if name == "linear":
        return s.LinearLR(opt, start_factor=0.2, end_factor=0.9, total_iters=11)
    if name == "constant":
        return s.ConstantLR(opt, factor=0.25, total_iters=9)
    if name == "onecycle":
        return s.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=STEPS + 1)
    if name == "onecycle_linear_three_phase":
        return s.OneCycleLR(opt, max_lr=0.8, epochs=6, steps_per_epoch=11, anneal_strategy="linear",
                            three_phase=True, div_factor=10.0)
    if name == "sequential":
        warm = s.LinearLR(opt, start_factor=0.1, total_iters=5)
        decay = s.CosineAnnealingLR(opt, T_max=30)
        return s.SequentialLR(opt, [warm, decay], milestones=[5])
    if name == "sequential_three":
        first = s.ConstantLR(opt, factor=0.5, total_iters=4)
        second = s.ExponentialLR(opt, gamma=0.9)
        third = s.StepLR(opt, step_size=3, gamma=0.5)
        return s.SequentialLR(opt, [first, second, third], milestones=[10, 25])
    raise AssertionError(name)


NAMES = ["lambda", "lambda_per_group", "step", "multistep", "exponential", "cosine", "linear", "constant",
         "onecycle", "onecycle_linear_three_phase", "sequential", "sequential_three"]


def _trajectory(lib: object, name: str, kind: str = "sgd") -> tuple[list, list]:
    opt = _optimizer(lib, kind)
    sched = _schedulers(lib, opt, name)
    lrs, momenta = [list(sched.get_last_lr())], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that optimizer.step() was never called
        for _ in range(STEPS if "three_phase" not in name else 65):
            sched.step()
            lrs.append(list(sched.get_last_lr()))
            group = opt.param_groups[0]
            momenta.append(group["betas"][0] if "betas" in group else group["momentum"])
    return lrs, momenta


@pytest.mark.parametrize("name", NAMES)
def test_lr_sequence_matches_torch(name: str) -> None:
    g_lrs, g_mom = _trajectory(genesis, name)
    t_lrs, t_mom = _trajectory(torch, name)
    assert len(g_lrs) == len(t_lrs)
    for step, (g, t) in enumerate(zip(g_lrs, t_lrs)):
        assert g == pytest.approx(t, rel=1e-12, abs=1e-15), f"step {step}: {g} != {t}"
    assert g_mom == pytest.approx(t_mom, rel=1e-12)


def test_onecycle_cycles_adam_beta1_like_torch() -> None:
    g_lrs, g_mom = _trajectory(genesis, "onecycle", kind="adam")
    t_lrs, t_mom = _trajectory(torch, "onecycle", kind="adam")
    assert sum(g_lrs, []) == pytest.approx(sum(t_lrs, []), rel=1e-12)
    assert g_mom == pytest.approx(t_mom, rel=1e-12)


def test_onecycle_past_total_steps_raises() -> None:
    opt = _optimizer(genesis)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()


@pytest.mark.parametrize("mode, threshold_mode, cooldown", [("min", "rel", 0), ("max", "abs", 2),
                                                            ("min", "abs", 1), ("max", "rel", 0)])
def test_reduce_on_plateau_matches_torch(mode: str, threshold_mode: str, cooldown: int) -> None:
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.5, 0.5, 0.5, 0.49, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0]
    metrics = metrics * 3
    results = []
    for lib in (genesis, torch):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=2,
                                                         threshold_mode=threshold_mode, threshold=0.01,
                                                         cooldown=cooldown, min_lr=[0.001, 0.01])
        lrs = []
        for m in metrics:
            sched.step(m)
            lrs.append(list(sched.get_last_lr()))
        results.append(lrs)
    assert results[0] == results[1]


@pytest.mark.parametrize("name", ["step", "multistep", "cosine", "onecycle", "sequential", "lambda"])
def test_state_dict_resumes_the_sequence(name: str) -> None:
    opt = _optimizer(genesis)
    sched = _schedulers(genesis, opt, name)
    for _ in range(13):
        sched.step()
    saved_state = sched.state_dict()
    saved_opt = opt.state_dict()
    expected = []
    for _ in range(20):
        sched.step()
        expected.append(sched.get_last_lr())
    opt2 = _optimizer(genesis)
    sched2 = _schedulers(genesis, opt2, name)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_state)
    got = []
    for _ in range(20):
        sched2.step()
        got.append(sched2.get_last_lr())
    assert got == expected
    assert "optimizer" not in saved_state


def test_reduce_on_plateau_state_dict() -> None:
    opt = _optimizer(genesis)
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    sched.step(1.0)
    sched.step(2.0)
    state = sched.state_dict()
    other = lr_scheduler.ReduceLROnPlateau(_optimizer(genesis), patience=0)
    other.load_state_dict(state)
    assert other.best == 1.0 and other.last_epoch == 2


def test_warmup_cosine() -> None:
    opt = _optimizer(genesis)
    sched = lr_scheduler.warmup_cosine(opt, warmup_steps=10, total_steps=110, min_lr_ratio=0.1)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(120):
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs[0] == 0.0
    assert lrs[5] == pytest.approx(0.05)
    assert lrs[10] == pytest.approx(0.1)
    assert lrs[60] == pytest.approx(0.01 + 0.09 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert lrs[110] == pytest.approx(0.01) and lrs[120] == pytest.approx(0.01)
    assert all(a <= b for a, b in zip(lrs[:10], lrs[1:11]))
    assert all(a >= b for a, b in zip(lrs[10:110], lrs[11:111]))
    with pytest.raises(ValueError, match="warmup_steps=20, total_steps=10"):
        lr_scheduler.warmup_cosine(opt, warmup_steps=20, total_steps=10)


@pytest.mark.parametrize("make", [
    lambda s, o: s.LinearLR(o, start_factor=0.0),
    lambda s, o: s.ConstantLR(o, factor=1.5),
    lambda s, o: s.ReduceLROnPlateau(o, factor=1.0),
    lambda s, o: s.ReduceLROnPlateau(o, mode="median"),
    lambda s, o: s.OneCycleLR(o, max_lr=1.0),
    lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1.5),
    lambda s, o: s.SequentialLR(o, [s.StepLR(o, 2)], milestones=[3]),
])
def test_invalid_arguments(make) -> None:
    with pytest.raises(ValueError):
        make(torch.optim.lr_scheduler, _optimizer(torch))
    with pytest.raises(ValueError):
        make(lr_scheduler, _optimizer(genesis))


def test_scheduler_needs_an_optimizer() -> None:
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), step_size=2)
    assert isinstance(_optimizer(genesis), optim.Optimizer)
