"""``GradBucket``: what a DistributedDataParallel communication hook receives (torch.distributed.GradBucket)."""

from __future__ import annotations

from typing import Any

from genesis.tensor import Tensor


class GradBucket:
    """One bucket of gradients ready to be reduced: its flat buffer, the parameters it holds and their gradients
    as views of the buffer. ``set_buffer`` makes the hook's later ``buffer()`` calls return another tensor (a
    compressed copy, say); DDP then takes the gradients from the value of the future the hook returns."""

    def __init__(self, index: int, buffer: Tensor, parameters: list[Any], gradients: list[Tensor],
                 is_last: bool) -> None:
        self._index = index
        self._buffer = buffer
        self._parameters = parameters
        self._gradients = gradients
        self._is_last = is_last

    def index(self) -> int:
        """The bucket's position (0: the first to be reduced in an iteration)."""
        return self._index

    def buffer(self) -> Tensor:
        """The flat 1-d tensor of the bucket's gradients (or what ``set_buffer`` put in its place)."""
        return self._buffer

    def set_buffer(self, buffer: Tensor) -> None:
        """Make ``buffer()`` return ``buffer`` from now on."""
        self._buffer = buffer

    def gradients(self) -> list[Tensor]:
        """The gradients of the bucket's parameters, as views of its flat buffer."""
        return list(self._gradients)

    def parameters(self) -> list[Any]:
        """The bucket's parameters, in the order of its buffer."""
        return list(self._parameters)

    def is_last(self) -> bool:
        """Whether this is the last bucket to be reduced in the iteration."""
        return self._is_last
