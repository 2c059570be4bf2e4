"""Utilities: ``genesis.utils.data`` (datasets, samplers, DataLoader) and ``genesis.utils.checkpoint`` (activation
checkpointing, at torch's path)."""

from genesis.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
