"""The ops: Genesis's tensor operations as functions of Tensors, one module per theme.

Each module holds its primitives (``Primitive`` subclasses with forward and backward) beside the functions that call
them, and the composite ops written once on top of the primitives (their gradients follow automatically). This
package is the torch-style namespace of those functions: ``genesis.*`` re-exports it and the Tensor methods are
bound to it. ``_THEMES`` lists the modules lowest first: each imports only those before it (docs/layers.md).
"""

from genesis.ops import (
    arithmetic,
    compare,
    gather_scatter,
    indexing,
    join,
    linalg,
    math_special,
    matrices,
    reduce,
    scans,
    shape,
    sorting,
    statistics,
    unary,
    views,
)
from genesis.ops._args import arange_like, ones_like_bool, zeros_like_detached  # noqa: F401 - used by genesis.nn
from genesis.ops.arithmetic import *  # noqa: F403
from genesis.ops.compare import *  # noqa: F403
from genesis.ops.gather_scatter import *  # noqa: F403
from genesis.ops.indexing import *  # noqa: F403
from genesis.ops.indexing import _check_bounds, getitem, setitem  # noqa: F401 - Tensor indexing, genesis.nn
from genesis.ops.join import *  # noqa: F403
from genesis.ops.linalg import *  # noqa: F403
from genesis.ops.math_special import *  # noqa: F403
from genesis.ops.matrices import *  # noqa: F403
from genesis.ops.reduce import *  # noqa: F403
from genesis.ops.scans import *  # noqa: F403
from genesis.ops.shape import *  # noqa: F403
from genesis.ops.sorting import *  # noqa: F403
from genesis.ops.statistics import *  # noqa: F403
from genesis.ops.unary import *  # noqa: F403
from genesis.ops.unary import Cast  # noqa: F401 - Tensor.to
from genesis.ops.views import *  # noqa: F403

_THEMES = (compare, arithmetic, unary, math_special, views, indexing, join, gather_scatter, reduce, scans, sorting,
           shape, matrices, linalg, statistics)

__all__ = [name for theme in _THEMES for name in theme.__all__]
