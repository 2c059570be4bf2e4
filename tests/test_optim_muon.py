"""Muon against torch.optim.Muon: the Newton-Schulz orthogonalization, trajectories, group keys and torch's errors.
Also ``add_(other, alpha=)`` with a lower-precision ``other``, which Muon's update (bfloat16) relies on."""

from __future__ import annotations

import pytest
import torch

import genesis
from genesis.optim.muon import _orthogonalize
from tests.helpers import DEVICE, assert_same, to_genesis, to_torch

COEFFICIENTS = (3.4445, -4.7750, 2.0315)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5)])
def test_orthogonalization_matches_torch(shape: tuple[int, int]) -> None:
    from torch.optim._muon import _zeropower_via_newtonschulz

    m = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    expected = _zeropower_via_newtonschulz(m, COEFFICIENTS, 5, 1e-7)
    got = _orthogonalize(to_genesis(m), COEFFICIENTS, 5, 1e-7)
    # Bit for bit on the CPU (the same bfloat16 products, rounded once); one bfloat16 rounding apart on CUDA.
    tolerance = {"rtol": 0.0, "atol": 0.0} if DEVICE == "cpu" else {"rtol": 3e-2, "atol": 3e-2}
    assert_same(got, expected, **tolerance)
    singular = torch.linalg.svdvals(to_torch(got).float())
    assert singular.min() > 0.4 and singular.max() < 1.6  # near-orthogonal, as the iteration is meant to make it


@pytest.mark.parametrize("options", [{}, {"nesterov": False, "adjust_lr_fn": "match_rms_adamw", "weight_decay": 0.0}])
def test_trajectory_follows_torch(options: dict) -> None:
    gen = torch.Generator().manual_seed(0)
    values = [torch.randn(6, 4, generator=gen), torch.randn(3, 8, generator=gen)]
    t_params = [v.clone().requires_grad_(True) for v in values]
    g_params = [to_genesis(v, requires_grad=True) for v in values]
    t_opt = torch.optim.Muon(t_params, lr=0.05, **options)
    g_opt = genesis.optim.Muon(g_params, lr=0.05, **options)
    for _ in range(5):
        for params, opt in ((t_params, t_opt), (g_params, g_opt)):
            opt.zero_grad()
            sum((w * w * w).sum() + w.sum() for w in params).backward()
            opt.step()
    # On the CPU every step rounds as torch's (fused lerp, one-rounding add with alpha, the bfloat16 norm computed in
    # float32): the trajectories are equal. Elsewhere the bfloat16 iteration turns one-ulp float32 differences of
    # the kernels into bfloat16 roundings of the update: they agree to about 2e-3 after 5 steps.
    tolerance = {"rtol": 0.0, "atol": 0.0} if DEVICE == "cpu" else {"rtol": 1e-2, "atol": 5e-3}
    for g, t in zip(g_params, t_params):
        assert_same(g.detach(), t.detach(), **tolerance)
    assert set(g_opt.param_groups[0]) == set(t_opt.param_groups[0])
    assert list(g_opt.state[g_params[0]]) == list(t_opt.state[t_params[0]])


def test_errors_as_torch() -> None:
    for lib in (torch, genesis):
        with pytest.raises(ValueError, match="2D parameters"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(3))])
        with pytest.raises(ValueError, match="not supported"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(3, 3))], adjust_lr_fn="other")
        with pytest.raises(ValueError, match="Learning rate"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(3, 3))], lr=-1.0)


@pytest.mark.parametrize("op", ["add", "sub", "add_", "sub_"])
def test_alpha_scales_a_narrower_operand_in_the_wider_dtype(op: str) -> None:
    # torch computes input + alpha * other in the promoted dtype: alpha * other is not rounded to bfloat16 first.
    base = torch.linspace(0.5, 1.5, 16)
    other = torch.linspace(-2.0, 3.0, 16).bfloat16()
    results = []
    for lib in (torch, genesis):
        x = base.clone() if lib is torch else to_genesis(base)
        y = other if lib is torch else to_genesis(other)
        if op.endswith("_"):
            getattr(x, op)(y, alpha=-0.0123)
            results.append(x)
        else:
            results.append(getattr(lib, op)(x, y, alpha=-0.0123))
    assert_same(results[1], results[0], rtol=0.0, atol=0.0 if DEVICE == "cpu" else 1e-7)
