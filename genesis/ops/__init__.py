"""The ops: Genesis's tensor operations as functions of Tensors, one module per theme, declared in one registry.

Each theme module holds its primitives (``Primitive`` subclasses with forward and backward) beside the functions that
call them, and the composite ops written once on top of the primitives (their gradients follow automatically).
:mod:`genesis.ops.registry` declares every op once; importing this package runs its one binding step (Tensor methods,
in-place methods, operators, the autocast policy) and exposes every op of the ``genesis`` namespace here under its
registered name (``genesis.*`` re-exports this package). ``_THEMES`` lists the modules lowest first: each imports only
those before it (docs/layers.md).
"""

from genesis.ops import (
    arithmetic,
    compare,
    floating,
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
from genesis.ops._args import (  # noqa: F401 - used by genesis.nn
    _check_range,
    arange_like,
    ones_like_bool,
    zeros_like_detached,
)
from genesis.ops.indexing import _check_bounds, getitem, setitem  # noqa: F401 - Tensor indexing, genesis.nn
from genesis.ops.unary import Cast  # noqa: F401 - Tensor.to

_THEMES = (compare, arithmetic, unary, math_special, floating, views, indexing, join, gather_scatter, reduce, scans,
           sorting, shape, matrices, linalg, statistics)

from genesis.ops import registry  # noqa: E402 - the registry reads the themes above

registry.bind()
globals().update({op.name: fn for op, fn in registry.callables().items() if op.function})
__all__ = registry.namespace()
