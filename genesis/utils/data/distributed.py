"""DistributedSampler (torch.utils.data.distributed): each rank iterates its own share of a dataset."""

from __future__ import annotations

import math
from typing import Any, Iterator

from genesis.distributed import process_group
from genesis.random import Generator, randperm
from genesis.utils.data.sampler import Sampler


class DistributedSampler(Sampler[int]):
    """The indices of rank ``rank`` out of ``num_replicas``: every ``num_replicas``-th index of a (shuffled) order.

    Args:
        dataset: a map-style dataset (only its length is used).
        num_replicas: number of ranks (the default group's size when None).
        rank: this rank (the default group's rank when None).
        shuffle: permute the indices, differently in each epoch (call ``set_epoch``) but identically on every rank.
        seed: base seed of the permutation; must be the same on every rank.
        drop_last: drop the tail so that every rank gets the same number of indices; otherwise the order is padded
            by repeating its start.
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            if not process_group.is_initialized():
                raise RuntimeError("DistributedSampler: num_replicas and rank are required when the default process "
                                   "group has not been initialized")
            num_replicas = process_group.get_world_size() if num_replicas is None else num_replicas
            rank = process_group.get_rank() if rank is None else rank
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be positive, got {num_replicas}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank: self.total_size: self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use the permutation of ``epoch`` (call before each epoch so that shuffling differs between epochs)."""
        self.epoch = epoch
