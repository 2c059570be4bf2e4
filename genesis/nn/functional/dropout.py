"""Dropout (``torch.nn.functional`` names and signatures): elementwise, whole-channel (1-d, 2-d, 3-d) and alpha
dropout for SELU networks; all are the identity when not training."""

from __future__ import annotations

import warnings

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


def _channel_dropout(input: Tensor, p: float, training: bool) -> Tensor:
    """torch's ``feature_dropout``: one draw per entry of the first two dimensions, shared by the rest (so a 2-D
    input gets one draw per element)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        return input * 0.0
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)  # (N, C, 1, 1, ...)
    keep = random.rand(shape, dtype=input.dtype, device=input.device) >= p
    return input * keep.to(input.dtype) * (1.0 / (1.0 - p))


def _unbatched_channel_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool) -> Tensor:
    """Channel dropout of input with a batch dimension, or of one sample (a batch dimension added and removed)."""
    out = _channel_dropout(input if batched else input.unsqueeze(0), p, training)
    out = out if batched else out.squeeze(0)
    return input.copy_(out) if inplace and out is not input else out


def _warn_rank(op: str, input: Tensor, ranks: tuple[int, int], spatial: int) -> None:
    if input.ndim not in ranks:
        warnings.warn(f"{op}: Received a {input.ndim}-D input to {op}, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that {op} exists to provide channel-wise dropout on inputs with "
                      f"{spatial} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{ranks[0]}D or {ranks[1]}D inputs).", stacklevel=3)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``."""
    _check_p("dropout1d", p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _unbatched_channel_dropout(input, p, training, inplace, input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) input with probability ``p``.

    As torch's (and with its warnings): every rank draws one value per entry of the first two dimensions, so a
    3-D input is read as (N, C, L), not as one unbatched (C, H, W) sample, and a 2-D input drops single elements.
    """
    _check_p("dropout2d", p)
    _warn_rank("dropout2d", input, (3, 4), 2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=2)
    return _unbatched_channel_dropout(input, p, training, inplace, True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``.

    As torch's (and with its warning for other ranks): any input that is not 5-D is taken as one unbatched sample.
    """
    _check_p("dropout3d", p)
    _warn_rank("dropout3d", input, (4, 5), 3)
    return _unbatched_channel_dropout(input, p, training, inplace, input.ndim == 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalizing mean and variance."""
    _check_p("alpha_dropout", p)
    if not training or p == 0.0:
        return input
    if p == 1.0:  # everything dropped (the affine constants below are infinite)
        return input.copy_(input * 0.0) if inplace else input * 0.0
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
