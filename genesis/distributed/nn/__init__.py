"""torch.distributed.nn: the differentiable collectives of ``functional``, also importable from here."""

from genesis.distributed.nn import functional
from genesis.distributed.nn.functional import (
    all_gather,
    all_reduce,
    all_to_all,
    all_to_all_single,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    scatter,
)

__all__ = ["all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast", "functional", "gather",
           "reduce", "reduce_scatter", "scatter"]
