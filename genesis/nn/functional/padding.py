"""``pad``: constant, reflect, replicate and circular padding of the trailing dims."""

from __future__ import annotations

from typing import Sequence

from genesis import amp
from genesis import ops as T
from genesis.ops._args import keep_memory_format, new_memory
from genesis.ops.nn import Pad
from genesis.tensor import Tensor, full


def _pad_constant(x: Tensor, dim: int, before: int, after: int, value: float) -> Tensor:
    if before < 0:
        x = x.narrow(dim, -before, x.shape[dim] + before)
        before = 0
    if after < 0:
        x = x.narrow(dim, 0, x.shape[dim] + after)
        after = 0
    parts = []
    for n in (before, None, after):
        if n is None:
            parts.append(x)
        elif n > 0:
            shape = list(x.shape)
            shape[dim] = n
            parts.append(full(shape, value, dtype=x.dtype, device=x.device))
    return T.cat(parts, dim) if len(parts) > 1 else x


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (last_left, last_right, prev_left, prev_right, ...)``.

    Modes: ``"constant"`` (negative amounts crop), ``"reflect"``, ``"replicate"``, ``"circular"``.
    """
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value not in (None, 0):
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if mode != "constant" and (len(pad) not in (2, 4, 6) or input.ndim not in (len(pad) // 2 + 1, len(pad) // 2 + 2)):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode in ("reflect", "replicate"):
        (input,) = amp.autocast_args(f"{'reflection' if mode == 'reflect' else 'replication'}_pad", input)
    if mode == "constant":
        out = input
        for i in range(len(pad) // 2):
            before, after = int(pad[2 * i]), int(pad[2 * i + 1])
            if before or after:
                out = _pad_constant(out, input.ndim - 1 - i, before, after, 0.0 if value is None else value)
        return keep_memory_format(new_memory(out, input), input)
    for i in range(len(pad) // 2):
        dim, size = input.ndim - 1 - i, input.shape[input.ndim - 1 - i]
        before, after = int(pad[2 * i]), int(pad[2 * i + 1])
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {dim} of input {tuple(input.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    # Negative amounts crop first (torch's result is the same), then one kernel pads every dim at once.
    out = input
    for i in range(len(pad) // 2):
        before, after = min(int(pad[2 * i]), 0), min(int(pad[2 * i + 1]), 0)
        if before or after:
            dim = input.ndim - 1 - i
            out = out.narrow(dim, -before, out.shape[dim] + before + after)
    amounts = tuple(max(int(p), 0) for p in pad)
    if not any(amounts):
        return new_memory(out, input)
    return Pad.apply(out, pad=amounts, mode=mode)
