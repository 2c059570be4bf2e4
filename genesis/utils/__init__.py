"""Utilities: ``genesis.utils.data`` (datasets, samplers, DataLoader), ``genesis.utils.checkpoint`` (activation
checkpointing, at torch's path), ``genesis.utils.hooks`` (``RemovableHandle``, ``unserializable_hook``) and, imported
on demand as torch's, ``genesis.utils.benchmark`` (Timer, Measurement, Compare) and ``genesis.utils.dlpack``
(``to_dlpack`` / ``from_dlpack`` capsules)."""

from genesis.utils import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
