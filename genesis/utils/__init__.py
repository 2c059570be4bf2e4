"""Utilities: ``genesis.utils.data`` (datasets, samplers, DataLoader)."""

from genesis.utils import data
from genesis.utils.data import distributed as _distributed  # noqa: F401 - genesis.utils.data.distributed

__all__ = ["data"]
