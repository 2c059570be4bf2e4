"""``genesis.autograd.graph``: saved-tensor hooks against ``torch.autograd.graph``.

The same program runs in both libraries under the same hooks: pack and unpack are called as often as torch calls
them (custom Functions save the same tensors in both), with tensors of the same values and autograd state, and the
gradients (first and second order) equal those computed without hooks and torch's. ``save_on_cpu`` keeps the saved
tensors in host memory; ``disable_saved_tensors_hooks`` refuses hooks as torch does.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
import torch

import genesis
from genesis.autograd import function as autograd_function
from genesis.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from tests.helpers import DEVICE, assert_same, to_genesis


def _custom_mul(lib: Any) -> Any:
    """``x * y`` as a custom Function of ``lib`` that saves both inputs and its output."""

    class Mul(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, y: Any) -> Any:
            out = x * y
            ctx.save_for_backward(x, y, out)
            return out

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            x, y, out = ctx.saved_tensors
            return grad * y, grad * x

    return Mul


class _Counter:
    """Pack and unpack hooks that count their calls and keep what they saw."""

    def __init__(self, lib: Any, copy: bool = True) -> None:
        self.lib, self.copy = lib, copy
        self.packed: list[tuple[bool, bool, bool]] = []  # (requires_grad, has grad_fn, grad mode) per pack
        self.unpacked = 0

    def pack(self, t: Any) -> Any:
        self.packed.append((t.requires_grad, t.grad_fn is not None, self.lib.is_grad_enabled()))
        return t.detach().clone() if self.copy else t

    def unpack(self, packed: Any) -> Any:
        self.unpacked += 1
        return packed

    def hooks(self) -> Any:
        return self.lib.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(3, 4, dtype=torch.float64, requires_grad=True), torch.randn(3, 4, dtype=torch.float64,
                                                                                 requires_grad=True)


@pytest.mark.parametrize("copy", [True, False])
def test_custom_function_pack_unpack_counts_and_gradients_match_torch(copy: bool) -> None:
    tx, ty = _inputs()
    gx, gy = to_genesis(tx), to_genesis(ty)
    counters = {}
    for lib, x, y in ((torch, tx, ty), (genesis, gx, gy)):
        counter = counters[lib.__name__] = _Counter(lib, copy)
        x_exp = x.exp()
        with counter.hooks():
            out = _custom_mul(lib).apply(x_exp, y)
        assert counter.unpacked == 0
        out.sum().backward()
    g, t = counters["genesis"], counters["torch"]
    # x_exp (non-leaf), y (leaf) and out (this node's output): requires_grad, grad_fn, grad mode while packing.
    assert g.packed == t.packed == [(True, True, False), (True, False, False), (True, True, False)]
    assert g.unpacked == t.unpacked == 3
    assert_same(gx.grad, tx.grad, what="x.grad")
    assert_same(gy.grad, ty.grad, what="y.grad")


def test_hooks_apply_to_built_in_ops_and_leave_gradients_unchanged() -> None:
    model_t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).double()
    model_g = genesis.nn.Sequential(genesis.nn.Linear(4, 8), genesis.nn.Tanh(), genesis.nn.Linear(8, 2)).to(
        DEVICE, genesis.float64)
    model_g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in model_t.state_dict().items()})
    x = torch.randn(5, 4, dtype=torch.float64)
    model_g(to_genesis(x)).pow(2).sum().backward()
    plain = [p.grad.clone() for p in model_g.parameters()]
    model_g.zero_grad()
    counter = _Counter(genesis)
    with counter.hooks():
        loss = model_g(to_genesis(x)).pow(2).sum()
    assert counter.packed and all(not grad_mode for _, _, grad_mode in counter.packed)  # packed under no_grad
    loss.backward()
    assert counter.unpacked == len(counter.packed)
    model_t(x).pow(2).sum().backward()
    for g_param, t_param, before in zip(model_g.parameters(), model_t.parameters(), plain):
        assert_same(g_param.grad, t_param.grad)
        assert genesis.equal(g_param.grad, before)


def test_hooks_apply_to_layers_whose_backward_reads_arrays() -> None:
    """Convolution, batch and layer norm, pooling, relu and linear compute their backward on the saved arrays; under
    saved-tensor hooks those arrays come from unpack, and every gradient equals the one without hooks and torch's."""
    def build(lib: Any) -> Any:
        nn = lib.nn
        lib.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.LayerNorm(16), nn.Linear(16, 2))

    model_t = build(torch).double()
    model_g = build(genesis).to(DEVICE, genesis.float64)
    model_g.load_state_dict({k: to_genesis(v, requires_grad=False) for k, v in model_t.state_dict().items()})
    x = torch.randn(2, 3, 4, 4, dtype=torch.float64)
    model_t(x).pow(2).sum().backward()
    counter = _Counter(genesis)
    with counter.hooks():
        loss = model_g(to_genesis(x)).pow(2).sum()
    loss.backward()
    assert counter.packed and counter.unpacked == len(counter.packed)
    for (name, g_param), t_param in zip(model_g.named_parameters(), model_t.parameters()):
        assert_same(g_param.grad, t_param.grad, what=f"{name}.grad")


def test_unpack_runs_on_every_read_and_hooks_are_those_of_save_time() -> None:
    # As torch: x * x packs x twice, and each of two backward passes unpacks both.
    x = genesis.randn(3, dtype=genesis.float64, device=DEVICE, requires_grad=True)
    outer, inner = _Counter(genesis), _Counter(genesis)
    with outer.hooks():
        with inner.hooks():  # only the innermost pair applies
            y = (x * x).sum()
        z = x.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    z.backward()
    assert len(inner.packed) == 2 and inner.unpacked == 4
    assert len(outer.packed) == 1 and outer.unpacked == 1
    assert not autograd_function.saved_tensors_hooks_stack


def test_double_backward_through_unpacked_tensors_matches_torch() -> None:
    tx = torch.tensor([1.0, 2.0, -0.5], dtype=torch.float64, requires_grad=True)
    gx = to_genesis(tx)
    results = []
    for lib, x in ((torch, tx), (genesis, gx)):
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            y = (x.sin() * x ** 3).sum()
        (grad,) = lib.autograd.grad(y, x, create_graph=True)
        (second,) = lib.autograd.grad(grad.sum(), x)
        results.append((grad, second))
    assert_same(results[1][0], results[0][0], what="grad")
    assert_same(results[1][1], results[0][1], what="second-order grad")


def test_save_on_cpu_packs_to_host_and_gradients_are_equal() -> None:
    tx, ty = _inputs()
    gx, gy = to_genesis(tx), to_genesis(ty)
    for pin_memory in (False, True):
        hooks = save_on_cpu(pin_memory=pin_memory)
        pack = hooks.pack_hook
        packed_devices = []

        def spy(t: genesis.Tensor, pack: Any = pack, seen: list = packed_devices) -> Any:
            device, stored = pack(t)
            seen.append((device.type, stored.device.type))
            return device, stored

        hooks.pack_hook = spy
        gx.grad = gy.grad = None
        with hooks:
            loss = ((gx * gy).tanh() @ gy.T).sum()
        loss.backward()
        assert packed_devices and all(d == DEVICE and s == "cpu" for d, s in packed_devices)
        plain_x, plain_y = to_genesis(tx), to_genesis(ty)
        ((plain_x * plain_y).tanh() @ plain_y.T).sum().backward()
        assert genesis.equal(gx.grad, plain_x.grad) and genesis.equal(gy.grad, plain_y.grad)
    with torch.autograd.graph.save_on_cpu():
        ((tx * ty).tanh() @ ty.T).sum().backward()
    assert_same(gx.grad, tx.grad)


def test_packed_graph_no_longer_holds_the_saved_tensors() -> None:
    x = genesis.randn(4, dtype=genesis.float64, device=DEVICE, requires_grad=True)
    expected = None
    for hooked in (False, True):
        hooks = saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t) if hooked else None
        if hooks is not None:
            hooks.__enter__()
        middle = x.exp()
        out = middle.sin().sum()
        if hooks is not None:
            hooks.__exit__(None, None, None)
        ref = weakref.ref(middle)
        del middle
        gc.collect()
        # Without hooks sin's node keeps its input alive; packed, only the copy the hook made remains.
        assert (ref() is None) == hooked
        x.grad = None
        out.backward()
        expected = x.grad if expected is None else expected
        assert genesis.allclose(x.grad, expected)


def test_in_place_change_after_saving_keeps_the_saved_values() -> None:
    x = genesis.tensor([0.5, -1.5, 2.0], dtype=genesis.float64, device=DEVICE, requires_grad=True)
    counter = _Counter(genesis, copy=False)  # packs share memory with what they saved
    with counter.hooks():
        c = x * 1
        c.mul_(c)  # mul saved c, which the in-place write then overwrites
        (c * c).sum().backward()
    assert genesis.allclose(x.grad, 4 * x.detach() ** 3)  # d/dx x^4


def test_unpack_must_return_a_tensor() -> None:
    x = genesis.randn(3, device=DEVICE, requires_grad=True)
    with saved_tensors_hooks(lambda t: 1, lambda packed: packed):
        y = x.exp().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type int"):
        y.backward()


def test_disable_saved_tensors_hooks() -> None:
    x = genesis.randn(3, device=DEVICE, requires_grad=True)
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with save_on_cpu():
                pass
        with disable_saved_tensors_hooks("inner message"):
            with pytest.raises(RuntimeError, match="inner message"):
                saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with pytest.raises(RuntimeError, match="no hooks here"):
            save_on_cpu().__enter__()
        x.exp().sum().backward()  # without hooks, nothing changes
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        with disable_saved_tensors_hooks("saving refused"):
            with pytest.raises(RuntimeError, match="saving refused"):
                x.exp()
    assert not autograd_function.saved_tensors_hooks_stack
    with save_on_cpu():  # allowed again
        x.exp().sum().backward()


def test_nodes_and_increment_version() -> None:
    x = genesis.randn(3, device=DEVICE, requires_grad=True)
    y = x * 2
    out = y.sin()  # saves y
    assert isinstance(out.grad_fn, genesis.autograd.graph.Node)
    seen = []
    handle = out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(len(grad_inputs)))
    out.sum().backward(retain_graph=True)
    assert seen == [1]
    handle.remove()
    genesis.autograd.graph.increment_version(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
