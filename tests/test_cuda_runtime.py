"""CUDA runtime, allocator, streams and events, device checks, and the torch-free GPU path (skip without a GPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import requires_cuda, to_torch

pytestmark = requires_cuda


def _x(*shape: int) -> genesis.Tensor:
    return genesis.tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), device="cuda")


def test_device_properties() -> None:
    assert genesis.cuda.is_available() and genesis.cuda.device_count() >= 1
    props = genesis.cuda.get_device_properties(0)
    assert props.name == genesis.cuda.get_device_name(0) and props.total_memory > 0
    assert props.multi_processor_count > 0 and (props.major, props.minor) == genesis.cuda.get_device_capability(0)
    genesis.cuda.set_device(0)
    assert genesis.cuda.current_device() == 0


def test_invalid_device_is_a_clear_error() -> None:
    n = genesis.cuda.device_count()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        genesis.zeros(2, device=f"cuda:{n}")


MISMATCH = "Expected all tensors to be on the same device, but found at least two devices"


def test_device_mismatch_is_a_clear_error() -> None:
    a, b = genesis.ones(3), genesis.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match=MISMATCH):
        a + b
    with pytest.raises(RuntimeError, match=MISMATCH):
        b + a
    with pytest.raises(RuntimeError, match=MISMATCH):
        genesis.matmul(a.reshape(1, 3), b.reshape(3, 1))


def test_memory_stats_follow_tensors() -> None:
    genesis.cuda.synchronize()
    base = genesis.cuda.memory_allocated()
    genesis.cuda.reset_peak_memory_stats()
    x = genesis.empty(1 << 20, device="cuda")  # 4 MiB
    assert genesis.cuda.memory_allocated() - base == 4 << 20
    assert genesis.cuda.max_memory_allocated() >= base + (4 << 20)
    assert genesis.cuda.memory_reserved() >= genesis.cuda.memory_allocated()
    del x
    assert genesis.cuda.memory_allocated() == base
    assert genesis.cuda.max_memory_allocated() >= base + (4 << 20)
    genesis.cuda.reset_peak_memory_stats()
    assert genesis.cuda.max_memory_allocated() == base
    reserved = genesis.cuda.memory_reserved()
    genesis.cuda.empty_cache()
    # What stays reserved is free space in segments that still hold live tensors (see the allocator tests below).
    assert genesis.cuda.memory_allocated() == base <= genesis.cuda.memory_reserved() <= reserved
    assert "driver allocation calls" in genesis.cuda.memory_summary()


MiB = 1 << 20


@pytest.fixture
def fresh_allocator():
    """An allocator of its own on device 0 (the global one's statistics stay out of the picture), emptied after."""
    from genesis._impl.cuda import allocator, runtime

    runtime.ensure_device(0)  # the driver calls below need the device's context current on this thread
    a = allocator.CachingAllocator(0, "freelist")
    yield a
    a.empty_cache()


def test_allocator_carves_large_requests_out_of_shared_segments(fresh_allocator) -> None:
    a = fresh_allocator
    p1, s1 = a.malloc(3 * MiB + 100, 0)
    assert s1 == 3 * MiB + 128 * 1024  # 128 KiB steps above 1 MiB, not the next multiple of 2 MiB
    assert a.reserved() == 20 * MiB and a.allocated == s1 and a.driver_alloc_calls == 1
    p2, s2 = a.malloc(5 * MiB, 0)
    assert (p2, s2) == (p1 + s1, 5 * MiB) and a.driver_alloc_calls == 1  # the same segment, right after p1
    p3, s3 = a.malloc(40 * MiB + 1, 0)  # above 10 MiB: a segment of the request rounded to 2 MiB
    assert s3 == 40 * MiB + 128 * 1024 and a.reserved() == 62 * MiB and a.driver_alloc_calls == 2
    assert a.peak == a.allocated == s1 + s2 + s3
    assert a.stats()["segments"] == 2
    for p, n in ((p1, s1), (p2, s2), (p3, s3)):
        a.free(p, n, 0)


def test_allocator_reuses_merges_and_releases_pieces(fresh_allocator) -> None:
    a = fresh_allocator
    p1, s1 = a.malloc(3 * MiB, 0)
    p2, s2 = a.malloc(5 * MiB, 0)
    a.free(p1, s1, 0)
    assert a.malloc(3 * MiB, 0) == (p1, s1)  # an exact hit of the free list
    a.free(p1, s1, 0)
    a.free(p2, s2, 0)
    # 3 + 5 + the 12 MiB tail are free side by side: a 16 MiB request merges them instead of a new segment.
    p4, s4 = a.malloc(16 * MiB, 0)
    assert p4 == p1 and s4 == 16 * MiB and a.driver_alloc_calls == 1
    # The 4 MiB left is handed out whole to a request that would leave 1 MiB or less.
    p5, s5 = a.malloc(3 * MiB + 1, 0)
    assert (p5, s5) == (p1 + 16 * MiB, 4 * MiB) and a.driver_alloc_calls == 1
    a.free(p4, s4, 0)
    a.empty_cache()  # p5 still lives in the segment: nothing is released
    assert a.reserved() == 20 * MiB and a.driver_free_calls == 0
    a.free(p5, s5, 0)
    a.empty_cache()  # the whole segment is free again: one driver free
    assert a.reserved() == a.allocated == 0 and a.driver_free_calls == 1 and a.stats()["segments"] == 0


def test_allocator_keeps_streams_apart(fresh_allocator) -> None:
    a = fresh_allocator
    s = genesis.cuda.Stream()
    p1, s1 = a.malloc(3 * MiB, 0)
    a.free(p1, s1, 0)
    # A free piece of the default stream is not handed to work on another stream (it may still be in use there).
    p2, s2 = a.malloc(3 * MiB, s.cuda_stream)
    assert p2 != p1 and a.driver_alloc_calls == 2
    a.free(p2, s2, s.cuda_stream)


def test_allocated_memory_is_usable_across_pieces() -> None:
    # Tensors carved out of one segment side by side keep their own values.
    xs = [genesis.full((n,), float(i), device="cuda") for i, n in enumerate((700_000, 1_300_000, 900_000, 2_000_000))]
    for i, x in enumerate(xs):
        assert to_torch(x).eq(float(i)).all().item()


def test_training_loop_makes_no_driver_allocations_after_warmup() -> None:
    w = genesis.randn(64, 32, device="cuda", requires_grad=True)
    x = genesis.randn(16, 64, device="cuda")

    def step() -> None:
        loss = ((x @ w).relu() * 0.5).sum()
        loss.backward()
        with genesis.no_grad():
            w.sub_(w.grad * 0.01)
        w.grad = None

    for _ in range(3):
        step()
    before = genesis.cuda.memory_stats()["driver_alloc_calls"]
    for _ in range(20):
        step()
    assert genesis.cuda.memory_stats()["driver_alloc_calls"] == before


def test_out_of_memory_names_the_request() -> None:
    total = genesis.cuda.get_device_properties(0).total_memory
    with pytest.raises(genesis.cuda.OutOfMemoryError, match="Tried to allocate"):
        genesis.empty(total, dtype=genesis.uint8, device="cuda")
    # The failed request leaves the allocator usable.
    assert to_torch(genesis.ones(4, device="cuda")).sum().item() == 4


def test_streams_and_events() -> None:
    s = genesis.cuda.Stream()
    assert genesis.cuda.current_stream() != s
    x = _x(1024, 1024)
    start, end = genesis.cuda.Event(enable_timing=True), genesis.cuda.Event(enable_timing=True)
    s.wait_stream(genesis.cuda.current_stream())
    with genesis.cuda.stream(s):
        assert genesis.cuda.current_stream() == s
        start.record()
        y = (x * 2).sum()
        end.record()
    assert genesis.cuda.current_stream() != s
    genesis.cuda.current_stream().wait_stream(s)
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) >= 0
    assert y.item() == float(np.arange(1 << 20, dtype=np.float64).sum() * 2)
    with pytest.raises(RuntimeError, match="enable_timing"):
        genesis.cuda.Event().elapsed_time(end)


def test_gpu_path_never_imports_torch() -> None:
    code = (
        "import sys, numpy as np, genesis\n"
        "x = genesis.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device='cuda', requires_grad=True)\n"
        "y = (x.exp() * 2 + 1).sum(1)\n"
        "z = (x @ x.t()).softmax(-1).sum()\n"
        "(y.sum() + z).backward()\n"
        "assert x.grad is not None and x.grad.shape == (3, 4)\n"
        "genesis.cuda.synchronize()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok')\n"
    )
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_dlpack_zero_copy_with_torch() -> None:
    x = _x(4, 5)
    t = torch.from_dlpack(x)
    assert t.device.type == "cuda" and t.data_ptr() == x.data_ptr()
    t.mul_(2)
    torch.cuda.synchronize()
    assert np.array_equal(x.cpu().numpy(), np.arange(20, dtype=np.float32).reshape(4, 5) * 2)
    src = torch.arange(6, device="cuda", dtype=torch.float32).reshape(2, 3)
    g = genesis.from_dlpack(src)
    assert g.device.type == "cuda" and g.data_ptr() == src.data_ptr() and g.shape == (2, 3)
    assert np.array_equal((g + 1).cpu().numpy(), (src + 1).cpu().numpy())


def test_dlpack_zero_copy_with_cupy() -> None:
    cupy = pytest.importorskip("cupy")
    x = _x(3, 4)
    c = cupy.from_dlpack(x)
    assert c.data.ptr == x.data_ptr()
    g = genesis.from_dlpack(cupy.arange(5, dtype=cupy.float32))
    assert np.array_equal(g.cpu().numpy(), np.arange(5, dtype=np.float32))


def test_manual_seed_is_reproducible_on_cuda() -> None:
    genesis.manual_seed(123)
    a = genesis.rand(1000, device="cuda").cpu().numpy()
    genesis.manual_seed(123)
    b = genesis.rand(1000, device="cuda").cpu().numpy()
    assert np.array_equal(a, b) and 0 <= a.min() and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    n = genesis.randn(100000, device="cuda").cpu().numpy()
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02
