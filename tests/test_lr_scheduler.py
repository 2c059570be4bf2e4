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
    if name == "multiplicative":
        return s.MultiplicativeLR(opt, lambda e: 0.95)
    if name == "multiplicative_per_group":
        return s.MultiplicativeLR(opt, [lambda e: 0.9 if e % 4 else 1.2, lambda e: 1.0 - 0.01 * e])
    if name == "polynomial":
        return s.PolynomialLR(opt, total_iters=23)
    if name == "polynomial_power":
        return s.PolynomialLR(opt, total_iters=17, power=2.5)
    if name == "warm_restarts":
        return s.CosineAnnealingWarmRestarts(opt, T_0=7)
    if name == "warm_restarts_mult":
        return s.CosineAnnealingWarmRestarts(opt, T_0=5, T_mult=2, eta_min=0.002)
    if name == "cyclic_triangular":
        return s.CyclicLR(opt, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=7, step_size_down=5)
    if name == "cyclic_triangular2":
        return s.CyclicLR(opt, base_lr=[0.01, 0.02], max_lr=0.3, step_size_up=4, mode="triangular2",
                          base_momentum=[0.7, 0.75], max_momentum=0.95)
    if name == "cyclic_exp_range":
        return s.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=6, mode="exp_range", gamma=0.97)
    if name == "cyclic_scale_fn":
        return s.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=5, scale_fn=lambda x: 1 / (1 + 0.1 * x),
                          scale_mode="iterations", cycle_momentum=False)
    if name == "chained":
        return s.ChainedScheduler([s.ConstantLR(opt, factor=0.1, total_iters=4), s.ExponentialLR(opt, gamma=0.9)])
    if name == "chained_cosine_step":
        return s.ChainedScheduler([s.CosineAnnealingLR(opt, T_max=13), s.StepLR(opt, step_size=9, gamma=0.5)],
                                  optimizer=opt)
    if name == "sequential_of_chained":
        chained = s.ChainedScheduler([s.ConstantLR(opt, factor=0.5, total_iters=3), s.ExponentialLR(opt, gamma=0.8)])
        return s.SequentialLR(opt, [chained, s.PolynomialLR(opt, total_iters=20)], milestones=[8])
    raise AssertionError(name)


NAMES = ["lambda", "lambda_per_group", "step", "multistep", "exponential", "cosine", "linear", "constant",
         "onecycle", "onecycle_linear_three_phase", "sequential", "sequential_three", "multiplicative",
         "multiplicative_per_group", "polynomial", "polynomial_power", "warm_restarts", "warm_restarts_mult",
         "cyclic_triangular", "cyclic_triangular2", "cyclic_exp_range", "cyclic_scale_fn", "chained",
         "chained_cosine_step", "sequential_of_chained"]


def _trajectory(lib: object, name: str, kind: str = "sgd") -> tuple[list, list]:
    opt = _optimizer(lib, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that optimizer.step() was never called
        sched = _schedulers(lib, opt, name)
        lrs, momenta = [list(sched.get_last_lr())], []
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


@pytest.mark.parametrize("name", ["onecycle", "cyclic_triangular", "cyclic_exp_range"])
def test_momentum_cycles_adam_beta1_like_torch(name: str) -> None:
    g_lrs, g_mom = _trajectory(genesis, name, kind="adam")
    t_lrs, t_mom = _trajectory(torch, name, kind="adam")
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


@pytest.mark.parametrize("name", ["step", "multistep", "cosine", "onecycle", "sequential", "lambda", "multiplicative",
                                  "polynomial", "warm_restarts_mult", "cyclic_triangular2", "cyclic_scale_fn",
                                  "chained", "sequential_of_chained"])
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


def test_reduce_on_plateau_with_a_group_added_later_matches_torch() -> None:
    # A scalar min_lr covers groups added after construction; a per-group list cannot (RuntimeError in both).
    results, messages = [], []
    for lib in (genesis, torch):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0, cooldown=1, min_lr=0.02)
        seen = []
        for i, metric in enumerate([1.0, 2.0, 2.0, 2.0, 2.0]):
            if i == 1:
                opt.add_param_group({"params": [lib.zeros(1, requires_grad=True)], "lr": 0.5})
            sched.step(metric)
            seen.append((sched.get_last_lr(), sched.in_cooldown, sched.num_bad_epochs))
        results.append(seen + [sched.min_lrs])
        listed = lib.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(lib), patience=0, min_lr=[0.0, 0.0])
        listed.optimizer.add_param_group({"params": [lib.zeros(1, requires_grad=True)]})
        listed.step(1.0)
        with pytest.raises(RuntimeError) as err:
            listed.step(2.0)
        messages.append(str(err.value))
        with pytest.raises(ValueError) as err:
            lib.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(lib), min_lr=[0.1])
        messages.append(str(err.value))
    assert results[0] == results[1]
    assert messages[:2] == messages[2:]


@pytest.mark.parametrize("name", NAMES)
def test_get_lr_outside_step_warns_as_torch(name: str) -> None:
    # A built-in schedule's get_lr() called by the user warns (it computes the next step's values); step() does not.
    seen = []
    for lib in (genesis, torch):
        opt = _optimizer(lib)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sched = _schedulers(lib, opt, name)
            for _ in range(3):
                opt.step()
                sched.step()
            quiet = [str(w.message) for w in caught]
            caught.clear()
            inner = sched._schedulers[-1] if hasattr(sched, "_schedulers") else sched
            inner.get_lr()
        seen.append((quiet, [str(w.message) for w in caught]))
    assert seen[0] == seen[1]
    assert seen[0][1] == ["To get the last learning rate computed by the scheduler, please use `get_last_lr()`."]


def test_resuming_without_initial_lr_reads_as_torchs() -> None:
    messages = []
    for lib in (genesis, torch):
        with pytest.raises(KeyError) as err:
            lib.optim.lr_scheduler.StepLR(_optimizer(lib), step_size=2, last_epoch=3)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_reduce_on_plateau_state_dict() -> None:
    opt = _optimizer(genesis)
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    sched.step(1.0)
    sched.step(2.0)
    state = sched.state_dict()
    other = lr_scheduler.ReduceLROnPlateau(_optimizer(genesis), patience=0)
    other.load_state_dict(state)
    assert other.best == 1.0 and other.last_epoch == 2


@pytest.mark.parametrize("kwargs", [{"factor": 1.0}, {"mode": "maximum"}, {"threshold_mode": "relative"}])
def test_reduce_on_plateau_argument_errors_read_as_torchs(kwargs: dict) -> None:
    messages = []
    for lib in (torch, genesis):
        with pytest.raises(ValueError) as info:
            lib.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(lib), **kwargs)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


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


@pytest.mark.parametrize("make, error", [
    (lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=0), ValueError),
    (lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=2.5), ValueError),
    (lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=0), ValueError),
    (lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=1.5), ValueError),
    (lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=5, eta_min="0"), ValueError),
    (lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=5).step(-1), ValueError),
    (lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, mode="sawtooth"), ValueError),
    (lambda s, o: s.CyclicLR(o, base_lr=[0.01], max_lr=0.1), ValueError),
    (lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, max_momentum=[0.9, 0.9, 0.9]), ValueError),
    (lambda s, o: s.CyclicLR(object(), base_lr=0.01, max_lr=0.1), TypeError),
    (lambda s, o: s.MultiplicativeLR(o, 0.95), TypeError),
    (lambda s, o: s.MultiplicativeLR(o, [lambda e: 0.9]), ValueError),
    (lambda s, o: s.LambdaLR(o, [lambda e: 0.9] * 3), ValueError),
    (lambda s, o: s.ChainedScheduler([]), ValueError),
    (lambda s, o: s.ChainedScheduler([s.StepLR(o, 2), s.ReduceLROnPlateau(o)]), ValueError),
    (lambda s, o: s.ChainedScheduler([s.StepLR(o, 2)], optimizer=type(o)(o.param_groups[0]["params"])), ValueError),
    (lambda s, o: s.ChainedScheduler([s.StepLR(o, 2), object()], optimizer=o), TypeError),
    (lambda s, o: s.ChainedScheduler([s.StepLR(o, 2)]).step(3), TypeError),
    (lambda s, o: s.SequentialLR(o, [s.StepLR(o, 2), s.ExponentialLR(o, 0.9)], milestones=[3]).step(3), TypeError),
])
def test_invalid_arguments_raise_torch_exceptions(make, error: type) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error):
            make(torch.optim.lr_scheduler, _optimizer(torch))
        with pytest.raises(error):
            make(lr_scheduler, _optimizer(genesis))


def test_cyclic_momentum_needs_momentum_or_betas() -> None:
    for lib in (torch, genesis):
        adagrad = lib.optim.Adagrad([lib.zeros(2, requires_grad=True)], lr=0.1)  # neither momentum nor betas
        with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
            lib.optim.lr_scheduler.CyclicLR(adagrad, base_lr=0.01, max_lr=0.1)
        sched = lib.optim.lr_scheduler.CyclicLR(adagrad, base_lr=0.01, max_lr=0.1, cycle_momentum=False)
        assert sched.get_last_lr() == [0.01]


def test_scheduler_needs_an_optimizer() -> None:
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), step_size=2)
    assert isinstance(_optimizer(genesis), optim.Optimizer)


STEP_EPOCH_NAMES = ["lambda", "step", "multistep", "exponential", "cosine", "linear", "constant", "onecycle",
                    "multiplicative", "polynomial", "polynomial_power", "cyclic_triangular", "cyclic_exp_range"]


def _epoch_trajectory(lib: object, name: str, epochs: list) -> tuple[list, list[str]]:
    """lrs after each step; ``None`` is ``step()``, a number ``step(epoch)``. Also the warnings raised."""
    opt = _optimizer(lib)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = _schedulers(lib, opt, name)
        caught.clear()
        lrs = [list(sched.get_last_lr())]
        for epoch in epochs:
            sched.step() if epoch is None else sched.step(epoch)
            lrs.append(list(sched.get_last_lr()))
    messages = [str(w.message) for w in caught if "optimizer.step()" not in str(w.message)]
    return lrs, messages


@pytest.mark.parametrize("name", STEP_EPOCH_NAMES)
def test_step_with_epoch_matches_torch(name: str) -> None:
    epochs = [None, None, 5, None, None, 3, 12, None, 0, None, None, 20, 21, None, 9, 9, None]
    g_lrs, g_warnings = _epoch_trajectory(genesis, name, epochs)
    t_lrs, t_warnings = _epoch_trajectory(torch, name, epochs)
    for step, (g, t) in enumerate(zip(g_lrs, t_lrs)):
        assert g == pytest.approx(t, rel=1e-12, abs=1e-15), f"step {step}: {g} != {t}"
    assert g_warnings == t_warnings == [lr_scheduler.EPOCH_DEPRECATION_WARNING] * (len(epochs) - epochs.count(None))
    assert lr_scheduler.EPOCH_DEPRECATION_WARNING == torch.optim.lr_scheduler.EPOCH_DEPRECATION_WARNING


@pytest.mark.parametrize("name", ["warm_restarts", "warm_restarts_mult"])
@pytest.mark.parametrize("epochs", [
    [e + i / 4 for e in range(40) for i in range(4)],  # torch's documented per-batch use
    [None, None, 2.5, None, 0.75, 6, 17.3, None, None, 44.9, 3, None, 0, None],
    [None] * 3 + [100.0] + [None] * 50,
])
def test_warm_restarts_fractional_epochs_match_torch(name: str, epochs: list) -> None:
    g_lrs, g_warnings = _epoch_trajectory(genesis, name, epochs)
    t_lrs, t_warnings = _epoch_trajectory(torch, name, epochs)
    for step, (g, t) in enumerate(zip(g_lrs, t_lrs)):
        assert g == pytest.approx(t, rel=1e-12, abs=1e-15), f"step {step}: {g} != {t}"
    assert g_warnings == t_warnings == []  # torch's CosineAnnealingWarmRestarts.step(epoch) does not warn


def test_warm_restarts_third_period_and_attributes() -> None:
    for lib in (genesis, torch):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=3)
        sched.step(14.5)  # restarts at 3 and 12: T_i = 27, T_cur = 2.5
        assert (sched.T_i, sched.T_cur, sched.last_epoch) == (27, 2.5, 14)


def test_reduce_on_plateau_step_with_epoch() -> None:
    for lib in (genesis, torch):
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(lib), patience=0)
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
            sched.step(1.0, epoch=7)
        sched.step(2.0)
        assert sched.last_epoch == 8 and sched.get_last_lr() == pytest.approx([0.01, 0.003])


class _Factor:
    """A callable-object lr factor: torch saves its ``__dict__`` in the scheduler state."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, epoch: int) -> float:
        return self.rate**epoch


@pytest.mark.parametrize("cls", ["LambdaLR", "MultiplicativeLR"])
def test_lambda_state_dict_has_torch_layout(cls: str) -> None:
    states = {}
    for lib in (genesis, torch):
        opt = _optimizer(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = getattr(lib.optim.lr_scheduler, cls)(opt, [lambda e: 0.9, _Factor(0.97)])
            for _ in range(4):
                sched.step()
        states[lib] = sched.state_dict()
    assert states[genesis]["lr_lambdas"] == states[torch]["lr_lambdas"] == [None, {"rate": 0.97}]
    assert states[genesis]["last_epoch"] == states[torch]["last_epoch"] == 4

    # torch's state loads into Genesis: the callable object gets its attributes back and the sequence continues
    lrs = {}
    for lib in (genesis, torch):
        opt = _optimizer(lib)
        factor = _Factor(0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = getattr(lib.optim.lr_scheduler, cls)(opt, [lambda e: 0.9, factor])
            state = dict(states[torch])
            sched.load_state_dict(state)
            assert factor.rate == 0.97 and "lr_lambdas" in state
            for group, lr in zip(opt.param_groups, state["_last_lr"]):  # the optimizer's state would hold them
                group["lr"] = lr
            lrs[lib] = []
            for _ in range(6):
                sched.step()
                lrs[lib].append(list(sched.get_last_lr()))
    assert sum(lrs[genesis], []) == pytest.approx(sum(lrs[torch], []), rel=1e-12)


def test_cyclic_state_dict_saves_a_callable_scale_fn_like_torch() -> None:
    states = {}
    for lib in (genesis, torch):
        sched = lib.optim.lr_scheduler.CyclicLR(_optimizer(lib), 0.01, 0.1, step_size_up=3, scale_fn=_Factor(0.9))
        states[lib] = sched.state_dict()
        fn_sched = lib.optim.lr_scheduler.CyclicLR(_optimizer(lib), 0.01, 0.1, scale_fn=lambda x: 1.0)
        assert fn_sched.state_dict()["_scale_fn_custom"] is None
    assert states[genesis]["_scale_fn_custom"] == states[torch]["_scale_fn_custom"] == {"rate": 0.9}
    factor = _Factor(0.1)
    sched = lr_scheduler.CyclicLR(_optimizer(genesis), 0.01, 0.1, step_size_up=3, scale_fn=factor)
    sched.load_state_dict(states[torch])
    assert factor.rate == 0.9 and sched.scale_fn(2) == pytest.approx(0.81)


def test_legacy_lr_scheduler_subclass_matches_torch() -> None:
    def custom(lib: object) -> type:
        class HalveEveryThree(lib.optim.lr_scheduler._LRScheduler):
            def get_lr(self) -> list[float]:
                return [base * 0.5 ** (self.last_epoch // 3) for base in self.base_lrs]

        return HalveEveryThree

    results = []
    for lib in (genesis, torch):
        opt = _optimizer(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = custom(lib)(opt)
            lrs = [list(sched.get_last_lr())]
            for epoch in [None] * 7 + [20, None, 2]:
                sched.step() if epoch is None else sched.step(epoch)
                lrs.append(list(sched.get_last_lr()))
        results.append(lrs)
    assert results[0] == results[1]
    assert issubclass(lr_scheduler._LRScheduler, lr_scheduler.LRScheduler)
    assert lr_scheduler._LRScheduler.__name__ == "_LRScheduler"


def test_new_schedulers_are_exported() -> None:
    for name in torch.optim.lr_scheduler.__all__:
        assert name in lr_scheduler.__all__ and hasattr(lr_scheduler, name), name


SCHEDULER_KEYS = {
    "StepLR": lambda s, o: s.StepLR(o, 2),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, 2),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, 1.0, total_steps=10),
    "LinearLR": lambda s, o: s.LinearLR(o),
    "ReduceLROnPlateau": lambda s, o: s.ReduceLROnPlateau(o),
    "ReduceLROnPlateau_min_lrs": lambda s, o: s.ReduceLROnPlateau(o, mode="max", min_lr=[0.01]),
    "LambdaLR": lambda s, o: s.LambdaLR(o, lambda e: 0.9**e),
    "MultiplicativeLR": lambda s, o: s.MultiplicativeLR(o, lambda e: 0.9),
    "CyclicLR": lambda s, o: s.CyclicLR(o, 0.01, 0.1),
    "SequentialLR": lambda s, o: s.SequentialLR(o, [s.StepLR(o, 2), s.ExponentialLR(o, 0.9)], milestones=[2]),
}


@pytest.mark.parametrize("name", sorted(SCHEDULER_KEYS))
def test_state_dict_keys_are_torchs(name: str) -> None:
    # The keys in torch's order too: printed or saved state dicts read the same.
    keys = []
    for lib in (torch, genesis):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1, momentum=0.9)
        sched = SCHEDULER_KEYS[name](lib.optim.lr_scheduler, opt)
        opt.step()
        sched.step(1.0) if name.startswith("ReduceLROnPlateau") else sched.step()
        keys.append(list(sched.state_dict()))
    assert keys[0] == keys[1]


def test_one_cycle_resumes_from_a_torch_state_dict() -> None:
    # The anneal strategy travels in the state dict: a scheduler built with the defaults resumes torch's "linear".
    def schedule(lib, resume_from=None):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1)
        if resume_from is None:
            sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.02, total_steps=10, anneal_strategy="linear")
            for _ in range(3):
                opt.step()
                sched.step()
            return sched
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.02, total_steps=10)
        sched.load_state_dict(resume_from)
        lrs = []
        for _ in range(3):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
        return lrs

    state = schedule(torch).state_dict()
    assert schedule(genesis, state) == pytest.approx(schedule(torch, state), rel=1e-12)


def _step_warnings(lib: object, order: str) -> list[str]:
    opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1)
    sched = lib.optim.lr_scheduler.StepLR(opt, 1)
    if order == "overridden":
        opt.step = lambda closure=None: None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            if order != "scheduler_first":
                opt.step()
            sched.step()
            if order == "scheduler_first":
                opt.step()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("order", ["optimizer_first", "scheduler_first", "overridden"])
def test_step_order_warnings_are_torchs(order: str) -> None:
    # torch wraps optimizer.step to see whether it ran before the scheduler's first step.
    assert _step_warnings(genesis, order) == _step_warnings(torch, order)
    assert bool(_step_warnings(genesis, order)) == (order != "optimizer_first")
