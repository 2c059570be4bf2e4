"""Memo tables of the host path: layouts, strides and launch plans worked out once per key and looked up after.

A table is a plain dict read with ``dict.get`` at the call site (the fast path); :func:`remember` stores a new entry
and keeps the table bounded, so that a program with many distinct shapes (dynamic sequence lengths) does not grow it
without end: past ``limit`` entries the table starts over.
"""

from __future__ import annotations

from typing import Any, TypeVar

V = TypeVar("V")


def remember(table: dict, key: Any, value: V, limit: int = 4096) -> V:
    """Store ``value`` under ``key`` in ``table`` (emptied first when it holds more than ``limit`` entries) and
    return it."""
    if len(table) > limit:
        table.clear()
    table[key] = value
    return value
