"""Dropout as one autograd node whose mask is regenerated, never stored.

The keep mask of element i is ``uniform(seed, offset + i) >= p`` from the counter-based random stream (Philox on
CUDA), so the node saves only (p, seed, offset): its backward is the same dropout applied to the gradient, which
draws the same numbers again. On the CPU the numbers are those of ``genesis.rand`` from the same generator state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from genesis.autograd import is_grad_enabled
from genesis.functional.elementwise import Primitive
from genesis.ndarray import NDArray

if TYPE_CHECKING:
    from genesis.tensor import Tensor


class Dropout(Primitive):
    """``x * keep / (1 - p)`` with the mask drawn from stream ``(seed, offset)``."""

    # The stream parameters are keyword-only: autograd tracks positional arguments, and these need no edges.
    @staticmethod
    def forward(ctx, x: NDArray, *, p: float, seed: int, offset: int) -> NDArray:
        ctx.stream = (p, seed, offset)
        return x.backend.dropout(x, p, seed, offset)

    @staticmethod
    def backward(ctx, grad: Tensor):
        p, seed, offset = ctx.stream
        if not is_grad_enabled():
            return (grad.ndarray.backend.dropout(grad.ndarray, p, seed, offset),)
        return (Dropout.apply(grad, p=p, seed=seed, offset=offset),)
