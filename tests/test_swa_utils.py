"""Weight averaging against torch.optim.swa_utils: averaged parameters and buffers, SWALR's learning rates and the
BatchNorm statistics of update_bn, from identical weights copied through numpy."""

from __future__ import annotations

import warnings

import pytest
import torch

import genesis
from genesis.optim import swa_utils
from tests.helpers import DEVICE, GENESIS_DTYPE, assert_same, to_genesis

DTYPE = torch.float64


def _model(lib: object) -> object:
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3))


def _pair(dtype: torch.dtype = DTYPE) -> tuple[object, torch.nn.Module]:
    """The same model in Genesis and torch: torch's random initial values copied into Genesis."""
    torch.manual_seed(0)  # the same initial values every run
    t_model = _model(torch).to(dtype)
    g_model = _model(genesis).to(GENESIS_DTYPE[dtype])
    g_model.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t_model.state_dict().items()})
    return g_model.to(DEVICE), t_model


def _perturb(g_model: object, t_model: torch.nn.Module, seed: int) -> None:
    """Give both models the same new parameters and buffers, as a training step would (int buffers count up)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad(), genesis.no_grad():
        g_tensors = dict(g_model.named_parameters()) | dict(g_model.named_buffers())
        for name, t in list(t_model.named_parameters()) + list(t_model.named_buffers()):
            if t.dtype.is_floating_point:
                t.add_(torch.randn(t.shape, generator=gen, dtype=t.dtype))
            else:
                t.add_(torch.randint(1, 7, t.shape, generator=gen, dtype=t.dtype))
            g_tensors[name].copy_(to_genesis(t, requires_grad=False))


def _assert_same_state(g_module: object, t_module: torch.nn.Module, rtol: float | None = None,
                       atol: float | None = None) -> None:
    g_state, t_state = g_module.state_dict(), t_module.state_dict()
    assert list(g_state) == list(t_state)
    for name, t in t_state.items():
        assert_same(g_state[name], t, rtol=rtol, atol=atol, what=name)


# On GPUs the equal average takes torch's multi-tensor path, whose weight 1 / (n + 1) is a float32 number, while
# the oracle runs torch's CPU path (a float64 weight): over six updates they part by a few float32 ulps of the
# update, so an average that cancels to near zero needs an absolute tolerance as well.
_GPU_SWA_TOL = {"rtol": 1e-5, "atol": 1e-6} if DEVICE != "cpu" else {}

AVERAGERS = {
    "swa_default": lambda u: {},
    "swa_default_buffers": lambda u: {"use_buffers": True},
    "ema_multi": lambda u: {"multi_avg_fn": u.get_ema_multi_avg_fn(0.9)},
    "ema_multi_buffers": lambda u: {"multi_avg_fn": u.get_ema_multi_avg_fn(0.75), "use_buffers": True},
    "ema_single": lambda u: {"avg_fn": u.get_ema_avg_fn(0.8)},
    "swa_multi": lambda u: {"multi_avg_fn": u.get_swa_multi_avg_fn()},
    "swa_single_buffers": lambda u: {"avg_fn": u.get_swa_avg_fn(), "use_buffers": True},
    "custom": lambda u: {"avg_fn": lambda avg, p, n: avg * 0.5 + p * 0.5 + n * 0.01},
}


@pytest.mark.parametrize("kind", list(AVERAGERS))
def test_averaged_model_matches_torch(kind: str) -> None:
    g_model, t_model = _pair()
    g_avg = swa_utils.AveragedModel(g_model, **AVERAGERS[kind](swa_utils))
    t_avg = torch.optim.swa_utils.AveragedModel(t_model, **AVERAGERS[kind](torch.optim.swa_utils))
    tol = _GPU_SWA_TOL if kind.startswith("swa_default") else {}
    _assert_same_state(g_avg, t_avg)  # n_averaged, then the copied module's entries
    if DEVICE != "cpu" and kind == "swa_default_buffers":
        # On GPUs torch's multi-tensor path refuses the integer buffer (num_batches_tracked): addcdiv of integers.
        g_avg.update_parameters(g_model)
        with pytest.raises(RuntimeError):
            g_avg.update_parameters(g_model)
        return
    for step in range(6):
        _perturb(g_model, t_model, seed=step)
        g_avg.update_parameters(g_model)
        t_avg.update_parameters(t_model)
        _assert_same_state(g_avg, t_avg, **tol)
    assert int(g_avg.n_averaged) == 6 and g_avg.n_averaged.dtype is genesis.int64
    assert not any(a is b for a, b in zip(g_avg.parameters(), g_model.parameters()))
    x = torch.randn(5, 4, dtype=DTYPE)
    g_avg.eval()
    t_avg.eval()
    assert_same(g_avg(to_genesis(x)), t_avg(x), **tol)


def test_averaged_model_float32_and_grad_state() -> None:
    g_model, t_model = _pair(torch.float32)
    g_avg = swa_utils.AveragedModel(g_model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.99))
    t_avg = torch.optim.swa_utils.AveragedModel(t_model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.99))
    for step in range(4):
        _perturb(g_model, t_model, seed=10 + step)
        g_avg.update_parameters(g_model)
        t_avg.update_parameters(t_model)
    _assert_same_state(g_avg, t_avg)
    assert all(p.requires_grad and p.grad_fn is None for p in g_avg.parameters())


def test_averaged_model_device_argument() -> None:
    g_model, _ = _pair()
    avg = swa_utils.AveragedModel(g_model, device=DEVICE)
    assert avg.n_averaged.device.type == DEVICE.split(":")[0]
    assert all(p.device.type == DEVICE.split(":")[0] for p in avg.parameters())


def test_averaged_model_rejects_two_average_functions() -> None:
    for lib, utils in ((genesis, swa_utils), (torch, torch.optim.swa_utils)):
        model = _model(lib)
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
            utils.AveragedModel(model, avg_fn=utils.get_swa_avg_fn(), multi_avg_fn=utils.get_swa_multi_avg_fn())


@pytest.mark.parametrize("decay", [-0.1, 1.5])
def test_ema_decay_out_of_range(decay: float) -> None:
    for utils in (swa_utils, torch.optim.swa_utils):
        for make in (utils.get_ema_avg_fn, utils.get_ema_multi_avg_fn):
            with pytest.raises(ValueError, match="Invalid decay value"):
                make(decay)


def test_average_functions_on_tensors() -> None:
    gen = torch.Generator().manual_seed(3)
    t_avg = [torch.randn(4, generator=gen, dtype=DTYPE), torch.randn(2, 3, generator=gen, dtype=DTYPE)]
    t_new = [torch.randn(4, generator=gen, dtype=DTYPE), torch.randn(2, 3, generator=gen, dtype=DTYPE)]
    g_avg, g_new = [to_genesis(t) for t in t_avg], [to_genesis(t) for t in t_new]
    swa_utils.get_swa_multi_avg_fn()(g_avg, g_new, 3)
    torch.optim.swa_utils.get_swa_multi_avg_fn()(t_avg, t_new, 3)
    assert_same(g_avg, t_avg)
    n = torch.tensor(2)
    swa_utils.get_ema_multi_avg_fn(0.3)(g_avg, g_new, to_genesis(n))
    torch.optim.swa_utils.get_ema_multi_avg_fn(0.3)(t_avg, t_new, n)
    assert_same(g_avg, t_avg)
    assert_same(swa_utils.get_swa_avg_fn()(g_avg[0], g_new[0], to_genesis(n)),
                torch.optim.swa_utils.get_swa_avg_fn()(t_avg[0], t_new[0], n))
    assert_same(swa_utils.get_ema_avg_fn(0.6)(g_avg[1], g_new[1], 1),
                torch.optim.swa_utils.get_ema_avg_fn(0.6)(t_avg[1], t_new[1], 1))


def _bn_model(lib: object) -> object:
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3, momentum=0.3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(12, 5), nn.BatchNorm1d(5))


@pytest.mark.parametrize("batches", ["tensors", "pairs"])
def test_update_bn_matches_torch(batches: str) -> None:
    t_model = _bn_model(torch).to(DTYPE)
    g_model = _bn_model(genesis).to(GENESIS_DTYPE[DTYPE])
    g_model.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t_model.state_dict().items()})
    g_model.to(DEVICE)
    gen = torch.Generator().manual_seed(0)
    t_loader = [torch.randn(n, 2, 4, 4, generator=gen, dtype=DTYPE) for n in (4, 7, 3)]
    g_loader = [to_genesis(x) for x in t_loader]
    if batches == "pairs":
        t_loader = [(x, torch.zeros(len(x))) for x in t_loader]
        g_loader = [(x, genesis.zeros(len(x))) for x in g_loader]
    for model in (g_model, t_model):
        model.eval()
    swa_utils.update_bn(g_loader, g_model, device=DEVICE)
    torch.optim.swa_utils.update_bn(t_loader, t_model)
    _assert_same_state(g_model, t_model)
    assert not g_model.training and not g_model[1].training
    assert g_model[1].momentum == 0.3 and g_model[5].momentum == 0.1
    assert int(g_model[1].num_batches_tracked) == 3


def test_update_bn_without_batchnorm_leaves_the_model_alone() -> None:
    model = genesis.nn.Linear(2, 2)
    model.eval()
    swa_utils.update_bn([object()], model)  # the loader is not even read
    assert not model.training


def test_update_bn_on_an_averaged_model() -> None:
    g_model, t_model = _pair()
    g_avg, t_avg = swa_utils.AveragedModel(g_model), torch.optim.swa_utils.AveragedModel(t_model)
    for step in range(3):
        _perturb(g_model, t_model, seed=20 + step)
        g_avg.update_parameters(g_model)
        t_avg.update_parameters(t_model)
    t_loader = [torch.randn(8, 4, dtype=DTYPE) for _ in range(3)]
    swa_utils.update_bn([to_genesis(x) for x in t_loader], g_avg)
    torch.optim.swa_utils.update_bn(t_loader, t_avg)
    _assert_same_state(g_avg, t_avg, **_GPU_SWA_TOL)


def _optimizer(lib: object) -> object:
    groups = [{"params": [lib.zeros(3, requires_grad=True)]}, {"params": [lib.zeros(2, requires_grad=True)], "lr": 0.3}]
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def _swalr_lrs(lib: object, steps: int, before: int = 0, **kwargs: object) -> list[list[float]]:
    """lrs of SWALR, optionally after ``before`` steps of a cosine schedule on the same optimizer."""
    opt = _optimizer(lib)
    lrs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that optimizer.step() was never called
        if before:
            cosine = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
            for _ in range(before):
                cosine.step()
        sched = lib.optim.swa_utils.SWALR(opt, **kwargs)
        lrs.append(list(sched.get_last_lr()))
        for _ in range(steps):
            sched.step()
            lrs.append(list(sched.get_last_lr()))
    return lrs


@pytest.mark.parametrize("kwargs", [
    {"swa_lr": 0.05},
    {"swa_lr": [0.05, 0.01], "anneal_epochs": 5, "anneal_strategy": "linear"},
    {"swa_lr": 0.2, "anneal_epochs": 1},
    {"swa_lr": 0.02, "anneal_epochs": 0, "anneal_strategy": "cos"},
    {"swa_lr": 0.02, "anneal_epochs": 7, "anneal_strategy": "cos", "before": 4},
])
def test_swalr_matches_torch(kwargs: dict) -> None:
    g = _swalr_lrs(genesis, 20, **kwargs)
    t = _swalr_lrs(torch, 20, **kwargs)
    assert sum(g, []) == pytest.approx(sum(t, []), rel=1e-12, abs=1e-15)


def test_swalr_state_dict_resumes() -> None:
    opt = _optimizer(genesis)
    sched = swa_utils.SWALR(opt, swa_lr=0.01, anneal_epochs=8, anneal_strategy="linear")
    for _ in range(3):
        sched.step()
    state, opt_state = sched.state_dict(), opt.state_dict()
    expected = []
    for _ in range(8):
        sched.step()
        expected.append(sched.get_last_lr())
    opt2 = _optimizer(genesis)
    sched2 = swa_utils.SWALR(opt2, swa_lr=0.5)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(state)
    got = []
    for _ in range(8):
        sched2.step()
        got.append(sched2.get_last_lr())
    assert got == expected
    assert "optimizer" not in state and state["_anneal_strategy"] == "linear"


@pytest.mark.parametrize("kwargs", [{"anneal_strategy": "step"}, {"anneal_epochs": -1}, {"anneal_epochs": 2.5},
                                    {"swa_lr": [0.1, 0.2, 0.3]}])
def test_swalr_invalid_arguments(kwargs: dict) -> None:
    args = {"swa_lr": 0.1} | kwargs
    for lib in (torch, genesis):
        with pytest.raises(ValueError):
            lib.optim.swa_utils.SWALR(_optimizer(lib), **args)


def test_swa_utils_resolves_like_torch() -> None:
    assert genesis.optim.swa_utils is swa_utils
    assert sorted(swa_utils.__all__) == sorted(torch.optim.swa_utils.__all__)
    assert issubclass(swa_utils.SWALR, genesis.optim.lr_scheduler.LRScheduler)
    assert isinstance(swa_utils.AveragedModel(genesis.nn.Linear(2, 2)), genesis.nn.Module)
