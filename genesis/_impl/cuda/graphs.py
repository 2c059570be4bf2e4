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
"""

from __future__ import annotations

from typing import Any

from cuda.bindings import driver as cu

from genesis._impl.cuda import allocator
from genesis._impl.cuda import runtime as rt

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

    def capture_begin(self) -> None:
        """Start recording on the graph's stream, which becomes the current stream."""
        global capturing, _active
        if self._exec is not None:
            raise RuntimeError("CUDAGraph: this graph was already captured; call reset() before capturing again")
        self.device = rt.current_device()
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
        try:
            rt.check(cu.cuStreamBeginCapture(self.stream._cu, _RELAXED), "cuStreamBeginCapture")
        except BaseException:
            capturing -= 1
            _active = None
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
            alloc.end_capture()
            rt.set_stream(self._previous)
        rt.check((err,), "cuStreamEndCapture (did the captured code synchronize or read a device value?)")
        self._graph = graph
        self._exec = rt.check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        while not capturing and _released_during_capture:
            _released_during_capture.pop().reset()
        self._previous.wait_stream(self.stream)

    def replay(self) -> None:
        """Launch every captured kernel, in order, on the current stream."""
        if self._exec is None:
            raise RuntimeError("CUDAGraph: replay() before a capture was completed")
        rt.check(cu.cuGraphLaunch(self._exec, rt.stream_handle()), "cuGraphLaunch")

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
