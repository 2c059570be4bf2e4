"""The caching allocator's bookkeeping (segments split, merged and released; free lists per stream) against a fake
driver, so that it runs on every machine: random requests and releases keep the invariants a real device relies on
(live blocks never overlap, every byte reserved is a driver allocation, statistics add up)."""

from __future__ import annotations

import bisect
import importlib.util
import os
import random
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20


class FakeDriver:
    """``cuMemAlloc``/``cuMemFree`` over an address space with gaps between allocations (no two ever touch)."""

    def __init__(self) -> None:
        self.live: dict[int, int] = {}
        self.next = 1 << 40
        self.limit: int | None = None  # bytes the fake device holds; None: unlimited

    def cuMemAlloc(self, n: int) -> tuple[int, int]:
        if self.limit is not None and sum(self.live.values()) + n > self.limit:
            return 2, 0
        ptr, self.next = self.next, self.next + n + (1 << 30)
        self.live[ptr] = n
        return 0, ptr

    def cuMemFree(self, ptr: int) -> None:
        del self.live[ptr]


@pytest.fixture
def alloc(monkeypatch):
    """The allocator module loaded on a fake driver and runtime (the real modules stay untouched)."""
    driver = FakeDriver()
    cu = types.ModuleType("cuda.bindings.driver")
    cu.CUresult = types.SimpleNamespace(CUDA_ERROR_OUT_OF_MEMORY=2)
    cu.cuMemAlloc, cu.cuMemFree = driver.cuMemAlloc, driver.cuMemFree
    rt = types.ModuleType("genesis._impl.cuda.runtime")
    rt._SUCCESS = 0
    rt.synchronize = lambda device=None: None
    rt.mem_get_info = lambda device: (0, 1 << 34)
    rt.check = lambda result, name: result
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = cu
    cuda_pkg = types.ModuleType("genesis._impl.cuda")
    cuda_pkg.__path__ = []
    cuda_pkg.runtime = rt
    for name, module in (("cuda", types.ModuleType("cuda")), ("cuda.bindings", bindings),
                         ("cuda.bindings.driver", cu), ("genesis._impl.cuda", cuda_pkg),
                         ("genesis._impl.cuda.runtime", rt)):
        monkeypatch.setitem(sys.modules, name, module)
    path = os.path.join(ROOT, "genesis", "_impl", "cuda", "allocator.py")
    spec = importlib.util.spec_from_file_location("fake_allocator", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, driver


def check_invariants(a, driver: FakeDriver, live: list[tuple[int, int, int]], small: int) -> None:
    blocks = sorted((p, p + n) for p, n, _ in live)
    free = sorted((p.ptr, p.ptr + key[1]) for key, blocks in a._free.items() for p in blocks)
    spans = sorted(blocks + free)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:])), "blocks overlap"
    assert a.allocated == sum(n for _, n, _ in live)
    assert a.reserved() == sum(driver.live.values())
    starts = sorted(driver.live)
    for p, end in spans:
        i = bisect.bisect_right(starts, p) - 1
        assert i >= 0 and end <= starts[i] + driver.live[starts[i]], "a block outside every driver allocation"
    for piece in a._pieces.values():
        if piece.next is not None:
            assert piece.next.prev is piece and piece.ptr + piece.size == piece.next.ptr
    for sizes in a._sizes.values():
        assert sizes == sorted(set(sizes))
    assert all(n in a._sizes.get(s, ()) for s, n in a._free)
    listed = {id(p) for blocks in a._free.values() for p in blocks}
    for (stream, size), blocks in a._free.items():
        assert all(p.free == stream and p.size == size and a._pieces[p.ptr] is p for p in blocks)
    assert all((piece.free is not None) == (id(piece) in listed) for piece in a._pieces.values())
    for head in (p for p in a._pieces.values() if p.prev is None):  # each segment: its blocks tile it, one pool
        chain, piece = [], head
        while piece is not None:
            chain.append(piece.size)
            piece = piece.next
        assert sum(chain) == driver.live[head.ptr]
        assert all(n <= small for n in chain) if sum(chain) == small else all(n > small for n in chain)


@pytest.mark.parametrize("seed", range(6))
def test_random_requests_keep_the_invariants(alloc, seed: int) -> None:
    module, driver = alloc
    rng = random.Random(seed)
    module._RECENT = (8, 64, 4096)[seed % 3]  # few remembered frees: merges also run over every free block
    a = module.CachingAllocator(0, "freelist")
    live: list[tuple[int, int, int]] = []
    for step in range(1500):
        r = rng.random()
        if r < 0.55 or not live:
            n = rng.choice([rng.randint(1, MiB), rng.randint(MiB, 12 * MiB), rng.randint(10 * MiB, 64 * MiB),
                            3 * MiB, 5 * MiB])
            stream = rng.choice([0, 0, 0, 7])
            p, size = a.malloc(n, stream)
            assert size >= n and size % 512 == 0
            live.append((p, size, stream))
        elif r < 0.98:
            p, size, stream = live.pop(rng.randrange(len(live)))
            a.free(p, size, stream)
        else:
            a.empty_cache()
        if step % 50 == 0:
            check_invariants(a, driver, live, module._SMALL)
    for p, size, stream in live:
        a.free(p, size, stream)
    a.empty_cache()
    assert a.reserved() == 0 and not driver.live and not a._pieces


def test_a_released_graphs_blocks_serve_the_default_stream(alloc) -> None:
    module, driver = alloc
    a = module.CachingAllocator(0, "freelist")
    graph_stream = 9
    a.begin_capture(graph_stream, kept := [])
    p, size = a.malloc(3 * MiB, graph_stream)
    q, qsize = a.malloc(4 * MiB, graph_stream)
    a.free(p, size, graph_stream)  # a block of the graph's pool
    a.end_capture()
    a.empty_cache()  # the live graph's pool stays
    assert (graph_stream, size) in a._free and len(driver.live) == 1
    assert a.malloc(3 * MiB, 0)[0] != p  # the default stream does not get the graph's blocks
    a.retire_stream(graph_stream)
    a.free(q, qsize, graph_stream)  # a graph output freed after the graph was released
    r, rsize = a.malloc(18 * MiB, 0)  # the graph's whole segment, merged, serves the default stream
    assert r == p and rsize == 18 * MiB and not kept


def test_out_of_memory_falls_back_to_the_request_and_releases_the_cache(alloc) -> None:
    module, driver = alloc
    a = module.CachingAllocator(0, "freelist")
    driver.limit = 30 * MiB
    p, size = a.malloc(12 * MiB, 0)  # above 10 MiB: a segment of its own
    # 3 MiB would take a 20 MiB segment, which no longer fits: a segment of the request rounded to 2 MiB does.
    q, qsize = a.malloc(3 * MiB, 0)
    assert qsize == 4 * MiB and driver.live[q] == 4 * MiB  # the 1 MiB left over is handed out with it
    a.free(p, size, 0)
    r, rsize = a.malloc(26 * MiB, 0)  # fits only once the cached 12 MiB segment goes back to the driver
    assert rsize == 26 * MiB and p not in driver.live and a.num_ooms == 0
    with pytest.raises(module.OutOfMemoryError, match="Tried to allocate 1.00 MiB"):
        a.malloc(MiB, 0)
    assert a.num_ooms == 1 and a.allocated == qsize + rsize


def test_small_requests_share_segments_and_growing_tensors_reuse_memory(alloc) -> None:
    module, driver = alloc
    a = module.CachingAllocator(0, "freelist")
    p1, s1 = a.malloc(1000, 0)
    p2, s2 = a.malloc(3000, 0)
    assert (s1, s2) == (1024, 3072) and p2 == p1 + 1024 and len(driver.live) == 1  # one 1 MiB segment
    # Eight tensors growing by 3 KiB per step (a cat per token): the blocks they free merge and serve later sizes.
    live = [a.malloc(10_000, 0) + (10_000,) for _ in range(8)]
    for _ in range(200):
        for i, (p, size, want) in enumerate(live):
            live[i] = a.malloc(want + 3072, 0) + (want + 3072,)
            a.free(p, size, 0)
    final = sum(size for _, size, _ in live)
    freed = sum(8 * (10_000 + 3072 * k) for k in range(200))  # what a cache without merging would keep
    assert a.reserved() < 8 * final < freed // 10
    check_invariants(a, driver, [(p, size, 0) for p, size, _ in live] + [(p1, s1, 0), (p2, s2, 0)], module._SMALL)
