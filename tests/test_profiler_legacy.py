"""``genesis.autograd.profiler``: torch's legacy profiler API over ``genesis.profiler`` (the constructor, the
per-event table, ``key_averages``, ``total_average``, the Chrome trace), ``record_function`` as a context manager and
a decorator, and ``emit_nvtx`` running its block."""

from __future__ import annotations

import json
import warnings

import pytest

import genesis
from genesis.autograd import profiler
from tests.helpers import DEVICE


def _program() -> genesis.Tensor:
    """2 Add, 1 Matmul."""
    a, b = genesis.randn(4, 5, device=DEVICE), genesis.randn(5, 3, device=DEVICE)
    c = a @ b
    return c + c + 1


def test_is_reachable_from_genesis_and_reuses_the_profiler() -> None:
    assert genesis.autograd.profiler is profiler
    assert profiler.record_function is genesis.profiler.record_function
    assert issubclass(profiler.profile, genesis.profiler.profile)
    assert not profiler.kineto_available()


def test_legacy_profile_records_ops_and_prints_every_event() -> None:
    with profiler.profile(record_shapes=True) as prof:
        with profiler.record_function("step"):
            _program()
    counts = {row.key: row.count for row in prof.key_averages()}
    assert counts["Add"] == 2 and counts["Matmul"] == 1 and counts["step"] == 1
    events = prof.function_events
    assert [row.key for row in events] == ["step", "Matmul", "Add", "Add"]  # in the order they began
    table = prof.table(sort_by="self_cpu_time_total", row_limit=-1)
    assert "Input Shapes" in table and "[[4, 5], [5, 3]]" in table
    assert sum(line.strip().startswith("Add ") for line in table.splitlines()) == 2  # one row per event
    assert str(prof) == prof.table()
    top = prof.table(top_level_events_only=True)
    assert "step" in top and "Matmul" not in top
    grouped = prof.key_averages(group_by_input_shape=True)
    shapes = {tuple(map(tuple, row.input_shapes)) for row in grouped if row.key == "Add"}
    assert shapes == {((4, 3), (4, 3)), ((4, 3), ())}  # c + c, then + 1 (a number: no shape, as torch's [])
    total = prof.total_average()
    assert total.key == "Total" and total.count == 4
    assert 0 < prof.self_cpu_time_total <= total.cpu_time_total


def test_chrome_trace(tmp_path) -> None:
    with profiler.profile() as prof:
        _program()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]
    assert names.count("Add") == 2 and "Matmul" in names


def test_arguments() -> None:
    with profiler.profile(enabled=False) as prof:
        _program()
    with pytest.raises(RuntimeError, match="didn't finish"):
        prof.key_averages()
    with pytest.warns(FutureWarning, match="use_cuda"):
        prof = profiler.profile(use_cuda=True)
    assert prof.use_device == "cuda" and prof.use_cuda == genesis.cuda.is_available()
    with profiler.profile(use_device="cuda", profile_memory=True, with_stack=True, with_flops=True) as prof:
        _program()
    assert prof.record_shapes and prof.profile_memory
    with pytest.raises(ValueError, match="use_device"):
        profiler.profile(use_device="xpu")
    with pytest.raises(RuntimeError, match="not reentrant"):
        with prof:
            pass
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        with profiler.profile() as running:
            running.table()


def test_record_function_as_decorator() -> None:
    @profiler.record_function("my_block")
    def block(x: genesis.Tensor) -> genesis.Tensor:
        return x * 2 + 1

    with profiler.profile() as prof:
        block(genesis.ones(3, device=DEVICE))
        block(genesis.ones(3, device=DEVICE))
    rows = {row.key: row for row in prof.key_averages()}
    assert rows["my_block"].count == 2 and rows["Mul"].count == 2
    assert block.__name__ == "block"


def test_emit_nvtx_runs_the_block() -> None:
    x = genesis.ones(3, device=DEVICE, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with profiler.emit_nvtx(record_shapes=True) as nvtx:
            (x * 3).sum().backward()
            with pytest.raises(RuntimeError, match="not reentrant"):
                nvtx.__enter__()
        with profiler.emit_nvtx(enabled=False) as disabled:
            (x * 3).sum().backward()
    assert disabled is None
    assert x.grad.tolist() == [6.0, 6.0, 6.0]
