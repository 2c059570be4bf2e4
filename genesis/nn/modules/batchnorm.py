"""``genesis.nn.modules.batchnorm``: torch's module path of the batch-norm layers (defined in ``normalization.py``
and, for the lazy ones, ``lazy.py``). Scripts import ``_BatchNorm`` from here to single out norm layers, e.g. to
exempt them from weight decay."""

from genesis.nn.modules.lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from genesis.nn.modules.normalization import (  # noqa: F401 - _BatchNorm, _NormBase: base classes scripts import here
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    _BatchNorm,
    _NormBase,
)

__all__ = ["BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d", "LazyBatchNorm3d"]
