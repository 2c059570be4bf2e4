"""``pad``: constant, reflect, replicate and circular padding of the trailing dims."""

from __future__ import annotations

from typing import Sequence

from genesis import amp
from genesis.autograd import Primitive
from genesis.ndarray import NDArray
from genesis.ops._args import keep_memory_format, new_memory
from genesis.ops.nn import Pad
from genesis.tensor import Tensor


class ConstantPadNd(Primitive):
    """Constant padding of the trailing dims (negative amounts crop): a filled array with the input copied into its
    region. The gradient is the same padding of the output's gradient by the opposite amounts (a crop, and zeros
    where the forward cropped)."""

    @staticmethod
    def forward(ctx, x: NDArray, pad: tuple[int, ...], value: float) -> NDArray:
        ctx.meta = pad
        src, shape, regions = x, list(x.shape), []
        for i in range(len(pad) // 2):
            d, before, after = x.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]
            length = x.shape[d] + min(before, 0) + min(after, 0)  # the input's part that stays
            if length < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
            src = src.narrow(d, max(-before, 0), length)
            regions.append((d, max(before, 0), length))
            shape[d] = x.shape[d] + before + after
        out = x.backend.full(tuple(shape), value, x.dtype, x.device)
        dst = out
        for d, start, length in regions:
            dst = dst.narrow(d, start, length)
        if src.size:
            x.backend.copy_(dst, src)
        return out

    @staticmethod
    def backward(ctx, grad):
        return ConstantPadNd.apply(grad, tuple(-p for p in ctx.meta), 0), None, None


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (last_left, last_right, prev_left, prev_right, ...)``.

    Modes: ``"constant"`` (negative amounts crop), ``"reflect"``, ``"replicate"``, ``"circular"``.
    """
    n = len(pad)
    for i, p in enumerate(pad):
        if not hasattr(p, "__index__"):  # ints, numpy ints, integer 0-d tensors
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                            f"{type(p).__name__} at pos {i}")
    shape = input.ndarray.shape
    ndim = len(shape)
    if n % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if n // 2 > ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {n} and input of dimension {ndim}")
    if mode == "constant":
        amounts = tuple(int(p) for p in pad)
        if not any(amounts):
            return input.clone()
        return keep_memory_format(ConstantPadNd.apply(input, amounts, 0.0 if value is None else value), input)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value not in (None, 0):
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if n not in (2, 4, 6) or ndim not in (n // 2 + 1, n // 2 + 2):
        raise NotImplementedError(
            f"Padding size {n} is not supported for {ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode != "circular":
        (input,) = amp.autocast_args(f"{'reflection' if mode == 'reflect' else 'replication'}_pad", input)
    amounts = tuple(int(p) for p in pad)
    out = input
    for i in range(n // 2):
        dim = ndim - 1 - i
        size, before, after = shape[dim], amounts[2 * i], amounts[2 * i + 1]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {dim} of input {tuple(shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        # Negative amounts crop first (torch's result is the same), then one kernel pads every dim at once.
        if before < 0 or after < 0:
            crop_before, crop_after = min(before, 0), min(after, 0)
            out = out.narrow(dim, -crop_before, out.shape[dim] + crop_before + crop_after)
    if min(amounts) < 0:
        amounts = tuple(max(p, 0) for p in amounts)
    if not any(amounts):
        return new_memory(out, input)
    return Pad.apply(out, pad=amounts, mode=mode)
