"""Symmetric eigendecomposition and SVD by Jacobi rotations over Genesis ops, with torch's analytic gradients.

Rotations run on detached values (cyclic two-sided Jacobi for ``eigh``, one-sided Hestenes for ``svd``); the
gradient comes from the closed-form backward formulas, so it is exact for distinct eigen/singular values. The
sweeps take O(n^2) Python steps each: meant for modest sizes. Vectors are defined up to sign.
"""

from __future__ import annotations

from typing import Any

from genesis import dtypes
from genesis import functional as F
from genesis.autograd import Function
from genesis.linalg.solvers import _check_float, _check_square
from genesis.tensor import Tensor


def _jacobi_eigh(A: Tensor) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and eigenvectors of symmetric (..., n, n) A by cyclic Jacobi rotations (no graph)."""
    n = A.shape[-1]
    rows = F.arange_like(n, A)
    eye = (rows.unsqueeze(1) == rows.unsqueeze(0)).to(A.dtype)
    V = eye.expand(A.shape).contiguous()
    off_diagonal = 1.0 - eye
    scale = float(F.sum(A * A).item()) or 1.0
    tolerance = (1e-30 if A.dtype is dtypes.float64 else 1e-14) * scale
    for _ in range(60):
        if float(F.sum(A * A * off_diagonal).item()) <= tolerance:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                app, aqq, apq = A[..., p, p], A[..., q, q], A[..., p, q]
                rotate = apq != 0
                # The rotation (c, s) zeroing A[p, q]: t = tan(theta), the smaller root of t^2 + 2 tau t - 1 = 0.
                tau = (aqq - app) / (2 * F.where(rotate, apq, 1.0))
                sign = F.where(tau >= 0, 1.0, -1.0)
                t = F.where(rotate, sign / (tau.abs() + F.sqrt(1 + tau * tau)), 0.0)
                c = 1 / F.sqrt(1 + t * t)
                s = t * c
                J = eye.expand(A.shape)
                at_pp = ((rows.unsqueeze(1) == p) & (rows.unsqueeze(0) == p)) | (
                    (rows.unsqueeze(1) == q) & (rows.unsqueeze(0) == q))
                at_pq = (rows.unsqueeze(1) == p) & (rows.unsqueeze(0) == q)
                at_qp = (rows.unsqueeze(1) == q) & (rows.unsqueeze(0) == p)
                cb, sb = c.unsqueeze(-1).unsqueeze(-1), s.unsqueeze(-1).unsqueeze(-1)
                J = F.where(at_pp, cb, F.where(at_pq, sb, F.where(at_qp, -sb, J)))
                A = J.mT @ A @ J
                V = V @ J
    values = A.diagonal(0, -2, -1)
    values, order = F.sort(values, -1)
    V = F.gather(V, -1, order.unsqueeze(-2).expand(V.shape))
    return values, V


class _Eigh(Function):
    """Symmetric eigendecomposition with the analytic gradient
    ``gA = V (diag(gL) + (V^T gV) / (L_j - L_i) off the diagonal) V^T`` (torch's formula)."""

    @staticmethod
    def forward(ctx: Any, A: Tensor) -> tuple[Tensor, Tensor]:
        values, vectors = _jacobi_eigh(A)
        ctx.save_for_backward(values, vectors)
        return values, vectors

    @staticmethod
    def backward(ctx: Any, grad_values: Tensor | None, grad_vectors: Tensor | None) -> Tensor:
        values, vectors = ctx.saved_tensors
        inner = F.zeros_like_detached(vectors)
        if grad_vectors is not None:
            gap = values.unsqueeze(-2) - values.unsqueeze(-1)  # (..., n, n): L_j - L_i
            n = values.shape[-1]
            rows = F.arange_like(n, values)
            diagonal = rows.unsqueeze(1) == rows.unsqueeze(0)
            VtgV = vectors.mT @ grad_vectors
            VtgV = (VtgV - VtgV.mT) * 0.5  # only the skew part moves orthonormal eigenvectors
            inner = F.where(diagonal, 0.0, VtgV / F.where(diagonal, 1.0, gap))
        if grad_values is not None:
            inner = inner + F.diag_embed(grad_values)
        return vectors @ inner @ vectors.mT


def eigh(A: Tensor, UPLO: str = "L") -> tuple[Tensor, Tensor]:  # noqa: N803 - torch's name
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices (..., n, n), read from
    the lower (``UPLO="L"``) or upper triangle.

    Computed by cyclic Jacobi rotations over Genesis ops (quadratic Python steps per sweep: meant for modest n).
    Eigenvectors are defined up to sign (LAPACK's signs may differ); the gradient is torch's analytic one, which
    needs distinct eigenvalues.
    """
    _check_float("linalg.eigh", A)
    _check_square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    half = F.tril(A) if UPLO == "L" else F.triu(A)
    strict = F.tril(A, -1) if UPLO == "L" else F.triu(A, 1)
    # Values from the chosen triangle; the gradient goes to A as a whole, as torch's.
    symmetric = (half + strict.mT).detach() + (A - A.detach())
    values, vectors = _Eigh.apply(symmetric)
    return EighResult((values, vectors))


class EighResult(tuple):
    """(eigenvalues, eigenvectors) with attribute access, as torch.return_types.linalg_eigh."""

    @property
    def eigenvalues(self) -> Tensor:
        return self[0]

    @property
    def eigenvectors(self) -> Tensor:
        return self[1]


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803 - torch's name
    """Eigenvalues (ascending) of symmetric matrices; see ``eigh``."""
    return eigh(A, UPLO)[0]


def _jacobi_svd(A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Reduced SVD (U, S descending, Vh) of (..., m, n) A, m >= n, by one-sided Jacobi rotations (no graph)."""
    n = A.shape[-1]
    cols = F.arange_like(n, A)
    eye = (cols.unsqueeze(1) == cols.unsqueeze(0)).to(A.dtype)
    U = A.contiguous()
    V = eye.expand((*A.shape[:-2], n, n)).contiguous()
    eps = 1e-15 if A.dtype is dtypes.float64 else 1e-7
    for _ in range(60):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                up, uq = U[..., :, p], U[..., :, q]
                alpha, beta, gamma = F.sum(up * up, -1), F.sum(uq * uq, -1), F.sum(up * uq, -1)
                rotate = gamma.abs() > eps * F.sqrt(alpha * beta)
                if not bool(rotate.any().item()):
                    continue
                rotated = True
                # The rotation making columns p and q orthogonal (Hestenes): t = tan(theta).
                zeta = (beta - alpha) / (2 * F.where(rotate, gamma, 1.0))
                sign = F.where(zeta >= 0, 1.0, -1.0)
                t = F.where(rotate, sign / (zeta.abs() + F.sqrt(1 + zeta * zeta)), 0.0)
                c = (1 / F.sqrt(1 + t * t)).unsqueeze(-1)
                s = c * t.unsqueeze(-1)
                U = _rotate_columns(U, p, q, c, s)
                V = _rotate_columns(V, p, q, c, s)
        if not rotated:
            break
    S = F.sqrt(F.sum(U * U, -2))  # (..., n)
    S, order = F.sort(S, -1, descending=True)
    U = F.gather(U, -1, order.unsqueeze(-2).expand(U.shape))
    V = F.gather(V, -1, order.unsqueeze(-2).expand(V.shape))
    U = U / F.where(S == 0, 1.0, S).unsqueeze(-2)
    return U, S, V.mT


def _rotate_columns(X: Tensor, p: int, q: int, c: Tensor, s: Tensor) -> Tensor:
    """Columns p and q of X replaced by ``c x_p - s x_q`` and ``s x_p + c x_q``."""
    xp, xq = X[..., :, p], X[..., :, q]
    n = X.shape[-1]
    cols = F.arange_like(n, X)
    new_p, new_q = (c * xp - s * xq).unsqueeze(-1), (s * xp + c * xq).unsqueeze(-1)
    return F.where(cols == p, new_p, F.where(cols == q, new_q, X))


class _Svd(Function):
    """Reduced SVD with torch's analytic gradient (distinct non-zero singular values)."""

    @staticmethod
    def forward(ctx: Any, A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        wide = A.shape[-2] < A.shape[-1]
        U, S, Vh = _jacobi_svd(A.mT if wide else A)
        if wide:
            U, Vh = Vh.mT, U.mT
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx: Any, gU: Tensor | None, gS: Tensor | None, gVh: Tensor | None) -> Tensor:
        U, S, Vh = ctx.saved_tensors
        m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
        if gU is None and gVh is None:
            return U @ F.diag_embed(gS) @ Vh if gS is not None else None
        V = Vh.mT
        inner = F.zeros_like_detached(U[..., :k, :k])
        if gU is not None:
            UtgU = U.mT @ gU
            inner = inner + (UtgU - UtgU.mT) * S.unsqueeze(-2)
        if gVh is not None:
            VtgV = V.mT @ gVh.mT
            inner = inner + S.unsqueeze(-1) * (VtgV - VtgV.mT)
        squares = S * S
        gap = squares.unsqueeze(-2) - squares.unsqueeze(-1)
        rows = F.arange_like(k, S)
        diagonal = rows.unsqueeze(1) == rows.unsqueeze(0)
        inner = F.where(diagonal, 0.0, inner / F.where(diagonal, 1.0, gap))
        if gS is not None:
            inner = inner + F.diag_embed(gS)
        if m > k and gU is not None:
            gA = U @ inner
            scaled = gU / S.unsqueeze(-2)
            gA = gA + scaled - U @ (U.mT @ scaled)
            return gA @ Vh
        if n > k and gVh is not None:
            gA = inner @ Vh
            scaled = gVh.mT / S.unsqueeze(-2)
            gA = gA + (scaled - V @ (V.mT @ scaled)).mT
            return U @ gA
        return U @ inner @ Vh


class SVDResult(tuple):
    """(U, S, Vh) with attribute access, as torch.return_types.linalg_svd."""

    @property
    def U(self) -> Tensor:  # noqa: N802 - torch's name
        return self[0]

    @property
    def S(self) -> Tensor:  # noqa: N802 - torch's name
        return self[1]

    @property
    def Vh(self) -> Tensor:  # noqa: N802 - torch's name
        return self[2]


def svd(A: Tensor, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition ``A = U diag(S) Vh`` of (..., m, n) matrices, S descending.

    Computed by one-sided Jacobi rotations over Genesis ops (meant for modest sizes). Singular vectors are defined
    up to sign (LAPACK's may differ). Only ``full_matrices=False`` (the reduced factors) is implemented; the gradient
    is torch's analytic one, which needs distinct non-zero singular values.
    """
    _check_float("linalg.svd", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.svd: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    if full_matrices and A.shape[-2] != A.shape[-1]:
        raise NotImplementedError("linalg.svd: full_matrices=True of a non-square matrix is not implemented in "
                                  "Genesis; pass full_matrices=False")
    return SVDResult(_Svd.apply(A))


def svdvals(A: Tensor) -> Tensor:
    """Singular values (descending) of (..., m, n) matrices, with the gradient ``U diag(gS) Vh``."""
    return svd(A, full_matrices=False)[1]


def _cutoff(op: str, S: Tensor, m: int, n: int, atol: Any, rtol: Any) -> Tensor:
    """torch's threshold below which singular values count as zero: max(atol, rtol * S_max)."""
    if rtol is None:
        eps = 2.220446049250313e-16 if S.dtype is dtypes.float64 else 1.1920928955078125e-07
        rtol = 0.0 if atol is not None and atol > 0 else eps * max(m, n)
    largest = S[..., :1] if S.shape[-1] else F.zeros_like_detached(S[..., :0]).sum(-1, keepdim=True)
    return F.maximum(largest.detach() * rtol, F.zeros_like_detached(largest) + (atol or 0.0))


def pinv(A: Tensor, *, atol: float | None = None, rtol: float | None = None, hermitian: bool = False) -> Tensor:
    """Moore-Penrose pseudo-inverse through the SVD: singular values at or below max(atol, rtol * S_max) count as
    zero (rtol defaults to eps * max(m, n)). Differentiable where the kept singular values are distinct."""
    _check_float("linalg.pinv", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.pinv(A): The input tensor A must have at least 2 dimensions, got {A.ndim}")
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > _cutoff("linalg.pinv", S, A.shape[-2], A.shape[-1], atol, rtol)
    inverse = F.where(keep, 1 / F.where(keep, S, 1.0), 0.0)
    return (Vh.mT * inverse.unsqueeze(-2)) @ U.mT


def matrix_rank(A: Tensor, *, atol: float | None = None, rtol: float | None = None, hermitian: bool = False
                ) -> Tensor:
    """Number of singular values above max(atol, rtol * S_max), int64."""
    _check_float("linalg.matrix_rank", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_rank: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    S = svdvals(A.detach())
    return F.sum(S > _cutoff("linalg.matrix_rank", S, A.shape[-2], A.shape[-1], atol, rtol), -1)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: ``pinv`` with singular values at or below ``rcond * S_max`` cut."""
    return pinv(input, rtol=rcond)


class LstsqResult(tuple):
    """(solution, residuals, rank, singular_values), as torch.return_types.linalg_lstsq."""

    @property
    def solution(self) -> Tensor:
        return self[0]

    @property
    def residuals(self) -> Tensor:
        return self[1]

    @property
    def rank(self) -> Tensor:
        return self[2]

    @property
    def singular_values(self) -> Tensor:
        return self[3]


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> LstsqResult:
    """Least-squares solution X minimizing ``|A X - B|`` for (..., m, n) A and (..., m, k) or (..., m) B.

    X is the minimum-norm solution ``pinv(A) @ B`` (singular values at or below ``rcond * S_max`` cut); for
    full-rank A it is what every LAPACK driver returns. The other outputs follow torch's ``driver`` rules:
    ``rank`` for gelsy/gelsd/gelss, ``singular_values`` for gelsd/gelss, ``residuals`` (squared column norms of
    ``A X - B``) when m > n, A is full-rank and the driver is not gelsy; empty tensors otherwise.
    """
    _check_float("linalg.lstsq", A)
    if A.ndim < 2:
        raise RuntimeError(f"torch.linalg.lstsq: input must have at least 2 dimensions, got {A.ndim}")
    driver = driver or ("gelsy" if A.device.type == "cpu" else "gels")
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), but "
                           f"got {driver}")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {A.dtype.name} and other's dtype {B.dtype.name}")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if rhs.shape[-2] != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got {m} and "
                           f"{rhs.shape[-2]}")
    if rcond is None:
        eps = 2.220446049250313e-16 if A.dtype is dtypes.float64 else 1.1920928955078125e-07
        rcond = eps * max(m, n)
    X = pinv(A, rtol=rcond) @ rhs
    empty = F.zeros_like_detached(A).reshape(-1)[:0]
    rank = matrix_rank(A, rtol=rcond) if driver != "gels" else empty.to(dtypes.int64)
    values = svdvals(A) if driver in ("gelsd", "gelss") else empty
    full_rank = m > n and bool((matrix_rank(A, rtol=rcond) == n).all().item()) if A.numel() else False
    residuals = empty
    if driver != "gelsy" and full_rank:
        residuals = F.sum((A @ X - rhs) ** 2, -2)
        residuals = residuals.squeeze(-1) if vector else residuals
    return LstsqResult((X.squeeze(-1) if vector else X, residuals, rank, values))
