"""CUDA graphs: record the kernels of a piece of code once, replay them with one launch.

Capture runs on a stream of the graph's own. Every kernel Genesis queues there (Triton, cuBLASLt, copies) becomes
a node instead of running; ``replay`` launches the whole graph on the current stream, so the host cost of a replay
is one driver call however many kernels it holds.

Memory: the graph's kernels keep reading and writing the addresses they were captured with, so those blocks must
not go to anyone else while the graph lives.

- Tensors allocated during capture come from the free list of the graph's stream, which nothing else uses: a
  private pool. Blocks freed during capture return to that pool and are reused later in the same capture, which is
  safe because a graph runs its nodes in capture order.
- Blocks allocated before the capture and freed during it are kept aside until the graph is released, since the
  graph still uses them on every replay.
- ``reset`` (or garbage collection of the graph) hands all of that memory back to the allocator.

- Host arrays copied to the device during capture (``from_numpy`` of an index list, a multi-tensor kernel's offset
  table) are staged in pinned host memory that the graph holds (``hold``): the copy is a node of the graph and
  reads that memory again on every replay. Device tables cached across steps and read by captured kernels are held
  the same way, so that evicting them from their cache cannot free memory the graph still reads.

Capture is stream capture in relaxed mode. Code inside it must not read device values on the host (``.item()``,
``.tolist()``, synchronizing calls): those raise. Genesis skips its host-side index bounds checks while a capture
is in progress, as the values are not known yet.

Random numbers: a capture may be given random streams ``(seed, start)`` (the generators' positions when it begins).
Random kernels captured with a counter at or after ``start`` of a stream read their counter base from a device
int64 of the graph instead of baking the host offset in: ``replay(bases)`` sets that base first (a copy queued on
the stream, before the graph's launch), so every replay draws new numbers. A later capture that draws from such a
range again (the backward of a captured dropout, in a second graph) reads the same base, and so the same numbers as
the last replay of the first graph.
"""

from __future__ import annotations

import weakref
from typing import Any

from cuda.bindings import driver as cu

from genesis import dtypes
from genesis._impl.cuda import allocator, launch
from genesis._impl.cuda import runtime as rt
from genesis.device import device as Device

_RELAXED = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
_retired_streams: list[rt.Stream] = []  # streams of released graphs, kept alive
capturing = 0  # the number of captures in progress (read by host-side checks that must be skipped)
_active: Graph | None = None  # the graph being captured
# Graphs collected while a capture was running: releasing one synchronizes the device, which would break the
# capture, so they are kept until it ends.
_released_during_capture: list[Graph] = []


def hold(obj: object) -> None:
    """Keep ``obj`` (a pinned host array, a cached device table) alive as long as the graph being captured."""
    if _active is not None:
        _active._held.append(obj)


class _RngRange:
    """Counters ``[start, end)`` of the random stream ``seed`` on ``device`` drawn inside a capture: captured kernels
    read the base of these counters from ``base`` (device int64), set before each replay of ``owner``."""

    def __init__(self, device: int, seed: int, start: int, owner: Graph) -> None:
        self.device, self.seed, self.start = device, seed, start
        self.end = start  # grows while the capture draws; fixed when it ends
        self.open = True
        # Weak: the module's list of live ranges must not keep a dropped graph (and its memory pool) alive.
        self.owner = weakref.ref(owner)
        self.base = launch._new((1,), dtypes.int64, Device("cuda", device))


_ranges: list[_RngRange] = []  # of the live graphs, newest last


def rng_counter(device: int, seed: int, offset: int, n: int) -> tuple[int, int]:
    """(device address of the counter base, offset relative to it) of a draw of ``n`` numbers from stream
    ``(seed, offset)`` inside a capture that reads its counters from the device; ``(0, offset)`` otherwise (the host
    offset is the counter base: a launch outside graphs, or a stream no capture was given)."""
    if not capturing:
        return 0, offset
    for r in reversed(_ranges):
        if r.device == device and r.seed == seed and offset >= r.start and (r.open or offset + n <= r.end):
            if r.open:
                r.end = max(r.end, offset + n)
            if r.owner() is not _active:
                _active._held.append(r.base)  # the base this graph reads lives as long as it does
            return r.base.buffer.ptr, offset - r.start
    return 0, offset


class Graph:
    """One captured CUDA graph and the memory it owns (see the module docstring)."""

    def __init__(self) -> None:
        self.stream: rt.Stream | None = None
        self.device: int | None = None
        self._graph: Any = None
        self._exec: Any = None
        self._kept: list[tuple[int, int, int]] = []  # (ptr, size, stream) of blocks freed during capture
        self._previous: rt.Stream | None = None
        self._held: list[object] = []  # host and device memory the captured nodes read (see hold)
        self._ranges: list[_RngRange] = []  # the random streams whose counters this graph's replays advance

    def capture_begin(self, rng_streams: tuple[tuple[int, int], ...] = ()) -> None:
        """Start recording on the graph's stream, which becomes the current stream. ``rng_streams``: the
        ``(seed, offset)`` of random streams whose draws inside the capture read their counters from the device
        (see the module docstring)."""
        global capturing, _active
        if self._exec is not None:
            raise RuntimeError("CUDAGraph: this graph was already captured; call reset() before capturing again")
        self.device = rt.current_device()
        self._ranges = [_RngRange(self.device, seed, start, self) for seed, start in rng_streams]
        alloc = allocator.get(self.device)
        if alloc.mode != "freelist":
            raise RuntimeError("CUDAGraph: capture needs the freelist allocator (GENESIS_CUDA_ALLOCATOR=freelist)")
        if self.stream is None:
            self.stream = rt.Stream(self.device)
        self._previous = rt.current_stream(self.device)
        self.stream.wait_stream(self._previous)  # the capture reads what earlier work wrote
        rt.set_stream(self.stream)
        alloc.begin_capture(self.stream.handle, self._kept)
        capturing += 1
        _active = self
        _ranges.extend(self._ranges)
        try:
            rt.check(cu.cuStreamBeginCapture(self.stream._cu, _RELAXED), "cuStreamBeginCapture")
        except BaseException:
            capturing -= 1
            _active = None
            self._drop_ranges()
            alloc.end_capture()
            rt.set_stream(self._previous)
            raise

    def capture_end(self) -> None:
        """Stop recording and instantiate the graph; the previous stream becomes current again."""
        global capturing, _active
        alloc = allocator.get(self.device)
        try:
            err, graph = cu.cuStreamEndCapture(self.stream._cu)
        finally:
            capturing -= 1
            _active = None
            for r in self._ranges:
                r.open = False
            alloc.end_capture()
            rt.set_stream(self._previous)
        if err != cu.CUresult.CUDA_SUCCESS:
            self._drop_ranges()
        rt.check((err,), "cuStreamEndCapture (did the captured code synchronize or read a device value?)")
        self._graph = graph
        self._exec = rt.check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        while not capturing and _released_during_capture:
            _released_during_capture.pop().reset()
        self._previous.wait_stream(self.stream)

    def rng_consumed(self) -> list[int]:
        """Per random stream given to ``capture_begin``, how many counters the captured kernels draw per replay."""
        return [r.end - r.start for r in self._ranges]

    def replay(self, rng_bases: tuple[int, ...] = ()) -> None:
        """Launch every captured kernel, in order, on the current stream; ``rng_bases``: the counter base of each
        random stream given to ``capture_begin``, for this replay's draws (copied to the device before the launch)."""
        if self._exec is None:
            raise RuntimeError("CUDAGraph: replay() before a capture was completed")
        for r, value in zip(self._ranges, rng_bases):
            if r.end > r.start:
                launch._ew("copy", 1, r.base, (value,))
        rt.check(cu.cuGraphLaunch(self._exec, rt.stream_handle()), "cuGraphLaunch")

    def _drop_ranges(self) -> None:
        for r in self._ranges:
            if r in _ranges:
                _ranges.remove(r)
        self._ranges = []

    def num_nodes(self) -> int:
        """How many nodes (kernels, copies, memsets) the captured graph holds."""
        if self._graph is None:
            return 0
        result = rt.check(cu.cuGraphGetNodes(self._graph, 0), "cuGraphGetNodes")  # (nodes, count)
        return int(result[-1])

    def reset(self) -> None:
        """Destroy the graph and give its memory back to the allocator (after queued work finished)."""
        if self.device is None:
            return
        rt.synchronize(self.device)
        if self._exec is not None:
            cu.cuGraphExecDestroy(self._exec)
        if self._graph is not None:
            cu.cuGraphDestroy(self._graph)
        self._exec = self._graph = None
        alloc = allocator.get(self.device)
        for ptr, size, stream in self._kept:
            alloc.free(ptr, size, stream)
        self._kept.clear()
        self._held.clear()
        self._drop_ranges()
        if self.stream is not None:
            alloc.retire_stream(self.stream.handle)
            # Streams are kept, never destroyed: a new stream could get this handle while blocks freed later still
            # carry it. (Reusing a released graph's stream for a later capture broke that capture.)
            _retired_streams.append(self.stream)
        self.stream = self._previous = None

    def __del__(self) -> None:
        if capturing and self is not _active:
            # The garbage collector can run in the middle of another capture: release this graph after it.
            _released_during_capture.append(self)
            return
        try:
            self.reset()
        except Exception:  # interpreter shutdown: the driver frees everything
            pass
