"""Linear and convolution layers under autocast with float32 parameters: one graph node, the casts folded in.

Values, dtypes and every gradient against torch's autocast (which records a cast node per parameter), the node's
name and edges, frozen and bias-free layers, double backward through the folded casts, and the layers that keep
the general path.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import genesis
from genesis.ops.nn import CastConv, CastLinear
from tests.helpers import DEVICE, assert_same, rand, to_genesis

LOOSE = {"rtol": 2e-2, "atol": 2e-2}


def _run(lib: Any, x: Any, w: Any, b: Any, device: str) -> Any:
    with lib.autocast(device, dtype=lib.bfloat16):
        y = lib.nn.functional.linear(x, w, b)
        loss = (y.float() ** 2).mean()
    return y, loss


def _same_values_and_float32_gradients(y: Any, y_t: Any, loss: Any, loss_t: Any, leaves: tuple,
                                       leaves_t: tuple) -> None:
    """The output as torch's, then every float32 leaf's gradient (None leaves skipped): float32, as torch's."""
    assert_same(y, y_t, **LOOSE)
    loss.backward()
    loss_t.backward()
    for g, t in zip(leaves, leaves_t):
        if g is not None:
            assert g.grad.dtype is genesis.float32
            assert_same(g.grad, t.grad, **LOOSE)


@pytest.mark.parametrize("lead", [(6,), (2, 3), (2, 2, 3)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_values_dtypes_and_gradients_match_torch(lead: tuple, with_bias: bool) -> None:
    x_t = rand(*lead, 5, seed=1, dtype=torch.float32)
    w_t = rand(4, 5, seed=2, dtype=torch.float32)
    b_t = rand(4, seed=3, dtype=torch.float32) if with_bias else None
    x, w = to_genesis(x_t), to_genesis(w_t)
    b = to_genesis(b_t) if with_bias else None
    y, loss = _run(genesis, x, w, b, DEVICE)
    y_t, loss_t = _run(torch, x_t, w_t, b_t, "cpu")
    assert y.dtype is genesis.bfloat16 and y.grad_fn.name() == "AddmmBackward0"
    _same_values_and_float32_gradients(y, y_t, loss, loss_t, (x, w, b), (x_t, w_t, b_t))


def test_one_node_with_edges_to_the_parameters() -> None:
    layer = genesis.nn.Linear(5, 4, device=DEVICE)
    x = genesis.randn(3, 5, device=DEVICE).to(genesis.bfloat16)
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        y = layer(x)
    assert y.grad_fn._fn is CastLinear
    nodes = [n for n, _ in y.grad_fn.next_functions]
    assert nodes[0] is None  # x does not require grad
    assert [n.variable for n in nodes[1:]] == [layer.weight, layer.bias]


def test_frozen_weight_and_no_grad() -> None:
    w_t = rand(4, 5, seed=2, dtype=torch.float32, requires_grad=False)
    x_t = rand(3, 5, seed=1, dtype=torch.float32)
    w, x = to_genesis(w_t, requires_grad=False), to_genesis(x_t)
    y, loss = _run(genesis, x, w, None, DEVICE)
    y_t, loss_t = _run(torch, x_t, w_t, None, "cpu")
    loss.backward()
    loss_t.backward()
    assert w.grad is None
    assert_same(x.grad, x_t.grad, **LOOSE)
    with genesis.no_grad(), genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        z = genesis.nn.functional.linear(x, to_genesis(w_t))
    assert z.grad_fn is None and z.dtype is genesis.bfloat16
    assert_same(z, y_t, **LOOSE)


def test_double_backward_reaches_the_parameters() -> None:
    # A gradient penalty: d/dw of |d loss / d x|^2, through the folded casts.
    def penalty(lib: Any, x: Any, w: Any, b: Any, device: str) -> Any:
        with lib.autocast(device, dtype=lib.bfloat16):
            y = lib.nn.functional.linear(x, w, b)
            loss = (y.float() ** 2).sum()
        (gx,) = lib.autograd.grad(loss, x, create_graph=True)
        return (gx.float() ** 2).sum()

    x_t = rand(3, 5, seed=1, dtype=torch.float32)
    w_t, b_t = rand(4, 5, seed=2, dtype=torch.float32), rand(4, seed=3, dtype=torch.float32)
    x, w, b = to_genesis(x_t), to_genesis(w_t), to_genesis(b_t)
    p, p_t = penalty(genesis, x, w, b, DEVICE), penalty(torch, x_t, w_t, b_t, "cpu")
    assert_same(p, p_t, **LOOSE)
    p.backward()
    p_t.backward()
    assert_same(w.grad, w_t.grad, rtol=5e-2, atol=5e-2)
    assert_same(b.grad, b_t.grad, rtol=5e-2, atol=5e-2)


def test_other_layouts_keep_the_general_path() -> None:
    # A bfloat16 bias beside a float32 weight, and a 1-d input: no folding, the same values as torch.
    w_t = rand(4, 5, seed=2, dtype=torch.float32)
    b_t = rand(4, seed=3, dtype=torch.bfloat16)
    v_t = rand(5, seed=4, dtype=torch.float32)
    w, b, v = to_genesis(w_t), to_genesis(b_t), to_genesis(v_t)
    for args, args_t in (((v, w, None), (v_t, w_t, None)), ((v.unsqueeze(0), w, b), (v_t.unsqueeze(0), w_t, b_t))):
        y, _ = _run(genesis, *args, DEVICE)
        y_t, _ = _run(torch, *args_t, "cpu")
        assert y.grad_fn._fn is not CastLinear
        assert y.dtype is genesis.bfloat16
        assert_same(y, y_t, **LOOSE)


def test_shape_mismatch_raises_as_torch() -> None:
    w = to_genesis(rand(4, 5, seed=2, dtype=torch.float32))
    x = to_genesis(rand(3, 6, seed=1, dtype=torch.float32))
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x6 and 5x4\)"):
            genesis.nn.functional.linear(x, w)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x6 and 5x4\)"):
            torch.nn.functional.linear(torch.zeros(3, 6), torch.zeros(4, 5))


# ------------------------------------------------------------------ convolutions


def _conv(lib: Any, fn: str, x: Any, w: Any, b: Any, device: str, **kw: Any) -> Any:
    with lib.autocast(device, dtype=lib.bfloat16):
        y = getattr(lib.nn.functional, fn)(x, w, b, **kw)
        loss = (y.float() ** 2).mean()
    return y, loss


@pytest.mark.parametrize("fn,w_shape,kw", [
    ("conv2d", (4, 3, 3, 3), {"padding": 1}),
    ("conv2d", (6, 1, 3, 3), {"stride": 2, "groups": 3}),
    ("conv1d", (4, 3, 2), {}),
    ("conv_transpose2d", (3, 4, 2, 2), {"stride": 2}),
])
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_values_dtypes_gradients_and_edges(fn: str, w_shape: tuple, kw: dict, with_bias: bool) -> None:
    spatial = (6,) if fn == "conv1d" else (6, 5)
    x_t = rand(2, 3, *spatial, seed=1, dtype=torch.float32)
    out_ch = w_shape[1] * kw.get("groups", 1) if "transpose" in fn else w_shape[0]
    w_t = rand(*w_shape, seed=2, dtype=torch.float32)
    b_t = rand(out_ch, seed=3, dtype=torch.float32) if with_bias else None
    x, w = to_genesis(x_t), to_genesis(w_t)
    b = to_genesis(b_t) if with_bias else None
    y, loss = _conv(genesis, fn, x, w, b, DEVICE, **kw)
    y_t, loss_t = _conv(torch, fn, x_t, w_t, b_t, "cpu", **kw)
    assert y.dtype is genesis.bfloat16 and y.grad_fn._fn is CastConv
    assert y.grad_fn.name() == "ConvolutionBackward0"
    assert [n.variable for n, _ in y.grad_fn.next_functions[1:] if n is not None] == [w] + ([b] if with_bias else [])
    _same_values_and_float32_gradients(y, y_t, loss, loss_t, (x, w, b), (x_t, w_t, b_t))


def test_conv_double_backward_reaches_the_weight() -> None:
    def penalty(lib: Any, x: Any, w: Any, device: str) -> Any:
        with lib.autocast(device, dtype=lib.bfloat16):
            loss = (lib.nn.functional.conv2d(x, w, padding=1).float() ** 2).sum()
        (gx,) = lib.autograd.grad(loss, x, create_graph=True)
        return (gx.float() ** 2).sum()

    x_t = rand(1, 2, 5, 5, seed=1, dtype=torch.float32)
    w_t = rand(3, 2, 3, 3, seed=2, dtype=torch.float32)
    x, w = to_genesis(x_t), to_genesis(w_t)
    p, p_t = penalty(genesis, x, w, DEVICE), penalty(torch, x_t, w_t, "cpu")
    assert_same(p, p_t, **LOOSE)
    p.backward()
    p_t.backward()
    assert w.grad.dtype is genesis.float32
    assert_same(w.grad, w_t.grad, rtol=5e-2, atol=5e-2)


def test_conv_with_out_and_mixed_dtypes_keep_the_general_path() -> None:
    x_t = rand(1, 3, 5, 5, seed=1, dtype=torch.float32)
    w_t = rand(4, 3, 3, 3, seed=2, dtype=torch.float32)
    b_t = rand(4, seed=3, dtype=torch.bfloat16)
    x, w, b = to_genesis(x_t), to_genesis(w_t), to_genesis(b_t)
    y, _ = _conv(genesis, "conv2d", x, w, b, DEVICE)
    y_t, _ = _conv(torch, "conv2d", x_t, w_t, b_t, "cpu")
    assert y.grad_fn._fn is not CastConv and y.dtype is genesis.bfloat16
    assert_same(y, y_t, **LOOSE)


def test_no_grad_calls_keep_no_cast_alive() -> None:
    # Without a graph, the shared no-grad context must not hold the folded weight cast (or the loss's arrays).
    from genesis.autograd.function import _NO_GRAD_CTX

    layer = genesis.nn.Linear(5, 4, device=DEVICE)
    x = genesis.randn(3, 5, device=DEVICE)
    with genesis.no_grad(), genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        layer(x)
    with genesis.no_grad():
        genesis.nn.functional.nll_loss(x.log_softmax(1), genesis.tensor([0, 4, 2], device=DEVICE))
    assert not any(hasattr(_NO_GRAD_CTX, name) for name in ("w_low", "saved", "w_sum"))
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        y = layer(x)
    assert y.grad_fn.saved_tensors[1].dtype is genesis.bfloat16  # a recorded call keeps it for backward
