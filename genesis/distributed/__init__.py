"""Distributed data-parallel training (torch.distributed): process groups, collectives, the launcher.

Start processes with ``python -m genesis.distributed.run --nproc-per-node N script.py`` (or ``genesis-run``), call
``init_process_group()`` in each, then use the collectives or wrap the model in
``genesis.nn.parallel.DistributedDataParallel``. CPU tensors move through gloo, CUDA tensors through NCCL on a
communication stream of Genesis's own. See docs/distributed.md.
"""

from __future__ import annotations

from genesis.distributed.collectives import (
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all_single,
    barrier,
    broadcast,
    broadcast_object_list,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter_tensor,
    send,
)
from genesis.distributed.process_group import (
    Backend,
    ProcessGroup,
    ProcessGroupNCCL,
    ReduceOp,
    destroy_process_group,
    get_backend,
    get_local_rank,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_nccl_available,
    new_group,
)
from genesis.distributed.store import PrefixStore, TCPStore

__all__ = [
    "Backend", "PrefixStore", "ProcessGroup", "ProcessGroupNCCL", "ReduceOp", "TCPStore", "all_gather",
    "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all_single", "barrier", "broadcast",
    "broadcast_object_list", "destroy_process_group", "get_backend", "get_local_rank", "get_rank", "get_world_size",
    "group", "init_process_group", "irecv", "is_available", "is_gloo_available", "is_initialized", "is_nccl_available",
    "isend", "new_group", "recv", "reduce", "reduce_scatter_tensor", "send"
]
