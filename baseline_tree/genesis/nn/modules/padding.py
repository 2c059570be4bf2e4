"""Padding layers: constant (and zero), reflection, replication and circular padding in 1, 2 and 3 dims.

Each holds a ``padding`` tuple ``(last_left, last_right, prev_left, prev_right, ...)`` (an int pads every side
equally) and calls ``F.pad``.
"""

from __future__ import annotations

from typing import Sequence

from genesis.nn import functional as F
from genesis.nn.modules.module import Module
from genesis.tensor import Tensor


def _sides(padding: int | Sequence[int], n: int) -> tuple[int, ...]:
    """torch's ``_ntuple(2 * n)``: an int repeated on every side, a sequence kept as given."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    return tuple(padding)


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        self.padding = _sides(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: ``padding`` is an int or ``(left, right)``."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``: ``padding`` is an int or ``(left, right, top, bottom)``."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``: ``padding`` is an int or
    ``(left, right, top, bottom, front, back)``."""

    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros."""

    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two dims with zeros."""

    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three dims with zeros."""

    _n = 3


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection about the edge (the edge value is not repeated)."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last two dims with their reflection about the edges."""

    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pad the last three dims with their reflection about the edges."""

    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last two dims by repeating their edge values."""

    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pad the last three dims by repeating their edge values."""

    _n, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        n = self._n
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.ndim}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pad the last dim by wrapping around (the other end's values)."""

    _n = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last two dims by wrapping around."""

    _n = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last three dims by wrapping around."""

    _n = 3
