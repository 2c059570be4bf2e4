"""Timing Python statements the way ``torch.utils.benchmark.Timer`` does, for Genesis code.

    t = Timer(stmt="x @ y", globals={"x": x, "y": y}, label="matmul", num_threads=1)
    print(t.blocked_autorange(min_run_time=0.5))      # a Measurement: median, IQR, runs per measurement

Each timed block is bracketed by a synchronize of the CUDA device when one is available (``genesis.cuda``), as torch
synchronizes its accelerator, so GPU work queued by the statement counts in its time. The statement runs with
``num_threads`` CPU compute threads (``genesis.set_num_threads``), restored afterwards. ``torch`` and ``genesis`` in
the statement's globals default to the ``genesis`` module, so statements written for torch's Timer run as they are.
"""

from __future__ import annotations

import enum
import functools
import statistics
import textwrap
import timeit
from collections.abc import Callable
from typing import Any

import genesis
from genesis import cuda
from genesis.utils.benchmark.utils.common import Measurement, TaskSpec, set_torch_threads

__all__ = ["Timer", "timer", "Language"]


@functools.cache
def _cuda_available() -> bool:
    return cuda.is_available()


def timer() -> float:
    """``timeit.default_timer`` after waiting for the CUDA device, when one is available."""
    if _cuda_available():
        cuda.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    """The language of the timed statement: Genesis times Python only (torch's C++ timing compiles against
    libtorch)."""

    PYTHON = 0
    CPP = 1


class Timer:
    """Time ``stmt`` after running ``setup`` once, in a namespace made of ``globals`` (copied).

    Args:
        stmt: the code snippet to time (a string, as torch's).
        setup: code run once before the timing.
        global_setup: C++ only in torch; refused for Python statements, as there.
        timer: the clock; the default waits for the CUDA device before reading ``timeit.default_timer``.
        globals: the names the snippets see (``torch`` and ``genesis`` default to the ``genesis`` module).
        label, sub_label, description, env: how :class:`Compare` and the printout name the measurement.
        num_threads: CPU compute threads while timing.
        language: ``"python"`` (``Language.PYTHON``); C++ is refused.
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1, language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language not in (Language.PYTHON, "py", "python"):
            if language in (Language.CPP, "cpp", "c++"):
                raise ValueError("Timer: Genesis times Python statements only (C++ timing is torch's, against "
                                 "libtorch)")
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this code can simply be "
                             "moved to `setup`.")
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", genesis)
        self._globals.setdefault("genesis", genesis)
        # Multi-line snippets written inside functions: dedent, drop the first newline of a block string.
        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        # No real statement takes under a nanosecond; the floor also keeps later divisions finite.
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs, after a warm-up of ``number // 100`` (at least 2)."""
        with set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(number // 100, 2))
            return Measurement(number_per_run=number, raw_times=[self._timeit(number)], task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], Any] | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measurement_loop(self, number: int, stop: Callable[[list[float]], bool], min_run_time: float,
                          max_run_time: float | None = None,
                          callback: Callable[[int, float], Any] | None = None) -> list[float]:
        """Time blocks of ``number`` runs until ``min_run_time`` has passed and ``stop`` agrees (or
        ``max_run_time`` has passed)."""
        total, can_stop = 0.0, False
        times: list[float] = []
        with set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Runs per block, a power of ten: enough that the timer's own overhead is negligible (also a warm-up)."""
        with set_torch_threads(self._task_spec.num_threads):
            overhead = statistics.median(self._timeit(0) for _ in range(5))
            number = 1
            while True:
                taken = self._timeit(number)
                if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) or taken > min_run_time:
                    break
                if number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of a size found first (see ``_estimate_block_size``), timed until ``min_run_time`` seconds have
        been spent; ``callback(number, seconds)`` is called after each block."""
        number = self._estimate_block_size(min_run_time)
        times = self._measurement_loop(number, lambda times: True, min_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None) -> Measurement:
        """Blocks timed until their interquartile range is below ``threshold`` times the median (after at least
        4 blocks and ``min_run_time`` seconds), or ``max_run_time`` seconds have been spent."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times: list[float]) -> bool:
            return len(times) > 3 and Measurement(number_per_run=number, raw_times=times,
                                                  task_spec=self._task_spec).meets_confidence(threshold=threshold)

        times = self._measurement_loop(number, stop, min_run_time, max_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)
