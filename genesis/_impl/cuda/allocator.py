"""Caching device-memory allocator.

Two strategies, chosen with ``GENESIS_CUDA_ALLOCATOR``:

- ``freelist`` (default): Python free lists per (stream, block size). A freed block goes back to the list of the
  stream it was allocated on; work on one stream runs in order, so the next allocation on that stream may reuse it
  at once. Measured on an H100 (benchmark/bench_ops.py, row "allocator"): a cached alloc+free pair costs far less
  host time than the driver's stream-ordered pool.
- ``pool``: the driver's stream-ordered pool (``cuMemAllocAsync``/``cuMemFreeAsync``) with its release threshold set
  to the maximum, so the driver keeps freed memory cached.

Block sizes are requests rounded up to 512 bytes up to 1 MiB, to 128 KiB above. In the free-list strategy, blocks
are carved out of *segments* (driver allocations, ``cuMemAlloc``), as in torch's caching allocator, in two pools
whose block sizes never overlap:

- requests up to 1 MiB come from 1 MiB segments, and any rest of 512 bytes or more is split off;
- larger requests come from 20 MiB segments (requests up to 10 MiB) or from a segment of the request rounded up to
  2 MiB, and a rest of more than 1 MiB is split off.

A request that misses its free list takes the smallest cached piece of its pool and stream that fits; failing
that, it merges free neighbouring pieces of the stream and looks again, and only then asks the driver for a new
segment. So a tensor occupies its rounded size, and the rest of its segment serves other tensors. Merging is lazy:
a freed block stays on the free list of its size (the next request of that size takes it as it is), and a miss
merges around the blocks freed since the last merge (all free blocks when more than ``_RECENT`` were freed).

A training loop asks for the same sizes at every step: after the first, every request is an exact hit of a free
list, and no piece is split or merged. The 128 KiB steps keep that true for most steps of a program whose sizes
grow slowly (a sequence growing by a token per step), where every new size would otherwise be a miss.

On out-of-memory the cache is released once (``empty_cache``) and the allocation retried; a second failure raises
``genesis.cuda.OutOfMemoryError`` naming the request and the pool state.
"""

from __future__ import annotations

import os
from bisect import bisect_right, insort
from collections import deque

from cuda.bindings import driver as cu

from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda_errors import OutOfMemoryError

_OOM = cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY
_SMALL = 1 << 20  # requests up to this size come from segments of this size (the small pool)
_LARGE_STEP = 128 << 10  # the size step of blocks above 1 MiB
_MID = 10 << 20  # requests up to this size share 20 MiB segments
_SEGMENT = 20 << 20
_SEGMENT_ROUND = 2 << 20  # larger requests get a segment of their size rounded up to this
_RECENT = 4096  # freed blocks remembered for the next merge


def _segment_sizes(size: int) -> tuple[int, ...]:
    """The driver allocations a block of ``size`` bytes may be carved out of, the preferred first: 1 MiB for the
    small pool; a shared 20 MiB segment for blocks up to 10 MiB (or, when the device cannot grant that much, the
    block rounded up to 2 MiB); the block rounded up to 2 MiB above that."""
    if size <= _SMALL:
        return (_SMALL,)
    least = (size + _SEGMENT_ROUND - 1) // _SEGMENT_ROUND * _SEGMENT_ROUND
    return (_SEGMENT, least) if size <= _MID else (least,)


def _fmt(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return str(n)


class _Piece:
    """A block carved out of a segment, linked to its neighbours in the segment (None at the segment's ends).
    ``free`` is the stream whose free list holds it, None while it is in use."""

    __slots__ = ("ptr", "size", "prev", "next", "free")

    def __init__(self, ptr: int, size: int, prev: _Piece | None, next: _Piece | None, free: int | None) -> None:
        self.ptr = ptr
        self.size = size
        self.prev = prev
        self.next = next
        self.free = free


class CachingAllocator:
    """Device memory of one GPU, cached for reuse; counts bytes and driver calls."""

    def __init__(self, device: int, mode: str | None = None) -> None:
        self.device = device
        self.mode = mode or os.environ.get("GENESIS_CUDA_ALLOCATOR", "freelist")
        if self.mode not in ("freelist", "pool"):
            raise ValueError(f"GENESIS_CUDA_ALLOCATOR must be 'freelist' or 'pool', got {self.mode!r}")
        self._free: dict[tuple[int, int], list[_Piece]] = {}  # free blocks by (stream, block size)
        self._pieces: dict[int, _Piece] = {}  # every block of every segment, free or in use, by pointer
        # Per stream, the block sizes that have a free list (some lists may be empty), sorted: a miss looks up the
        # smallest free block that fits by bisection.
        self._sizes: dict[int, list[int]] = {}
        self._recent: deque[_Piece] = deque(maxlen=_RECENT)  # blocks freed since the last merge
        self._private: set[int] = set()  # streams of live CUDA graphs: their free blocks are the graphs' pools
        self._retired: set[int] = set()  # streams of released graphs: their blocks serve the default stream
        self.allocated = 0
        self.peak = 0
        self.cached = 0
        self.segments = 0
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
        # Block sizes: 512-byte steps up to 1 MiB (at least 512 bytes), 128 KiB steps above.
        size = max(512, (nbytes + 511) & ~511)
        if size > _SMALL:
            size = (size + _LARGE_STEP - 1) & -_LARGE_STEP
        self.num_allocs += 1
        if self.mode == "freelist":
            blocks = self._free.get((stream, size))
            if blocks:
                piece = blocks.pop()
                piece.free = None
                ptr = piece.ptr
                self.cached -= size
            else:
                ptr, size = self._carve(nbytes, size, stream)
        else:
            ptr, size = self._driver_malloc(nbytes, (size,), stream)
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
            piece = self._pieces[ptr]
            piece.free = stream
            blocks = self._free.get((stream, size))
            if blocks is None:
                blocks = self._free[(stream, size)] = []
                insort(self._sizes.setdefault(stream, []), size)
            blocks.append(piece)
            self._recent.append(piece)
            self.cached += size
        else:
            self.driver_free_calls += 1
            cu.cuMemFreeAsync(ptr, stream)

    # ------------------------------------------------------------ segments
    def _carve(self, nbytes: int, size: int, stream: int) -> tuple[int, int]:
        """(pointer, block size) of a request that no free block of its exact size serves."""
        if self._retired and stream == 0:
            self._adopt_retired()
        piece = self._best_fit(size, stream)
        if piece is None and self._coalesce({stream}):
            piece = self._best_fit(size, stream)
        if piece is None:
            ptr, got = self._driver_malloc(nbytes, _segment_sizes(size), stream)
            piece = self._pieces[ptr] = _Piece(ptr, got, None, None, None)
            self.segments += 1
        rest = piece.size - size
        if rest > _SMALL or (size <= _SMALL and rest):  # the rest can serve another request of its pool: split
            tail = _Piece(piece.ptr + size, rest, piece, piece.next, stream)
            if piece.next is not None:
                piece.next.prev = tail
            piece.next = tail
            piece.size = size
            self._pieces[tail.ptr] = tail
            self._push(tail)
            self.cached += rest
        return piece.ptr, piece.size

    def _best_fit(self, size: int, stream: int) -> _Piece | None:
        """The smallest free block of ``stream`` in the pool of ``size`` that holds ``size`` bytes, taken off its
        free list."""
        sizes = self._sizes.get(stream)
        if not sizes:
            return None
        limit = _SMALL if size <= _SMALL else 1 << 62  # the small pool's blocks are at most 1 MiB
        i = bisect_right(sizes, size)
        while i < len(sizes) and sizes[i] <= limit:
            n = sizes[i]
            blocks = self._free[(stream, n)]
            if blocks:
                self.cached -= n
                piece = blocks.pop()
                piece.free = None
                return piece
            del sizes[i], self._free[(stream, n)]  # an empty list: dropped on the way
        return None

    def _coalesce(self, streams: set[int], everything: bool = False) -> bool:
        """Merge free neighbouring blocks of ``streams`` (a segment's run of free blocks becomes one block) around
        the blocks freed since the last merge, or around every free block (``everything``, or when more were freed
        than were remembered); whether any merged. Blocks of two streams merge only when ``streams`` names both
        (the device is idle)."""
        if everything or len(self._recent) == _RECENT:
            around = [p for key, blocks in self._free.items() if key[0] in streams for p in blocks]
        else:
            around = self._recent
        merged = False
        for piece in around:
            if piece.free not in streams:  # in use again, merged away or released
                continue
            while piece.prev is not None and piece.prev.free in streams:
                piece = piece.prev
            nxt = piece.next
            if nxt is None or nxt.free not in streams:
                continue
            self._free[(piece.free, piece.size)].remove(piece)
            while nxt is not None and nxt.free in streams:
                self._free[(nxt.free, nxt.size)].remove(nxt)
                del self._pieces[nxt.ptr]
                nxt.free = None  # merged away
                piece.size += nxt.size
                nxt = piece.next = nxt.next
                if nxt is not None:
                    nxt.prev = piece
            self._push(piece)
            merged = True
        # Blocks of other streams freed since wait for their own stream's next merge.
        self._recent = deque((p for p in self._recent if p.free is not None and p.free not in streams), _RECENT)
        return merged

    def _push(self, piece: _Piece) -> None:
        """Put the free block ``piece`` on the list of its stream and size (no byte counts change)."""
        key = (piece.free, piece.size)
        blocks = self._free.get(key)
        if blocks is None:
            blocks = self._free[key] = []
            insort(self._sizes.setdefault(piece.free, []), piece.size)
        blocks.append(piece)

    def _driver_malloc(self, nbytes: int, sizes: tuple[int, ...], stream: int) -> tuple[int, int]:
        """A new driver allocation of the first of ``sizes`` that the device grants (the cache is released once
        before giving up): (pointer, size)."""
        for attempt in range(2):
            for size in sizes:
                self.driver_alloc_calls += 1
                if self.mode == "freelist":
                    err, ptr = cu.cuMemAlloc(size)
                else:
                    err, ptr = cu.cuMemAllocAsync(size, stream)
                if err == rt._SUCCESS:
                    return int(ptr), size
                if err != _OOM:
                    rt.check((err,), "cuMemAlloc")
            if attempt == 0:
                self.empty_cache()
        self.num_ooms += 1
        free, total = rt.mem_get_info(self.device)
        raise OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {_fmt(nbytes)} (block of {_fmt(sizes[-1])}) on "
            f"cuda:{self.device}. Genesis holds {_fmt(self.allocated)} in tensors and {_fmt(self.reserved())} "
            f"reserved ({_fmt(self.cached)} cached after releasing the cache and retrying once); "
            f"the device has {_fmt(total)} in total, {_fmt(free)} free."
        )

    # ------------------------------------------------------------ CUDA graph capture
    def begin_capture(self, stream: int, kept: list) -> None:
        """Allocations on ``stream`` form the graph's pool; blocks of other streams freed meanwhile go to ``kept``."""
        if self._capture is not None:
            raise RuntimeError("CUDAGraph: another capture is already in progress on this device")
        self._capture = (stream, kept)
        self._private.add(stream)

    def end_capture(self) -> None:
        self._capture = None

    def retire_stream(self, stream: int) -> None:
        """A released graph's stream (idle): its cached blocks, and those its tensors free later, serve the default
        stream."""
        self._private.discard(stream)
        self._retired.add(stream)
        self._adopt_retired()

    def _adopt_retired(self) -> None:
        for key in [k for k in self._free if k[0] in self._retired]:
            for piece in self._free.pop(key):
                piece.free = 0
                self._push(piece)
        for stream in self._retired:
            self._sizes.pop(stream, None)

    # ------------------------------------------------------------ cache control and statistics
    def empty_cache(self) -> None:
        """Return every segment none of whose blocks is in use to the driver (after the device finished all queued
        work). The pools of live CUDA graphs stay."""
        rt.synchronize(self.device)
        if self.mode == "freelist":
            streams = {s for s, _ in self._free if s not in self._private}
            self._coalesce(streams, everything=True)
            for key, blocks in list(self._free.items()):
                if key[0] not in streams:
                    continue
                kept = []
                for piece in blocks:
                    if piece.prev is not None or piece.next is not None:  # the segment holds a live block
                        kept.append(piece)
                        continue
                    del self._pieces[piece.ptr]
                    piece.free = None  # released
                    self.segments -= 1
                    self.driver_free_calls += 1
                    self.cached -= piece.size
                    cu.cuMemFree(piece.ptr)
                if kept:
                    self._free[key] = kept
                else:
                    del self._free[key]
            for stream in streams:
                self._sizes[stream] = sorted(n for s, n in self._free if s == stream)
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
            "driver_free_calls": self.driver_free_calls, "num_ooms": self.num_ooms, "segments": self.segments,
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
            f"  segments (split blocks)  {s['segments']}",
            f"  out-of-memory errors     {s['num_ooms']}",
        ]
        return "\n".join(lines)


_allocators: dict[int, CachingAllocator] = {}


def get(device: int) -> CachingAllocator:
    a = _allocators.get(device)
    if a is None:
        a = _allocators[device] = CachingAllocator(device)
    return a
