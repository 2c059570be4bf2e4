"""Weight and spectral normalization (hook-based and as parametrizations) and ``nn.utils.parametrize`` against torch.

Each Genesis layer starts from the torch layer's weights (copied through numpy) and, after the normalization is
applied, takes torch's state dict, power-iteration vectors included; outputs, every gradient (``weight_g``,
``weight_v``, ``weight_orig``, ``original0``/``original1``, inputs), the buffers after the step, several SGD steps,
state-dict keys and removal must then all equal torch's.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any, Callable

import pytest
import torch

import genesis
from genesis.nn.utils import parametrizations, parametrize
from tests.helpers import DEVICE, assert_same, check_module, rand, to_genesis

pytestmark = pytest.mark.filterwarnings("ignore:.*weight_norm. is deprecated:FutureWarning")

# name: (constructor taking the library and dtype/device keywords, input shape)
LAYERS: dict[str, tuple[Callable[..., Any], tuple[int, ...]]] = {
    "linear": (lambda lib, **kw: lib.nn.Linear(5, 4, **kw), (3, 5)),
    "conv2d": (lambda lib, **kw: lib.nn.Conv2d(3, 4, 3, padding=1, **kw), (2, 3, 5, 5)),
    "conv_transpose2d": (lambda lib, **kw: lib.nn.ConvTranspose2d(3, 2, 3, stride=2, **kw), (2, 3, 4, 4)),
}

# name: (Genesis function, torch function), each applied as fn(module)
NORMS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "weight_norm": (genesis.nn.utils.weight_norm, torch.nn.utils.weight_norm),
    "spectral_norm": (genesis.nn.utils.spectral_norm, torch.nn.utils.spectral_norm),
    "parametrized_weight_norm": (parametrizations.weight_norm, torch.nn.utils.parametrizations.weight_norm),
    "parametrized_spectral_norm": (parametrizations.spectral_norm, torch.nn.utils.parametrizations.spectral_norm),
}


def _copy_state(g_module: genesis.nn.Module, t_module: torch.nn.Module) -> None:
    g_module.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t_module.state_dict().items()})


def _pair(make: Callable[..., Any]) -> tuple[genesis.nn.Module, torch.nn.Module]:
    """The same layer in Genesis (on DEVICE) and torch, float64, with torch's initial weights."""
    t_module = make(torch, dtype=torch.float64)
    g_module = make(genesis, dtype=genesis.float64, device=DEVICE)
    _copy_state(g_module, t_module)
    return g_module, t_module


def _normed_pair(norm: str, layer: str, **kwargs: Any) -> tuple[genesis.nn.Module, torch.nn.Module]:
    """A layer pair with ``norm`` applied to both; Genesis then takes torch's state (power-iteration vectors)."""
    g_module, t_module = _pair(LAYERS[layer][0])
    g_fn, t_fn = NORMS[norm]
    g_fn(g_module, **kwargs)
    t_fn(t_module, **kwargs)
    _copy_state(g_module, t_module)
    return g_module, t_module


def _assert_same_state(g_module: genesis.nn.Module, t_module: torch.nn.Module) -> None:
    g_state, t_state = g_module.state_dict(), t_module.state_dict()
    assert list(g_state) == list(t_state)
    for key, value in t_state.items():
        assert_same(g_state[key], value, what=key)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("norm", NORMS)
def test_forward_and_gradients_match_torch(norm: str, layer: str) -> None:
    g_module, t_module = _normed_pair(norm, layer)
    assert list(g_module.state_dict()) == list(t_module.state_dict())
    x = rand(*LAYERS[layer][1], seed=1)
    check_module(g_module, t_module, x)
    assert_same(g_module.weight, t_module.weight, what="normalized weight")


@pytest.mark.parametrize("dim", [0, 1, -2, None])
@pytest.mark.parametrize("norm", ["weight_norm", "parametrized_weight_norm"])
def test_weight_norm_dims(norm: str, dim: int | None) -> None:
    g_module, t_module = _normed_pair(norm, "conv2d", dim=dim)
    check_module(g_module, t_module, rand(2, 3, 5, 5, seed=2))


# torch's hook-based spectral_norm takes no negative dim (its permute fails); the parametrization does.
@pytest.mark.parametrize("norm, dim", [("spectral_norm", 1), ("spectral_norm", 3), ("parametrized_spectral_norm", 1),
                                       ("parametrized_spectral_norm", -1)])
def test_spectral_norm_dims_and_iterations(norm: str, dim: int) -> None:
    g_module, t_module = _normed_pair(norm, "conv2d", dim=dim, n_power_iterations=3, eps=1e-6)
    check_module(g_module, t_module, rand(2, 3, 5, 5, seed=3))


@pytest.mark.parametrize("norm", NORMS)
def test_sgd_steps_stay_equal(norm: str) -> None:
    g_module, t_module = _normed_pair(norm, "conv2d")
    g_opt = genesis.optim.SGD(g_module.parameters(), lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD(t_module.parameters(), lr=0.1, momentum=0.9)
    for step in range(4):
        x = rand(2, 3, 5, 5, seed=10 + step, requires_grad=False)
        t_loss = (t_module(x) ** 2).mean()
        g_loss = (g_module(to_genesis(x)) ** 2).mean()
        assert_same(g_loss, t_loss, what=f"loss of step {step}")
        t_loss.backward()
        g_loss.backward()
        t_opt.step()
        g_opt.step()
        t_opt.zero_grad()
        g_opt.zero_grad()
    _assert_same_state(g_module, t_module)


@pytest.mark.parametrize("norm", ["spectral_norm", "parametrized_spectral_norm"])
def test_spectral_norm_iterates_in_training_only(norm: str) -> None:
    g_module, t_module = _normed_pair(norm, "linear")
    x = rand(3, 5, seed=4, requires_grad=False)
    g_module.eval()
    t_module.eval()
    before = {k: v.clone() for k, v in g_module.state_dict().items()}
    assert_same(g_module(to_genesis(x)), t_module(x))
    for key, value in g_module.state_dict().items():
        assert genesis.equal(value, before[key]), f"{key} changed in eval mode"
    g_module.train()
    t_module.train()
    assert_same(g_module(to_genesis(x)), t_module(x))
    _assert_same_state(g_module, t_module)
    changed = [k for k, v in g_module.state_dict().items() if not genesis.equal(v, before[k])]
    assert changed and all(k.endswith(("_u", "_v")) for k in changed)


@pytest.mark.parametrize("norm", ["spectral_norm", "parametrized_spectral_norm"])
def test_spectral_norm_backward_through_two_forwards(norm: str) -> None:
    # The GAN pattern D(real) - D(fake): the second forward updates u and v before the first graph runs backward.
    g_module, t_module = _normed_pair(norm, "linear")
    x1, x2 = rand(3, 5, seed=5), rand(3, 5, seed=6)
    g_x1, g_x2 = to_genesis(x1), to_genesis(x2)
    (t_module(x1).sum() - t_module(x2).sum()).backward()
    (g_module(g_x1).sum() - g_module(g_x2).sum()).backward()
    for (g_name, g_param), (t_name, t_param) in zip(g_module.named_parameters(), t_module.named_parameters()):
        assert g_name == t_name
        assert_same(g_param.grad, t_param.grad, what=f"grad of {g_name}")
    assert_same(g_x1.grad, x1.grad)
    assert_same(g_x2.grad, x2.grad)


@pytest.mark.parametrize("norm, remove", [("weight_norm", "remove_weight_norm"),
                                          ("spectral_norm", "remove_spectral_norm")])
def test_remove_restores_a_plain_parameter(norm: str, remove: str) -> None:
    g_module, t_module = _normed_pair(norm, "conv_transpose2d")
    x = rand(2, 3, 4, 4, seed=7, requires_grad=False)
    assert_same(g_module(to_genesis(x)), t_module(x))
    getattr(genesis.nn.utils, remove)(g_module)
    getattr(torch.nn.utils, remove)(t_module)
    assert isinstance(g_module.weight, genesis.nn.Parameter)
    assert list(dict(g_module.named_parameters())) == list(dict(t_module.named_parameters()))
    assert not g_module._forward_pre_hooks
    _assert_same_state(g_module, t_module)
    check_module(g_module, t_module, rand(2, 3, 4, 4, seed=8))
    with pytest.raises(ValueError, match=f"{norm} of 'weight' not found"):
        getattr(genesis.nn.utils, remove)(g_module)


@pytest.mark.parametrize("leave_parametrized", [True, False])
@pytest.mark.parametrize("norm", ["parametrized_weight_norm", "parametrized_spectral_norm"])
def test_remove_parametrizations(norm: str, leave_parametrized: bool) -> None:
    g_module, t_module = _normed_pair(norm, "conv2d")
    if norm == "parametrized_weight_norm" and not leave_parametrized:
        for lib, module in ((genesis, g_module), (torch, t_module)):
            with pytest.raises(ValueError, match="sequence of tensors"):
                lib.nn.utils.parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)
        return
    original = g_module.parametrizations.weight.original if norm == "parametrized_spectral_norm" else None
    parametrize.remove_parametrizations(g_module, "weight", leave_parametrized=leave_parametrized)
    torch.nn.utils.parametrize.remove_parametrizations(t_module, "weight", leave_parametrized=leave_parametrized)
    assert type(g_module) is genesis.nn.Conv2d and not hasattr(g_module, "parametrizations")
    assert isinstance(g_module.weight, genesis.nn.Parameter)
    if original is not None:
        assert g_module.weight is original, "the original Parameter object is kept (optimizers hold it)"
    _assert_same_state(g_module, t_module)
    check_module(g_module, t_module, rand(2, 3, 5, 5, seed=9))


@pytest.mark.parametrize("norm", NORMS)
def test_torch_state_dict_loads_into_a_nested_model(norm: str) -> None:
    def make(lib: Any, **kw: Any) -> Any:
        return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, **kw), lib.nn.ReLU(), lib.nn.Flatten(),
                                 lib.nn.Linear(36, 2, **kw))

    g_model, t_model = _pair(make)
    g_fn, t_fn = NORMS[norm]
    for index in (0, 3):
        g_fn(g_model[index])
        t_fn(t_model[index])
    for _ in range(2):  # move torch's power-iteration vectors away from Genesis's
        t_model(torch.randn(2, 3, 5, 5, dtype=torch.float64))
    assert list(g_model.state_dict()) == list(t_model.state_dict())
    _copy_state(g_model, t_model)
    _assert_same_state(g_model, t_model)
    g_model.eval()
    t_model.eval()
    x = rand(2, 3, 5, 5, seed=11, requires_grad=False)
    assert_same(g_model(to_genesis(x)), t_model(x))


def test_hook_based_weight_norm_checkpoint_loads_into_the_parametrization() -> None:
    g_module, t_module = _pair(LAYERS["linear"][0])
    torch.nn.utils.weight_norm(t_module)
    parametrizations.weight_norm(g_module)
    with torch.no_grad():
        t_module.weight_g.mul_(2.0)
    result = g_module.load_state_dict({k: to_genesis(v) for k, v in t_module.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    x = rand(3, 5, seed=12, requires_grad=False)
    assert_same(g_module(to_genesis(x)), t_module(x))


def test_hook_based_spectral_norm_state_dict_versions_as_torch() -> None:
    g_module, t_module = _normed_pair("spectral_norm", "conv2d")
    t_model, g_model = torch.nn.Sequential(t_module), genesis.nn.Sequential(g_module)
    t_model(rand(2, 3, 5, 5, seed=13, requires_grad=False))  # a training step moves weight_u and weight_v on
    assert g_model.state_dict()._metadata == t_model.state_dict()._metadata  # {"0": {"spectral_norm": ...}, ...}
    # The layout before version 1: "weight" beside "weight_orig" and "weight_u", no "weight_v", no version.
    old = {key: value for key, value in t_model.state_dict().items() if key != "0.weight_v"}
    old["0.weight"] = t_module.weight.detach()
    g_fresh, t_fresh = _normed_pair("spectral_norm", "conv2d")
    t_result = t_fresh.load_state_dict({key[2:]: value for key, value in old.items()})
    g_result = g_fresh.load_state_dict({key[2:]: to_genesis(value) for key, value in old.items()})
    assert str(g_result) == str(t_result)
    assert_same(g_fresh.weight_v, t_fresh.weight_v)
    missing = {key[2:]: value for key, value in old.items() if key != "0.weight_u"}
    assert str(g_fresh.load_state_dict({k: to_genesis(v) for k, v in missing.items()}, strict=False)) == str(
        t_fresh.load_state_dict(missing, strict=False))
    # Removal drops both state-dict hooks (torch 2.13 leaves the load hook, whose later loads then ask for
    # "weight_orig" and "weight_u": a torch bug not copied).
    genesis.nn.utils.remove_spectral_norm(g_fresh)
    assert not g_fresh._state_dict_hooks and not g_fresh._load_state_dict_pre_hooks
    assert str(g_fresh.load_state_dict(g_fresh.state_dict())) == "<All keys matched successfully>"


def test_weight_norm_whole_tensor_and_warning() -> None:
    module = genesis.nn.Linear(5, 4, device=DEVICE)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        genesis.nn.utils.weight_norm(module, dim=None)
    assert module.weight_g.shape == torch.nn.utils.weight_norm(torch.nn.Linear(5, 4), dim=None).weight_g.shape
    assert parametrizations.weight_norm(genesis.nn.Linear(5, 4, device=DEVICE), dim=None).parametrizations.weight \
        .original0.ndim == 0


def test_normalization_errors_match_torch() -> None:
    for lib in (genesis, torch):
        utils = lib.nn.utils
        module = utils.weight_norm(lib.nn.Linear(3, 2))
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
            utils.weight_norm(module)
        module = utils.spectral_norm(lib.nn.Linear(3, 2))
        with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
            utils.spectral_norm(module)
        with pytest.raises(ValueError, match="n_power_iterations to be positive"):
            utils.spectral_norm(lib.nn.Linear(3, 2), n_power_iterations=0)
        with pytest.raises(ValueError, match="n_power_iterations to be positive"):
            utils.parametrizations.spectral_norm(lib.nn.Linear(3, 2), n_power_iterations=0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            utils.parametrizations.spectral_norm(lib.nn.Linear(3, 2), dim=2)
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
            utils.parametrizations.spectral_norm(lib.nn.Linear(3, 2), name="kernel")
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            utils.parametrize.remove_parametrizations(lib.nn.Linear(3, 2), "weight")
        with pytest.raises(ValueError, match="can't have uninitialized parameters"):
            utils.weight_norm(lib.nn.LazyLinear(2))


# ------------------------------------------------------------------ parametrize with user parametrizations
def _symmetric(lib: Any) -> Any:
    class Symmetric(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.triu() + x.triu(1).transpose(0, 1)

        def right_inverse(self, a: Any) -> Any:
            return a.triu()

    return Symmetric()


def _scale(lib: Any, factor: float) -> Any:
    class Scale(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            return x * factor

        def right_inverse(self, a: Any) -> Any:
            return a / factor

    return Scale()


def _square_linear(lib: Any, **kw: Any) -> Any:
    return lib.nn.Linear(4, 4, **kw)


def test_register_parametrization_chain_and_assignment_match_torch() -> None:
    g_module, t_module = _pair(_square_linear)
    for lib, module in ((genesis, g_module), (torch, t_module)):
        lib.nn.utils.parametrize.register_parametrization(module, "weight", _symmetric(lib))
    assert type(g_module).__name__ == "ParametrizedLinear" and isinstance(g_module, genesis.nn.Linear)
    assert parametrize.type_before_parametrizations(g_module) is genesis.nn.Linear
    assert parametrize.is_parametrized(g_module) and parametrize.is_parametrized(g_module, "weight")
    assert not parametrize.is_parametrized(g_module, "bias")
    check_module(g_module, t_module, rand(3, 4, seed=13))
    for lib, module in ((genesis, g_module), (torch, t_module)):
        lib.nn.utils.parametrize.register_parametrization(module, "weight", _scale(lib, 3.0))
    assert len(g_module.parametrizations.weight) == 2
    check_module(g_module, t_module, rand(3, 4, seed=14))
    target = rand(4, 4, seed=15, requires_grad=False)
    target = target + target.T
    g_module.weight = to_genesis(target)
    t_module.weight = target
    assert_same(g_module.weight, t_module.weight)
    assert_same(g_module.weight, target)
    _assert_same_state(g_module, t_module)


def test_register_parametrization_checks() -> None:
    class Flatten(genesis.nn.Module):
        def forward(self, x: genesis.Tensor) -> genesis.Tensor:
            return x.reshape(-1)

    module = genesis.nn.Linear(4, 4, device=DEVICE)
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(module, "weight", Flatten())
    assert isinstance(module.weight, genesis.nn.Parameter) and not parametrize.is_parametrized(module)
    parametrize.register_parametrization(module, "weight", Flatten(), unsafe=True)
    assert module.weight.shape == (16,)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        parametrize.register_parametrization(module, "kernel", _symmetric(genesis))
    with pytest.raises(KeyError, match="already exists"):
        module.weight = genesis.nn.Parameter(genesis.zeros(4, 4, device=DEVICE))


def _shape_and_dtype_breakers(lib: Any) -> list[Any]:
    class Flatten(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.reshape(-1)

    class ToHalf(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.to(lib.float32)

    class TransposedInverse(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            return x

        def right_inverse(self, a: Any) -> Any:
            return a[:, :2]

    return [Flatten(), ToHalf(), TransposedInverse()]


def test_register_parametrization_check_messages_read_as_torchs() -> None:
    # torch words a first registration's check, a chained one's and a chained right_inverse's differently.
    messages: dict[Any, list[str]] = {genesis: [], torch: []}
    for lib in (genesis, torch):
        first, chained = lib.nn.Linear(4, 4, dtype=lib.float64), lib.nn.Linear(4, 4, dtype=lib.float64)
        lib.nn.utils.parametrize.register_parametrization(chained, "weight", _scale(lib, 2.0))
        for module in (first, chained):
            for breaker in _shape_and_dtype_breakers(lib)[:2 if module is first else 3]:
                with pytest.raises(ValueError) as err:
                    lib.nn.utils.parametrize.register_parametrization(module, "weight", breaker)
                messages[lib].append(str(err.value).replace("torch.", "genesis."))
    assert messages[genesis] == messages[torch] and len(messages[torch]) == 5


def test_transfer_parametrizations_and_params_matches_torch() -> None:
    g_from, t_from = _pair(_square_linear)
    for lib, module in ((genesis, g_from), (torch, t_from)):
        lib.nn.utils.parametrize.register_parametrization(module, "weight", _symmetric(lib))
        lib.nn.utils.parametrize.register_parametrization(module, "weight", _scale(lib, 2.0))
        lib.nn.utils.parametrize.register_parametrization(module, "bias", _scale(lib, 3.0))
    g_to, t_to = _pair(_square_linear)
    for lib, source, target in ((genesis, g_from, g_to), (torch, t_from, t_to)):
        assert lib.nn.utils.parametrize.transfer_parametrizations_and_params(source, target) is target
        assert target.parametrizations.weight.original is source.parametrizations.weight.original
        assert len(target.parametrizations.weight) == 2
    _assert_same_state(g_to, t_to)
    check_module(g_to, t_to, rand(3, 4, seed=16))
    # one name only, onto a module that lacks it: created from the parametrized value first
    g_bare, t_bare = genesis.nn.Module(), torch.nn.Module()
    parametrize.transfer_parametrizations_and_params(g_from, g_bare, "bias")
    torch.nn.utils.parametrize.transfer_parametrizations_and_params(t_from, t_bare, "bias")
    assert list(g_bare.state_dict()) == list(t_bare.state_dict()) == ["parametrizations.bias.original"]
    assert_same(g_bare.bias, t_bare.bias)
    # nothing to transfer from a plain module
    plain = genesis.nn.Linear(2, 2)
    assert parametrize.transfer_parametrizations_and_params(plain, g_bare) is g_bare


def test_parametrized_buffer() -> None:
    g_module, t_module = _pair(lambda lib, **kw: lib.nn.BatchNorm1d(4, **kw))
    for lib, module in ((genesis, g_module), (torch, t_module)):
        lib.nn.utils.parametrize.register_parametrization(module, "running_var", _scale(lib, 2.0))
    assert not isinstance(g_module.parametrizations.running_var.original, genesis.nn.Parameter)
    _assert_same_state(g_module, t_module)
    assert_same(g_module.running_var, t_module.running_var)
    for lib, module in ((genesis, g_module), (torch, t_module)):
        lib.nn.utils.parametrize.remove_parametrizations(module, "running_var")
    assert "running_var" in g_module._buffers and type(g_module) is genesis.nn.BatchNorm1d
    _assert_same_state(g_module, t_module)


def test_cached_computes_each_parametrized_tensor_once() -> None:
    calls = []

    class Counting(genesis.nn.Module):
        def forward(self, x: genesis.Tensor) -> genesis.Tensor:
            calls.append(1)
            return x * 2

    module = parametrize.register_parametrization(genesis.nn.Linear(4, 4, device=DEVICE), "weight", Counting())
    calls.clear()
    assert module.weight is not module.weight and len(calls) == 2
    with parametrize.cached():
        first = module.weight
        with parametrize.cached():
            assert module.weight is first
        assert module.weight is first
    assert len(calls) == 3
    assert module.weight is not first and len(calls) == 4


def test_parametrized_module_deepcopies_but_does_not_pickle() -> None:
    module = parametrizations.weight_norm(genesis.nn.Linear(4, 3, device=DEVICE))
    replica = copy.deepcopy(module)
    assert type(replica) is type(module)
    assert replica.parametrizations.weight.original1 is not module.parametrizations.weight.original1
    assert genesis.equal(replica.weight, module.weight)
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(module)
