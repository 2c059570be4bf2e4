"""Structured matrices: triangular (triu, tril and their index lists), diagonal (diag, diag_embed, diagflat,
trace), block-diagonal and Vandermonde matrices.
"""

from __future__ import annotations

import builtins
from typing import Any

from genesis import dtypes
from genesis import memory_format as _mf
from genesis.autograd import Primitive
from genesis.device import to_device
from genesis.ndarray import NDArray, normalize_dim
from genesis.ops._args import _zeros, arange_like, ones_like_bool
from genesis.ops.autocast import one_op
from genesis.ops.compare import where
from genesis.ops.join import cat
from genesis.ops.shape import flip
from genesis.ops.views import diagonal, movedim
from genesis.tensor import Tensor


class Triu(Primitive):
    """The elements on and above diagonal ``k`` of the last two dims (below it for ``Tril``), zeros elsewhere; its
    gradient keeps the same band of the output's gradient."""

    upper = True

    @classmethod
    def forward(cls, ctx, x: NDArray, k: int) -> NDArray:
        ctx.meta = k
        return x.backend.triangle(x, k, cls.upper)

    @classmethod
    def backward(cls, ctx, grad):
        return cls.apply(grad, ctx.meta), None


class Tril(Triu):
    upper = False


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return Triu.apply(input, diagonal)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return Tril.apply(input, diagonal)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D input: a square matrix with it on the ``diagonal``; 2-D input: that diagonal as a vector."""
    if input.ndim == 2:
        return diagonal_copy(input, diagonal)
    if input.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return DiagEmbed.apply(input, diagonal)


class DiagEmbed(Primitive):
    """A square matrix with the vector on diagonal ``k`` and zeros elsewhere (``diag`` of 1-D input); its gradient
    is that diagonal of the output's gradient."""

    @staticmethod
    def forward(ctx, x: NDArray, k: int) -> NDArray:
        ctx.meta = k
        n = x.shape[0] + builtins.abs(k)
        out = x.backend.full((n, n), False if x.dtype is dtypes.bool_ else 0, x.dtype, x.device)
        x.backend.copy_(out.diagonal(k, 0, 1), x)
        return out

    @staticmethod
    def backward(ctx, grad):
        return diagonal(grad, ctx.meta).clone(), None


def diagonal_copy(input: Tensor, offset: int = 0) -> Tensor:
    return diagonal(input, offset).clone()


def fill_diagonal_(input: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` in place on the main diagonal (``input[i, i, ..., i]``; all dims equal beyond 2-D); with
    ``wrap`` a tall matrix continues the diagonal every ``columns + 1`` rows, as numpy's and torch's
    (row-major positions: torch follows the memory layout of non-contiguous tensors there)."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = input.shape[0], input.shape[1]
    if input.ndim > 2 and builtins.any(n != height for n in input.shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    # Row-major positions p of the diagonal: multiples of the step (the sum of the contiguous strides).
    step, stride = 0, 1
    for n in reversed(input.shape):
        step += stride
        stride *= n
    count = builtins.min(height, width)
    if wrap and input.ndim == 2 and height > width + 1:
        count = (input.numel() + step - 1) // step
    positions = arange_like(input.numel(), input)
    mask = (positions % step == 0) & (positions < count * step)
    return input.masked_fill_(mask.reshape(input.shape), fill_value)


@one_op("trace")
def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input.dtype is dtypes.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return diagonal(input).sum()


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in dims ``dim1``, ``dim2`` of the result) with the last dim of ``input`` on diagonal ``offset``."""
    if input.ndim == 0:
        raise RuntimeError("diag_embed: input must have at least 1 dimension")
    out_ndim = input.ndim + 1
    d1, d2 = normalize_dim("diag_embed", dim1, out_ndim), normalize_dim("diag_embed", dim2, out_ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    k = input.shape[-1]
    n = k + builtins.abs(offset)
    pad = _zeros((*input.shape[:-1], builtins.abs(offset)), input.dtype, input)
    # Rows holding the values: 0..k-1 above the main diagonal, |offset|..n-1 below it.
    rows = cat([input, pad], -1) if offset >= 0 else cat([pad, input], -1)
    i = arange_like(n, input).unsqueeze(1)
    j = arange_like(n, input).unsqueeze(0)
    zero = False if input.dtype is dtypes.bool_ else 0
    matrices = where(j - i == offset, rows.unsqueeze(-1), zero)  # (..., n, n)
    return movedim(matrices, (-2, -1), (d1, d2))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened input as diagonal ``offset`` of a square matrix."""
    return diag_embed(input.reshape(-1), offset)


def block_diag(*tensors: Tensor) -> Tensor:
    """Block-diagonal matrix of 0-, 1- and 2-d tensors (a 1-d tensor is one row), dtypes promoted."""
    if not tensors:
        return Tensor._wrap(NDArray.full((1, 0), 0, dtypes.get_default_dtype(), to_device("cpu")))
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        blocks.append(t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = dtypes.promote_types(dtype, b.dtype)
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        rows.append(cat([_zeros((r, left), dtype, b), b.to(dtype), _zeros((r, width - left - c), dtype, b)], 1))
        left += c
    return cat(rows, 0)


def _band_indices(op: str, row: int, col: int, offset: int, dtype: Any, device: Any, layout: Any, pin_memory: bool,
                  upper: bool) -> Tensor:
    _mf.check_strided(op, layout)
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row must be non-negative, got {row}" if row < 0
                           else f"{op}: col must be non-negative, got {col}")
    dtype = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    if dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError(f"\"{op}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[dtype]}'")
    like = Tensor._wrap(NDArray.full((), 0, dtypes.int64, to_device(device if device is not None else "cpu")))
    r = arange_like(row, like).unsqueeze(1)
    c = arange_like(col, like).unsqueeze(0)
    mask = (c - r >= offset) if upper else (c - r <= offset)
    out = mask.nonzero().t().to(dtype).contiguous()
    return Tensor._wrap(out.ndarray.pin_memory()) if pin_memory else out


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None, pin_memory: bool = False) -> Tensor:
    """(2, N) row and column indices of the upper triangle (``col - row >= offset``) of a row x col matrix."""
    return _band_indices("triu_indices", row, col, offset, dtype, device, layout, pin_memory, True)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None, pin_memory: bool = False) -> Tensor:
    """(2, N) row and column indices of the lower triangle (``col - row <= offset``) of a row x col matrix."""
    return _band_indices("tril_indices", row, col, offset, dtype, device, layout, pin_memory, False)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Vandermonde matrix: column j is ``x ** (N - 1 - j)`` (``x ** j`` when increasing); integers widen to int64."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.int64)
    if n == 0:
        return _zeros((x.shape[0], 0), x.dtype, x)
    # Running products (as torch) keep the gradient finite at x == 0, unlike x ** arange.
    ones = where(ones_like_bool(x), 1, x).unsqueeze(1)
    powers = cat([ones, x.unsqueeze(1).expand(x.shape[0], n - 1)], 1).cumprod(1)
    return powers if increasing else flip(powers, 1)
