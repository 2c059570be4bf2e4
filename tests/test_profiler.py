"""genesis.profiler: events per op and backward node, record_function ranges, shapes, the table, the Chrome trace,
schedules, the hook being off outside a profile, per-thread recording and the host-device synchronization count."""

from __future__ import annotations

import json
import threading

import pytest

import genesis
from genesis.autograd import function as autograd_function
from genesis.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule
from tests.helpers import DEVICE, requires_cuda


def _program() -> genesis.Tensor:
    """3 Add, 1 Matmul."""
    a, b = genesis.randn(4, 5, device=DEVICE), genesis.randn(5, 3, device=DEVICE)
    c = a @ b
    return c + c + c + 1


def _counts(prof: profile) -> dict[str, int]:
    return {row.key: row.count for row in prof.key_averages()}


def test_ops_and_call_counts() -> None:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _program()
    counts = _counts(prof)
    assert counts["Add"] == 3
    assert counts["Matmul"] == 1
    table = prof.key_averages().table(sort_by="count", row_limit=100)
    for column in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"):
        assert column in table
    assert "Self CPU time total:" in table
    assert "Input Shapes" not in table and "CUDA total" not in table
    add_line = next(line for line in table.splitlines() if line.strip().startswith("Add "))
    assert add_line.split()[-1] == "3"
    assert table.splitlines()[3].split()[0] == "Add"  # sorted by count: Add first


def test_table_sort_keys_and_row_limit() -> None:
    with profile() as prof:
        _program()
    averages = prof.key_averages()
    for key in ("cpu_time_total", "self_cpu_time_total", "cuda_time_total", "self_cuda_time_total", "count",
                "cpu_time", "cpu_memory_usage"):
        averages.table(sort_by=key)
    # rules, header, one row, rule, the footer: the self CPU total, and on CUDA the self CUDA total and the syncs
    footer = 3 if genesis.cuda.is_available() else 1
    assert len(averages.table(sort_by="cpu_time_total", row_limit=1).splitlines()) == 5 + footer
    with pytest.raises(ValueError, match="sort_by"):
        averages.table(sort_by="nonsense")


def test_backward_nodes_are_recorded() -> None:
    w = genesis.randn(8, 8, requires_grad=True)
    x = genesis.randn(8, 8) + 3.0
    with profile() as prof:
        (w * x / x).sum().backward()
    counts = _counts(prof)
    assert counts["Mul"] >= 1 and counts["Div"] >= 1 and counts["Sum"] == 1
    assert counts["SumBackward0"] == 1 and counts["DivBackward0"] == 1 and counts["MulBackward0"] == 1
    # The tensor ops a backward runs nest under its node (DivBackward0's; MulBackward0 computes on arrays).
    div_backward = next(e for e in prof.events() if e.name == "DivBackward0")
    assert any(e.parent is div_backward for e in prof.events())


class _Double(genesis.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: genesis.Tensor) -> genesis.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: object, grad: genesis.Tensor) -> genesis.Tensor:
        return grad * 2


def test_user_function_recorded_once_with_its_ops_inside() -> None:
    x = genesis.randn(3, requires_grad=True)
    with profile() as prof:
        _Double.apply(x).sum().backward()
    events = prof.events()
    assert [e.name for e in events].count("_Double") == 1
    double = next(e for e in events if e.name == "_Double")
    assert [e.name for e in events if e.parent is double] == ["Mul"]
    assert [e.name for e in events].count("_DoubleBackward") == 1


def test_record_function_nesting_and_times() -> None:
    with profile() as prof:
        with record_function("outer"):
            with record_function("inner"):
                _program()
            genesis.ones(3) + 1
    events = {e.name: e for e in prof.events()}
    outer, inner = events["outer"], events["inner"]
    assert outer.parent is None and inner.parent is outer
    matmul = next(e for e in prof.events() if e.name == "Matmul")
    assert matmul.parent is inner
    assert outer.cpu_time_total >= inner.cpu_time_total >= matmul.cpu_time_total > 0
    assert outer.self_cpu_time_total <= outer.cpu_time_total
    assert inner.is_user_annotation and not matmul.is_user_annotation
    total_self = sum(e.self_cpu_time_total for e in prof.events())
    assert total_self == pytest.approx(sum(e.cpu_time_total for e in prof.events() if e.parent is None))


def test_record_function_decorator_and_outside_profile() -> None:
    @record_function("my_step")
    def step() -> genesis.Tensor:
        return genesis.ones(2) * 2

    step()  # no profile: nothing happens
    with record_function("nothing"):
        genesis.ones(2) + 1
    with profile() as prof:
        step()
        step()
    counts = _counts(prof)
    assert counts["my_step"] == 2
    assert "nothing" not in counts


def test_shapes_recorded_and_grouped() -> None:
    a, b = genesis.randn(2, 3), genesis.randn(3, 4)
    with profile(record_shapes=True) as prof:
        a @ b
        genesis.randn(5, 6) @ genesis.randn(6, 7)
    matmuls = [e for e in prof.events() if e.name == "Matmul"]
    assert [e.input_shapes for e in matmuls] == [[[2, 3], [3, 4]], [[5, 6], [6, 7]]]
    grouped = prof.key_averages(group_by_input_shape=True)
    assert sorted(r.input_shapes for r in grouped if r.key == "Matmul") == [[[2, 3], [3, 4]], [[5, 6], [6, 7]]]
    table = grouped.table()
    assert "Input Shapes" in table and "[[2, 3], [3, 4]]" in table
    with profile() as plain:
        a @ b
    assert plain.events()[0].input_shapes == []


def test_profile_memory_cpu_counts_output_bytes() -> None:
    with profile(profile_memory=True) as prof:
        genesis.ones(10, 10, dtype=genesis.float32) + 1
    add = next(e for e in prof.events() if e.name == "Add")
    assert add.cpu_memory_usage == 400
    assert "CPU Mem" in prof.key_averages().table()


def test_profile_memory_totals_include_nested_events_and_sort_by_self_memory() -> None:
    # As torch's: a range's CPU Mem sums what the ops inside it allocated, its Self CPU Mem excludes them.
    with profile(profile_memory=True) as prof:
        with record_function("block"):
            genesis.ones(10, 10, dtype=genesis.float32) + 1
    block = next(e for e in prof.events() if e.name == "block")
    add = next(e for e in prof.events() if e.name == "Add")
    assert (add.cpu_memory_usage, add.self_cpu_memory_usage) == (400, 400)
    assert block.cpu_memory_usage >= 400 and block.self_cpu_memory_usage == 0
    table = prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10)
    assert "Self CPU Mem" in table
    rows = list(prof.key_averages())
    assert all(hasattr(r, "self_cpu_memory_usage") for r in rows)


def test_chrome_trace(tmp_path) -> None:
    with profile(record_shapes=True) as prof:
        with record_function("region"):
            _program()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "cuda"]  # the host's events
    assert [e["name"] for e in complete].count("Add") == 3
    device = [e["name"] for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "cuda"]
    assert device.count("Add") == (3 if DEVICE.startswith("cuda") else 0)
    region = next(e for e in complete if e["name"] == "region")
    for e in complete:
        assert {"pid", "tid", "ts", "dur", "args"} <= set(e)
        assert e["dur"] >= 0
        assert region["ts"] <= e["ts"] and e["ts"] + e["dur"] <= region["ts"] + region["dur"] + 1e-3
    matmul = next(e for e in complete if e["name"] == "Matmul")
    assert matmul["args"]["Input Dims"] == [[4, 5], [5, 3]]


def test_schedule_actions() -> None:
    s = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=1)
    actions = [s(i) for i in range(7)]
    assert actions == [ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                       ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.NONE]
    cyclic = schedule(wait=0, warmup=0, active=1)
    assert all(cyclic(i) is ProfilerAction.RECORD_AND_SAVE for i in range(5))
    with pytest.raises(ValueError):
        schedule(wait=0, warmup=0, active=0)


def test_schedule_with_steps_and_on_trace_ready() -> None:
    ready: list[list[int]] = []

    def handler(p: profile) -> None:
        ready.append([row.count for row in p.key_averages() if row.key == "Add"])

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=handler) as prof:
        for step in range(10):
            for _ in range(step + 1):  # step i runs i + 1 adds
                genesis.ones(2) + 1
            prof.step()
    # cycles of 4 steps: steps 2-3 and 6-7 recorded, i.e. 3 + 4 and 7 + 8 adds
    assert ready == [[7], [15]]
    assert _counts(prof)["Add"] == 15  # the last window stays readable after the profile


def test_on_trace_ready_without_schedule() -> None:
    calls = []
    with profile(on_trace_ready=calls.append) as prof:
        genesis.ones(2) + 1
    assert calls == [prof]


def test_hook_off_outside_profile() -> None:
    assert autograd_function._profiling is False and autograd_function._recorder is None
    with profile():
        assert autograd_function._profiling is True and autograd_function._recorder is not None
    assert autograd_function._profiling is False and autograd_function._recorder is None
    with pytest.raises(ZeroDivisionError):
        with profile() as prof:
            with record_function("failing"):
                genesis.ones(2) + 1
                raise ZeroDivisionError("inside the profile")
    assert autograd_function._profiling is False and autograd_function._recorder is None
    assert _counts(prof) == {"failing": 1, "Add": 1}
    genesis.ones(2) + 1  # nothing recorded after the profile
    assert _counts(prof) == {"failing": 1, "Add": 1}


def test_exception_inside_an_op_closes_its_event() -> None:
    with profile() as prof:
        with pytest.raises(RuntimeError):
            genesis.randn(2, 3) @ genesis.randn(4, 5)
        genesis.ones(2) + 1
    add = next(e for e in prof.events() if e.name == "Add")
    assert add.parent is None and add.depth == 0


def test_only_one_profile_records() -> None:
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with profile():
                pass
        assert autograd_function._profiling is True
    assert autograd_function._recorder is None


def test_profile_records_only_its_thread() -> None:
    def other() -> None:
        for _ in range(5):
            genesis.ones(2) * 3
        with record_function("other_thread"):
            genesis.ones(2) * 3

    with profile() as prof:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        genesis.ones(2) + 1
    counts = _counts(prof)
    assert counts == {"Add": 1}
    assert {e.thread for e in prof.events()} == {threading.get_ident()}


def test_synchronizations_on_cpu_are_zero() -> None:
    assert genesis.cuda.synchronization_count() >= 0
    with profile() as prof:
        genesis.ones(3).sum().item()  # a CPU tensor: nothing waits for a device
    assert prof.synchronizations == 0
    assert prof.key_averages().synchronizations == 0
    if not genesis.cuda.is_available():
        assert genesis.cuda.synchronization_count() == 0


# ---------------------------------------------------------------- CUDA


@requires_cuda
def test_cuda_times_and_columns() -> None:
    a = genesis.randn(256, 256, device="cuda")
    (a @ a) + a  # compile and tune the kernels outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
        with record_function("work"):
            b = a @ a
            c = b + b
    assert c.shape == (256, 256)
    events = {e.name: e for e in prof.events()}
    assert events["Matmul"].cuda_time_total > 0
    assert events["work"].cuda_time_total >= events["Matmul"].cuda_time_total
    assert events["Add"].cuda_memory_usage >= 256 * 256 * 4  # the output, rounded up to a block
    table = prof.key_averages().table(sort_by="cuda_time_total")
    for column in ("Self CUDA", "CUDA total", "CUDA time avg", "CUDA Mem", "Syncs"):
        assert column in table
    assert "Self CUDA time total:" in table


@requires_cuda
def test_cuda_chrome_trace_has_device_track(tmp_path) -> None:
    a = genesis.randn(64, 64, device="cuda")
    with profile() as prof:
        a @ a
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e.get("cat") == "cuda" and e["name"] == "Matmul" for e in events)


@requires_cuda
def test_cuda_synchronization_count() -> None:
    x = genesis.randn(1000, device="cuda")

    def chain() -> genesis.Tensor:
        y = x
        for _ in range(5):
            y = (y * 2 + 1).exp().sin()
        return y

    chain()  # kernels compile (and may be benchmarked) on their first launch
    genesis.cuda.synchronize()
    before = genesis.cuda.synchronization_count()
    with profile() as prof:
        with record_function("elementwise"):
            chain()
        with record_function("read"):
            x.sum().item()
    assert genesis.cuda.synchronization_count() - before >= 1
    assert prof.synchronizations >= 1
    rows = {row.key: row for row in prof.key_averages()}
    assert rows["elementwise"].synchronizations == 0
    assert rows["read"].synchronizations >= 1
    assert "Host-device synchronizations:" in prof.key_averages().table()
