"""``genesis.nn.modules.batchnorm``: torch's module path of the batch-norm layers (defined in ``normalization.py``
and, for the lazy ones, ``lazy.py``; scripts import ``_BatchNorm`` from here to single out norm layers, e.g. to
exempt them from weight decay), and ``SyncBatchNorm``, batch norm over the batch of every rank of a process group.
"""

from __future__ import annotations

from typing import Any

from genesis import distributed
from genesis.nn.functional.sync_batch_norm import sync_batch_norm
from genesis.nn.modules.lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from genesis.nn.modules.module import Module
from genesis.nn.modules.normalization import (  # noqa: F401 - _NormBase: a base class scripts import here
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    _BatchNorm,
    _NormBase,
)
from genesis.tensor import Tensor


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose training statistics cover the batch of every rank of ``process_group`` (the default
    group when None), as torch's: with DistributedDataParallel each rank sees a shard, and normalizing with the
    whole batch's mean and variance gives what one process would compute on the full batch. In eval mode, or
    without an initialized group of more than one rank, it is plain batch norm. Any input of 2 dims or more.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        synced = self.training and distributed.is_initialized() and \
            distributed.get_world_size(self.process_group) > 1
        if not synced:
            return super().forward(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        return sync_batch_norm(input, self.running_mean if self.track_running_stats else None,
                               self.running_var if self.track_running_stats else None, self.weight, self.bias,
                               momentum, self.eps, self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every batch-norm layer in it replaced by a SyncBatchNorm holding the same parameters,
        running statistics and mode (the module itself when it is one; others are changed in place)."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.train(module.training)
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


__all__ = ["BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d", "LazyBatchNorm3d",
           "SyncBatchNorm"]
