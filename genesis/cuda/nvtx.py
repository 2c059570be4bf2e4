"""``torch.cuda.nvtx``'s range markers. Genesis records them as :class:`genesis.profiler.record_function` regions:
inside a ``genesis.profiler.profile`` the ops of a range nest under its name in the table and the trace (outside one
the markers cost nothing)."""

from __future__ import annotations

import contextlib
from typing import Iterator

from genesis.profiler import record_function

_open: list[record_function] = []  # the ranges pushed and not yet popped, innermost last


def range_push(msg: str) -> int:
    """Open a range named ``msg``; returns its depth (0 for the outermost), as NVTX's ``rangePush``."""
    region = record_function(msg)
    region.__enter__()
    _open.append(region)
    return len(_open) - 1


def range_pop() -> int:
    """Close the innermost open range; returns its depth, or -1 when none is open, as NVTX's ``rangePop``."""
    if not _open:
        return -1
    _open.pop().__exit__(None, None, None)
    return len(_open)


def mark(msg: str) -> None:
    """An instant marker: an empty range named ``msg``."""
    with record_function(msg):
        pass


@contextlib.contextmanager
def range(msg: str, *args: object, **kwargs: object) -> Iterator[None]:
    """A range around a ``with`` block; ``msg`` is formatted with ``args`` and ``kwargs`` as torch's."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
