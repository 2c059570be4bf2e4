"""Caching device-memory allocator.

Two strategies, chosen with ``GENESIS_CUDA_ALLOCATOR``:

- ``freelist`` (default): a Python free list per (stream, rounded size). A freed block goes back to the list of the
  stream it was allocated on; work on one stream runs in order, so the next allocation on that stream may reuse it
  at once. Only a miss calls the driver (``cuMemAlloc``). Measured on an H100 (benchmark/bench_ops.py, row
  "allocator"): a cached alloc+free pair costs far less host time than the driver's stream-ordered pool.
- ``pool``: the driver's stream-ordered pool (``cuMemAllocAsync``/``cuMemFreeAsync``) with its release threshold set
  to the maximum, so the driver keeps freed memory cached.

On out-of-memory the cache is released once (``empty_cache``) and the allocation retried; a second failure raises
``genesis.cuda.OutOfMemoryError`` naming the request and the pool state.
"""

from __future__ import annotations

import os

from cuda.bindings import driver as cu

from genesis.backends.cuda import runtime as rt
from genesis.cuda import OutOfMemoryError

_OOM = cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY
_SMALL = 1 << 20
_LARGE_ROUND = 2 << 20


def round_size(nbytes: int) -> int:
    """Block size for a request: 512-byte steps up to 1 MiB, 2 MiB steps above."""
    if nbytes <= _SMALL:
        return max(512, (nbytes + 511) & ~511)
    return (nbytes + _LARGE_ROUND - 1) // _LARGE_ROUND * _LARGE_ROUND


def _fmt(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return str(n)


class CachingAllocator:
    """Device memory of one GPU, cached for reuse; counts bytes and driver calls."""

    def __init__(self, device: int, mode: str | None = None) -> None:
        self.device = device
        self.mode = mode or os.environ.get("GENESIS_CUDA_ALLOCATOR", "freelist")
        if self.mode not in ("freelist", "pool"):
            raise ValueError(f"GENESIS_CUDA_ALLOCATOR must be 'freelist' or 'pool', got {self.mode!r}")
        self._free: dict[tuple[int, int], list[int]] = {}
        self.allocated = 0
        self.peak = 0
        self.cached = 0
        self.driver_alloc_calls = 0
        self.driver_free_calls = 0
        self.num_allocs = 0
        self.num_ooms = 0
        # CUDA graph capture (graphs.py): the capturing stream and where blocks from other streams freed during the
        # capture are kept.
        self._capture: tuple[int, list] | None = None
        if self.mode == "pool":
            rt.ensure_device(device)
            dev = rt.check(cu.cuDeviceGet(device), "cuDeviceGet")
            self._pool = rt.check(cu.cuDeviceGetDefaultMemPool(dev), "cuDeviceGetDefaultMemPool")
            threshold = cu.cuuint64_t(0xFFFFFFFFFFFFFFFF)
            rt.check(cu.cuMemPoolSetAttribute(self._pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                              threshold), "cuMemPoolSetAttribute")

    # ------------------------------------------------------------ allocation
    def malloc(self, nbytes: int, stream: int) -> tuple[int, int]:
        """Return (device pointer, block size) for ``nbytes`` on ``stream``."""
        size = round_size(nbytes)
        self.num_allocs += 1
        if self.mode == "freelist":
            blocks = self._free.get((stream, size))
            if blocks:
                ptr = blocks.pop()
                self.cached -= size
            else:
                ptr = self._driver_malloc(nbytes, size, stream)
        else:
            ptr = self._driver_malloc(nbytes, size, stream)
        self.allocated += size
        if self.allocated > self.peak:
            self.peak = self.allocated
        return ptr, size

    def free(self, ptr: int, size: int, stream: int) -> None:
        if self._capture is not None and stream != self._capture[0]:
            # A captured graph keeps using this block on every replay: hold it until the graph is released.
            self._capture[1].append((ptr, size, stream))
            return
        self.allocated -= size
        if self.mode == "freelist":
            blocks = self._free.get((stream, size))
            if blocks is None:
                blocks = self._free[(stream, size)] = []
            blocks.append(ptr)
            self.cached += size
        else:
            self.driver_free_calls += 1
            cu.cuMemFreeAsync(ptr, stream)

    def _driver_malloc(self, nbytes: int, size: int, stream: int) -> int:
        for attempt in range(2):
            self.driver_alloc_calls += 1
            if self.mode == "freelist":
                err, ptr = cu.cuMemAlloc(size)
            else:
                err, ptr = cu.cuMemAllocAsync(size, stream)
            if err == rt._SUCCESS:
                return int(ptr)
            if err != _OOM:
                rt.check((err,), "cuMemAlloc")
            if attempt == 0:
                self.empty_cache()
        self.num_ooms += 1
        free, total = rt.mem_get_info(self.device)
        raise OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {_fmt(nbytes)} (block of {_fmt(size)}) on cuda:{self.device}. "
            f"Genesis holds {_fmt(self.allocated)} in tensors and {_fmt(self.reserved())} reserved "
            f"({_fmt(self.cached)} cached after releasing the cache and retrying once); "
            f"the device has {_fmt(total)} in total, {_fmt(free)} free."
        )

    # ------------------------------------------------------------ CUDA graph capture
    def begin_capture(self, stream: int, kept: list) -> None:
        """Allocations on ``stream`` form the graph's pool; blocks of other streams freed meanwhile go to ``kept``."""
        if self._capture is not None:
            raise RuntimeError("CUDAGraph: another capture is already in progress on this device")
        self._capture = (stream, kept)

    def end_capture(self) -> None:
        self._capture = None

    def retire_stream(self, stream: int) -> None:
        """A released graph's stream (idle): its cached blocks now serve the default stream."""
        for key in [k for k in self._free if k[0] == stream]:
            self._free.setdefault((0, key[1]), []).extend(self._free.pop(key))

    # ------------------------------------------------------------ cache control and statistics
    def empty_cache(self) -> None:
        """Return cached blocks to the driver (after the device finished all queued work)."""
        rt.synchronize(self.device)
        if self.mode == "freelist":
            for blocks in self._free.values():
                for ptr in blocks:
                    self.driver_free_calls += 1
                    cu.cuMemFree(ptr)
            self._free.clear()
            self.cached = 0
        else:
            rt.check(cu.cuMemPoolTrimTo(self._pool, 0), "cuMemPoolTrimTo")

    def reserved(self) -> int:
        if self.mode == "freelist":
            return self.allocated + self.cached
        value = cu.cuuint64_t(0)
        err, value = cu.cuMemPoolGetAttribute(self._pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
        rt.check((err,), "cuMemPoolGetAttribute")
        return int(value)

    def reset_peak(self) -> None:
        self.peak = self.allocated

    def stats(self) -> dict[str, int]:
        return {
            "allocated_bytes": self.allocated, "peak_allocated_bytes": self.peak, "reserved_bytes": self.reserved(),
            "cached_bytes": self.cached, "num_allocs": self.num_allocs, "driver_alloc_calls": self.driver_alloc_calls,
            "driver_free_calls": self.driver_free_calls, "num_ooms": self.num_ooms,
        }

    def summary(self) -> str:
        s = self.stats()
        lines = [
            f"Genesis CUDA memory summary, device cuda:{self.device} ({self.mode} allocator)",
            f"  allocated (in tensors)   {_fmt(s['allocated_bytes'])}",
            f"  peak allocated           {_fmt(s['peak_allocated_bytes'])}",
            f"  reserved (from driver)   {_fmt(s['reserved_bytes'])}",
            f"  cached (free blocks)     {_fmt(s['cached_bytes'])}",
            f"  allocations served       {s['num_allocs']}",
            f"  driver allocation calls  {s['driver_alloc_calls']}",
            f"  driver free calls        {s['driver_free_calls']}",
            f"  out-of-memory errors     {s['num_ooms']}",
        ]
        return "\n".join(lines)


_allocators: dict[int, CachingAllocator] = {}


def get(device: int) -> CachingAllocator:
    a = _allocators.get(device)
    if a is None:
        a = _allocators[device] = CachingAllocator(device)
    return a
