"""``LowRankMultivariateNormal``: a multivariate normal whose covariance is ``W Wᵀ + diag(D)``.

Densities and entropies never form the ``n × n`` covariance: with the ``m × m`` capacitance matrix
``C = I + Wᵀ D^-1 W`` (``m`` the rank), the Woodbury identity ``(W Wᵀ + D)^-1 = D^-1 - D^-1 W C^-1 Wᵀ D^-1`` gives
Mahalanobis distances and the matrix determinant lemma ``log|W Wᵀ + D| = log|C| + log|D|`` gives the log-determinant.
"""

from __future__ import annotations

import math
from typing import Sequence

import genesis.ops as F
from genesis import linalg, random
from genesis.distributions import constraints
from genesis.distributions.distribution import Distribution
from genesis.distributions.multivariate_normal import _batch_mahalanobis, _batch_mv
from genesis.distributions.utils import lazy_property
from genesis.tensor import Size, Tensor


def _eye_like(a: Tensor, n: int) -> Tensor:
    return F.eye(n, dtype=a.dtype, device=a.device)


def _batch_capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """The lower Cholesky factor of the capacitance matrix ``I + Wᵀ D^-1 W``, over batches of ``W`` and ``D``."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return linalg.cholesky(Wt_Dinv @ W + _eye_like(W, W.shape[-1]))


def _batch_lowrank_logdet(W: Tensor, D: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``log|W Wᵀ + D| = log|C| + log|D|`` (the matrix determinant lemma)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W: Tensor, D: Tensor, x: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``xᵀ (W Wᵀ + D)^-1 x = xᵀ D^-1 x - |L_C^-1 Wᵀ D^-1 x|²`` (the Woodbury identity)."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    mahalanobis_term1 = (x.pow(2) / D).sum(-1)
    mahalanobis_term2 = _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)
    return mahalanobis_term1 - mahalanobis_term2


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal ``N(loc, W Wᵀ + diag(D))`` with ``W = cov_factor`` (``n × m``) and ``D = cov_diag``.

    Draws are ``loc + W ε_W + sqrt(D) ε_D`` with standard normal ``ε_W`` (length ``m``) and ``ε_D`` (length ``n``);
    ``log_prob`` and ``entropy`` cost ``O(n m²)`` through the capacitance matrix.

    Args:
        loc: the mean, shape ``batch_shape + (n,)``.
        cov_factor: the low-rank factor ``W``, shape ``batch_shape + (n, m)``.
        cov_diag: the positive diagonal ``D``, shape ``batch_shape + (n,)``.
        validate_args: check the parameters and ``log_prob``'s values (default: the global setting).
    """

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: bool | None = None) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.ndim < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = F.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                   cov_diag.unsqueeze(-1))
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> LowRankMultivariateNormal:
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
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

    @lazy_property
    def variance(self) -> Tensor:  # type: ignore[override]
        """The diagonal of the covariance: ``sum_j W_ij² + D_i``."""
        variance = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return variance.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance, as ``D^½ chol(I + D^-½ W Wᵀ D^-½)``: the inner matrix has
        eigenvalues of at least 1, so its factorization is well conditioned (Rasmussen and Williams, GPML 3.4.3)."""
        n = self._event_shape[0]
        cov_diag_sqrt_unsqueeze = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / cov_diag_sqrt_unsqueeze
        K = Dinvsqrt_W @ Dinvsqrt_W.mT + _eye_like(Dinvsqrt_W, n)
        return (cov_diag_sqrt_unsqueeze * linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """The covariance ``W Wᵀ + diag(D)``."""
        W = self._unbroadcasted_cov_factor
        return (W @ W.mT + F.diag_embed(self._unbroadcasted_cov_diag)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The precision by the Woodbury identity: ``D^-1 - Aᵀ A`` with ``A = L_C^-1 Wᵀ D^-1``."""
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision_matrix = F.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return precision_matrix.expand(self._matrix_shape())

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        W_shape = tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:])
        eps_W = random.randn(W_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_D = random.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _log_det(self) -> Tensor:
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                     self._capacitance_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                       value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self) -> Tensor:
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
