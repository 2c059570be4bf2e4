"""The body of a DataLoader worker process (``genesis.utils.data._utils.worker``, as torch's).

Each worker seeds its generators, runs ``worker_init_fn``, then fetches and collates the batches the main process
asks for, sending back results or the exceptions they raised; :func:`get_worker_info` tells a dataset which worker
it runs in.
"""

from __future__ import annotations

import random
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from genesis.device import set_num_threads
from genesis.random import manual_seed


@dataclass
class WorkerInfo:
    """Describes the worker process a dataset is running in (see :func:`get_worker_info`)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Inside a DataLoader worker process, its :class:`WorkerInfo`; in the main process, None."""
    return _worker_info


class WorkerError:
    """An exception raised in a worker, carried to the main process with its traceback as text."""

    def __init__(self, worker_id: int, exc: BaseException) -> None:
        self.exc_type = type(exc)
        self.message = f"Caught {type(exc).__name__} in DataLoader worker process {worker_id}.\nOriginal " \
                       f"{''.join(traceback.format_exception(type(exc), exc, exc.__traceback__))}"

    def reraise(self) -> None:
        """Raise the worker's exception type with the worker's message (RuntimeError if the type needs more)."""
        try:
            error = self.exc_type(self.message)
        except Exception:
            error = RuntimeError(self.message)
        raise error


# What a worker sends when its iterable dataset has no more samples.
END_OF_STREAM = "end-of-stream"


def worker_loop(dataset: Any, jobs: Any, results: Any, done: Any, fetch: Callable[[Any], Any], seed: int,
                worker_id: int, num_workers: int, worker_init_fn: Callable[[int], None] | None,
                iterable: bool) -> None:
    """Body of a worker process: fetch and collate the batches it is asked for until told to stop (a ``None``
    job, or the ``done`` event, which also skips the jobs still queued)."""
    global _worker_info

    _one_compute_thread()
    # Nothing a worker queued matters once it is told to stop: exiting must not wait for the main process to read.
    results.cancel_join_thread()
    manual_seed(seed)
    random.seed(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        stream = fetch(None) if iterable else None
    except Exception as exc:  # reported to the main process, which re-raises it
        results.put((-1, None, WorkerError(worker_id, exc)))
        return
    while True:
        job = jobs.get()
        if job is None or done.is_set():
            return
        index, request = job
        try:
            data = next(stream, END_OF_STREAM) if iterable else fetch(request)
            results.put((index, data, None))
        except Exception as exc:  # reported to the main process, which re-raises it
            results.put((index, None, WorkerError(worker_id, exc)))


def _one_compute_thread() -> None:
    """Give a worker one intra-op thread, as torch's DataLoader does.

    The CPU backend's thread pool (OpenMP) does not survive ``fork``: a worker forked from a parent that used the
    pool would wait forever in its barrier unless it computes on one thread. One thread also keeps ``num_workers``
    workers from oversubscribing the cores.
    """
    set_num_threads(1)

