"""The op layer: Genesis's tensor operations, and the registry that declares them (:mod:`genesis.ops.registry`).

Importing this package runs the registry's one binding step (Tensor methods, in-place methods, operators) and
exposes every op of the ``genesis`` namespace under its registered name.
"""

from genesis.ops import registry

registry.bind()
globals().update({op.name: op.fn for op in registry.OPS if op.function})
__all__ = registry.namespace()
