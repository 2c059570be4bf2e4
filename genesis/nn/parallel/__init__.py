"""``genesis.nn.parallel``: data parallelism across processes (torch.nn.parallel)."""

from genesis.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
