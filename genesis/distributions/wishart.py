"""The Wishart distribution over positive-definite matrices, parameterized as the multivariate normal is."""

from __future__ import annotations

import math
from numbers import Number
from typing import Sequence

import genesis.ops as F
from genesis import dtypes, linalg, random
from genesis.distributions import constraints
from genesis.distributions.distribution import Distribution, ExponentialFamily
from genesis.distributions.gamma import Chi2
from genesis.distributions.multivariate_normal import _CholeskyMatrices, _lower_factor, _one_matrix
from genesis.tensor import Size, Tensor

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma function: ``sum_i digamma(x - i / 2)`` over ``i < p``."""
    halves = F.arange(p, dtype=x.dtype, device=x.device) / 2
    return F.digamma(x.unsqueeze(-1) - halves).sum(-1)


class Wishart(_CholeskyMatrices, ExponentialFamily):
    """The Wishart distribution ``W(df, Σ)`` over (p, p) positive-definite matrices: for an integer ``df``, the sum of
    ``df`` outer products ``x xᵀ`` of ``N(0, Σ)`` vectors. Give exactly one of ``covariance_matrix`` (Σ),
    ``precision_matrix`` (Σ^-1) or ``scale_tril`` (lower-triangular L with Σ = L Lᵀ).

    Samples come from the Bartlett decomposition ``L A Aᵀ Lᵀ`` (A lower-triangular, its diagonal the square roots of
    chi-squared draws with ``df - i`` degrees of freedom, standard normal draws below it), so ``rsample``
    differentiates through ``df`` and Σ. torch's ``max_try_correction`` (redrawing samples that round to a singular
    matrix) is accepted and not needed: the Bartlett factor's diagonal is kept above the dtype's smallest normal.

    Args:
        df: the degrees of freedom, greater than ``p - 1``.
        covariance_matrix: positive-definite scale matrices, shape ``batch_shape + (p, p)``.
        precision_matrix: their inverses.
        scale_tril: lower-triangular factors of the scale matrices with a positive diagonal.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df: Tensor | float, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        matrix, name = _one_matrix(covariance_matrix, precision_matrix, scale_tril)
        if matrix.ndim < 2:
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(matrix.shape[:-2])
            self.df = F.full(tuple(batch_shape), float(df), dtype=matrix.dtype, device=matrix.device)
        else:
            batch_shape = Size(F.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(tuple(batch_shape))
        event_shape = Size(matrix.shape[-2:])
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = _lower_factor(matrix, name)
        # The chi-squared laws of the Bartlett factor's diagonal: df, df - 1, ..., df - p + 1 degrees of freedom.
        steps = F.arange(p, dtype=self.df.dtype, device=self.df.device)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - steps)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        matrix_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(matrix_shape)
        new.df = self.df.expand(tuple(batch_shape))
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(matrix_shape))
        new._dist_chi2 = self._dist_chi2.expand(tuple(batch_shape) + (self.event_shape[-1],))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape) + tuple(self._event_shape)

    def _df_matrix(self) -> Tensor:
        """``df`` shaped to multiply batches of matrices."""
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        """``(df - p - 1) Σ``; NaN where ``df <= p + 1`` (no mode)."""
        factor = self.df - self.event_shape[-1] - 1
        factor = F.where(factor <= 0, math.nan, factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix
        diag = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def rsample(self, sample_shape: Sequence[int] = (), max_try_correction: int | None = None) -> Tensor:
        p = self.event_shape[-1]
        sample_shape = Size(sample_shape)
        tiny = dtypes.finfo(self.df.dtype).tiny
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=tiny)
        noise = random.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p, p), dtype=self.df.dtype,
                             device=self.df.device)
        below = F.tril(F.ones(p, p, dtype=dtypes.bool_, device=self.df.device), -1)
        bartlett = F.where(below, noise, 0.0) + F.diag_embed(diag)
        chol = self._unbroadcasted_scale_tril @ bartlett
        return chol @ chol.transpose(-2, -1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self.event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - F.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet
                - F.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1) / 2)

    def entropy(self) -> Tensor:
        nu, p = self.df, self.event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + F.mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        p = self.event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self.event_shape[-1]
        return ((y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + F.mvlgamma(y + (p + 1) / 2, p=p))
