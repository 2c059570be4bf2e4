"""``genesis.profiler``: where host and device time go, with torch's API (``torch.profiler``).

    with genesis.profiler.profile(record_shapes=True) as prof:
        with genesis.profiler.record_function("step"):
            loss = model(x).sum()
            loss.backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

Every op is recorded where all ops pass, ``Function.apply`` (named by its Function class: ``Add``, ``Matmul``), and
every backward node the engine runs (``AddBackward``). When no profile records, that costs one flag check per op.
On a CUDA device each op also gets its device time (a pair of CUDA events on the current stream, read with one
synchronize when the recording stops) and the count of host-device synchronizations it caused.
"""

from __future__ import annotations

import enum
import functools
import os
import threading
from typing import Any, Callable, Iterable

from genesis import cuda
from genesis.autograd import function as _autograd
from genesis.profiler.recorder import FunctionEvent, Recorder
from genesis.profiler.report import EventList, FunctionEventAvg, chrome_trace, key_averages

__all__ = ["profile", "record_function", "schedule", "ProfilerActivity", "ProfilerAction", "FunctionEvent",
           "FunctionEventAvg", "EventList"]


class ProfilerActivity(enum.Enum):
    """What to record: host time of ops (CPU) and their device time (CUDA)."""

    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    """What a schedule asks for at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0) -> Callable[[int], ProfilerAction]:
    """torch's schedule: after ``skip_first`` steps, cycles of ``wait`` idle, ``warmup`` and ``active`` recorded steps.

    The last active step of a cycle is ``RECORD_AND_SAVE``: the recording stops after it and ``on_trace_ready`` is
    called. ``repeat`` cycles at most (0: until the profile ends).
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"schedule: invalid arguments wait={wait} warmup={warmup} active={active} repeat={repeat} "
                         f"skip_first={skip_first} (active must be positive, the others non-negative)")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
_lock = threading.Lock()
_active: Recorder | None = None  # the recording profile (one per process, as torch)


class profile:
    """Record ops while the context is open (``torch.profiler.profile``).

    Args:
        activities: ``ProfilerActivity.CPU`` records host time; ``ProfilerActivity.CUDA`` adds device times and
            synchronization counts when a CUDA device is available. Default: both.
        record_shapes: keep each op's input shapes (``key_averages(group_by_input_shape=True)``, the trace).
        profile_memory: memory per op: on CUDA the change of ``genesis.cuda.memory_allocated`` during the op (frees
            included), on the CPU the bytes of the CPU tensors the op returned.
        schedule: a function from step number to :class:`ProfilerAction` (see :func:`schedule`), advanced by
            :meth:`step`; without it every step is recorded.
        on_trace_ready: called with this profile when a recording window ends (the end of the context without a
            schedule).
        with_stack: accepted for torch compatibility; stacks are not recorded.
    """

    def __init__(self, activities: Iterable[ProfilerActivity] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None, with_stack: bool = False) -> None:
        activities = set(activities) if activities is not None else {ProfilerActivity.CPU, ProfilerActivity.CUDA}
        self.activities = activities
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.with_stack = with_stack
        self.use_cuda = ProfilerActivity.CUDA in activities and cuda.is_available()
        self.step_num = 0
        self.synchronizations = 0
        self._events: list[FunctionEvent] = []
        self._recorder: Recorder | None = None
        self._action = ProfilerAction.NONE

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Begin profiling at step 0."""
        self.step_num = 0
        self._action = self.schedule(0)
        if self._action in _RECORDING:
            self._start_recording()

    def stop(self) -> None:
        """End profiling; a recording window still open is closed and handed to ``on_trace_ready``."""
        if self._recorder is not None:
            self._stop_recording()

    def step(self) -> None:
        """Mark the end of a training step: the schedule decides whether the next one is recorded."""
        previous = self._action
        self.step_num += 1
        self._action = self.schedule(self.step_num)
        if self._recorder is not None and (previous is ProfilerAction.RECORD_AND_SAVE or
                                           self._action not in _RECORDING):
            self._stop_recording()
        if self._recorder is None and self._action in _RECORDING:
            self._start_recording()

    def _start_recording(self) -> None:
        global _active
        recorder = Recorder(self.record_shapes, self.profile_memory, self.use_cuda)
        with _lock:
            if _active is not None:
                raise RuntimeError("profile: another profile is already recording in this process")
            _active = recorder
            _autograd.set_recorder(recorder)
        self._recorder = recorder

    def _stop_recording(self) -> None:
        global _active
        recorder, self._recorder = self._recorder, None
        with _lock:
            _autograd.set_recorder(None)
            _active = None
        self._events = recorder.finish()
        self.synchronizations = recorder.synchronizations
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def events(self) -> list[FunctionEvent]:
        """The events of the last recording window, in the order they began."""
        return list(self._events)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The events summed per name (and input shapes): ``.table(sort_by=..., row_limit=...)`` prints them."""
        return key_averages(self._events, group_by_input_shape, self.use_cuda, self.profile_memory,
                            self.synchronizations)

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write the events as Chrome trace JSON (open it in Perfetto or chrome://tracing)."""
        chrome_trace(self._events, path)


class record_function:
    """Label a region: its ops nest under ``name`` in the table and the trace. A context manager or a decorator.

    Outside a profile (or on another thread than the profile's) it does nothing.
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self._event: FunctionEvent | None = None
        self._recorder: Recorder | None = None

    def __enter__(self) -> record_function:
        recorder = _active
        if recorder is not None and recorder.thread == threading.get_ident():
            self._recorder = recorder
            self._event = recorder.begin(self.name, [], is_user_annotation=True)
        return self

    def __exit__(self, *exc: object) -> None:
        recorder, event = self._recorder, self._event
        self._recorder = self._event = None
        # The window may have closed inside the region (a step of the schedule): the event was closed with it.
        if recorder is not None and recorder is _active and recorder.stack and recorder.stack[-1] is event:
            recorder.end(event)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name):
                return fn(*args, **kwargs)

        return wrapper
