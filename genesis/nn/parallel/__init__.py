"""``genesis.nn.parallel``: data parallelism across processes (torch.nn.parallel), and ``DataParallel``, the
single-process wrapper older scripts use (it runs the module on one device)."""

from genesis.nn.parallel.data_parallel import DataParallel
from genesis.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
