"""Distributed data-parallel training (torch.distributed): process groups, collectives, the launcher.

Start processes with ``python -m genesis.distributed.run --nproc-per-node N script.py`` (or ``genesis-run``), call
``init_process_group()`` in each, then use the collectives or wrap the model in
``genesis.nn.parallel.DistributedDataParallel``. CPU tensors move through gloo, CUDA tensors through NCCL on a
communication stream of Genesis's own. See docs/distributed.md.
"""

from __future__ import annotations

from genesis.distributed.collectives import (
    P2POp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    broadcast_object_list,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter_tensor,
    send,
)
from genesis.distributed.grad_bucket import GradBucket
from genesis.distributed.list_collectives import (
    all_to_all,
    gather,
    gather_object,
    monitored_barrier,
    recv_object_list,
    reduce_scatter,
    scatter,
    scatter_object_list,
    send_object_list,
)
from genesis.distributed.process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    ProcessGroupNCCL,
    ReduceOp,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_local_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_backend_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    is_ucc_available,
    new_group,
)
from genesis.distributed.store import FileStore, PrefixStore, TCPStore

__all__ = [
    "Backend", "FileStore", "GradBucket", "GroupMember", "P2POp", "PrefixStore", "ProcessGroup", "ProcessGroupNCCL",
    "ReduceOp", "TCPStore", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend",
    "get_default_backend_for_device", "get_global_rank", "get_group_rank", "get_local_rank", "get_node_local_rank",
    "get_pg_count", "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group", "irecv",
    "is_available", "is_backend_available", "is_gloo_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "is_torchelastic_launched", "is_ucc_available", "isend", "monitored_barrier", "new_group",
    "recv", "recv_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list",
    "send", "send_object_list"
]
