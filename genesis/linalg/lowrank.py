"""torch's randomized low-rank decompositions, ``svd_lowrank`` and ``pca_lowrank``, over Genesis ops.

Halko, Martinsson and Tropp, "Finding structure with randomness" (arXiv:0909.4061): a Gaussian random projection
of A is orthonormalized by QR (Algorithm 4.4, with ``niter`` subspace iterations), A is projected onto that basis,
and the small projected matrix is decomposed exactly (Algorithm 5.1). The result is exact when A's rank is at most
``q``; otherwise it approximates A's leading singular triplets. The random matrix comes from Genesis's generator, so
the results equal torch's only up to that randomness and the signs of singular vectors.
"""

from __future__ import annotations

from genesis import dtypes
from genesis import random as R
from genesis.linalg.solvers import qr
from genesis.linalg.spectral import svd
from genesis.tensor import Tensor


def _floating_dtype(A: Tensor) -> dtypes.dtype:
    """The dtype of the random projection, as torch: A's for float16/32/64, float32 otherwise."""
    return A.dtype if A.dtype in (dtypes.float16, dtypes.float32, dtypes.float64) else dtypes.float32


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """Q (..., m, q) with orthonormal columns such that ``Q Q^T (A - M)`` approximates ``A - M`` (Halko et al.,
    Algorithm 4.4: randomized range finder with ``niter`` power iterations, re-orthonormalized every half step)."""
    Omega = R.randn(A.shape[-1], q, dtype=_floating_dtype(A), device=A.device)

    def times(X: Tensor, transpose: bool) -> Tensor:
        left = A.mT if transpose else A
        product = left @ X
        return product if M is None else product - (M.mT if transpose else M) @ X

    Q = qr(times(Omega, False)).Q
    for _ in range(niter):
        Q = qr(times(Q, True)).Q
        Q = qr(times(Q, False)).Q
    return Q


def _svd_lowrank(A: Tensor, q: int, niter: int, M: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, V) of the randomized SVD (Halko et al., Algorithm 5.1), with A transposed first when it is wide."""
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = M.broadcast_to(A.shape)
    wide = m < n
    if wide:  # the range finder works on the tall side
        A = A.mT
        M = M.mT if M is not None else None
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A if M is None else Q.mT @ A - Q.mT @ M  # (..., q, n)
    U, S, Vh = svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mT
    return (V, S, U) if wide else (U, S, V)


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None
                ) -> tuple[Tensor, Tensor, Tensor]:
    """Approximate SVD ``A - M ≈ U diag(S) V^T`` of rank ``q`` (default 6) of (..., m, n) matrices by random
    projection with ``niter`` subspace iterations (default 2); ``M`` broadcasts to A's shape. Returns (U, S, V):
    U (..., m, q), S (..., q) descending, V (..., n, q), V itself (not V^T), as torch. Exact when rank(A - M) <= q.
    """
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2
                ) -> tuple[Tensor, Tensor, Tensor]:
    """Principal components of the rows of (..., m, n) matrices: ``svd_lowrank`` of A with its column means
    subtracted (when ``center``), rank ``q`` (default ``min(6, m, n)``). Returns (U, S, V); the principal directions
    are V's columns and ``S**2 / (m - 1)`` the variances along them. ValueError, as torch, for q outside
    [0, min(m, n)] or a negative niter.
    """
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter, None)
