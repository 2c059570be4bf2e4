"""torch's elementwise ``_foreach_*`` functions (``genesis.ops.foreach_elementwise``) against torch on the same
lists: new tuples and in-place updates, numbers, 0-d tensors and per-element lists as the other operand, and the
gradients they record."""

from __future__ import annotations

import pytest
import torch

import genesis
from genesis.ops.foreach_elementwise import FUNCTIONS
from tests.helpers import assert_same, rand, to_genesis, to_torch

# Inputs each unary op is defined on everywhere (log, acos... of positive values below one).
_UNARY = sorted(n for n in FUNCTIONS if n.count("_") == 3 and n.rstrip("_")[len("_foreach_"):] not in
                ("clamp_min", "clamp_max", "maximum", "minimum", "pow", "addcmul", "addcdiv", "clone", "max"))


def _lists() -> tuple[list[torch.Tensor], list[genesis.Tensor]]:
    ts = [rand(3, 4, seed=1, requires_grad=False).abs() * 0.9 + 0.05, rand(5, seed=2, requires_grad=False).abs()
          * 0.9 + 0.05, rand(seed=3, requires_grad=False).abs() * 0.5 + 0.1]
    return ts, [to_genesis(t) for t in ts]


@pytest.mark.parametrize("name", _UNARY)
def test_unary(name: str) -> None:
    ts, gs = _lists()
    inplace = name.endswith("_")
    t_out, g_out = getattr(torch, name)(ts), getattr(genesis, name)(gs)
    if inplace:
        assert g_out is gs
        t_out, g_out = ts, gs
    else:
        assert isinstance(g_out, tuple) and isinstance(t_out, tuple)
    for t, g in zip(t_out, g_out):
        assert_same(g, t)


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max", "maximum", "minimum", "pow"])
@pytest.mark.parametrize("form", ["number", "tensor list", "number list"])
@pytest.mark.parametrize("inplace", [False, True])
def test_binary(name: str, form: str, inplace: bool) -> None:
    ts, gs = _lists()
    if form == "number":
        t_other = g_other = 0.4
    elif form == "tensor list":
        t_other = [torch.full_like(t, 0.3 + 0.2 * i) for i, t in enumerate(ts)]
        g_other = [to_genesis(o) for o in t_other]
    else:
        t_other = g_other = [0.2, 0.5, 0.9]
    op = f"_foreach_{name}" + ("_" if inplace else "")
    t_out, g_out = getattr(torch, op)(ts, t_other), getattr(genesis, op)(gs, g_other)
    if inplace:
        t_out, g_out = ts, gs
    for t, g in zip(t_out, g_out):
        assert_same(g, t)


def test_number_raised_to_each_tensor_and_the_rest() -> None:
    ts, gs = _lists()
    for t, g in zip(torch._foreach_pow(2.0, ts), genesis._foreach_pow(2.0, gs)):
        assert_same(g, t)
    for t, g in zip(torch._foreach_addcmul(ts, ts, ts, 0.5), genesis._foreach_addcmul(gs, gs, gs, 0.5)):
        assert_same(g, t)
    for t, g in zip(torch._foreach_addcdiv(ts, ts, ts, [1.0, 2.0, 3.0]),
                    genesis._foreach_addcdiv(gs, gs, gs, [1.0, 2.0, 3.0])):
        assert_same(g, t)
    for t, g in zip(torch._foreach_max(ts), genesis._foreach_max(gs)):
        assert_same(g, t)
    clones = genesis._foreach_clone(gs)
    assert all(c.data_ptr() != g.data_ptr() for c, g in zip(clones, gs))


def test_gradients_are_recorded() -> None:
    ts, gs = _lists()
    t_leaves = [t.clone().requires_grad_(True) for t in ts]
    g_leaves = [to_genesis(t, requires_grad=True) for t in ts]
    sum(o.sum() for o in torch._foreach_sigmoid(torch._foreach_maximum(t_leaves, 0.3))).backward()
    sum(o.sum() for o in genesis._foreach_sigmoid(genesis._foreach_maximum(g_leaves, 0.3))).backward()
    for t, g in zip(t_leaves, g_leaves):
        assert_same(g.grad, t.grad)
    assert to_torch(g_leaves[0]).shape == (3, 4)
