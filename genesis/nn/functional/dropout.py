"""Dropout (``torch.nn.functional`` names and signatures): elementwise, whole-channel (1-d, 2-d, 3-d) and alpha
dropout for SELU networks; all are the identity when not training."""

from __future__ import annotations

from genesis import random
from genesis.ops.dropout import Dropout
from genesis.tensor import Tensor


def _check_p(op: str, p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"{op} probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (identity when not training).

    The mask comes from Genesis's default generator, so ``genesis.manual_seed`` makes it reproducible. It is not
    stored: the backward pass draws the same numbers again (one fused kernel each way on cuda).
    """
    _check_p("dropout", p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    elif not input.dtype.is_floating_point:
        raise RuntimeError(f"dropout: result type Float can't be cast to the desired output type "
                           f"{input.dtype.name} (dropout needs a floating-point input)")
    else:
        # One node: the mask comes from the generator's counter-based stream and is regenerated in backward.
        seed, offset = random._stream(None, input.device, input.numel())
        out = Dropout.apply(input, p=p, seed=seed, offset=offset)
    return input.copy_(out) if inplace else out


def _feature_dropout(op: str, input: Tensor, p: float, training: bool, inplace: bool, batched_ndim: int) -> Tensor:
    _check_p(op, p)
    if not training or p == 0.0:
        return input
    # One draw per channel: shape (N, C, 1, 1, ...) or (C, 1, 1, ...) for unbatched input.
    lead = 2 if input.ndim == batched_ndim else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    if p == 1.0:
        out = input * 0.0
    else:
        keep = random.rand(shape, dtype=input.dtype, device=input.device) >= p
        out = input * keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.copy_(out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input."""
    return _feature_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) or (C, H, W) input."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 4)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    return _feature_dropout("dropout3d", input, p, training, inplace, 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalizing mean and variance."""
    _check_p("alpha_dropout", p)
    if not training or p == 0.0:
        return input
    alpha_p = -1.7580993408473766
    keep = (random.rand(input.shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * alpha_p**2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels of (N, C, *) input: dropped channels take SELU's negative saturation value
    and the result is rescaled so mean and variance are kept (as ``alpha_dropout``, one draw per channel)."""
    _check_p("feature_alpha_dropout", p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        alpha = 1.7580993408473766
        a = ((alpha * alpha * p + 1) * (1 - p)) ** -0.5
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
        keep = (random.rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
        # Kept: a * x + alpha * a * p; dropped: -alpha * a + alpha * a * p.
        out = input * keep * a + (keep - 1) * (alpha * a) + alpha * a * p
    return input.copy_(out) if inplace else out
