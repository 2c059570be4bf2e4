"""What a profile records: one :class:`FunctionEvent` per op, backward node and ``record_function`` range.

The :class:`Recorder` is installed into the autograd layer (``genesis.autograd.function.set_recorder``) while a
profile records. ``Function.apply`` then hands each op to :meth:`Recorder.record_op`, which opens an event and calls
``apply`` again to run the op (:meth:`Recorder.claims` lets that one call through), and the backward engine runs each
node through the recorder. Only the thread that opened the profile is recorded, as in torch.

On a CUDA device each event also gets a pair of Genesis CUDA events recorded on the current stream around it; their
elapsed times are read once, when the recording stops (one synchronize), never per op.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from genesis import cuda
from genesis.tensor import Tensor


class FunctionEvent:
    """One recorded op or range: host times in nanoseconds, device times and memory read when the recording stops.

    The ``*_time_total`` properties are in microseconds, as torch's; "self" times exclude the events nested inside.
    """

    __slots__ = ("id", "name", "thread", "depth", "parent", "start_ns", "end_ns", "input_shapes", "children_ns",
                 "cuda_us", "children_cuda_us", "cuda_start_us", "cpu_memory_usage", "cuda_memory_usage",
                 "self_cpu_memory_usage", "self_cuda_memory_usage",
                 "synchronizations", "is_user_annotation", "_events", "_mem0", "_sync0")

    def __init__(self, id: int, name: str, thread: int, parent: FunctionEvent | None, input_shapes: list,
                 is_user_annotation: bool = False) -> None:
        self.id = id
        self.name = name
        self.thread = thread
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.input_shapes = input_shapes
        self.is_user_annotation = is_user_annotation
        self.start_ns = self.end_ns = 0
        self.children_ns = 0
        self.cuda_us = self.children_cuda_us = 0.0
        self.cuda_start_us: float | None = None  # device start, on the host clock (for the chrome trace)
        # Memory in bytes: the totals include the events nested inside, the "self" amounts exclude them.
        self.cpu_memory_usage = self.cuda_memory_usage = 0
        self.self_cpu_memory_usage = self.self_cuda_memory_usage = 0
        self.synchronizations = 0
        self._events: tuple | None = None
        self._mem0 = self._sync0 = 0

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns - self.children_ns) / 1e3

    @property
    def cuda_time_total(self) -> float:
        return self.cuda_us

    @property
    def self_cuda_time_total(self) -> float:
        return max(self.cuda_us - self.children_cuda_us, 0.0)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total:.3f}us "
                f"cuda_time={self.cuda_us:.3f}us input_shapes={self.input_shapes}>")


def _on_cuda(values: tuple | list) -> bool:
    """Whether any of ``values`` is a tensor on a CUDA device (an op on CPU tensors has no device time)."""
    return any(getattr(getattr(v, "device", None), "type", None) == "cuda" for v in values)


def _shapes(inputs: tuple | list) -> list:
    """Input shapes as torch's profiler writes them: a list per tensor, [] for anything else."""
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in inputs]


def _cpu_bytes(out: Any) -> int:
    """Bytes of the CPU tensors an op returned (views of its inputs count too: an upper bound of what it allocated)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return sum(t.numel() * t.element_size() for t in outs if isinstance(t, Tensor) and t.device.type == "cpu")


class Recorder:
    """Records the events of one profiling window of the thread that created it.

    ``record_shapes`` keeps input shapes, ``profile_memory`` the memory each op allocated (CUDA: the change of
    ``genesis.cuda.memory_allocated``; CPU: the bytes of the CPU tensors it returned), ``use_cuda`` the device time of
    each event and the host-device synchronizations inside it.
    """

    def __init__(self, record_shapes: bool, profile_memory: bool, use_cuda: bool) -> None:
        self.thread = threading.get_ident()
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.use_cuda = use_cuda
        self.events: list[FunctionEvent] = []
        self.stack: list[FunctionEvent] = []
        self._event_type: Callable[..., Any] | None = cuda.Event if use_cuda else None
        self.start_ns = time.perf_counter_ns()
        self._reference = self._cuda_event() if use_cuda else None
        self.sync_start = cuda.synchronization_count()
        self.synchronizations = 0
        self._running = False

    def claims(self) -> bool:
        """Whether the op entering ``Function.apply`` is recorded: an op of this thread, unless it is the call
        :meth:`record_op` makes to run the op it records."""
        if threading.get_ident() != self.thread:
            return False
        if self._running:
            self._running = False
            return False
        return True

    def record_op(self, fn: type, args: tuple, kwargs: dict) -> Any:
        """Run ``fn.apply(*args, **kwargs)`` as one event named by the Function class."""
        event = self.begin(fn.__name__, _shapes(args) if self.record_shapes else [], on_device=_on_cuda(args))
        out = None
        try:
            self._running = True  # the next claims() is this call entering apply again: run it, do not record
            out = fn.apply(*args, **kwargs)
            return out
        finally:
            self._running = False
            self.end(event, out)

    def __call__(self, name: str, inputs: tuple | list, run: Callable[..., Any], *args: Any) -> Any:
        """Run ``run(*args)`` as one event ``name`` over ``inputs`` (the engine's hook around a backward node)."""
        if threading.get_ident() != self.thread:
            return run(*args)
        event = self.begin(name, _shapes(inputs) if self.record_shapes else [], on_device=_on_cuda(inputs))
        out = None
        try:
            out = run(*args)
            return out
        finally:
            self.end(event, out)

    def begin(self, name: str, input_shapes: list, is_user_annotation: bool = False, on_device: bool = True
              ) -> FunctionEvent:
        """Open an event nested in the innermost open one; ``on_device``: time it on the GPU too (an op on CUDA
        tensors, or a user range, which may hold some)."""
        event = FunctionEvent(len(self.events), name, self.thread, self.stack[-1] if self.stack else None,
                              input_shapes, is_user_annotation)
        self.events.append(event)
        self.stack.append(event)
        if self.use_cuda:
            event._sync0 = cuda.synchronization_count()
            if self.profile_memory:
                event._mem0 = cuda.memory_allocated()
            start = self._cuda_event() if on_device else None
            event._events = (start,) if start is not None else None
        event.start_ns = time.perf_counter_ns()
        return event

    def end(self, event: FunctionEvent, out: Any = None) -> None:
        """Close ``event`` (the innermost open one) and charge its time to its parent."""
        event.end_ns = time.perf_counter_ns()
        if self.use_cuda:
            if event._events is not None:
                stop = self._cuda_event()
                event._events = (event._events[0], stop) if stop is not None else None
            event.synchronizations = cuda.synchronization_count() - event._sync0
            if self.profile_memory:
                event.cuda_memory_usage = cuda.memory_allocated() - event._mem0
                event.self_cuda_memory_usage += event.cuda_memory_usage
        if self.profile_memory:
            event.self_cpu_memory_usage = _cpu_bytes(out)
            event.cpu_memory_usage += event.self_cpu_memory_usage  # the nested events' totals are already in
        self.stack.pop()
        if event.parent is not None:
            event.parent.children_ns += event.end_ns - event.start_ns
            event.parent.cpu_memory_usage += event.cpu_memory_usage
            event.parent.self_cuda_memory_usage -= event.cuda_memory_usage

    def _cuda_event(self) -> Any:
        """A timing event recorded on the current stream, or None while a CUDA graph is being captured."""
        if cuda.is_current_stream_capturing():
            return None
        event = self._event_type(enable_timing=True)
        event.record()
        return event

    def finish(self) -> list[FunctionEvent]:
        """Stop: close ranges left open, then read every device time after one synchronize."""
        while self.stack:
            self.end(self.stack[-1])
        self.synchronizations = cuda.synchronization_count() - self.sync_start
        if self.use_cuda:
            cuda.synchronize()  # the profiler's own synchronize, after the count above
            for event in self.events:
                if event._events is not None and self._reference is not None:
                    start, stop = event._events
                    event.cuda_us = start.elapsed_time(stop) * 1e3
                    event.cuda_start_us = self.start_ns / 1e3 + self._reference.elapsed_time(start) * 1e3
                event._events = None
                if event.parent is not None:
                    event.parent.children_cuda_us += event.cuda_us
            self._reference = None
        return self.events
