"""Segment reductions: ``segment_reduce`` (torch's ``torch.segment_reduce``), the reduction of consecutive runs of
elements along one dim, as graph and point-set code reduces the features of each node's or each set's run.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from genesis import dtypes
from genesis.ndarray import normalize_dim
from genesis.ops._args import _full, arange_like
from genesis.ops.compare import where
from genesis.ops.gather_scatter import index_select
from genesis.ops.join import cat
from genesis.ops.reduce import amax, amin, prod, sum
from genesis.ops.scans import cumsum
from genesis.tensor import Tensor

#: What each reduction gives an empty segment when no ``initial`` is passed (a mean's 0 / 0 makes its NaN).
_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -math.inf, "amin": math.inf}


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None, indices: Tensor | None = None,
                   offsets: Tensor | None = None, axis: int = 0, unsafe: bool = False,
                   initial: Any = None) -> Tensor:
    """Reduce consecutive segments of ``data`` along ``axis``, as ``torch.segment_reduce``.

    Args:
        data: a floating tensor.
        reduce: ``"sum"``, ``"prod"``, ``"mean"``, ``"max"``/``"amax"`` or ``"min"``/``"amin"``.
        lengths: int32/int64 segment lengths, shape ``data.shape[:axis] + (segments,)``: the segments of each row
            follow each other from the row's start and, unless ``unsafe``, cover it exactly.
        indices: not supported (as torch).
        offsets: instead of ``lengths`` (and taking precedence over them, as torch): the segment boundaries, shape
            ``data.shape[:axis] + (segments + 1,)``; segment ``s`` is ``[offsets[s], offsets[s + 1])``.
        axis: the dim to reduce; the last dim of ``lengths`` / ``offsets``.
        unsafe: skip the checks of ``lengths`` / ``offsets`` (a host synchronization).
        initial: a number folded into every segment: added to a sum (and to a mean's sum, which still divides by
            the segment's length), multiplying a product, bounding a max or min; an empty segment gets it. Without
            it, an empty segment is 0 (sum), 1 (prod), NaN (mean), -inf (max) or inf (min).

    Returns:
        ``data.shape[:axis] + (segments,) + data.shape[axis + 1:]``, differentiable in ``data``: a max or min
        shares its gradient evenly among the elements equal to it (``initial`` takes none of it).
    """
    if reduce not in ("sum", "prod", "mean", "max", "min", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    bounds = offsets if offsets is not None else lengths
    if bounds.dtype not in (dtypes.int32, dtypes.int64):
        raise NotImplementedError(f"segment_reduce(): lengths and offsets must be int32 or int64, got {bounds.dtype}")
    if not data.dtype.is_floating_point:
        raise NotImplementedError(f"\"segment_reduce\" not implemented for '{data.dtype.name}'")
    d = normalize_dim("segment_reduce", axis, data.ndim)
    if d != bounds.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {d}.")
    if tuple(bounds.shape[:-1]) != tuple(data.shape[:d]):
        raise RuntimeError(f"segment_reduce(): lengths/offsets of shape {list(bounds.shape)} do not match data of "
                           f"shape {list(data.shape)} before axis {d}")
    n, rows, rest = data.shape[d], math.prod(data.shape[:d]), tuple(data.shape[d + 1:])
    bounds = bounds.to(dtypes.int64).reshape(rows, bounds.shape[-1])
    if offsets is not None:
        lens, starts = bounds[:, 1:] - bounds[:, :-1], bounds[:, :-1]
    else:
        lens = bounds
        starts = cumsum(lens, 1) - lens
    if not unsafe:
        _check_segments(lens, bounds if offsets is not None else None, n)
    segments = lens.shape[1]
    # Each segment's elements side by side in one row of a (rows * segments, width) grid, padded with the
    # reduction's identity (an extra element after the data), then reduced along the row: memory grows with the
    # number of segments times the longest one.
    width = builtins.max(int(lens.max().item()) if lens.numel() else 0, 1)
    flat = data.reshape((rows * n,) + rest)
    padded = cat([flat, _full((1,) + rest, _IDENTITY[reduce], data.dtype, data)])
    step = arange_like(width, data)
    first = starts + arange_like(rows, data).reshape(rows, 1) * n  # (rows, segments): where each segment starts
    grid = where(step < lens.unsqueeze(-1), first.unsqueeze(-1) + step, rows * n)  # (rows, segments, width)
    picked = index_select(padded, 0, grid.reshape(-1)).reshape((rows * segments, width) + rest)
    reducer = {"sum": sum, "mean": sum, "prod": prod, "amax": amax, "amin": amin}[reduce]
    out = reducer(picked, 1)
    if reduce == "mean":
        count = lens.reshape((-1,) + (1,) * len(rest)).to(data.dtype)
        out = out / count if initial is None else where(count == 0, initial, (out + initial) / count)
    elif initial is not None:
        if reduce == "sum":
            out = out + initial
        elif reduce == "prod":
            out = out * initial
        else:  # NaN stays (the comparison is false); a tie keeps the data's value, so the gradient reaches it
            out = where(out < initial if reduce == "amax" else out > initial, initial, out)
    return out.reshape(tuple(data.shape[:d]) + (segments,) + rest)


def _check_segments(lens: Tensor, offsets: Tensor | None, n: int) -> None:
    """torch's checks of ``lengths`` (non-negative, each row summing to ``n``), or of ``offsets`` (non-decreasing,
    within ``[0, n]``)."""
    if offsets is not None:
        if offsets.numel() and (bool((lens < 0).any()) or offsets.min().item() < 0 or offsets.max().item() > n):
            raise RuntimeError(f"segment_reduce(): offsets must be non-decreasing and within [0, {n}]")
        return
    if bool((lens < 0).any()):
        raise RuntimeError("segment_reduce(): lengths contains negative value!")
    if bool((lens.sum(1) != n).any()):
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
