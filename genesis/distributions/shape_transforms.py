"""Transforms over a tensor's layout: ``ReshapeTransform`` reshapes the rightmost dimensions; ``CatTransform`` and
``StackTransform`` apply one transform to each piece of a tensor along a dimension, as ``cat`` and ``stack`` would
join the pieces. The public names are re-exported by :mod:`genesis.distributions.transforms`.
"""

from __future__ import annotations

from typing import Sequence

import genesis.ops as F
from genesis.distributions import constraints
from genesis.distributions.transform_base import Transform
from genesis.distributions.utils import check_piece_dim, narrow_pieces, sum_rightmost
from genesis.tensor import Size, Tensor


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` of a tensor into ``out_shape`` (same number of elements); the Jacobian is
    a permutation, so ``log_abs_det_jacobian`` is zero.

    Args:
        in_shape: the input event shape.
        out_shape: the output event shape.
        cache_size: 0, or 1 to remember the last ``(x, y)`` pair.
    """

    bijective = True

    def __init__(self, in_shape: Sequence[int], out_shape: Sequence[int], cache_size: int = 0) -> None:
        self.in_shape = Size(in_shape)
        self.out_shape = Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        batch_shape = tuple(x.shape[:x.ndim - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y: Tensor) -> Tensor:
        batch_shape = tuple(y.shape[:y.ndim - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        batch_shape = tuple(x.shape[:x.ndim - len(self.in_shape)])
        return F.zeros(batch_shape, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return _replace_suffix(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return _replace_suffix(shape, self.out_shape, self.in_shape)


def _replace_suffix(shape: Sequence[int], suffix: Size, new_suffix: Size) -> tuple[int, ...]:
    """``shape`` with its trailing ``suffix`` replaced by ``new_suffix``."""
    if len(shape) < len(suffix):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(suffix)
    if tuple(shape[cut:]) != tuple(suffix):
        raise ValueError(f"Shape mismatch: expected a shape ending in {tuple(suffix)}, got {tuple(shape)}")
    return tuple(shape[:cut]) + tuple(new_suffix)


class _PiecewiseTransform(Transform):
    """What ``CatTransform`` and ``StackTransform`` share: one transform per piece of a tensor along ``dim``."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")  # torch's class
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)


class CatTransform(_PiecewiseTransform):
    """Applies ``tseq[i]`` to the ``i``-th piece of ``lengths[i]`` entries along ``dim``, the pieces joined as
    ``cat`` joins them: ``CatTransform([ExpTransform(), identity_transform], 0, [10, 10])`` exponentiates the first
    ten entries and keeps the next ten.

    Args:
        tseq: the transforms, one per piece.
        dim: the dimension the pieces are cut along.
        lengths: the size of each piece along ``dim`` (default: 1 each).
        cache_size: 0, or 1 to remember the last ``(x, y)`` pair.
    """

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, lengths: Sequence[int] | None = None,
                 cache_size: int = 0) -> None:
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        """The size of the whole tensor along ``dim``."""
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def _pieces(self, what: str, value: Tensor) -> list[Tensor]:
        check_piece_dim(what, value, self.dim, self.length)
        return narrow_pieces(value, self.dim, self.lengths)

    def _call(self, x: Tensor) -> Tensor:
        return F.cat([t(piece) for t, piece in zip(self.transforms, self._pieces("x", x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return F.cat([t.inv(piece) for t, piece in zip(self.transforms, self._pieces("y", y))], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        pieces = zip(self.transforms, self._pieces("x", x), self._pieces("y", y))
        terms = [sum_rightmost(t.log_abs_det_jacobian(x_i, y_i), self.event_dim - t.event_dim)
                 for t, x_i, y_i in pieces]
        # A dimension to the left of the event survives in the log-Jacobian: join the pieces along it. One inside
        # the event was summed out: add the pieces' sums.
        dim = self.dim - x.ndim if self.dim >= 0 else self.dim
        dim += self.event_dim
        if dim < 0:
            return F.cat(terms, dim)
        return sum(terms)


class StackTransform(_PiecewiseTransform):
    """Applies ``tseq[i]`` to the ``i``-th slice along ``dim``, the slices joined as ``stack`` joins them:
    ``StackTransform([ExpTransform(), identity_transform], dim=1)`` exponentiates column 0 and keeps column 1.

    Args:
        tseq: the transforms, one per slice.
        dim: the dimension the slices are taken along.
        cache_size: 0, or 1 to remember the last ``(x, y)`` pair.
    """

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    def _slices(self, what: str, value: Tensor) -> list[Tensor]:
        check_piece_dim(what, value, self.dim, len(self.transforms))
        return [value.select(self.dim, i) for i in range(len(self.transforms))]

    def _call(self, x: Tensor) -> Tensor:
        return F.stack([t(piece) for t, piece in zip(self.transforms, self._slices("x", x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return F.stack([t.inv(piece) for t, piece in zip(self.transforms, self._slices("y", y))], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        pieces = zip(self.transforms, self._slices("x", x), self._slices("y", y))
        return F.stack([t.log_abs_det_jacobian(x_i, y_i) for t, x_i, y_i in pieces], self.dim)
