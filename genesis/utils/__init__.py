"""Utilities: ``genesis.utils.data`` (datasets, samplers, DataLoader)."""

from genesis.utils import data

__all__ = ["data"]
