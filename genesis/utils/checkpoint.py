"""``genesis.utils.checkpoint``: torch's module path of activation checkpointing (``checkpoint``,
``checkpoint_sequential``), implemented in ``genesis.nn.utils.checkpoint``."""

from genesis.nn.utils.checkpoint import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential"]
