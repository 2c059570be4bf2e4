"""``genesis.utils.checkpoint``: torch's module path of activation checkpointing (``checkpoint``,
``checkpoint_sequential``), implemented in ``genesis.nn.utils.checkpoint``."""

from genesis.nn.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential, noop_context_fn

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential", "noop_context_fn"]
