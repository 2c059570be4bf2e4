"""Reading a profile: events averaged by name (``key_averages``), torch's table, and the Chrome trace.

The table has torch's columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, then the CUDA
columns when device times were recorded, CPU Mem / Self CPU Mem (and CUDA's) with ``profile_memory``, # of Calls,
Syncs (host-device synchronizations inside the op, CUDA only) and Input Shapes when grouped by them.
"""

from __future__ import annotations

import json
import os
from typing import Any

from genesis.profiler.recorder import FunctionEvent

# sort_by keys (torch's names) and the attribute of FunctionEventAvg each sorts on.
_SORT_KEYS = {
    "cpu_time": "cpu_time", "cuda_time": "cuda_time", "device_time": "cuda_time",
    "cpu_time_total": "cpu_time_total", "cuda_time_total": "cuda_time_total", "device_time_total": "cuda_time_total",
    "self_cpu_time_total": "self_cpu_time_total", "self_cuda_time_total": "self_cuda_time_total",
    "self_device_time_total": "self_cuda_time_total", "count": "count",
    "cpu_memory_usage": "cpu_memory_usage", "cuda_memory_usage": "cuda_memory_usage",
    "device_memory_usage": "cuda_memory_usage", "self_cpu_memory_usage": "self_cpu_memory_usage",
    "self_cuda_memory_usage": "self_cuda_memory_usage", "self_device_memory_usage": "self_cuda_memory_usage",
    "synchronizations": "synchronizations",
}


class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped by them) summed; times in microseconds."""

    def __init__(self, key: str, input_shapes: list | None) -> None:
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.cpu_memory_usage = self.cuda_memory_usage = 0
        self.self_cpu_memory_usage = self.self_cuda_memory_usage = 0
        self.synchronizations = 0

    def add(self, event: FunctionEvent, nested_in_same: bool) -> None:
        self.count += 1
        self.self_cpu_time_total += event.self_cpu_time_total
        self.self_cuda_time_total += event.self_cuda_time_total
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        self.self_cuda_memory_usage += event.self_cuda_memory_usage
        if not nested_in_same:
            self.cpu_memory_usage += event.cpu_memory_usage
            self.cuda_memory_usage += event.cuda_memory_usage  # a recursive call is already inside its caller's total
            self.cpu_time_total += event.cpu_time_total
            self.cuda_time_total += event.cuda_time_total
            self.synchronizations += event.synchronizations

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def cuda_time(self) -> float:
        return self.cuda_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us "
                f"cuda_time_total={self.cuda_time_total:.3f}us>")


def _format_time(us: float) -> str:
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_bytes(n: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


def _percent(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole else "0.00%"


class EventList(list):
    """The averaged events of a profile (a list of :class:`FunctionEventAvg`) that prints as torch's table."""

    def __init__(self, rows: list[FunctionEventAvg], use_cuda: bool, profile_memory: bool, grouped: bool,
                 synchronizations: int) -> None:
        super().__init__(rows)
        self.use_cuda = use_cuda
        self.profile_memory = profile_memory
        self.grouped = grouped
        self.synchronizations = synchronizations

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None) -> str:
        """The rows as a text table sorted by ``sort_by`` (descending), at most ``row_limit`` rows (-1: all)."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise ValueError(f"table: unknown sort_by {sort_by!r}; expected one of {sorted(_SORT_KEYS)}")
            attr = _SORT_KEYS[sort_by]
            rows.sort(key=lambda r: getattr(r, attr), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        self_cpu = sum(r.self_cpu_time_total for r in self)
        self_cuda = sum(r.self_cuda_time_total for r in self)
        columns: list[tuple[str, Any]] = [
            ("Self CPU %", lambda r: _percent(r.self_cpu_time_total, self_cpu)),
            ("Self CPU", lambda r: _format_time(r.self_cpu_time_total)),
            ("CPU total %", lambda r: _percent(r.cpu_time_total, self_cpu)),
            ("CPU total", lambda r: _format_time(r.cpu_time_total)),
            ("CPU time avg", lambda r: _format_time(r.cpu_time)),
        ]
        if self.use_cuda:
            columns += [
                ("Self CUDA", lambda r: _format_time(r.self_cuda_time_total)),
                ("Self CUDA %", lambda r: _percent(r.self_cuda_time_total, self_cuda)),
                ("CUDA total", lambda r: _format_time(r.cuda_time_total)),
                ("CUDA time avg", lambda r: _format_time(r.cuda_time)),
            ]
        if self.profile_memory:
            columns += [("CPU Mem", lambda r: _format_bytes(r.cpu_memory_usage)),
                        ("Self CPU Mem", lambda r: _format_bytes(r.self_cpu_memory_usage))]
            if self.use_cuda:
                columns += [("CUDA Mem", lambda r: _format_bytes(r.cuda_memory_usage)),
                            ("Self CUDA Mem", lambda r: _format_bytes(r.self_cuda_memory_usage))]
        columns += [("# of Calls", lambda r: str(r.count))]
        if self.use_cuda:
            columns += [("Syncs", lambda r: str(r.synchronizations))]
        if self.grouped:
            columns += [("Input Shapes", lambda r: str(r.input_shapes)[:max_shapes_column_width])]

        name_width = min(max([len(r.key) for r in rows] + [4]) + 4, max_name_column_width)
        widths = [max(12, len(title) + 2) for title, _ in columns]
        if self.grouped:
            widths[-1] = max(widths[-1], min(max([len(str(r.input_shapes)) for r in rows] + [0]) + 2,
                                             max_shapes_column_width))
        rule = "-" * name_width + "  " + "  ".join("-" * w for w in widths) + "  "
        lines = [header] if header else []
        lines.append(rule)
        lines.append(f"{'Name':>{name_width}}  " + "  ".join(f"{t:>{w}}" for (t, _), w in zip(columns, widths)) + "  ")
        lines.append(rule)
        for r in rows:
            name = r.key if len(r.key) <= name_width else r.key[: name_width - 3] + "..."
            cells = [f"{get(r):>{w}}" for (_, get), w in zip(columns, widths)]
            lines.append(f"{name:>{name_width}}  " + "  ".join(cells) + "  ")
        lines.append(rule)
        lines.append(f"Self CPU time total: {_format_time(self_cpu)}")
        if self.use_cuda:
            lines.append(f"Self CUDA time total: {_format_time(self_cuda)}")
            lines.append(f"Host-device synchronizations: {self.synchronizations}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.table()


def key_averages(events: list[FunctionEvent], group_by_input_shape: bool, use_cuda: bool, profile_memory: bool,
                 synchronizations: int) -> EventList:
    """Sum the events per name (and per input shapes when ``group_by_input_shape``), in order of first appearance."""
    rows: dict[tuple, FunctionEventAvg] = {}
    for event in events:
        key = (event.name, str(event.input_shapes)) if group_by_input_shape else (event.name,)
        row = rows.get(key)
        if row is None:
            row = rows[key] = FunctionEventAvg(event.name, event.input_shapes if group_by_input_shape else None)
        parent, nested = event.parent, False
        while parent is not None and not nested:
            nested = parent.name == event.name
            parent = parent.parent
        row.add(event, nested)
    return EventList(list(rows.values()), use_cuda, profile_memory, group_by_input_shape, synchronizations)


def chrome_trace(events: list[FunctionEvent], path: str | os.PathLike) -> None:
    """Write ``events`` as Chrome trace JSON (chrome://tracing, Perfetto): one complete ("X") event per op on its
    thread, and each op's device time on a "cuda" track of the same process. Times are microseconds."""
    pid = os.getpid()
    device_tid = 0  # host threads have large identifiers; the device track sorts first
    trace: list[dict] = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "genesis"}}]
    if any(e.cuda_start_us is not None for e in events):
        trace.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": device_tid,
                      "args": {"name": "cuda (current stream)"}})
    host_threads = set()
    for e in events:
        args: dict[str, Any] = {"Input Dims": e.input_shapes} if e.input_shapes else {}
        if e.synchronizations:
            args["Syncs"] = e.synchronizations
        if e.cpu_memory_usage or e.cuda_memory_usage:
            args["CPU Mem"], args["CUDA Mem"] = e.cpu_memory_usage, e.cuda_memory_usage
        cat = "user_annotation" if e.is_user_annotation else "cpu_op"
        trace.append({"name": e.name, "cat": cat, "ph": "X", "pid": pid, "tid": e.thread, "ts": e.start_ns / 1e3,
                      "dur": (e.end_ns - e.start_ns) / 1e3, "args": args})
        host_threads.add(e.thread)
        if e.cuda_start_us is not None:
            trace.append({"name": e.name, "cat": "cuda", "ph": "X", "pid": pid, "tid": device_tid,
                          "ts": e.cuda_start_us, "dur": e.cuda_us, "args": {"correlation": e.id}})
    for tid in sorted(host_threads):
        trace.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}})
    with open(path, "w") as f:
        json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
