"""``genesis.nn.utils.prune`` against ``torch.nn.utils.prune``: each Genesis layer starts from the torch layer's
weights, both are pruned the same way, and masks, state-dict keys and values, forward outputs, gradients of
``weight_orig``, iterative pruning through a PruningContainer, global pruning and ``remove`` must equal torch's.
The random methods draw other numbers than torch: their masks are checked for what they must hold."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
import torch.nn.utils.prune as torch_prune

import genesis
from genesis.nn.utils import prune
from tests.helpers import DEVICE, assert_same, to_genesis

LAYERS: dict[str, tuple[Callable[..., Any], tuple[int, ...]]] = {
    "linear": (lambda lib, **kw: lib.nn.Linear(6, 5, **kw), (3, 6)),
    "conv2d": (lambda lib, **kw: lib.nn.Conv2d(3, 4, 3, padding=1, **kw), (2, 3, 5, 5)),
}


def _pair(layer: str) -> tuple[genesis.nn.Module, torch.nn.Module]:
    """The same layer in Genesis (on DEVICE) and torch, float64, with torch's initial weights."""
    make = LAYERS[layer][0]
    t_module = make(torch, dtype=torch.float64)
    g_module = make(genesis, dtype=genesis.float64, device=DEVICE)
    g_module.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t_module.state_dict().items()})
    return g_module, t_module


def _assert_same_state(g_module: genesis.nn.Module, t_module: torch.nn.Module) -> None:
    g_state, t_state = g_module.state_dict(), t_module.state_dict()
    assert list(g_state) == list(t_state)
    for key in t_state:
        assert_same(g_state[key], t_state[key], what=key)


def _assert_same_forward_backward(g_module: genesis.nn.Module, t_module: torch.nn.Module, layer: str) -> None:
    x = torch.randn(*LAYERS[layer][1], dtype=torch.float64)
    g_out, t_out = g_module(to_genesis(x)), t_module(x)
    assert_same(g_out, t_out)
    g_out.sum().backward()
    t_out.sum().backward()
    for name, t_param in t_module.named_parameters():
        assert_same(dict(g_module.named_parameters())[name].grad, t_param.grad, what=f"{name}.grad")


@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("amount", [0.3, 4, 0.0, 0])
def test_l1_unstructured(layer: str, amount: float) -> None:
    g_module, t_module = _pair(layer)
    assert prune.l1_unstructured(g_module, "weight", amount=amount) is g_module
    torch_prune.l1_unstructured(t_module, "weight", amount=amount)
    _assert_same_state(g_module, t_module)
    assert isinstance(g_module.weight_orig, genesis.nn.Parameter) and "weight" not in dict(g_module.named_parameters())
    assert_same(g_module.weight, t_module.weight)
    _assert_same_forward_backward(g_module, t_module, layer)


@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("n", [1, 2, float("inf"), float("-inf"), "fro"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured(layer: str, n: Any, dim: int) -> None:
    g_module, t_module = _pair(layer)
    t_n = n
    if n == "fro" and layer == "conv2d":
        # "fro" over 3 dims: torch.norm refuses; genesis.norm takes the 2-norm of the entries, as torch's n=2.
        with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
            torch_prune.ln_structured(t_module, "weight", amount=0.4, n=n, dim=dim)
        t_n = 2
    prune.ln_structured(g_module, "weight", amount=0.4, n=n, dim=dim)
    torch_prune.ln_structured(t_module, "weight", amount=0.4, n=t_n, dim=dim)
    _assert_same_state(g_module, t_module)
    _assert_same_forward_backward(g_module, t_module, layer)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_iterative_pruning_combines_masks_in_a_container(layer: str) -> None:
    g_module, t_module = _pair(layer)
    for lib_prune, module in ((prune, g_module), (torch_prune, t_module)):
        lib_prune.l1_unstructured(module, "weight", amount=0.2)
        lib_prune.ln_structured(module, "weight", amount=1, n=2, dim=0)
        lib_prune.l1_unstructured(module, "weight", amount=5)
        lib_prune.identity(module, "bias")
    _assert_same_state(g_module, t_module)
    hooks = [h for h in g_module._forward_pre_hooks.values() if h._tensor_name == "weight"]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 3
    assert [type(m).__name__ for m in hooks[0]] == ["L1Unstructured", "LnStructured", "L1Unstructured"]
    _assert_same_forward_backward(g_module, t_module, layer)


def test_importance_scores_and_custom_mask() -> None:
    g_module, t_module = _pair("linear")
    scores = torch.randn(5, 6, dtype=torch.float64)
    prune.l1_unstructured(g_module, "weight", amount=7, importance_scores=to_genesis(scores))
    torch_prune.l1_unstructured(t_module, "weight", amount=7, importance_scores=scores)
    mask = (torch.rand(5) > 0.5).to(torch.float64)
    prune.custom_from_mask(g_module, "bias", mask=to_genesis(mask))
    torch_prune.custom_from_mask(t_module, "bias", mask=mask)
    _assert_same_state(g_module, t_module)
    with pytest.raises(ValueError, match="importance_scores"):
        prune.l1_unstructured(g_module, "weight", amount=1, importance_scores=genesis.ones(2, device=DEVICE))


def test_global_unstructured_ranks_all_tensors_together() -> None:
    pairs = [_pair("linear"), _pair("conv2d")]
    scores = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    prune.l1_unstructured(pairs[0][0], "weight", amount=3)  # an earlier mask is combined too
    torch_prune.l1_unstructured(pairs[0][1], "weight", amount=3)
    for lib_prune, index, score in ((prune, 0, to_genesis(scores)), (torch_prune, 1, scores)):
        params = [(pair[index], "weight") for pair in pairs] + [(pairs[1][index], "bias")]
        lib_prune.global_unstructured(params, pruning_method=lib_prune.L1Unstructured, amount=0.5,
                                      importance_scores={(pairs[1][index], "weight"): score})
    for g_module, t_module in pairs:
        _assert_same_state(g_module, t_module)
    with pytest.raises(TypeError, match="unstructured"):
        prune.global_unstructured([(pairs[0][0], "bias")], pruning_method=prune.RandomStructured, amount=1)


def test_remove_makes_pruning_permanent() -> None:
    g_module, t_module = _pair("conv2d")
    for lib_prune, module in ((prune, g_module), (torch_prune, t_module)):
        lib_prune.l1_unstructured(module, "weight", amount=0.5)
        lib_prune.ln_structured(module, "weight", amount=1, n=1, dim=1)
        assert lib_prune.is_pruned(module)
        lib_prune.remove(module, "weight")
        assert not lib_prune.is_pruned(module)
    assert isinstance(g_module.weight, genesis.nn.Parameter)
    assert not g_module._forward_pre_hooks and "weight_mask" not in dict(g_module.named_buffers())
    _assert_same_state(g_module, t_module)
    _assert_same_forward_backward(g_module, t_module, "conv2d")
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(g_module, "weight")


def test_pruned_state_dict_loads_into_a_pruned_module() -> None:
    g_module, t_module = _pair("linear")
    torch_prune.l1_unstructured(t_module, "weight", amount=0.5)
    prune.identity(g_module, "weight")
    g_module.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in t_module.state_dict().items()})
    x = torch.randn(3, 6, dtype=torch.float64)
    assert_same(g_module(to_genesis(x)), t_module(x))  # the pre-hook recomputes weight from the loaded mask


@pytest.mark.parametrize("amount", [0.5, 3])
def test_random_unstructured(amount: float) -> None:
    g_module, _ = _pair("conv2d")
    prune.random_unstructured(g_module, "weight", amount=amount)
    mask = g_module.weight_mask
    expected = round(0.5 * 108) if isinstance(amount, float) else amount
    assert int((mask == 0).sum().item()) == expected
    assert genesis.equal(g_module.weight, g_module.weight_orig * mask)


def test_random_structured_prunes_whole_slices() -> None:
    g_module, _ = _pair("conv2d")
    prune.random_structured(g_module, "weight", amount=2, dim=0)
    per_channel = g_module.weight_mask.sum(dim=(1, 2, 3)).tolist()
    assert sorted(per_channel) == [0.0, 0.0, 27.0, 27.0]
    prune.random_structured(g_module, "weight", amount=1, dim=0)  # only among the channels left
    assert sorted(g_module.weight_mask.sum(dim=(1, 2, 3)).tolist()) == [0.0, 0.0, 0.0, 27.0]


def test_prune_method_on_a_tensor_and_errors() -> None:
    t = torch.randn(4, 5, dtype=torch.float64)
    assert_same(prune.L1Unstructured(amount=6).prune(to_genesis(t)), torch_prune.L1Unstructured(amount=6).prune(t))
    assert_same(prune.LnStructured(amount=2, n=2, dim=1).prune(to_genesis(t)),
                torch_prune.LnStructured(amount=2, n=2, dim=1).prune(t))
    with pytest.raises(TypeError, match="amount"):
        prune.L1Unstructured(amount="0.3")
    with pytest.raises(ValueError, match="amount"):
        prune.L1Unstructured(amount=1.5)
    with pytest.raises(ValueError, match="amount"):
        prune.L1Unstructured(amount=-1)
    g_module, _ = _pair("linear")
    with pytest.raises(ValueError, match="smaller than the number of parameters"):
        prune.l1_unstructured(g_module, "weight", amount=31)
    assert isinstance(g_module.weight, genesis.nn.Parameter) and not g_module._forward_pre_hooks  # rolled back
    with pytest.raises(ValueError, match=r"multidimensional tensors. Found tensor of shape genesis.Size\(\[5\]\) "
                                         "with 1 dims"):  # torch: torch.Size([5])
        prune.ln_structured(g_module, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index"):
        prune.ln_structured(g_module, "weight", amount=1, n=2, dim=2)
