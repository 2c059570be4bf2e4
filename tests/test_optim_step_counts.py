"""The optimizers' step counts against torch.optim: ``state["step"]`` is torch's 0-d tensor (type, dtype, device,
value) in every optimizer that counts steps, on every path (per parameter, multi-tensor, fused), through state dict
round trips, older checkpoints holding numbers, torch-saved state dicts and a user's own changes to the count."""

from __future__ import annotations

import pytest
import torch

import genesis
from genesis import optim
from tests.helpers import DEVICE, assert_same, requires_cuda, to_genesis
from tests.test_optim import _loss, _make_params

# name -> (optimizer, its arguments). ``foreach=True`` is given to Genesis only: its multi-tensor path must give
# torch's per-parameter results (torch's own foreach ASGD differs from its per-parameter one in the last bits).
CONFIGS = {
    "adam": ("Adam", {"lr": 0.05}),
    "adam_per_parameter": ("Adam", {"lr": 0.05, "foreach": False}),
    "adam_foreach": ("Adam", {"lr": 0.05, "foreach": True}),
    "adam_fused": ("Adam", {"lr": 0.05, "fused": True}),
    "adam_amsgrad": ("Adam", {"lr": 0.05, "amsgrad": True}),
    "adamw": ("AdamW", {"lr": 0.05}),
    "adamw_fused": ("AdamW", {"lr": 0.05, "fused": True}),
    "adamax": ("Adamax", {"lr": 0.05}),
    "adamax_foreach": ("Adamax", {"lr": 0.05, "foreach": True}),
    "nadam": ("NAdam", {"lr": 0.05}),
    "radam_foreach": ("RAdam", {"lr": 0.05, "foreach": True}),
    "adagrad": ("Adagrad", {"lr": 0.1, "lr_decay": 0.05}),
    "rmsprop": ("RMSprop", {"lr": 0.01}),
    "adadelta": ("Adadelta", {}),
    "rprop_foreach": ("Rprop", {"lr": 0.05, "foreach": True}),
    "asgd": ("ASGD", {"lr": 0.05, "t0": 2}),
    "asgd_foreach": ("ASGD", {"lr": 0.05, "t0": 2, "foreach": True}),
}


def _make(lib: object, name: str, params: list) -> object:
    cls, kwargs = CONFIGS[name]
    if lib is torch:
        kwargs = {k: v for k, v in kwargs.items() if k != "foreach"}
    return getattr(lib.optim, cls)(params, **kwargs)


def _x(lib: object) -> object:
    x = torch.linspace(-1, 1, 20, dtype=torch.float64).reshape(5, 4)
    return x if lib is torch else to_genesis(x)


def _steps(lib: object, opt: object, params: list, n: int) -> None:
    for _ in range(n):
        opt.zero_grad()
        _loss(lib, params, _x(lib)).backward()
        opt.step()


def _trained(lib: object, name: str, n: int = 3) -> tuple[list, object]:
    params = _make_params(lib)
    opt = _make(lib, name, params)
    _steps(lib, opt, params, n)
    return params, opt


def _expected_device(name: str, p: genesis.Tensor) -> genesis.device:
    """torch's placement: on the parameter's device for fused steps and ASGD, else on the CPU."""
    return p.device if "fused" in name or "asgd" in name else genesis.device("cpu")


def assert_step_like_torch(g_step: object, t_step: object, device: genesis.device) -> None:
    assert isinstance(g_step, genesis.Tensor) and torch.is_tensor(t_step)
    assert g_step.dim() == 0 and t_step.dim() == 0
    assert str(g_step.dtype).removeprefix("genesis.") == str(t_step.dtype).removeprefix("torch.")
    assert g_step.device == device and t_step.device.type == "cpu"
    assert g_step.item() == t_step.item()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_step_is_torchs_tensor(name: str) -> None:
    g_params, g_opt = _trained(genesis, name)
    t_params, t_opt = _trained(torch, name)
    for g, t in zip(g_params, t_params):
        assert_same(g, t, rtol=1e-10, atol=1e-12)
        assert_step_like_torch(g_opt.state[g]["step"], t_opt.state[t]["step"], _expected_device(name, g))
        assert g_opt.state[g]["step"].item() == 3.0
    g_sd, t_sd = g_opt.state_dict(), t_opt.state_dict()
    assert list(g_sd["state"][0]) == list(t_sd["state"][0])  # the same entries, step first
    assert g_sd["state"][0]["step"] is g_opt.state[g_params[0]]["step"]  # live tensors, as torch's


@pytest.mark.parametrize("name", ["adam", "adam_foreach", "adam_fused", "asgd", "adagrad"])
def test_step_is_float64_under_a_float64_default_dtype(name: str) -> None:
    """torch's ``_get_scalar_dtype``: float64 under a float64 default dtype, float32 for fused steps."""
    try:
        torch.set_default_dtype(torch.float64)
        genesis.set_default_dtype(genesis.float64)
        (g, _), g_opt = _trained(genesis, name)
        (t, _), t_opt = _trained(torch, name)
    finally:
        torch.set_default_dtype(torch.float32)
        genesis.set_default_dtype(genesis.float32)
    assert_step_like_torch(g_opt.state[g]["step"], t_opt.state[t]["step"], _expected_device(name, g))


@pytest.mark.parametrize("name", ["adam", "adam_per_parameter", "adam_foreach"])
def test_step_tensor_is_counted_in_place(name: str) -> None:
    """As torch's ``step_t += 1``: a reference to the step tensor sees the count advance (the multi-tensor path
    makes its step tensors on the first step and keeps them while the batch is the same)."""
    params, opt = _trained(genesis, name, n=1)
    held = [opt.state[p]["step"] for p in params]
    _steps(genesis, opt, params, 2)
    assert all(opt.state[p]["step"] is s and s.item() == 3.0 for p, s in zip(params, held))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_state_dict_round_trip_through_a_file(name: str, tmp_path) -> None:
    """3 steps, save the state dict, a fresh optimizer loads it and takes 3 more: the same as 6 steps straight,
    and the loaded step counts keep torch's type, dtype and device."""
    straight_params, straight = _trained(genesis, name, n=6)
    params, opt = _trained(genesis, name)
    genesis.save(opt.state_dict(), tmp_path / "opt.safetensors")
    resumed = _make(genesis, name, params)
    resumed.load_state_dict(genesis.load(tmp_path / "opt.safetensors"))
    loaded = resumed.state[params[0]]["step"]
    assert isinstance(loaded, genesis.Tensor) and loaded.dim() == 0 and loaded.item() == 3.0
    assert loaded.dtype is genesis.float32 and loaded.device == _expected_device(name, params[0])
    _steps(genesis, resumed, params, 3)
    for p, q in zip(params, straight_params):
        assert genesis.equal(p, q)
        assert resumed.state[p]["step"].item() == straight.state[q]["step"].item() == 6.0


@pytest.mark.parametrize("kind", [int, float])
@pytest.mark.parametrize("name", ["adam", "adam_foreach", "adam_fused", "radam_foreach", "asgd", "adagrad",
                                  "rprop_foreach"])
def test_older_checkpoints_with_number_steps_load_as_torch(name: str, kind: type) -> None:
    """Checkpoints of older torch versions hold the count as a number: loading makes it torch's tensor. (Not NAdam:
    torch's load_state_dict casts its float32 ``mu_product`` to the parameters' dtype, so torch's own resumed run
    leaves its uninterrupted one in the last bits; Genesis's stays on the uninterrupted one.)"""
    results = []
    for lib in (genesis, torch):
        params, opt = _trained(lib, name)
        saved = opt.state_dict()
        for state in saved["state"].values():
            state["step"] = kind(state["step"].item())
        resumed = _make(lib, name, params)
        resumed.load_state_dict(saved)
        loaded = resumed.state[params[0]]["step"]
        assert lib.is_tensor(loaded) and loaded.dim() == 0 and loaded.item() == 3.0
        loaded = (str(loaded.dtype).split(".")[-1], loaded.device.type)
        _steps(lib, resumed, params, 2)
        results.append((params, loaded, [resumed.state[p]["step"] for p in params]))
    (g_params, g_loaded, g_steps), (t_params, t_loaded, t_steps) = results
    assert g_loaded == (t_loaded[0], _expected_device(name, g_params[0]).type)
    for g, t, g_step, t_step in zip(g_params, t_params, g_steps, t_steps):
        assert_same(g, t, rtol=1e-10, atol=1e-12)
        assert_step_like_torch(g_step, t_step, _expected_device(name, g))
        assert g_step.item() == 5.0


@pytest.mark.parametrize("name", ["adam", "adamw_fused", "nadam", "asgd", "adagrad", "rmsprop", "rprop_foreach"])
def test_torch_saved_state_dict_loads_through_genesis_load(name: str, tmp_path) -> None:
    """A state dict written by torch.save (torch's step tensors; NAdam's and ASGD's scalar tensors) loads through
    genesis.load and the run continues as torch's."""
    t_params, t_opt = _trained(torch, name)
    torch.save(t_opt.state_dict(), tmp_path / "opt.pt")
    g_params = [to_genesis(t.detach(), requires_grad=True) for t in t_params]
    g_opt = _make(genesis, name, g_params)
    g_opt.load_state_dict(genesis.load(tmp_path / "opt.pt"))
    _steps(genesis, g_opt, g_params, 2)
    _steps(torch, t_opt, t_params, 2)
    for g, t in zip(g_params, t_params):
        assert_same(g, t, rtol=1e-10, atol=1e-12)
        assert g_opt.state[g]["step"].item() == t_opt.state[t]["step"].item() == 5.0


@pytest.mark.parametrize("change", ["fill", "replace"])
@pytest.mark.parametrize("name", ["adam", "adam_foreach", "adam_fused", "adamax_foreach", "asgd"])
def test_user_changes_to_the_step_count_are_followed(name: str, change: str) -> None:
    """A user who sets one parameter's count (in place, or a new tensor or number) sees the next steps count from
    it, for that parameter only, as with torch."""
    results = []
    for lib in (genesis, torch):
        params, opt = _trained(lib, name)
        state = opt.state[params[0]]
        if change == "fill":
            state["step"].fill_(10)
        else:
            state["step"] = lib.tensor(10.0, device=state["step"].device)
        _steps(lib, opt, params, 2)
        results.append((params, [float(opt.state[p]["step"]) for p in params]))
    (g_params, g_steps), (t_params, t_steps) = results
    assert g_steps == t_steps == [12.0, 5.0]
    for g, t in zip(g_params, t_params):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["adam", "adam_foreach", "asgd"])
def test_a_number_set_as_the_step_count_becomes_a_tensor(name: str) -> None:
    """A user's number in ``state["step"]`` counts on as torch's tensor (torch's own step leaves a number as it is:
    its update increments a copy)."""
    params, opt = _trained(genesis, name)
    opt.state[params[0]]["step"] = 10
    _steps(genesis, opt, params, 2)
    step = opt.state[params[0]]["step"]
    assert isinstance(step, genesis.Tensor) and step.item() == 12.0 and step.device == _expected_device(name, params[0])
    assert opt.state[params[1]]["step"].item() == 5.0


def test_a_parameter_without_a_gradient_keeps_its_count() -> None:
    """The multi-tensor batch changes when a parameter has no gradient for a step; each count stays its own."""
    results = []
    for lib in (genesis, torch):
        params, opt = _trained(lib, "adamax_foreach", n=2)
        w, b = params
        for _ in range(2):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        _steps(lib, opt, params, 2)
        results.append((params, [opt.state[p]["step"].item() for p in params]))
    (g_params, g_steps), (t_params, t_steps) = results
    assert g_steps == t_steps == [6.0, 4.0]
    for g, t in zip(g_params, t_params):
        assert_same(g, t, rtol=1e-10, atol=1e-12)


def test_sgd_and_lbfgs_keep_no_step_and_sparse_adam_counts_in_an_int() -> None:
    params, opt = _trained(genesis, "adam")
    sgd = optim.SGD(params, lr=0.1, momentum=0.9)
    _steps(genesis, sgd, params, 2)
    assert "step" not in sgd.state[params[0]]
    emb = genesis.nn.Embedding(4, 3, sparse=True).to(DEVICE)
    sparse = optim.SparseAdam(emb.parameters())
    for _ in range(2):
        sparse.zero_grad()
        emb(genesis.tensor([1, 2], device=DEVICE)).sum().backward()
        sparse.step()
    assert type(sparse.state[emb.weight]["step"]) is int and sparse.state[emb.weight]["step"] == 2


@requires_cuda
@pytest.mark.parametrize("name", ["adam", "adam_fused", "adamw_fused", "adamax", "asgd", "asgd_foreach"])
def test_counting_steps_never_synchronizes_with_the_gpu(name: str) -> None:
    """Step counts are read on the host: a step on the GPU adds no host-device synchronization, also where the count
    lives on the device (fused, ASGD)."""
    params = [p.detach().float().to("cuda").requires_grad_() for p in _make_params(genesis)]
    opt = _make(genesis, name, params)
    for _ in range(2):
        for p in params:
            p.grad = genesis.ones_like(p)
        opt.step()
    before = genesis.cuda.synchronization_count()
    for _ in range(3):
        for p in params:
            p.grad = genesis.ones_like(p)
        opt.step()
    assert genesis.cuda.synchronization_count() == before
    step = opt.state[params[0]]["step"]
    assert step.device == _expected_device(name, params[0]) and step.item() == 5.0
