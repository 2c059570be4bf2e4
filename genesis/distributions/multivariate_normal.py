"""The multivariate normal distribution, parameterized by a covariance, a precision or a lower Cholesky factor."""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis import linalg, random
from genesis.distributions import constraints
from genesis.distributions.distribution import Distribution
from genesis.distributions.utils import lazy_property
from genesis.tensor import Size, Tensor


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Batched matrix-vector product with broadcasting batch dimensions."""
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """The squared Mahalanobis distance ``x^T (L L^T)^-1 x`` = ``|L^-1 x|²`` over broadcast batch dimensions."""
    n = bx.shape[-1]
    batch = F.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    solved = linalg.solve_triangular(bL.expand(tuple(batch) + (n, n)), bx.expand(tuple(batch) + (n,)).unsqueeze(-1),
                                     upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    """The lower Cholesky factor of ``P^-1``, through the Cholesky factor of ``P`` with its axes reversed."""
    Lf = linalg.cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).transpose(-2, -1)
    eye = F.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return linalg.solve_triangular(L_inv, eye.expand(L_inv.shape), upper=False)


def _one_matrix(covariance_matrix: Tensor | None, precision_matrix: Tensor | None,
                scale_tril: Tensor | None) -> tuple[Tensor, str]:
    """The one matrix parameter given (and its name), as the Cholesky-parameterized families take it."""
    if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
        raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    return next((m, n) for m, n in ((scale_tril, "scale_tril"), (covariance_matrix, "covariance_matrix"),
                                    (precision_matrix, "precision_matrix")) if m is not None)


def _lower_factor(matrix: Tensor, name: str) -> Tensor:
    """The lower Cholesky factor L (Σ = L Lᵀ) of the parameter ``matrix`` named ``name``."""
    if name == "scale_tril":
        return matrix
    return linalg.cholesky(matrix) if name == "covariance_matrix" else _precision_to_scale_tril(matrix)


class _CholeskyMatrices:
    """The three views of a distribution's scale kept as its lower Cholesky factor ``_unbroadcasted_scale_tril``,
    expanded to ``_matrix_shape()``: shared by :class:`MultivariateNormal` and ``Wishart``."""

    _unbroadcasted_scale_tril: Tensor

    def _matrix_shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor L of the covariance (the scale matrix)."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """The covariance (the scale matrix) Σ = L Lᵀ."""
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """Its inverse Σ^-1."""
        return F.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())


class MultivariateNormal(_CholeskyMatrices, Distribution):
    """The multivariate normal distribution ``N(loc, Σ)``; give exactly one of ``covariance_matrix`` (Σ),
    ``precision_matrix`` (Σ^-1) or ``scale_tril`` (lower-triangular L with Σ = L Lᵀ).

    Args:
        loc: the mean, shape ``batch_shape + (n,)``.
        covariance_matrix: positive-definite covariances, shape ``batch_shape + (n, n)``.
        precision_matrix: positive-definite precisions, shape ``batch_shape + (n, n)``.
        scale_tril: lower-triangular factors with a positive diagonal, shape ``batch_shape + (n, n)``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        matrix, name = _one_matrix(covariance_matrix, precision_matrix, scale_tril)
        if matrix.ndim < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = Size(F.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = _lower_factor(matrix, name)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) +
                                                                    tuple(self._event_shape))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = random.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self) -> Tensor:
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
