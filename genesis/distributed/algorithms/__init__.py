"""torch.distributed.algorithms' module path: DistributedDataParallel's communication hooks (``ddp_comm_hooks``)."""
