"""``genesis.nn.modules.instancenorm``: torch's module path of the instance-norm layers (defined in
``normalization.py`` and, for the lazy ones, ``lazy.py``)."""

from genesis.nn.modules.lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d
from genesis.nn.modules.normalization import (  # noqa: F401 - _InstanceNorm: the base class scripts import here
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]
