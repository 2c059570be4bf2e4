"""Transforms from unconstrained reals onto structured sets: the simplex by stick-breaking, lower Cholesky factors,
positive-definite matrices and Cholesky factors of correlation matrices. The public names are re-exported by
:mod:`genesis.distributions.transforms`.
"""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis import linalg
from genesis.distributions import constraints
from genesis.distributions.transform_base import Transform
from genesis.distributions.utils import clipped_sigmoid, eps, tiny, tril_matrix_to_vec, vec_to_tril_matrix
from genesis.nn.functional import logsigmoid, pad
from genesis.tensor import Tensor


def _stick_offset(k: int, x: Tensor) -> Tensor:
    """``[k, k - 1, ..., 1]``: stick-breaking shifts logit ``i`` by ``-log(k - i)`` so that ``x = 0`` maps to the
    centre of the simplex."""
    return F.arange(k, 0, -1, dtype=x.dtype, device=x.device)


class StickBreakingTransform(Transform):
    """From ``R^K`` onto the simplex in ``R^(K + 1)`` by stick-breaking: ``z_i = sigmoid(x_i - log(K - i))`` is the
    fraction of the remaining stick given to coordinate ``i``, and the last coordinate takes what is left.

    Bijective (suits HMC), but it mixes coordinates, so ``SoftmaxTransform`` suits coordinate-wise optimization
    better. It is the iterated sigmoid behind the stick-breaking construction of the Dirichlet distribution.
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        z = clipped_sigmoid(x - _stick_offset(x.shape[-1], x).log())
        z_cumprod = (1 - z).cumprod(-1)
        # y_i = z_i prod_{j < i} (1 - z_j), and y_K = prod_j (1 - z_j).
        return pad(z, (0, 1), value=1.0) * pad(z_cumprod, (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        # The stick left before each coordinate; clamped, as it reaches 0 in rounding when y_K ~ 0.
        sf = (1 - y_crop.cumsum(-1)).clamp(min=tiny(y.dtype))
        return y_crop.log() - sf.log() + _stick_offset(y_crop.shape[-1], y).log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - _stick_offset(x.shape[-1], x).log()
        # The Jacobian is triangular with diagonal z_i (1 - z_i) prod_{j < i} (1 - z_j) = y_i (1 - z_i), and
        # 1 - sigmoid(x) = exp(-x) sigmoid(x).
        return (-x + logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """From square matrices onto lower-triangular ones with a positive diagonal: the strict lower triangle is kept and
    the diagonal exponentiated. Not bijective (the upper triangle is dropped), so it has no log-Jacobian."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + F.diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + F.diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class PositiveDefiniteTransform(Transform):
    """From square matrices onto positive-definite ones: ``L Lᵀ`` with ``L = LowerCholeskyTransform()(x)``; the
    inverse takes the Cholesky factor. Not bijective, so it has no log-Jacobian."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """From ``R^(D(D-1)/2)`` onto Cholesky factors of ``D × D`` correlation matrices (lower triangular, positive
    diagonal, rows of unit norm).

    ``x`` fills the strict lower triangle row by row; each row then goes through a signed stick-breaking:
    ``r = tanh(x)`` lies in (-1, 1), ``z = r²`` is broken as a stick, and ``y = sign(r) sqrt(stick piece)``, with the
    diagonal taking what is left of the row's unit norm. The log-Jacobian is that of ``x`` to the flattened strict
    lower triangle of ``y`` (Stan reference manual, "Cholesky factors of correlation matrices").
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        x = x.tanh().clamp(min=-1 + eps(x.dtype), max=1 - eps(x.dtype))
        r = vec_to_tril_matrix(x, diag=-1)
        # sign(r) sqrt(z prod_{j < i} (1 - z_j)) = r sqrt(prod_{j < i} (1 - z_j)) with z = r².
        z1m_cumprod_sqrt = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + F.eye(r.shape[-1], dtype=r.dtype, device=r.device)  # the diagonal's own factor is 1
        return r * pad(z1m_cumprod_sqrt[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        y_cumsum = 1 - (y * y).cumsum(-1)
        y_cumsum_shifted = pad(y_cumsum[..., :-1], (1, 0), value=1.0)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(y_cumsum_shifted, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        # Entry (i, j - 1), on diagonal -2, is the stick left before the strict-lower entry (i, j), for j >= 1 (before
        # column 0 the stick is 1, and log 1 = 0).
        stick_breaking_logdet = 0.5 * tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)
