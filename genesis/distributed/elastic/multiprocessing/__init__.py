"""torch.distributed.elastic.multiprocessing's module path (``errors.record``)."""
