"""The DataLoader (``genesis.utils.data.dataloader``, as ``torch.utils.data.dataloader``).

A :class:`DataLoader` draws indices from a sampler (or batches of them from a batch sampler), fetches the samples
from the dataset, and turns each list of samples into a batch with ``collate_fn``; with ``num_workers > 0`` worker
processes fetch and collate while the main process hands out the batches in order.
"""

from __future__ import annotations

import collections.abc
import contextlib
import multiprocessing
import queue
import time
import warnings
from typing import Any, Callable, Generic, Iterator, TypeVar

from genesis.device import device as Device
from genesis.random import Generator, randint
from genesis.utils.data._utils.collate import default_collate, default_convert, rebuild_mapping, rebuild_sequence
from genesis.utils.data._utils.worker import END_OF_STREAM, get_worker_info, worker_loop
from genesis.utils.data.dataset import Dataset, IterableDataset
from genesis.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler
from genesis.utils.script_children import ScriptCall, compat_script, main_without_file

T = TypeVar("T")


class _MapFetcher:
    """Fetches one batch (or one sample) of a map-style dataset."""

    def __init__(self, dataset: Any, collate_fn: Callable, auto_collation: bool) -> None:
        self.dataset, self.collate_fn, self.auto_collation = dataset, collate_fn, auto_collation

    def __call__(self, request: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[request])
        # A dataset may read a whole batch of indices at once (torch's ``__getitems__``).
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            return self.collate_fn(getitems(request))
        return self.collate_fn([self.dataset[i] for i in request])


class _IterableFetcher:
    """Turns an iterable dataset into a stream of batches (or samples)."""

    def __init__(self, dataset: Any, collate_fn: Callable, batch_size: int | None, drop_last: bool) -> None:
        self.dataset, self.collate_fn = dataset, collate_fn
        self.batch_size, self.drop_last = batch_size, drop_last

    def __call__(self, _request: Any) -> Iterator[Any]:
        it = iter(self.dataset)
        if self.batch_size is None:
            return (self.collate_fn(sample) for sample in it)
        return self._batches(it)

    def _batches(self, it: Iterator[Any]) -> Iterator[Any]:
        while True:
            batch = [sample for _, sample in zip(range(self.batch_size), it)]
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)


def _pin_memory(data: Any) -> Any:
    """``data`` with every tensor copied into pinned host memory, recursing into dicts, lists and tuples as torch's
    ``torch.utils.data._utils.pin_memory.pin_memory``; other objects with a ``pin_memory()`` method are asked to pin."""
    if hasattr(data, "pin_memory"):  # tensors
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return rebuild_mapping(data, {key: _pin_memory(value) for key, value in data.items()})
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # namedtuple
            return type(data)(*(_pin_memory(sample) for sample in data))
        return type(data)(_pin_memory(sample) for sample in data)
    if isinstance(data, collections.abc.Sequence):
        return rebuild_sequence(data, [_pin_memory(sample) for sample in data])
    return data


class DataLoader(Generic[T]):
    """Batches of a dataset, in order or shuffled, built in the main process or in worker processes.

    Args:
        dataset: a map-style or iterable dataset.
        batch_size: samples per batch; None yields samples one by one (converted, not collated).
        shuffle: reshuffle every epoch (a :class:`RandomSampler` driven by ``generator``).
        sampler: the index order (excludes ``shuffle``).
        batch_sampler: yields whole index lists (excludes batch_size, shuffle, sampler and drop_last).
        num_workers: worker processes producing batches (0: the main process).
        collate_fn: list of samples -> batch (default :func:`default_collate`).
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a worker's batch (0: wait forever, while the workers live).
        worker_init_fn: called with the worker id in each worker after seeding.
        multiprocessing_context: a start method name ("fork", "spawn", "forkserver") or context; None follows
            the global start method (``multiprocessing.set_start_method``; fork by default on Linux). Under
            ``python -m genesis.torch_compat``, spawn and forkserver workers re-run the script with its ``torch``
            imports on Genesis (not the real torch) before they load the dataset.
        generator: the random generator for shuffling and for the workers' base seed.
        prefetch_factor: batches in flight per worker (2 with workers when None; only with workers, as torch).
        persistent_workers: accepted for compatibility (needs workers, as torch); workers are started per epoch.
        pin_memory: copy every batch's tensors into pinned host memory, so ``.to("cuda", non_blocking=True)`` is
            asynchronous; done in the main process as each batch is handed out (torch uses a separate thread).
            Without a CUDA GPU it warns and does not pin, as torch.
        pin_memory_device: deprecated in torch and ignored (with torch's warning): the GPU is the device.
        in_order: torch's switch that lets workers hand back batches out of order when False; Genesis always
            returns them in the sampler's order (a valid order for ``in_order=False`` too).
    """

    def __init__(self, dataset: Dataset[T], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             f"multiprocessing (got {num_workers})")
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            # torch's text, run-on sentence included.
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor  # None without workers, as torch's
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            if sampler is not None and shuffle:
                raise ValueError("sampler option is mutually exclusive with shuffle")
            if batch_sampler is not None:
                if batch_size != 1 or shuffle or sampler is not None or drop_last:
                    raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                     "and drop_last")
                batch_size, drop_last = None, False
            elif batch_size is None and drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                                 "drop_last")
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        auto_collation = batch_sampler is not None or (self._iterable and batch_size is not None)
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if auto_collation else default_convert)
        self._auto_collation = auto_collation

    def _requests(self) -> Iterator[Any]:
        return iter(self.batch_sampler if self._auto_collation else self.sampler)

    def _fetcher(self) -> Callable[[Any], Any]:
        if self._iterable:
            return _IterableFetcher(self.dataset, self.collate_fn, self.batch_size, self.drop_last)
        return _MapFetcher(self.dataset, self.collate_fn, self._auto_collation)

    def __iter__(self) -> _BaseDataLoaderIter:
        # As torch's: every pass draws the workers' base seed from ``generator`` (the default generator when None),
        # with worker processes or without, before the sampler draws anything, so generators advance alike.
        base_seed = int(randint(0, 1 << 62, (), generator=self.generator).item())
        pin = self.pin_memory and self._pinning_available()
        if self.num_workers > 0:
            return _MultiProcessingDataLoaderIter(self, base_seed, pin)
        if self._iterable:
            return _SingleProcessDataLoaderIter(self, self._fetcher()(None), pin)
        fetch = self._fetcher()
        return _SingleProcessDataLoaderIter(self, (fetch(request) for request in self._requests()), pin)

    def _pinning_available(self) -> bool:
        """Whether batches can be pinned; warns as torch's loader does when asked for something it ignores."""
        if self.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{self.pin_memory_device}'.", stacklevel=3)
        if not Device("cuda").is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
            return False
        return True

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self._auto_collation else self.sampler)


class _BaseDataLoaderIter:
    """One pass over a loader, as torch's iterator: ``next`` gives the next batch (pinned if asked), ``len`` is the
    loader's, ``_num_yielded`` counts the batches handed out."""

    def __init__(self, loader: DataLoader, pin: bool) -> None:
        self._loader = loader
        self._pin = pin
        self._num_yielded = 0

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def __next__(self) -> Any:
        batch = self._next_data()
        self._num_yielded += 1
        return _pin_memory(batch) if self._pin else batch

    def __len__(self) -> int:
        return len(self._loader)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """A pass whose batches are built in the main process (``num_workers=0``)."""

    def __init__(self, loader: DataLoader, batches: Iterator[Any], pin: bool) -> None:
        super().__init__(loader, pin)
        self._batches = batches

    def _next_data(self) -> Any:
        return next(self._batches)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """A pass whose batches are built by worker processes: hands index batches to them round-robin and yields
    their results in order."""

    def __init__(self, loader: DataLoader, base_seed: int, pin: bool) -> None:
        super().__init__(loader, pin)
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context(multiprocessing.get_start_method(allow_none=True))
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        # A spawned or forkserver worker of a torch_compat script must see the script's torch as Genesis.
        script = compat_script() if ctx.get_start_method() != "fork" else None
        self.loader = loader
        self.iterable = loader._iterable
        self.timeout = loader.timeout
        self.results = ctx.Queue()
        self.done = ctx.Event()
        self.jobs = []
        self.workers = []
        fetch = loader._fetcher()
        for worker_id in range(loader.num_workers):
            jobs = ctx.Queue()
            target: Callable[..., None] = worker_loop
            args = (loader.dataset, jobs, self.results, self.done, fetch, base_seed + worker_id, worker_id,
                    loader.num_workers, loader.worker_init_fn, self.iterable)
            if script is not None:
                target, args = ScriptCall(script, worker_loop, args), ()
            worker = ctx.Process(target=target, args=args, daemon=True)
            with main_without_file() if script is not None else contextlib.nullcontext():
                worker.start()
            self.jobs.append(jobs)
            self.workers.append(worker)
        self.requests = None if self.iterable else loader._requests()
        self.active = list(range(loader.num_workers))  # workers whose stream has not ended
        self.sent = 0
        self.next_index = 0
        self.buffer: dict[int, Any] = {}
        self.owner: dict[int, int] = {}
        for _ in range(loader.prefetch_factor * loader.num_workers):
            if not self._send():
                break

    def _send(self) -> bool:
        """Queue the next request for the next worker in turn; False when there is nothing left to ask."""
        if not self.active:
            return False
        if self.iterable:
            worker = self.active[self.sent % len(self.active)]
            request = None
        else:
            request = next(self.requests, None)
            if request is None:
                return False
            worker = self.sent % len(self.workers)
        self.jobs[worker].put((self.sent, request))
        self.owner[self.sent] = worker
        self.sent += 1
        return True

    def _next_data(self) -> Any:
        while True:
            if self.next_index >= self.sent:
                self._shutdown()
                raise StopIteration
            if self.next_index in self.buffer:
                data = self.buffer.pop(self.next_index)
                self.next_index += 1
                self._send()
                if data is _END_MARK:
                    continue
                return data
            index, data, error = self._receive()
            if error is not None:
                self._shutdown()
                error.reraise()
            if self.iterable and isinstance(data, str) and data == END_OF_STREAM:
                worker = self.owner[index]
                if worker in self.active:
                    self.active.remove(worker)
                data = _END_MARK
            self.buffer[index] = data

    def _receive(self) -> tuple[int, Any, Any]:
        """The next result of any worker; raises if a worker died (whatever its exit code) or, with ``timeout``,
        if none arrives in time."""
        start = time.monotonic()
        while True:
            wait = _STATUS_INTERVAL
            if self.timeout:
                wait = min(wait, max(0.0, start + self.timeout - time.monotonic()))
            try:
                return self.results.get(timeout=wait)
            except queue.Empty:
                pass
            dead = [w for w in self.workers if not w.is_alive()]  # workers only exit when told to
            if dead:
                self._shutdown()
                pids = ", ".join(str(w.pid) for w in dead)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly (exit code "
                                   f"{dead[0].exitcode})") from None
            if self.timeout and time.monotonic() - start >= self.timeout:
                self._shutdown()
                raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds") from None

    def _shutdown(self) -> None:
        """Stop the workers within about a second: ask each to stop, wait for those that listen, terminate the
        rest (one busy in a long ``__getitem__``), and drop what is still queued rather than read it."""
        if not self.workers:
            return
        self.done.set()
        for jobs in self.jobs:
            jobs.put(None)
        deadline = time.monotonic() + _SHUTDOWN_GRACE
        for worker in self.workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        for worker in self.workers:
            if worker.is_alive():
                worker.terminate()
        for worker in self.workers:
            worker.join(timeout=_SHUTDOWN_GRACE)
            if worker.is_alive():  # ignores SIGTERM
                worker.kill()
                worker.join()
        for q in (*self.jobs, self.results):
            q.cancel_join_thread()
            q.close()
        self.workers = []

    def __del__(self) -> None:
        self._shutdown()


# How often a waiting loader checks that its workers live, and how long stopping workers may take (seconds).
_STATUS_INTERVAL = 0.2
_SHUTDOWN_GRACE = 1.0
_END_MARK = object()


__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
