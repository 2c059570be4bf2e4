"""Pinned host memory: ``Tensor.pin_memory()``, ``is_pinned()``, ``non_blocking`` copies and
``DataLoader(pin_memory=True)``, checked against torch where torch runs here (a CPU build: no pinned memory).

The first tests run on any machine; those marked ``requires_cuda`` need a GPU (the pinned cache, asynchronous copies
and the reuse of blocks a copy still reads).
"""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import torch

import genesis
from genesis.utils.data import DataLoader, TensorDataset
from genesis.utils.data.dataloader import _pin_memory as pin_batch
from tests.helpers import requires_cuda

no_cuda = pytest.mark.skipif(genesis.cuda.is_available(), reason="checks the behavior without a CUDA GPU")


# ---------------------------------------------------------------- any machine


@no_cuda
def test_pin_memory_without_gpu_raises_as_torch() -> None:
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError):
            torch.ones(2).pin_memory()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        genesis.ones(2).pin_memory()


def test_is_pinned_false_for_ordinary_tensors() -> None:
    assert genesis.ones(2).is_pinned() is torch.ones(2).is_pinned() is False
    assert genesis.arange(6).reshape(2, 3).t().is_pinned() is False


def test_non_blocking_conversions_on_cpu() -> None:
    g, t = genesis.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    assert g.to("cpu", non_blocking=True) is g
    assert t.to("cpu", non_blocking=True) is t
    for args in ((genesis.float64, True), (genesis.float64, True, True), ("cpu", genesis.int32, True)):
        out = g.to(*args)
        expected = t.to(*(getattr(torch, a.name) if isinstance(a, genesis.dtype) else a for a in args))
        assert out.dtype.name == str(expected.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
    copied = g.to(genesis.float32, False, True)  # copy=True positionally: a new tensor
    assert copied is not g and copied.tolist() == g.tolist()
    dst = genesis.zeros(2, 3)
    dst.copy_(g, non_blocking=True)
    assert dst.tolist() == g.tolist()


@no_cuda
def test_dataloader_pin_memory_without_gpu_warns_and_does_not_pin() -> None:
    def batches(lib):
        data = lib.utils.data.TensorDataset(lib.arange(8.0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = list(lib.utils.data.DataLoader(data, batch_size=4, pin_memory=True, pin_memory_device="cuda"))
        return out, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]

    (g_batches, g_messages), (t_batches, t_messages) = batches(genesis), batches(torch)
    assert g_messages == t_messages and len(g_messages) == 2
    assert [b[0].tolist() for b in g_batches] == [b[0].tolist() for b in t_batches]
    assert not any(b[0].is_pinned() for b in g_batches)


def test_pin_batch_keeps_the_structure() -> None:
    class Pinnable:
        def __init__(self, pinned: bool = False) -> None:
            self.pinned = pinned

        def pin_memory(self) -> Pinnable:
            return Pinnable(True)

    Pair = collections.namedtuple("Pair", "a b")
    batch = {"x": Pinnable(), "rest": [Pinnable(), ("text", Pair(Pinnable(), 3))],
             "counts": collections.defaultdict(int, {"n": Pinnable()})}
    out = pin_batch(batch)
    assert out["x"].pinned and out["rest"][0].pinned and out["rest"][1][1].a.pinned
    assert out["rest"][1][0] == "text" and out["rest"][1][1].b == 3 and isinstance(out["rest"][1][1], Pair)
    assert isinstance(out["counts"], collections.defaultdict) and out["counts"]["n"].pinned
    assert not batch["x"].pinned  # the input is left as it was


# ---------------------------------------------------------------- a CUDA GPU


def _busy_stream() -> genesis.Tensor:
    """Queue tens of milliseconds of work on the current stream, so a copy queued behind it is still in flight."""
    a = genesis.randn(4096, 4096, device="cuda")
    b = a
    for _ in range(12):
        b = (b @ a) * 1e-3
    return b


@requires_cuda
def test_pinned_round_trip() -> None:
    for dtype in (genesis.float32, genesis.bfloat16, genesis.int64, genesis.bool):
        x = genesis.randn(100, 37).to(dtype)
        p = x.t().pin_memory()
        assert p.is_pinned() and not x.is_pinned() and p.is_contiguous() and p.dtype is dtype
        assert p.device.type == "cpu" and p.pin_memory() is p and p[1:].is_pinned()
        np.testing.assert_array_equal(p.float().numpy(), x.t().float().numpy())
        for d in (p.cuda(), p.to("cuda", non_blocking=True), p.cuda(non_blocking=True)):
            genesis.cuda.synchronize()
            np.testing.assert_array_equal(d.float().cpu().numpy(), x.t().float().numpy())
    cuda_tensor = genesis.ones(2, device="cuda")
    assert not cuda_tensor.is_pinned()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        cuda_tensor.pin_memory()


@requires_cuda
def test_non_blocking_copy_then_compute_equals_sync() -> None:
    x = genesis.randn(512, 256)
    p = x.pin_memory()
    w = genesis.randn(256, 64, device="cuda")
    expected = (x.cuda() @ w).relu().cpu().numpy()
    got = (p.to("cuda", non_blocking=True) @ w).relu().cpu().numpy()
    np.testing.assert_array_equal(got, expected)
    dst = genesis.zeros(512, 256, device="cuda")
    dst.copy_(p, non_blocking=True)
    np.testing.assert_array_equal(dst.cpu().numpy(), x.numpy())


@requires_cuda
def test_non_blocking_copy_does_not_wait() -> None:
    p = genesis.randn(1 << 20).pin_memory()
    _busy_stream()
    genesis.cuda.synchronize()
    busy = _busy_stream()
    counted = hasattr(genesis.cuda, "synchronization_count")
    before = genesis.cuda.synchronization_count() if counted else 0
    d = p.to("cuda", non_blocking=True)
    if counted:
        assert genesis.cuda.synchronization_count() == before
    assert not genesis.cuda.current_stream().query()  # the copy waits behind the matmuls; the host did not
    genesis.cuda.synchronize()
    np.testing.assert_array_equal(d.cpu().numpy(), p.numpy())
    del busy
    # From pageable memory the driver stages the source before it returns; Genesis adds no synchronization of its own
    # (torch neither), and the staged source may change at once.
    pageable = genesis.randn(1 << 20)
    expected = pageable.numpy().copy()
    _busy_stream()
    before = genesis.cuda.synchronization_count() if counted else 0
    d = pageable.to("cuda", non_blocking=True)
    if counted:
        assert genesis.cuda.synchronization_count() == before
    pageable.fill_(0.0)
    np.testing.assert_array_equal(d.cpu().numpy(), expected)


@requires_cuda
def test_pinned_block_is_not_reused_while_a_copy_reads_it() -> None:
    from genesis._impl.cuda import pinned

    n = 1 << 20
    values = genesis.arange(n, dtype=genesis.float32)
    _busy_stream()
    genesis.cuda.synchronize()
    p = values.pin_memory()
    block = p.data_ptr()
    _busy_stream()
    d = p.to("cuda", non_blocking=True)  # in flight behind the matmuls
    del p
    q = genesis.zeros(n).pin_memory()  # the same size class: must not get the block the copy reads
    assert q.data_ptr() != block
    genesis.cuda.synchronize()
    np.testing.assert_array_equal(d.cpu().numpy(), values.numpy())
    calls = pinned.allocator.host_alloc_calls
    r = genesis.zeros(n).pin_memory()  # the copy is done: the block is free again
    assert r.data_ptr() == block and pinned.allocator.host_alloc_calls == calls


@requires_cuda
def test_dataloader_pins_batches_and_reuses_blocks() -> None:
    from genesis._impl.cuda import pinned

    data = [{"x": genesis.randn(64) + i, "y": [genesis.tensor(i), "label"]} for i in range(16)]
    loader = DataLoader(data, batch_size=4, pin_memory=True)
    for batch in loader:
        assert batch["x"].is_pinned() and batch["y"][0].is_pinned() and batch["y"][1] == ("label",) * 4
        x = batch["x"].to("cuda", non_blocking=True)
        genesis.cuda.synchronize()
        np.testing.assert_array_equal(x.cpu().numpy(), batch["x"].numpy())
    calls = pinned.allocator.host_alloc_calls
    for _ in range(3):
        for batch in loader:
            batch["x"].cuda(non_blocking=True)
            genesis.cuda.synchronize()  # else a block may still be read when the next batch is pinned
    assert pinned.allocator.host_alloc_calls == calls  # epochs after the first allocate no pinned memory
    tensors = TensorDataset(genesis.arange(8.0))
    for (x,) in DataLoader(tensors, batch_size=4, pin_memory=True, num_workers=1):
        assert x.is_pinned()
