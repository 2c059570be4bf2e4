"""The shared machinery of the fuzz suites (``tests/test_fuzz_*.py``): Hypothesis settings and a guarded child
process that runs each generated case.

A case runs in a child interpreter with a memory limit, never in the test process: a case that crashes the
interpreter (a segfault, an abort) or exhausts memory kills only the child, and the test fails naming the case.
``GENESIS_FUZZ_PROFILE=long`` runs many more examples per test (minutes instead of seconds).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import resource
import traceback
from typing import Any, Callable

from hypothesis import HealthCheck, settings

_LONG = os.environ.get("GENESIS_FUZZ_PROFILE") == "long"

#: Hypothesis settings of every fuzz test: reproducible in CI, random and much longer on demand.
SETTINGS = settings(max_examples=1000 if _LONG else 40, deadline=None, derandomize=not _LONG,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Address space a child may use: a case that allocates without bound fails there with MemoryError or torch's
# allocation error instead of taking the machine's memory.
_MEMORY_LIMIT = 6 << 30


def _limit_memory() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = _MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(hard, _MEMORY_LIMIT)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def _call(fn: Callable[..., Any], args: tuple) -> str | None:
    """Run one case in the child: None when it holds, else the failure with its traceback."""
    try:
        fn(*args)
    except BaseException:  # the case's own assertion or an unexpected error: reported to the test process
        return traceback.format_exc()
    return None


class Guard:
    """A child process that runs cases; a dead child fails the case and is replaced for the next one."""

    def __init__(self) -> None:
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_limit_memory)
        return self._pool

    def run(self, fn: Callable[..., Any], *args: Any, timeout: float = 60.0) -> None:
        """Run ``fn(*args)`` in the child; AssertionError if it fails, dies or runs past ``timeout`` seconds."""
        future = self._executor().submit(_call, fn, args)
        try:
            failure = future.result(timeout=timeout)
        except concurrent.futures.process.BrokenProcessPool:
            self.close()
            raise AssertionError(f"the process died running {fn.__name__}{args!r}") from None
        except concurrent.futures.TimeoutError:
            self.close(kill=True)
            raise AssertionError(f"{fn.__name__}{args!r} ran past {timeout} s") from None
        if failure is not None:
            raise AssertionError(f"{fn.__name__}{args!r} failed in the child:\n{failure}")

    def close(self, kill: bool = False) -> None:
        """Stop the child (killed when it hangs)."""
        if self._pool is None:
            return
        if kill:
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.kill()
        self._pool.shutdown(wait=not kill, cancel_futures=True)
        self._pool = None
