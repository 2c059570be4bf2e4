"""Datasets (``genesis.utils.data.dataset``, as ``torch.utils.data.dataset``).

A map-style :class:`Dataset` answers ``dataset[i]``; an :class:`IterableDataset` yields samples. TensorDataset,
Subset, ConcatDataset, StackDataset and ChainDataset (iterable) build datasets from tensors and other datasets;
:func:`random_split` cuts one into random non-overlapping parts.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Any, Generic, Iterable, Iterator, Sequence, TypeVar

from genesis.random import Generator, randperm
from genesis.tensor import Tensor

T = TypeVar("T")


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

    def __add__(self, other: Dataset[T]) -> ChainDataset:
        """The two streams one after the other (a :class:`ChainDataset`), as torch's."""
        return ChainDataset([self, other])


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


def _samples_at(dataset: Any, indices: list) -> list:
    """The samples of ``dataset`` at ``indices``: in one call where the dataset reads batches (``__getitems__``),
    whose answer must hold one sample per index; else one ``dataset[i]`` each."""
    getitems = getattr(dataset, "__getitems__", None)
    if not callable(getitems):
        return [dataset[i] for i in indices]
    samples = getitems(indices)
    if len(samples) != len(indices):
        raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(samples)}")
    return samples


class StackDataset(Dataset[Any]):
    """Several datasets of one length side by side: sample ``i`` is ``(d[i] for d in args)`` as a tuple, or
    ``{name: d[i]}`` as a dict when the datasets are given by keyword (one form or the other, not both)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple | dict = args if args else kwargs

    def __getitem__(self, index: Any) -> tuple | dict:
        if isinstance(self.datasets, dict):
            return {name: d[index] for name, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices``, each dataset read as a batch where it can (the DataLoader calls this)."""
        if isinstance(self.datasets, dict):
            columns = {name: _samples_at(d, indices) for name, d in self.datasets.items()}
            return [{name: column[j] for name, column in columns.items()} for j in range(len(indices))]
        return [tuple(row) for row in zip(*(_samples_at(d, indices) for d in self.datasets))]

    def __len__(self) -> int:
        return self._length


class ChainDataset(IterableDataset[T]):
    """Several iterable datasets streamed one after another (chained lazily, as ``itertools.chain``)."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[T]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[T]):
    """The samples of ``dataset`` at ``indices``, in that order.

    The DataLoader reads a batch through ``__getitems__``, so a subclass that overrides ``__getitem__`` must
    override ``__getitems__`` too (NotImplementedError otherwise, as torch's).
    """

    def __init__(self, dataset: Dataset[T], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            name = type(self).__name__
            raise NotImplementedError(
                f"{name} overrides __getitem__ but not __getitems__. When subclassing Subset and overriding "
                "__getitem__, you must also override __getitems__ to ensure DataLoader works correctly with your "
                "custom logic. A simple implementation:\n\ndef __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices``, read as one batch where the wrapped dataset can (the DataLoader calls
        this)."""
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[T]):
    """Several map-style datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        # AssertionError, as torch raises it.
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

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
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if any(length < 0 for length in lengths):
        raise ValueError(f"random_split: lengths must be non-negative, got {list(lengths)}")
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset", "Subset", "TensorDataset",
           "random_split"]
