"""``genesis.utils.checkpoint``: torch's module path of activation checkpointing (``checkpoint``,
``checkpoint_sequential``, ``detach_variable``), implemented in ``genesis.nn.utils.checkpoint``."""

from genesis.nn.utils.checkpoint import (
    CheckpointError,
    checkpoint,
    checkpoint_sequential,
    detach_variable,
    noop_context_fn,
)

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential", "detach_variable", "noop_context_fn"]
