"""Whole training steps captured in CUDA graphs (``genesis.cuda.graph``, ``make_graphed_callables``): a replayed
step equals the eager steps, replays never wait for the device."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from tests.helpers import requires_cuda


def _model() -> nn.Module:
    genesis.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4)).to("cuda")


def _batches(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((8, 16)).astype(np.float32), rng.integers(0, 4, 8)) for _ in range(n)]


def _train(model: nn.Module, optimizer: genesis.optim.Optimizer, static_x: genesis.Tensor,
           static_y: genesis.Tensor) -> genesis.Tensor:
    loss = F.cross_entropy(model(static_x), static_y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    return loss.detach()


@requires_cuda
@pytest.mark.parametrize("fused", [True, False])
def test_captured_step_equals_eager_steps(fused: bool) -> None:
    data = _batches(8)
    results = []
    for captured in (False, True):
        model = _model()
        lr = genesis.tensor(1e-2, device="cuda")
        optimizer = genesis.optim.AdamW(model.parameters(), lr=lr, fused=fused, capturable=True)
        static_x = genesis.zeros(8, 16, device="cuda")
        static_y = genesis.zeros(8, dtype=genesis.int64, device="cuda")
        losses = []
        for x, y in data[:3]:  # warm-up, eager in both runs
            static_x.copy_(genesis.from_numpy(x))
            static_y.copy_(genesis.from_numpy(y))
            losses.append(float(_train(model, optimizer, static_x, static_y).item()))
            optimizer.zero_grad(set_to_none=True)
        if captured:
            g = genesis.cuda.CUDAGraph()
            with genesis.cuda.graph(g):
                static_loss = _train(model, optimizer, static_x, static_y)
        for i, (x, y) in enumerate(data[3:]):
            static_x.copy_(genesis.from_numpy(x))
            static_y.copy_(genesis.from_numpy(y))
            lr.fill_(1e-2 / (i + 1))
            if captured:
                g.replay()
                losses.append(float(static_loss.item()))
            else:
                losses.append(float(_train(model, optimizer, static_x, static_y).item()))
                optimizer.zero_grad(set_to_none=True)
        step = next(iter(optimizer.state.values()))["step"]
        results.append((losses, [p.detach().cpu().numpy() for p in model.parameters()], float(step.item())))
    (eager_losses, eager_params, eager_step), (graph_losses, graph_params, graph_step) = results
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5, atol=1e-6)
    for a, b in zip(graph_params, eager_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert graph_step == eager_step == 8.0


@requires_cuda
def test_replay_does_not_synchronize() -> None:
    model = _model()
    optimizer = genesis.optim.AdamW(model.parameters(), lr=1e-3, fused=True, capturable=True)
    static_x = genesis.randn(8, 16, device="cuda")
    static_y = genesis.zeros(8, dtype=genesis.int64, device="cuda")
    for _ in range(3):
        _train(model, optimizer, static_x, static_y)
        optimizer.zero_grad(set_to_none=True)
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        _train(model, optimizer, static_x, static_y)
    before = genesis.cuda.synchronization_count()
    for _ in range(5):
        g.replay()
    assert genesis.cuda.synchronization_count() == before
    genesis.cuda.synchronize()


@requires_cuda
def test_make_graphed_callables_matches_eager() -> None:
    eager, graphed = _model(), _model()
    x = genesis.randn(8, 16, device="cuda", requires_grad=True)
    graphed = genesis.cuda.make_graphed_callables(graphed, (genesis.randn(8, 16, device="cuda", requires_grad=True),))
    for i in range(3):
        xi = (x * (i + 1)).detach().requires_grad_(True)
        xe = xi.detach().requires_grad_(True)
        out_g, out_e = graphed(xi), eager(xe)
        np.testing.assert_allclose(out_g.detach().cpu().numpy(), out_e.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
        (out_g * out_g).sum().backward()
        (out_e * out_e).sum().backward()
        np.testing.assert_allclose(xi.grad.cpu().numpy(), xe.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
        for pg, pe in zip(graphed.parameters(), eager.parameters()):
            np.testing.assert_allclose(pg.grad.cpu().numpy(), pe.grad.cpu().numpy(), rtol=1e-5, atol=1e-5)


@requires_cuda
def test_make_graphed_function() -> None:
    w = genesis.randn(16, 4, device="cuda", requires_grad=True)

    def fn(a: genesis.Tensor) -> genesis.Tensor:
        return (a @ w).tanh()

    graphed = genesis.cuda.make_graphed_callables(fn, (genesis.randn(8, 16, device="cuda", requires_grad=True),))
    a = genesis.randn(8, 16, device="cuda", requires_grad=True)
    out = graphed(a)
    np.testing.assert_allclose(out.detach().cpu().numpy(), fn(a).detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    ref = a.detach().requires_grad_(True)
    fn(ref).sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), ref.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)


@requires_cuda
def test_host_arrays_uploaded_inside_a_capture_are_replayed() -> None:
    out = genesis.zeros(3, device="cuda")
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out.copy_(genesis.tensor([1.0, 2.0, 3.0], device="cuda") * 2)
    out.zero_()
    g.replay()
    assert out.tolist() == [2.0, 4.0, 6.0]


@requires_cuda
def test_empty_cache_keeps_a_live_graphs_memory() -> None:
    # The graph's intermediates (several MiB each, freed during the capture) sit in its private pool: releasing the
    # cache must not hand them back to the driver or to other tensors while the graph can still replay.
    x = genesis.randn(1 << 20, device="cuda")
    out = genesis.zeros(1 << 20, device="cuda")
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out.copy_(((x * 0.5).exp() + 1).sin())
    genesis.cuda.empty_cache()
    others = [genesis.full((1 << 20,), 7.0, device="cuda") for _ in range(4)]  # may take released memory
    out.zero_()
    g.replay()
    expected = np.sin(np.exp(x.cpu().numpy().astype(np.float64) * 0.5) + 1)
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
    assert all(t.eq(7.0).all().item() for t in others)


@requires_cuda
def test_a_dropped_graph_releases_its_memory() -> None:
    # A graph left to the garbage collector (no reset()) gives its private pool back: nothing else keeps it alive.
    x = genesis.randn(1 << 20, device="cuda")
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        y = genesis.nn.functional.dropout(x, 0.5) * 2  # draws random numbers: the graph reads a counter base
    inner = weakref.ref(g._graph)
    del g, y
    assert inner() is None
