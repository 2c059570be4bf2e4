"""Adaptive pooling windows shared by the 1-d, 2-d and 3-d adaptive pooling functions.

Max pooling gathers every window (values and flat argmax positions, for ``return_indices``); average pooling is a
product with one averaging matrix per dim. Both are compositions of differentiable ops.
"""

from __future__ import annotations

from typing import Sequence

from genesis import functional as T
from genesis.tensor import Tensor, arange, tensor


def _adaptive_sizes(op: str, input: Tensor, output_size: int | None | Sequence[int | None],
                    n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got {list(input.shape)}")
    sizes = tuple(input.shape[-n:])
    out = (output_size,) * n if output_size is None or isinstance(output_size, int) else tuple(output_size)
    if len(out) != n:
        raise RuntimeError(f"{op}(): internal error: output_size.size() must be {n}, got {len(out)}")
    out = tuple(s if o is None else int(o) for o, s in zip(out, sizes))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{op}(): elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out)}")
    if any(s == 0 for s in sizes):
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                           f"sizes {list(input.shape)}")
    return sizes, out


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive_avg(input: Tensor, sizes: tuple[int, ...], out: tuple[int, ...]) -> Tensor:
    # The mean over a window is separable: one (out, size) averaging matrix per dim.
    x = input
    n = len(sizes)
    for axis, (size, o) in enumerate(zip(sizes, out)):
        weights = [[0.0] * size for _ in range(o)]
        for i, (start, end) in enumerate(_windows(size, o)):
            for j in range(start, end):
                weights[i][j] = 1.0 / (end - start)
        avg = tensor(weights, dtype=input.dtype, device=input.device)
        dim = x.ndim - n + axis
        x = T.matmul(x.movedim(dim, -1), avg.t()).movedim(-1, dim)
    return x


def _adaptive_max(input: Tensor, sizes: tuple[int, ...], out: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Values and flat argmax positions (within each input plane) of adaptive max pooling.

    Every window is gathered padded to the largest window length by repeating its last element (a repeat never
    changes a maximum), so one ``max`` over the last dim reduces all windows at once.
    """
    n = len(sizes)
    lead = input.ndim - n
    x = input
    flat = arange(input[(0,) * lead].numel() if lead else input.numel(), device=input.device).reshape(sizes)
    lengths = []
    for axis, (size, o) in enumerate(zip(sizes, out)):
        windows = _windows(size, o)
        k = max(end - start for start, end in windows)
        lengths.append(k)
        index = tensor([min(start + j, end - 1) for start, end in windows for j in range(k)], device=input.device)
        x = T.index_select(x, lead + 2 * axis, index)
        x = x.reshape(*x.shape[:lead + 2 * axis], o, k, *x.shape[lead + 2 * axis + 1:])
        flat = T.index_select(flat, 2 * axis, index)
        flat = flat.reshape(*flat.shape[:2 * axis], o, k, *flat.shape[2 * axis + 1:])
    # (..., o1, k1, o2, k2, ...) -> (..., o1, o2, ..., k1 * k2 * ...)
    order = [lead + 2 * a for a in range(n)] + [lead + 2 * a + 1 for a in range(n)]
    x = x.permute(*range(lead), *order).reshape(*input.shape[:lead], *out, -1)
    flat = flat.permute(*[o - lead for o in order]).reshape(*out, -1)
    values, local = x.max(-1)
    indices = T.take_along_dim(flat.expand(*input.shape[:lead], *flat.shape), local.unsqueeze(-1), -1).squeeze(-1)
    return values, indices
