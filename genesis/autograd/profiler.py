"""``genesis.autograd.profiler`` (``torch.autograd.profiler``): torch's legacy profiler API over
:mod:`genesis.profiler`.

    with genesis.autograd.profiler.profile(record_shapes=True) as prof:
        with genesis.autograd.profiler.record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total"))

:class:`profile` is :class:`genesis.profiler.profile` with the legacy constructor (``enabled``, ``use_cuda``,
``use_device``, ``record_shapes``, ``profile_memory``, ``with_stack``...); it records the same events. As torch's,
``prof.table()`` and ``print(prof)`` list every event in the order they began, ``prof.key_averages()`` sums them by
name. ``record_function`` is :class:`genesis.profiler.record_function` (a context manager and a decorator).

This module sits a layer above ``genesis.autograd`` (it imports the profiler package), so ``genesis`` imports it,
not ``genesis.autograd``'s own ``__init__``.
"""

from __future__ import annotations

import warnings
from typing import Any

from genesis import cuda
from genesis import profiler as _profiler
from genesis.profiler import FunctionEvent, FunctionEventAvg, ProfilerActivity, record_function
from genesis.profiler.report import EventList

__all__ = ["profile", "record_function", "emit_nvtx", "EventList", "FunctionEvent", "FunctionEventAvg",
           "kineto_available"]


def kineto_available() -> bool:
    """False: Genesis records its own events (``genesis.profiler``), not through Kineto."""
    return False


class profile(_profiler.profile):
    """Record ops while the context is open (``torch.autograd.profiler.profile``, the legacy profiler).

    Args:
        enabled: False makes the context do nothing (no events; the result methods raise).
        use_cuda: deprecated in torch (a ``FutureWarning``): ``use_device="cuda"``.
        use_device: ``"cuda"`` adds device times and synchronization counts when a CUDA device is available.
        record_shapes: keep each op's input shapes (``key_averages(group_by_input_shape=True)``).
        with_flops: as torch, turns ``record_shapes`` on; FLOPs are not estimated.
        profile_memory: memory per op (see :class:`genesis.profiler.profile`).
        with_stack: accepted; stacks are not recorded.
        use_cpu: False is refused: Genesis always records host time.
        with_modules, use_kineto, experimental_config, acc_events, custom_trace_id_callback: accepted for
            compatibility; they change nothing here.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None) -> None:
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` "
                          "instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        if use_device not in (None, "cpu", "cuda"):
            raise ValueError(f"profile: use_device must be None, 'cpu' or 'cuda', got {use_device!r}")
        if not use_cpu:
            raise ValueError("profile: use_cpu=False is not supported (Genesis always records host time)")
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_device == "cuda" else [])
        super().__init__(activities=activities, record_shapes=record_shapes or with_flops,
                         profile_memory=profile_memory, with_stack=with_stack)
        self.enabled = enabled
        self.use_device = use_device
        self.with_flops = with_flops
        self.entered = False
        self._recorded = False

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        self.stop()
        self._recorded = True

    def _results(self) -> None:
        if not self._recorded:
            raise RuntimeError("Profiler didn't finish running")

    @property
    def function_events(self) -> EventList:
        """Every recorded event in the order they began, one row each (torch's ``EventList``)."""
        self._results()
        rows = []
        for event in self._events:
            row = FunctionEventAvg(event.name, event.input_shapes if self.record_shapes else None)
            row.add(event, False)
            rows.append(row)
        return EventList(rows, self.use_cuda, self.profile_memory, self.record_shapes, self.synchronizations)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events summed per name (and input shapes); ``group_by_stack_n`` and ``group_by_overload_name`` are
        accepted (no stacks and no overloads here)."""
        self._results()
        return super().key_averages(group_by_input_shape)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """``function_events`` as torch's table (one row per event; ``top_level_events_only`` keeps the events
        no other event encloses)."""
        events = self.function_events
        if top_level_events_only:
            events = EventList([row for row, event in zip(events, self._events) if event.parent is None],
                               events.use_cuda, events.profile_memory, events.grouped, events.synchronizations)
        return events.table(sort_by=sort_by, row_limit=row_limit, max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header)

    def export_chrome_trace(self, path: Any) -> None:
        """Write the events as Chrome trace JSON (Perfetto, chrome://tracing)."""
        self._results()
        super().export_chrome_trace(path)

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one row named "Total" (nested events count in their parents' totals too, as
        torch's)."""
        self._results()
        total = FunctionEventAvg("Total", None)
        for event in self._events:
            total.add(event, False)
        return total

    @property
    def self_cpu_time_total(self) -> float:
        """The host time of all events without double counting nested ones, in microseconds."""
        self._results()
        return sum(event.self_cpu_time_total for event in self._events)

    def __str__(self) -> str:
        return self.table()


class emit_nvtx:
    """``torch.autograd.profiler.emit_nvtx``, which makes every op emit an NVTX range for nsys / nvprof.

    Genesis has no NVTX binding, so no ranges are emitted: the block runs unchanged, bracketed (as torch's) by a
    device synchronize when a CUDA GPU is available, so an external timeline still shows where it begins and ends.
    For per-op ranges use :class:`genesis.profiler.profile` and its Chrome trace.

    Args:
        enabled: False makes the context do nothing.
        record_shapes: accepted for compatibility.
    """

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.entered = False

    def __enter__(self) -> emit_nvtx | None:
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("NVTX annotation context manager is not reentrant")
        self.entered = True
        if cuda.is_available():
            cuda.synchronize()
        return self

    def __exit__(self, *exc: object) -> bool:
        if self.enabled:
            if cuda.is_available():
                cuda.synchronize()
            self.entered = False
        return False
