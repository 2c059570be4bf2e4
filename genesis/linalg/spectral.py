"""Symmetric eigendecomposition and SVD by Jacobi rotations over Genesis ops, with torch's analytic gradients.

Rotations run on detached values (cyclic two-sided Jacobi for ``eigh``, one-sided Hestenes for ``svd``), n/2
disjoint ones at a time in Brent and Luk's parallel order: a sweep is n - 1 rounds of a few batched ops, and
about log2(n) + 5 sweeps converge. The gradient comes from the closed-form backward formulas, so it is exact for
distinct eigen/singular values. Vectors are defined up to sign.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Function
from genesis.linalg import native
from genesis.linalg.solvers import _check_float, _check_square
from genesis.linalg.solvers import qr as _qr
from genesis.ops.autocast import one_op
from genesis.tensor import Tensor, tensor

_MAX_SWEEPS = 30  # Jacobi converges quadratically: ~log2(n) + 5 sweeps reach rounding level
# The rotations run in double whatever the input: each of the ~n^2 log n rotations rounds, and in float32 their
# errors add up to ~300 eps at n = 200; sweeps stop at the input dtype's rounding level, so this costs no sweep.
_WORKING_DTYPE = dtypes.float64


def _parallel_order(n: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """Brent and Luk's parallel Jacobi ordering for even n (the round-robin "circle method"): the first round's
    order of the indices 0..n-1, whose halves pair position by position (k with k + n/2) into n/2 disjoint
    rotations, and the fixed permutation of positions that leads from one round to the next. n - 1 rounds pair
    every two indices exactly once and come back to the first order."""
    players, half = list(range(n)), n // 2
    first = players[:half] + players[half:][::-1]
    players = players[:1] + players[-1:] + players[1:-1]  # the circle turns around its fixed first player
    second = players[:half] + players[half:][::-1]
    step = [first.index(i) for i in second]
    return tensor(first, dtype=dtypes.int64, device=like.device), tensor(step, dtype=dtypes.int64, device=like.device)


def _rotation(x: Tensor, y: Tensor, xy: Tensor) -> tuple[Tensor, Tensor]:
    """Cosine and sine of the Jacobi rotation that diagonalizes the symmetric 2x2 ``[[x, xy], [xy, y]]``:
    ``t = tan(theta)`` is the smaller root of ``t^2 + 2 tau t - 1 = 0``, ``tau = (y - x) / (2 xy)``; no rotation
    where ``xy`` is zero."""
    rotate = xy != 0
    tau = (y - x) / (2 * F.where(rotate, xy, 1.0))
    sign = F.where(tau >= 0, 1.0, -1.0)
    t = F.where(rotate, sign / (tau.abs() + F.sqrt(1 + tau * tau)), 0.0)
    c = 1 / F.sqrt(1 + t * t)
    return c, t * c


def _rotate_rows(X: Tensor, c: Tensor, s: Tensor, step: Tensor) -> Tensor:
    """X (..., N, k) with rows i and i + N/2 rotated pair by pair (``c x - s y`` and ``s x + c y``, c and s of shape
    (..., N/2, 1)), then moved to the next round's order. Rows only: gathering rows is a block copy, gathering
    columns an element-wise one (several times slower on CPU)."""
    half = X.shape[-2] // 2
    x, y = X[..., :half, :], X[..., half:, :]
    return F.index_select(F.cat([c * x - s * y, s * x + c * y], -2), -2, step)


def _pad_to_even(X: Tensor, dims: tuple[int, ...]) -> Tensor:
    """X with a zero row or column appended along each of ``dims`` of odd size: a zero index never rotates, so
    the parallel ordering can pair every index."""
    for dim in dims:
        if X.shape[dim] % 2:
            X = F.cat([X, F.zeros_like_detached(X.narrow(dim, 0, 1))], dim)
    return X


def _identity_rows(order: Tensor, batch: tuple[int, ...], like: Tensor) -> Tensor:
    """The (*batch, N, N) identity with its rows in ``order``: the rotations' accumulator, in the rounds' order."""
    columns = F.arange_like(order.shape[0], like)
    eye = (order.unsqueeze(1) == columns.unsqueeze(0)).to(like.dtype)
    return eye.expand((*batch, *eye.shape)).contiguous()


def _unpadded(X: Tensor, order: Tensor, n: int, dim: int) -> Tensor:
    """X without the entry of the padded index ``n`` along ``dim`` (X itself when nothing was padded)."""
    if order.shape[0] == n:
        return X
    return F.index_select(X, dim, F.nonzero(order != n).squeeze(-1))


def _largest(ratios: Tensor) -> float:
    """The largest of a batch's convergence measures, read once per sweep (0 for an empty batch)."""
    return float(F.amax(ratios).item()) if ratios.numel() else 0.0


def _jacobi_eigh(A: Tensor) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and eigenvectors of symmetric (..., n, n) A by parallel cyclic Jacobi (no graph).

    Each sweep is n - 1 rounds of n/2 disjoint rotations J in Brent and Luk's order, applied as a few batched ops;
    the matrix is kept in the round's order, so the pairs are its two halves. ``J^T A J = J^T (J^T A)^T`` for
    symmetric A, so both sides rotate rows. Sweeps stop once every matrix's off-diagonal norm is below
    sqrt(n) eps |A| or the largest stops falling (rounding level). Brent and Luk, "The solution of singular-value
    and symmetric eigenvalue problems on multiprocessor arrays" (1985).
    """
    n, dtype = A.shape[-1], A.dtype
    A = _pad_to_even(A.to(_WORKING_DTYPE), (-2, -1))
    order, step = _parallel_order(A.shape[-1], A)
    A = F.index_select(F.index_select(A, -2, order), -1, order)
    Vt = _identity_rows(order, tuple(A.shape[:-2]), A)  # the eigenvectors as rows
    rows = F.arange_like(A.shape[-1], A)
    off_diagonal = (rows.unsqueeze(1) != rows.unsqueeze(0)).to(A.dtype)
    squares = F.sum(A * A, (-2, -1))
    squares = F.where(squares == 0, 1.0, squares)
    # Off-diagonal mass of sqrt(n) eps |A|_F is the rotations' rounding level: a further sweep cannot lower it.
    tolerance = A.shape[-1] * dtypes.finfo(dtype).eps ** 2
    half, previous = A.shape[-1] // 2, float("inf")
    for _ in range(_MAX_SWEEPS):
        residual = _largest(F.sum(A * A * off_diagonal, (-2, -1)) / squares)
        if residual <= tolerance or residual >= previous:
            break
        previous = residual
        for _ in range(A.shape[-1] - 1):
            diagonal = A.diagonal(0, -2, -1)
            c, s = _rotation(diagonal[..., :half], diagonal[..., half:], A[..., :half, half:].diagonal(0, -2, -1))
            c, s = c.unsqueeze(-1), s.unsqueeze(-1)
            A = _rotate_rows(_rotate_rows(A, c, s, step).mT, c, s, step)
            Vt = _rotate_rows(Vt, c, s, step)
    values, Vt = _unpadded(A.diagonal(0, -2, -1), order, n, -1), _unpadded(Vt[..., :n], order, n, -2)
    values, order = F.sort(values, -1)
    V = F.gather(Vt, -2, order.unsqueeze(-1).expand(Vt.shape)).mT
    return values.to(dtype), V.to(dtype)


class _Eigh(Function):
    """Symmetric eigendecomposition with the analytic gradient
    ``gA = V (diag(gL) + (V^T gV) / (L_j - L_i) off the diagonal) V^T`` (torch's formula)."""

    @staticmethod
    def forward(ctx: Any, A: Tensor) -> tuple[Tensor, Tensor]:
        if A.dtype in native.DTYPES and A.shape[-1]:
            nd = A.ndarray
            values, vectors = (Tensor._wrap(v) for v in nd.backend.eigh(nd))
        else:
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


@one_op("linalg_eigh")
def eigh(A: Tensor, UPLO: str = "L") -> tuple[Tensor, Tensor]:  # torch's name
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices (..., n, n), read from
    the lower (``UPLO="L"``) or upper triangle.

    Float32 and float64 matrices are decomposed by the backend's library (LAPACK's syevd through torch on the CPU,
    cuSOLVER's on cuda); other floating dtypes by parallel cyclic Jacobi rotations over Genesis ops, in double
    precision (about n log n batched steps: fine for n in the hundreds). Eigenvectors are defined up to sign
    (cuSOLVER's and the rotations' signs may differ from LAPACK's); the gradient is torch's analytic one, which
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
    return EighResult(values, vectors)


class EighResult(NamedTuple):
    """(eigenvalues, eigenvectors) with attribute access, as torch.return_types.linalg_eigh."""

    eigenvalues: Tensor
    eigenvectors: Tensor


@one_op("linalg_eigh")
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # torch's name
    """Eigenvalues (ascending) of symmetric matrices; see ``eigh``."""
    return eigh(A, UPLO)[0]


def _jacobi_svd(A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Reduced SVD (U, S descending, Vh) of (..., m, n) A, m >= n, by parallel one-sided Jacobi (no graph).

    Hestenes' rotations orthogonalize the columns of A pair by pair, in Brent and Luk's parallel order (see
    ``_jacobi_eigh``), held as the rows of ``Ut``; sweeps stop once no pair is further from orthogonal than eps.
    The column norms are S.
    """
    n, dtype = A.shape[-1], A.dtype
    Ut = _pad_to_even(A.mT.to(_WORKING_DTYPE), (-2,))
    order, step = _parallel_order(Ut.shape[-2], Ut)
    Ut = F.index_select(Ut, -2, order)
    Vt = _identity_rows(order, tuple(Ut.shape[:-2]), Ut)
    # Columns count as orthogonal below sqrt(m) eps, the rounding level of their dot product (LAPACK's gesvj).
    eps = dtypes.finfo(dtype).eps * A.shape[-2] ** 0.5
    half = Ut.shape[-2] // 2
    for _ in range(_MAX_SWEEPS):
        rotated = []
        for _ in range(Ut.shape[-2] - 1):
            x, y = Ut[..., :half, :], Ut[..., half:, :]
            alpha, beta, gamma = F.sum(x * x, -1), F.sum(y * y, -1), F.sum(x * y, -1)
            rotate = gamma.abs() > eps * F.sqrt(alpha * beta)
            rotated.append(rotate.any())
            c, s = _rotation(alpha, beta, F.where(rotate, gamma, 0.0))
            c, s = c.unsqueeze(-1), s.unsqueeze(-1)
            Ut = _rotate_rows(Ut, c, s, step)
            Vt = _rotate_rows(Vt, c, s, step)
        if not rotated or not bool(F.stack(rotated).any().item()):
            break
    Ut, Vt = _unpadded(Ut, order, n, -2), _unpadded(Vt[..., :n], order, n, -2)
    S = F.sqrt(F.sum(Ut * Ut, -1))  # (..., n)
    S, order = F.sort(S, -1, descending=True)
    Ut = F.gather(Ut, -2, order.unsqueeze(-1).expand(Ut.shape))
    Vt = F.gather(Vt, -2, order.unsqueeze(-1).expand(Vt.shape))
    U = (Ut / F.where(S == 0, 1.0, S).unsqueeze(-1)).mT
    return U.to(dtype), S.to(dtype), Vt.to(dtype)


class _Svd(Function):
    """Reduced SVD with torch's analytic gradient (distinct non-zero singular values)."""

    @staticmethod
    def forward(ctx: Any, A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        wide = A.shape[-2] < A.shape[-1]
        if A.dtype in native.DTYPES and min(A.shape[-2:]):
            nd = (A.mT if wide else A).ndarray
            U, S, Vh = (Tensor._wrap(v) for v in nd.backend.svd(nd))
        else:
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


class SVDResult(NamedTuple):
    """(U, S, Vh) with attribute access, as torch.return_types.linalg_svd."""

    U: Tensor
    S: Tensor
    Vh: Tensor


@one_op("linalg_svd")
def svd(A: Tensor, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition ``A = U diag(S) Vh`` of (..., m, n) matrices, S descending.

    Computed by parallel one-sided Jacobi rotations over Genesis ops, in double precision (about n log n batched
    steps: fine for n in the hundreds). Singular vectors are defined up to sign (LAPACK's may differ).
    ``full_matrices=True`` (torch's default) completes U (..., m, m) and Vh (..., n, n) to orthogonal matrices;
    ``False`` returns the reduced factors U (..., m, k), Vh (..., k, n), k = min(m, n). The gradient is torch's
    analytic one, which needs distinct non-zero singular values; the completing vectors carry none, as torch's.
    """
    _check_float("linalg.svd", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.svd: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    U, S, Vh = _Svd.apply(A)
    if full_matrices and A.shape[-2] > A.shape[-1]:
        U = F.cat([U, _complement(U)], -1)
    elif full_matrices and A.shape[-2] < A.shape[-1]:
        Vh = F.cat([Vh, _complement(Vh.mT).mT], -2)
    return SVDResult(U, S, Vh)


def _complement(Q: Tensor) -> Tensor:
    """Orthonormal columns completing the orthonormal columns of Q (..., m, k) to a basis of m-space, with no
    gradient (torch's full-matrices backward reads only the first k columns)."""
    return _qr(Q.detach(), "complete").Q[..., :, Q.shape[-1]:]


@one_op("linalg_svd")
def svdvals(A: Tensor) -> Tensor:
    """Singular values (descending) of (..., m, n) matrices, with the gradient ``U diag(gS) Vh``."""
    return svd(A, full_matrices=False)[1]


def _cutoff(op: str, S: Tensor, m: int, n: int, atol: Any, rtol: Any) -> Tensor:
    """torch's threshold below which singular values count as zero: max(atol, rtol * S_max)."""
    # Tensor thresholds hold one value per matrix of the batch: a trailing dim to compare with the row of values.
    if isinstance(atol, Tensor):
        atol = atol.unsqueeze(-1)
    if isinstance(rtol, Tensor):
        rtol = rtol.unsqueeze(-1)
    if rtol is None:
        eps = 2.220446049250313e-16 if S.dtype is dtypes.float64 else 1.1920928955078125e-07
        if isinstance(atol, Tensor):
            rtol = F.where(atol > 0, 0.0, eps * max(m, n))
        else:
            rtol = 0.0 if atol is not None and atol > 0 else eps * max(m, n)
    largest = S[..., :1] if S.shape[-1] else F.zeros_like_detached(S[..., :0]).sum(-1, keepdim=True)
    return F.maximum(largest.detach() * rtol, F.zeros_like_detached(largest) + (0.0 if atol is None else atol))


@one_op("linalg_pinv")
def pinv(A: Tensor, rcond: Any = None, hermitian: bool = False, *, atol: float | None = None,
         rtol: float | None = None) -> Tensor:
    """Moore-Penrose pseudo-inverse through the SVD: singular values at or below max(atol, rtol * S_max) count as
    zero (rtol defaults to eps * max(m, n)). Differentiable where the kept singular values are distinct.

    ``rcond`` is torch's older name for ``rtol`` (``pinv(A, 1e-5)``)."""
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError("linalg.pinv: rcond and rtol cannot both be given (rcond is the older name of rtol)")
        rtol = rcond
    _check_float("linalg.pinv", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.pinv(A): The input tensor A must have at least 2 dimensions, got {A.ndim}")
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > _cutoff("linalg.pinv", S, A.shape[-2], A.shape[-1], atol, rtol)
    inverse = F.where(keep, 1 / F.where(keep, S, 1.0), 0.0)
    return (Vh.mT * inverse.unsqueeze(-2)) @ U.mT


def matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *, atol: float | None = None,
                rtol: float | None = None) -> Tensor:
    """Number of singular values above max(atol, rtol * S_max), int64.

    ``tol`` is torch's older absolute threshold (``matrix_rank(A, 1e-5)``: ``atol=tol, rtol=0``)."""
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError("linalg.matrix_rank: tol cannot be given with atol or rtol (tol is the older name of "
                               "an absolute threshold)")
        atol, rtol = tol, 0.0
    _check_float("linalg.matrix_rank", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_rank: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    S = svdvals(A.detach())
    return F.sum(S > _cutoff("linalg.matrix_rank", S, A.shape[-2], A.shape[-1], atol, rtol), -1)


@one_op("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: ``pinv`` with singular values at or below ``rcond * S_max`` cut."""
    return pinv(input, rtol=rcond)


class LstsqResult(NamedTuple):
    """(solution, residuals, rank, singular_values), as torch.return_types.linalg_lstsq."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


@one_op("linalg_lstsq")
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
    return LstsqResult(X.squeeze(-1) if vector else X, residuals, rank, values)
