"""``genesis.nn``: modules, parameters, the functional namespace and initializers (``torch.nn``'s shape)."""

from genesis.nn import attention, functional, init, parallel, utils
from genesis.nn.modules import *  # noqa: F403 - the layer classes
from genesis.nn.modules import __all__ as _modules_all
from genesis.nn.parallel import DataParallel
from genesis.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Buffer", "DataParallel", "Parameter", "UninitializedBuffer", "UninitializedParameter", "attention",
           "functional", "init", "parallel", "utils", *_modules_all]
