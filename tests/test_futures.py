"""genesis.futures against torch.futures: completion, chaining, callbacks, exceptions, collect_all / wait_all."""

from __future__ import annotations

import pytest
import torch

import genesis


@pytest.mark.parametrize("lib", [torch, genesis], ids=["torch", "genesis"])
def test_set_result_then_and_callbacks(lib: object) -> None:
    fut = lib.futures.Future()
    assert not fut.done()
    chained = fut.then(lambda f: f.value() * 2)
    calls = []
    fut.add_done_callback(lambda f: calls.append(f.value()))
    fut.set_result(21)
    assert fut.done() and fut.wait() == 21 and fut.value() == 21
    assert chained.wait() == 42 and chained.done()
    assert calls == [21]
    fut.add_done_callback(lambda f: calls.append(-f.value()))  # already complete: runs at once
    assert calls == [21, -21]
    with pytest.raises(RuntimeError, match="can only be marked completed once"):
        fut.set_result(1)


@pytest.mark.parametrize("lib", [torch, genesis], ids=["torch", "genesis"])
def test_exceptions_reach_wait_and_chained_futures(lib: object) -> None:
    fut = lib.futures.Future()
    fut.set_exception(ValueError("broken input"))
    with pytest.raises(ValueError, match="broken input"):
        fut.wait()
    ok = lib.futures.Future()
    failing = ok.then(lambda f: 1 / 0)
    ok.set_result(1)
    with pytest.raises(RuntimeError, match="error when running the callback: ZeroDivisionError: division by zero"):
        failing.wait()


@pytest.mark.parametrize("lib", [torch, genesis], ids=["torch", "genesis"])
def test_collect_all_and_wait_all(lib: object) -> None:
    futs = [lib.futures.Future() for _ in range(3)]
    together = lib.futures.collect_all(futs)
    for i, f in enumerate(futs):
        f.set_result(i * 10)
    assert [f.value() for f in together.wait()] == [0, 10, 20]
    assert lib.futures.wait_all(futs) == [0, 10, 20]


def test_set_exception_needs_an_exception() -> None:
    with pytest.raises(TypeError, match="expected an exception"):
        genesis.futures.Future().set_exception("not an exception")
