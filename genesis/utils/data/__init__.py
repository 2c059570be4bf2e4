"""Datasets, samplers and the DataLoader (``genesis.utils.data``, as ``torch.utils.data``).

A map-style :class:`Dataset` answers ``dataset[i]``; an :class:`IterableDataset` yields samples. A sampler yields
indices, a :class:`BatchSampler` groups them, ``collate_fn`` turns a list of samples into a batch
(:func:`default_collate` stacks tensors, numbers and numpy arrays and recurses into dicts and sequences), and the
:class:`DataLoader` ties them together, optionally producing batches in worker processes.

The modules are torch's: ``dataset``, ``sampler``, ``dataloader``, ``distributed`` and ``_utils.collate``; this
package re-exports their public names.
"""

from genesis.utils.data._utils.collate import default_collate, default_convert
from genesis.utils.data._utils.worker import WorkerInfo, get_worker_info
from genesis.utils.data.dataloader import DataLoader
from genesis.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from genesis.utils.data.distributed import DistributedSampler
from genesis.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate",
           "default_convert", "get_worker_info", "random_split"]
