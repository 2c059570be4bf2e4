"""Datasets, samplers and the DataLoader (``genesis.utils.data``, as ``torch.utils.data``).

A map-style :class:`Dataset` answers ``dataset[i]``; an :class:`IterableDataset` yields samples. A sampler yields
indices, a :class:`BatchSampler` groups them, ``collate_fn`` turns a list of samples into a batch
(:func:`default_collate` stacks tensors, numbers and numpy arrays and recurses into dicts and sequences), and the
:class:`DataLoader` ties them together, optionally producing batches in worker processes.
"""

from __future__ import annotations

import bisect
import collections
import copy
import math
import multiprocessing
import queue
import random
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from genesis import dtypes
from genesis.device import device as Device
from genesis.device import set_num_threads
from genesis.ops import stack
from genesis.random import Generator, default_generator, randint, randperm
from genesis.tensor import Tensor, tensor

T = TypeVar("T")


# ------------------------------------------------------------------ datasets


class Dataset(Generic[T]):
    """A map-style dataset: subclasses implement ``__getitem__`` (and usually ``__len__``)."""

    def __getitem__(self, index: int) -> T:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset[T]) -> ConcatDataset[T]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T]):
    """A dataset that is a stream: subclasses implement ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy; use :func:`get_worker_info` inside ``__iter__``
    to give each worker a different share of the stream.
    """

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset[T]) -> Any:
        raise TypeError("ConcatDataset does not support IterableDataset")


class TensorDataset(Dataset[tuple]):
    """Samples are the rows ``(t[i] for t in tensors)`` of tensors that share their first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError(f"Size mismatch between tensors: first dimensions {[t.shape[0] for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset[T]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset[T], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[T]):
    """Several map-style datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> T:
        if index < 0:
            if -index > len(self):
                raise ValueError(f"absolute value of index {index} should not exceed dataset length {len(self)}")
            index = len(self) + index
        if index >= len(self):
            raise IndexError(f"index {index} is out of range for a dataset of length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        offset = index - (self.cumulative_sizes[which - 1] if which > 0 else 0)
        return self.datasets[which][offset]


def random_split(dataset: Dataset[T], lengths: Sequence[int | float],
                 generator: Generator | None = None) -> list[Subset[T]]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths (or fractions summing to 1).

    Fractions are floored and the remainder handed out one by one to the first subsets, as torch does.
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if any(length < 0 for length in lengths):
        raise ValueError(f"random_split: lengths must be non-negative, got {list(lengths)}")
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset! "
                         f"({sum(lengths)} != {n})")
    order = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


# ------------------------------------------------------------------ samplers


class Sampler(Generic[T]):
    """Yields the indices (or index lists) a DataLoader fetches."""

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices ``0 .. len(data_source) - 1`` in order."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _fresh_generator(generator: Generator | None) -> Generator:
    """``generator`` itself, or a new one seeded from the default generator (so manual_seed governs it)."""
    if generator is not None:
        return generator
    seed = int(randint(0, 1 << 62, (), generator=default_generator("cpu")).item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler[int]):
    """Random indices: a permutation, or ``num_samples`` draws with replacement.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement.
        num_samples: how many indices to yield per pass (default: the dataset's length).
        generator: source of randomness; by default each pass seeds a fresh one from the default generator.
    """

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        gen = _fresh_generator(self.generator)
        if self.replacement:
            yield from randint(0, n, (self.num_samples,), generator=gen).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=gen).tolist()
        yield from randperm(n, generator=gen).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in random order."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=_fresh_generator(self.generator)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless dropped)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


# ------------------------------------------------------------------ collation


def default_collate(batch: Sequence[Any]) -> Any:
    """Combine a list of samples into a batch.

    Tensors and numpy arrays are stacked along a new first dimension; Python floats become a float64 tensor,
    ints an int64 tensor, bools a bool tensor; strings stay a list; dicts, named tuples and sequences are
    collated field by field (a tuple of fields comes back as a list, as in torch).
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OSUa":
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                            f"found numpy array of dtype {elem.dtype}")
        return tensor(np.stack(batch))
    if isinstance(elem, np.generic):
        return tensor(np.array(batch))
    if isinstance(elem, bool):
        return tensor(list(batch))
    if isinstance(elem, int):
        return tensor(list(batch))
    if isinstance(elem, float):
        return tensor(list(batch), dtype=dtypes.float64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(samples)) for samples in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(elem).__name__}")


def default_convert(data: Any) -> Any:
    """What a DataLoader with ``batch_size=None`` returns per sample: numpy arrays become tensors."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSUa":
        return tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {key: default_convert(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return [default_convert(d) for d in data]
    return data


# ------------------------------------------------------------------ worker processes


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


class _WorkerError:
    """An exception raised in a worker, carried to the main process with its traceback as text."""

    def __init__(self, worker_id: int, exc: BaseException) -> None:
        self.exc_type = type(exc)
        self.message = f"Caught {type(exc).__name__} in DataLoader worker process {worker_id}.\nOriginal " \
                       f"{''.join(traceback.format_exception(type(exc), exc, exc.__traceback__))}"

    def reraise(self) -> None:
        try:
            error = self.exc_type(self.message)
        except Exception:
            error = RuntimeError(self.message)
        raise error


_END = "end-of-stream"


def _worker_loop(dataset: Any, jobs: Any, results: Any, done: Any, fetch: Callable[[Any], Any], seed: int,
                 worker_id: int, num_workers: int, worker_init_fn: Callable[[int], None] | None,
                 iterable: bool) -> None:
    """Body of a worker process: fetch and collate the batches it is asked for until told to stop (a ``None``
    job, or the ``done`` event, which also skips the jobs still queued)."""
    global _worker_info
    from genesis.random import manual_seed

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
        results.put((-1, None, _WorkerError(worker_id, exc)))
        return
    while True:
        job = jobs.get()
        if job is None or done.is_set():
            return
        index, request = job
        try:
            data = next(stream, _END) if iterable else fetch(request)
            results.put((index, data, None))
        except Exception as exc:  # reported to the main process, which re-raises it
            results.put((index, None, _WorkerError(worker_id, exc)))


def _one_compute_thread() -> None:
    """Give a worker one intra-op thread, as torch's DataLoader does.

    The CPU backend's thread pool (OpenMP) does not survive ``fork``: a worker forked from a parent that used the
    pool would wait forever in its barrier unless it computes on one thread. One thread also keeps ``num_workers``
    workers from oversubscribing the cores.
    """
    set_num_threads(1)


class _MapFetcher:
    """Fetches one batch (or one sample) of a map-style dataset."""

    def __init__(self, dataset: Any, collate_fn: Callable, auto_collation: bool) -> None:
        self.dataset, self.collate_fn, self.auto_collation = dataset, collate_fn, auto_collation

    def __call__(self, request: Any) -> Any:
        if self.auto_collation:
            return self.collate_fn([self.dataset[i] for i in request])
        return self.collate_fn(self.dataset[request])


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
        pinned = {key: _pin_memory(value) for key, value in data.items()}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)  # keeps the mapping's own type and attributes (defaultdict, OrderedDict)
                clone.update(pinned)
                return clone
            return type(data)(pinned)
        except TypeError:
            return pinned
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # namedtuple
            return type(data)(*(_pin_memory(sample) for sample in data))
        return type(data)(_pin_memory(sample) for sample in data)
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([_pin_memory(sample) for sample in data])
        except TypeError:
            return [_pin_memory(sample) for sample in data]
    return data


# ------------------------------------------------------------------ the loader


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
        multiprocessing_context: a start method name ("fork", "spawn", "forkserver") or context.
        generator: the random generator for shuffling and for the workers' base seed.
        prefetch_factor: batches in flight per worker (default 2).
        persistent_workers: accepted for compatibility; workers are started per epoch.
        pin_memory: copy every batch's tensors into pinned host memory, so ``.to("cuda", non_blocking=True)`` is
            asynchronous; done in the main process as each batch is handed out (torch uses a separate thread).
            Without a CUDA GPU it warns and does not pin, as torch.
        pin_memory_device: deprecated in torch and ignored (with torch's warning): the GPU is the device.
    """

    def __init__(self, dataset: Dataset[T], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "") -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             f"multiprocessing (got {num_workers})")
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. Let num_workers "
                             "> 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if prefetch_factor is None else prefetch_factor
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.persistent_workers = persistent_workers
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

    def __iter__(self) -> Iterator[Any]:
        batches = self._batches()
        if self.pin_memory and self._pinning_available():
            return (_pin_memory(batch) for batch in batches)
        return batches

    def _batches(self) -> Iterator[Any]:
        if self.num_workers == 0:
            if self._iterable:
                return self._fetcher()(None)
            fetch = self._fetcher()
            return (fetch(request) for request in self._requests())
        return _MultiProcessIterator(self)

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


class _MultiProcessIterator:
    """Hands index batches to worker processes round-robin and yields their results in order."""

    def __init__(self, loader: DataLoader) -> None:
        ctx = loader.multiprocessing_context
        if ctx is None or isinstance(ctx, str):
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context(ctx or ("fork" if "fork" in methods else "spawn"))
        self.loader = loader
        self.iterable = loader._iterable
        self.timeout = loader.timeout
        base_seed = int(randint(0, 1 << 62, (), generator=loader.generator).item())
        self.results = ctx.Queue()
        self.done = ctx.Event()
        self.jobs = []
        self.workers = []
        fetch = loader._fetcher()
        for worker_id in range(loader.num_workers):
            jobs = ctx.Queue()
            worker = ctx.Process(target=_worker_loop, daemon=True,
                                 args=(loader.dataset, jobs, self.results, self.done, fetch, base_seed + worker_id,
                                       worker_id, loader.num_workers, loader.worker_init_fn, self.iterable))
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

    def __iter__(self) -> _MultiProcessIterator:
        return self

    def __next__(self) -> Any:
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
            if self.iterable and isinstance(data, str) and data == _END:
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


__all__ = ["BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
           "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset", "WorkerInfo",
           "default_collate", "default_convert", "get_worker_info", "random_split"]
