"""Determinants, solvers and factorizations (LU-style elimination, Cholesky, QR).

The Cholesky factorization and triangular solves of float32 and float64 matrices run on the backend's library
(:mod:`genesis.linalg.native`: one call, analytic gradients); so do the substitutions of the LU-based solvers.
The rest, and complex matrices, are composites of differentiable Genesis ops: they run on every device and have
autograd, in O(n) to O(n^2) Python steps per call (accurate for well-conditioned matrices of modest size).
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Function
from genesis.linalg import native
from genesis.ndarray import broadcast_shapes
from genesis.ops._args import check_tensors
from genesis.ops.autocast import one_op
from genesis.tensor import Tensor


class LinAlgError(RuntimeError):
    """A linear-algebra routine met a matrix it cannot handle: singular for ``solve``/``inv``, not positive-definite
    for ``cholesky`` (``genesis.linalg.LinAlgError``, as ``torch.linalg.LinAlgError``, a RuntimeError)."""


def _check_float(op: str, x: Tensor) -> None:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {x.dtype.name}")


def _check_square(op: str, A: Tensor) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _check_info(op: str, info: Tensor, message: Callable[[int], str], error: type[Exception] = LinAlgError) -> None:
    """Raise ``error`` as torch for the first matrix whose ``info`` code is non-zero, naming its batch element when
    the input is batched. Reads the device once when every code is zero (the only host synchronization)."""
    flat = info.reshape(-1)
    if flat.numel() == 0:
        return
    failed = flat != 0
    if not bool(failed.any().item()):
        return
    index = int(failed.to(dtypes.int32).argmax().item())
    prefix = f"(Batch element {index}): " if info.ndim else ""
    raise error(f"{op}: {prefix}{message(int(flat[index].item()))}")


def _singular_solve(code: int) -> str:
    return "The solver failed because the input matrix is singular."


def _singular_inverse(code: int) -> str:
    return (f"The diagonal element {code} is zero, the inversion could not be completed because the input matrix is "
            "singular.")


def _not_positive_definite(code: int) -> str:
    return (f"The factorization could not be completed because the input is not positive-definite (the leading minor "
            f"of order {code} is not positive-definite).")


def _lu_info(LU: Tensor) -> Tensor:
    """LAPACK getrf's info per matrix (int32, no host read): 0, or the 1-based index of the first exact zero on U's
    diagonal."""
    diagonal = LU.detach().diagonal(0, -2, -1)
    if diagonal.shape[-1] == 0:
        return LU.new_zeros(tuple(LU.shape[:-2]), dtype=dtypes.int32)
    zero = diagonal == 0
    first = zero.to(dtypes.int32).argmax(-1) + 1
    return F.where(zero.any(-1), first, 0).to(dtypes.int32)


def _pivoted(A: Tensor) -> tuple[Tensor, Tensor]:
    """LU factorization of square A: (combined LU, the sign of its row permutation)."""
    LU, _, pivots = _lu_steps(A)
    steps = F.arange_like(pivots.shape[-1], A) + 1
    swaps = F.sum(pivots.to(dtypes.int64) != steps, -1)
    sign = 1 - 2 * (swaps % 2).to(A.dtype)
    return LU, sign


@one_op("linalg_det")
def det(A: Tensor) -> Tensor:
    """Determinant of square matrices (..., n, n), from the LU factorization with partial pivoting."""
    _check_float("linalg.det", A)
    _check_square("linalg.det", A)
    if A.shape[-1] == 0:
        return F.ones_like_bool(A[..., 0, 0] if A.shape[-2] else A.sum((-2, -1))).to(A.dtype)
    LU, sign = _pivoted(A)
    return sign * F.prod(LU.diagonal(0, -2, -1), -1)


class SlogdetResult(NamedTuple):
    """(sign, logabsdet) with attribute access, as torch.return_types.slogdet."""

    sign: Tensor
    logabsdet: Tensor


@one_op("linalg_slogdet")
def slogdet(A: Tensor) -> SlogdetResult:
    """(sign, log|det|) of square matrices; a singular matrix gives (0, -inf)."""
    _check_float("linalg.slogdet", A)
    _check_square("linalg.slogdet", A)
    LU, sign = _pivoted(A)
    diag = LU.diagonal(0, -2, -1)
    logabs = F.sum(F.log(diag.abs()), -1)
    sign = sign * F.prod(F.sign(diag.detach()), -1)
    return SlogdetResult(sign, logabs)


@one_op("linalg_solve")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` when left is False); B (..., n, k) or a vector (..., n).

    LinAlgError (a RuntimeError) for a singular A, as torch.
    """
    X, info = _solve_ex("linalg.solve", A, B, left)
    _check_info("torch.linalg.solve", info, _singular_solve)
    return X


class SolveExResult(NamedTuple):
    """(result, info), as torch.return_types.linalg_solve_ex."""

    result: Tensor
    info: Tensor


@one_op("linalg_solve_ex")
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveExResult:
    """``solve`` that reports a singular A in ``info`` instead of raising: (X, info), info int32 of A's batch shape,
    0 or the 1-based index of the first zero pivot of A's LU factorization (X is then inf/NaN there, as LAPACK's).
    No host synchronization unless ``check_errors``, which raises LinAlgError as ``solve``."""
    X, info = _solve_ex("linalg.solve", A, B, left)
    if check_errors:
        _check_info("torch.linalg.solve_ex", info, _singular_solve)
    return SolveExResult(X, info)


def _solve_ex(op: str, A: Tensor, B: Tensor, left: bool) -> tuple[Tensor, Tensor]:
    """(X, info) of ``A X = B`` (``X A = B`` unless ``left``) for ``op``, which the errors name: A factored once in
    its own batch shape (info has that shape), then the substitutions broadcast over A's and B's batch dims."""
    _check_float(op, A)
    _check_square(op, A)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type {A.dtype.name} and B "
                           f"of type {B.dtype.name} instead")
    n = A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2 if left else -1] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {'AX' if left else 'XA'} = B "
                           f"({n}x{n} and {rhs.shape[-2]}x{rhs.shape[-1]})")
    if not left:
        A, rhs = A.mT, rhs.mT
    LU, order, _ = _lu_steps(A)
    info = _lu_info(LU)
    batch = broadcast_shapes(op, tuple(A.shape[:-2]), tuple(rhs.shape[:-2]))
    LU = LU.expand((*batch, n, n))
    rhs = rhs.expand((*batch, *rhs.shape[-2:]))
    # P^T A = L U: permute B's rows, then solve L Y = P^T B (unit diagonal) and U X = Y.
    permuted = F.gather(rhs, -2, order.expand((*batch, n)).unsqueeze(-1).expand(rhs.shape))
    X = _substitute(LU, _substitute(LU, permuted, upper=False, unit=True), upper=True, unit=False)
    X = X if left else X.mT
    return (X.squeeze(-1) if vector else X), info


def _substitute(T: Tensor, B: Tensor, upper: bool, unit: bool) -> Tensor:
    """X with ``T X = B`` for triangular (..., n, n) T and (..., n, k) B (one triangle of T read): the backend's
    library for real matrices, else one row of X per step."""
    n = T.shape[-1]
    if n and T.dtype in native.DTYPES:
        return native.triangular_solve(T, B, upper, unit)
    if n == 0:
        return B + F.sum(T, (-2, -1), keepdim=True)  # empty: a copy of B, attached to T's graph (zero gradient)
    order = range(n - 1, -1, -1) if upper else range(n)
    solved: list[Tensor] = []  # rows of X found so far, in the order of ``order``
    for i in order:
        acc = B[..., i, :]
        if solved:
            done = F.stack(solved[::-1] if upper else solved, -2)  # (..., rows solved, k), in row order
            coeffs = T[..., i, i + 1:] if upper else T[..., i, :i]
            acc = acc - (coeffs.unsqueeze(-2) @ done).squeeze(-2)
        solved.append(acc if unit else acc / T[..., i, i].unsqueeze(-1))
    return F.stack(solved[::-1] if upper else solved, -2)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` when left is False) for triangular A (..., n, n) and B
    (..., n, k); only the ``upper`` or lower triangle of A is read, and its diagonal is taken as ones when
    ``unitriangular``."""
    _check_float("linalg.solve_triangular", A)
    _check_square("linalg.solve_triangular", A)
    if B.ndim < 2:
        raise RuntimeError(f"linalg.solve_triangular: The input tensor B must have at least 2 dimensions, got "
                           f"{B.ndim}")
    if not left:
        return solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
    if A.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype.name} and B of type {B.dtype.name} instead")
    batch = tuple(F.broadcast_tensors(A[..., 0, 0], B[..., 0, 0])[0].shape) if A.shape[-1] else tuple(
        F.broadcast_tensors(A.sum((-2, -1)), B.sum((-2, -1)))[0].shape)
    A = A.expand((*batch, *A.shape[-2:]))
    B = B.expand((*batch, *B.shape[-2:]))
    if A.dtype in native.DTYPES:
        return _substitute(A, B, upper, unitriangular)  # reads one triangle; its gradient stays in it
    return _substitute(F.triu(A) if upper else F.tril(A), B, upper, unitriangular)


@one_op("linalg_inv_ex")
def inv(A: Tensor) -> Tensor:
    """Inverse of square matrices (..., n, n); LinAlgError (a RuntimeError) for a singular one."""
    X, info = _inv_ex("linalg.inv", A)
    _check_info("linalg.inv", info, _singular_inverse)
    return X


class InvExResult(NamedTuple):
    """(inverse, info), as torch.return_types.linalg_inv_ex."""

    inverse: Tensor
    info: Tensor


@one_op("linalg_inv_ex")
def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """``inv`` that reports a singular matrix in ``info`` instead of raising: (inverse, info), info int32 per matrix,
    0 or the 1-based index of the first zero pivot of the LU factorization (the inverse is then inf/NaN, as
    LAPACK's). No host synchronization unless ``check_errors``, which raises LinAlgError as ``inv``."""
    X, info = _inv_ex("linalg.inv", A)
    if check_errors:
        _check_info("linalg.inv_ex", info, _singular_inverse)
    return InvExResult(X, info)


def _inv_ex(op: str, A: Tensor) -> tuple[Tensor, Tensor]:
    _check_float(op, A)
    _check_square(op, A)
    n = A.shape[-1]
    eye = (F.arange_like(n, A).unsqueeze(1) == F.arange_like(n, A).unsqueeze(0)).to(A.dtype)
    # Expanded to A's batch: an (n, n) identity beside an (n, n, n) batch would read as a batch of vectors.
    return _solve_ex(op, A, eye.expand(A.shape), True)


def logdet(A: Tensor) -> Tensor:
    """``log(det(A))``: NaN where the determinant is negative, -inf where it is zero."""
    sign, logabs = slogdet(A)
    return F.where(sign < 0, math.nan, logabs)


@one_op("linalg_cholesky_ex")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """Cholesky factor L (lower triangular, positive diagonal) with ``A = L L^T`` of symmetric positive-definite
    matrices (..., n, n); only the lower triangle of A is read. ``upper=True`` returns ``L^T``.

    On the backend's library for float32 and float64 (column by column in Genesis ops for complex matrices);
    LinAlgError (a RuntimeError) as torch when a leading minor is not positive.
    """
    L, info = _cholesky_ex("linalg.cholesky", A)
    _check_info("linalg.cholesky", info, _not_positive_definite)
    return L.mT if upper else L


class CholeskyExResult(NamedTuple):
    """(L, info), as torch.return_types.linalg_cholesky_ex."""

    L: Tensor
    info: Tensor


@one_op("linalg_cholesky_ex")
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """``cholesky`` that reports failure in ``info`` instead of raising: (L, info), info int32 per matrix, 0 or the
    order of the first leading minor that is not positive-definite.

    No host synchronization unless ``check_errors``, which raises LinAlgError as ``cholesky``. Where a matrix fails,
    L's values are those the backend's library leaves (LAPACK on the CPU, cuSOLVER on CUDA; for complex matrices,
    what LAPACK's unblocked potf2 leaves: the columns before the failing one j factored, the non-positive reduced
    pivot at (j, j), and A's lower triangle from there on).
    """
    L, info = _cholesky_ex("linalg.cholesky", A)
    if check_errors:
        _check_info("linalg.cholesky_ex", info, _not_positive_definite)
    return CholeskyExResult(L.mT if upper else L, info)


def _cholesky_ex(op: str, A: Tensor) -> tuple[Tensor, Tensor]:
    """(L, info) of the lower Cholesky factorization, column by column, with no host read: a column whose pivot is
    not positive (or NaN) sets info and freezes the matrix, whose later columns keep A's values."""
    _check_float(op, A)
    _check_square(op, A)
    n = A.shape[-1]
    rows = F.arange_like(n, A)
    info = A.new_zeros(tuple(A.shape[:-2]), dtype=dtypes.int32)
    if n == 0:
        return A.clone(), info
    if A.dtype in native.DTYPES:
        return native.cholesky(A)
    # Values from the lower triangle only; the gradient symmetrized, as torch's (A is taken as symmetric).
    lower = F.tril(A.detach())
    symmetric = (A + A.mT) * 0.5
    A = lower + F.tril(lower, -1).mT + (symmetric - symmetric.detach())
    failed = F.zeros_like_detached(A[..., 0, 0]).to(dtypes.bool_)  # (...): failed at an earlier column
    columns: list[Tensor] = []
    for j in range(n):
        # Column j of L: (A[:, j] - L[:, :j] @ L[j, :j]) / L[j, j], zero above the diagonal.
        a = A[..., :, j]
        v = a
        if j:
            done = F.stack(columns, -1)  # (..., n, j)
            v = v - (done * done[..., j, :].unsqueeze(-2)).sum(-1)
        pivot = v[..., j]
        fails = ~(pivot.detach() > 0) & ~failed  # NaN fails too, as LAPACK's check
        info = F.where(fails, j + 1, info)
        root = F.sqrt(F.where(fails | failed, 1.0, pivot)).unsqueeze(-1)
        factored = F.where(rows >= j, v / root, 0.0)
        stopped = F.where(rows == j, v, F.where(rows > j, a, 0.0))  # potf2 stores the pivot and stops
        untouched = F.where(rows >= j, a, 0.0)
        column = F.where(failed.unsqueeze(-1), untouched, F.where(fails.unsqueeze(-1), stopped, factored))
        columns.append(column)
        failed = failed | fails
    return F.stack(columns, -1), info


def _householder_reflections(A: Tensor) -> tuple[Tensor, list[Tensor], list[Tensor]]:
    """Reduce (..., m, n) ``A`` to upper triangular form by Householder reflections ``H_j = I - tau_j v_j v_j^T``,
    with LAPACK's (dgeqrf's) conventions: ``v_j[j] = 1``, zeros above, and ``R[j, j] = -sign(x0) * |x|`` for the
    column x being reflected; a column already zero below its diagonal is left alone (``tau_j = 0``).

    Returns:
        (R, vectors, taus): ``H_{k-1} ... H_0 A`` (its entries below the diagonal are rounding noise), and the
        (..., m) vectors and (...) scales of the min(m - 1, n) reflections, first one first.
    """
    m, n = A.shape[-2], A.shape[-1]
    rows = F.arange_like(m, A)
    R, vectors, taus = A, [], []
    for j in range(min(n, m - 1)):
        below = (rows >= j).to(A.dtype)  # (m,)
        x = R[..., :, j] * below  # (..., m)
        alpha = x[..., j]
        tail = F.sqrt(F.sum(x * x, -1) - alpha * alpha).detach()
        reflect = tail > 0
        norm = F.sqrt(F.sum(x * x, -1))
        beta = F.where(alpha >= 0, -norm, norm)
        scale = F.where(reflect, alpha - beta, 1.0)
        v = F.where(rows == j, 1.0, x / scale.unsqueeze(-1)) * below  # (..., m), v[j] = 1
        tau = F.where(reflect, (beta - alpha) / F.where(reflect, beta, 1.0), 0.0)
        R = R - (tau.unsqueeze(-1) * v).unsqueeze(-1) * (v.unsqueeze(-2) @ R)
        vectors.append(v)
        taus.append(tau)
    return R, vectors, taus


class GeqrfResult(NamedTuple):
    """(a, tau), as torch.return_types.geqrf."""

    a: Tensor
    tau: Tensor


class _NoGeqrfDerivative(Function):
    """Attaches a ``geqrf`` output to its input's graph; backward raises, as torch has no derivative for geqrf."""

    @staticmethod
    def forward(ctx, out: Tensor, A: Tensor) -> Tensor:
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[None, None]:
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def geqrf(input: Tensor) -> GeqrfResult:
    """LAPACK's compact QR (dgeqrf) of (..., m, n) matrices: ``a`` holds R on and above its diagonal and the
    Householder vectors below it (their leading 1 implicit), ``tau`` (..., min(m, n)) their scales, so that
    ``linalg.householder_product(a, tau)`` is Q. Values equal torch's (LAPACK's sign conventions). Not differentiable.
    """
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{input.dtype.name}'")
    A = input.detach()
    m, n = A.shape[-2], A.shape[-1]
    R, vectors, taus = _householder_reflections(A)
    zero = F.zeros_like_detached(A[..., 0])  # (..., m)
    V = F.stack(vectors + [zero] * (n - len(vectors)), -1)  # (..., m, n): column j is v_j
    below = F.arange_like(m, A).unsqueeze(-1) > F.arange_like(n, A).unsqueeze(0)  # (m, n)
    a = F.where(below, V, R)
    tau = F.stack(taus + [zero[..., 0]] * (min(m, n) - len(taus)), -1)  # (..., min(m, n))
    if input.requires_grad:
        a, tau = _NoGeqrfDerivative.apply(a, input), _NoGeqrfDerivative.apply(tau, input)
    return GeqrfResult(a, tau)


class QRResult(NamedTuple):
    """(Q, R) with attribute access, as torch.return_types.linalg_qr."""

    Q: Tensor
    R: Tensor


@one_op("linalg_qr")
def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """QR decomposition ``A = Q R`` of (..., m, n) matrices by Householder reflections, with LAPACK's sign
    convention (so the factors equal torch's): ``R[j, j] = -sign(x0) * |x|`` for the column x being reflected.

    mode "reduced": Q (..., m, k), R (..., k, n) with k = min(m, n); "complete": Q (..., m, m), R (..., m, n);
    "r": Q empty and R as "reduced". float32 and float64 matrices are factored by the backend's library in one call,
    with torch's gradient (not defined for mode "r", nor for a complete Q of a tall matrix, as torch's); other dtypes
    (complex ones) by Householder steps in tensor ops, differentiable through them.
    """
    _check_float("linalg.qr", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.qr: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    m, k = A.shape[-2], min(A.shape[-2], A.shape[-1])
    if A.dtype in native.DTYPES and k:
        Q, R = _Qr.apply(A, mode)
        return QRResult(F.zeros_like_detached(A).reshape(-1)[:0], R) if mode == "r" else QRResult(Q, R)
    R, vectors, taus = _householder_reflections(A)
    rows = F.arange_like(m, A)
    Q = (rows.unsqueeze(1) == rows.unsqueeze(0)).to(A.dtype).expand((*A.shape[:-2], m, m))
    for v, tau in zip(vectors, taus):  # Q = H_0 H_1 ... accumulated from the right
        Q = Q - (Q @ v.unsqueeze(-1)) * (tau.unsqueeze(-1) * v).unsqueeze(-2)
    R = F.triu(R)
    if mode == "complete":
        return QRResult(Q, R)
    if mode == "r":
        return QRResult(F.zeros_like_detached(A).reshape(-1)[:0], R[..., :k, :])
    return QRResult(Q[..., :, :k], R[..., :k, :])


class _Qr(Function):
    """QR by the backend's library (LAPACK on the CPU, cuSOLVER on cuda) with torch's analytic gradient
    (``linalg_qr_backward``): for m >= n, ``(gQ + Q syminvadj(triu(gR R^T - Q^T gQ))) R^-T``; for m < n the
    strictly lower part of the skew part over the leading square block of R, plus ``Q gR``."""

    @staticmethod
    def forward(ctx: Any, A: Tensor, mode: str) -> tuple[Tensor, Tensor]:
        nd = A.ndarray
        Q, R = (Tensor._wrap(v) for v in nd.backend.qr(nd, mode == "complete"))
        ctx.save_for_backward(Q, R)
        ctx.mode = mode
        return Q, R

    @staticmethod
    def backward(ctx: Any, gQ: Tensor | None, gR: Tensor | None) -> tuple[Tensor | None, None]:
        Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                               "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if gQ is None and gR is None:
            return None, None
        if gQ is None:
            M = gR @ R.mT
        else:
            M = -(Q.mT @ gQ) if gR is None else gR @ R.mT - Q.mT @ gQ
        if m >= n:
            # syminvadj(triu(M)): the upper triangle mirrored below, its diagonal once.
            b = Q @ (F.triu(M) + F.triu(M, 1).mT)
            if gQ is not None:
                b = b + gQ
            return solve_triangular(R.mT, b, upper=False, left=False), None
        X = -M
        b = Q @ F.tril(X - X.mT)
        gA = solve_triangular(R[..., :m].mT, b, upper=False, left=False)
        gA = F.cat([gA, F.zeros_like_detached(R[..., m:])], -1)
        if gR is not None:
            gA = gA + Q @ gR
        return gA, None


def _lu_steps(A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """LAPACK getrf on (..., m, n): the combined LU matrix (unit-lower multipliers below the diagonal), the final
    row order (int64, (..., m)) and the 1-based pivot of each step (int32, (..., k)). Square real matrices are
    factored by the backend's library; the others step by step in Genesis ops."""
    m, n = A.shape[-2], A.shape[-1]
    if m == n and n and A.dtype in native.DTYPES:
        LU, pivots, order, _ = native.lu_factor(A)
        return LU, order, pivots
    rows = F.arange_like(m, A)
    cols = F.arange_like(n, A)
    order = rows.expand((*A.shape[:-2], m)).contiguous()
    pivots = []
    LU = A
    for k in range(min(m, n)):
        column = F.where(rows >= k, LU[..., :, k].detach().abs(), -1.0)
        pivot = column.argmax(-1)  # (...)
        pivots.append(pivot + 1)
        swap = F.where(rows == k, pivot.unsqueeze(-1), F.where(rows == pivot.unsqueeze(-1), k, rows))
        LU = F.gather(LU, -2, swap.unsqueeze(-1).expand(LU.shape))
        order = F.gather(order, -1, swap)
        head = LU[..., k, k].unsqueeze(-1)  # (..., 1)
        below = rows > k
        multipliers = F.where(below, LU[..., :, k] / F.where(head == 0, 1.0, head), 0.0)  # (..., m)
        trailing = (cols > k).to(A.dtype)  # (n,)
        LU = LU - multipliers.unsqueeze(-1) * (LU[..., k, :] * trailing).unsqueeze(-2)
        LU = F.where(below.unsqueeze(-1) & (cols == k), multipliers.unsqueeze(-1), LU)
    pivot_tensor = F.stack(pivots, -1).to(dtypes.int32) if pivots else order[..., :0].to(dtypes.int32)
    return LU, order, pivot_tensor


@one_op("linalg_lu_factor")
def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:
    """(LU, pivots) of LU decomposition with partial pivoting, in LAPACK's compact form: U on and above the
    diagonal, L's multipliers below it, and ``pivots[i]`` (1-based, int32) the row swapped with row i at step i.
    RuntimeError, as torch, where U has a zero on its diagonal (``lu_factor_ex`` reports it instead)."""
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot, check_errors=True, _op="torch.linalg.lu_factor")
    return LUFactorResult(LU, pivots)


@one_op("linalg_lu_factor_ex")
def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False,
                 _op: str = "torch.linalg.lu_factor_ex") -> LUFactorExResult:
    """``lu_factor`` with LAPACK's info: (LU, pivots, info), info int32 per matrix, 0 or the 1-based index of the
    first zero on U's diagonal. No host synchronization unless ``check_errors``, which raises as ``lu_factor``."""
    _check_float("linalg.lu_factor", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.lu_factor: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    if not pivot:
        raise NotImplementedError("linalg.lu_factor: LU without pivoting is not implemented in Genesis")
    LU, _, pivots = _lu_steps(A)
    info = _lu_info(LU)
    if check_errors:
        _check_info(_op, info, lambda code: (
            f"U[{code},{code}] is zero and using it on lu_solve would result in a division by zero. If you still "
            "want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, "
            "pivot)"), RuntimeError)
    return LUFactorExResult(LU, pivots, info)


@one_op("linalg_lu")
def lu(A: Tensor, *, pivot: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """(P, L, U) with ``A = P L U``: P a permutation matrix, L (..., m, k) unit lower triangular, U (..., k, n)
    upper triangular, k = min(m, n); partial pivoting as LAPACK (so the factors equal torch's)."""
    _check_float("linalg.lu", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.lu: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    if not pivot:
        raise NotImplementedError("linalg.lu: LU without pivoting is not implemented in Genesis")
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    LU, order, _ = _lu_steps(A)
    rows = F.arange_like(m, A)
    eye = (rows.unsqueeze(1) == rows.unsqueeze(0)).to(A.dtype)
    L = F.tril(LU[..., :, :k], -1) + eye[:, :k]
    U = F.triu(LU[..., :k, :])
    # Row i of P L U is row order[i] of A, so P[order[i], i] = 1.
    P = (rows.unsqueeze(-1) == order.unsqueeze(-2)).to(A.dtype)
    return LUResult(P, L, U)


class LUFactorResult(NamedTuple):
    """(LU, pivots), as torch.return_types.linalg_lu_factor."""

    LU: Tensor
    pivots: Tensor


class LUFactorExResult(NamedTuple):
    """(LU, pivots, info), as torch.return_types.linalg_lu_factor_ex."""

    LU: Tensor
    pivots: Tensor
    info: Tensor


class LUResult(NamedTuple):
    """(P, L, U), as torch.return_types.linalg_lu."""

    P: Tensor
    L: Tensor
    U: Tensor


def _row_order(pivots: Tensor, m: int) -> Tensor:
    """The row order (int64, (..., m)) the 1-based int32 LAPACK ``pivots`` (..., k) apply: row i of ``P^T A`` is
    row ``order[i]`` of A (the backend's ``pivot_order``)."""
    if not pivots.shape[-1]:
        return F.arange_like(m, pivots).expand((*pivots.shape[:-1], m)).contiguous()
    return Tensor._wrap(pivots.ndarray.backend.pivot_order(pivots.ndarray, m))


def _check_pivots(op: str, pivots: Tensor) -> None:
    if pivots.dtype is not dtypes.int32:
        raise RuntimeError(f"{op}: pivots should be a Tensor of scalar type torch.int32")


@one_op("linalg_lu_solve")
def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """X with ``A X = B`` given ``lu_factor(A)``'s compact factors and pivots; ``X A = B`` when left is False and
    ``A^T`` in place of A with ``adjoint``. B (..., n, k), batch dims broadcast with LU's; pivots must have LU's
    batch shape. Differentiable in LU and B through the triangular solves."""
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    _check_pivots("linalg.lu_solve", pivots)
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{LU.dtype.name} and B of type {B.dtype.name} instead")
    _check_float("torch.linalg.lu_solve", LU)
    _check_square("torch.linalg.lu_solve", LU)
    n = LU.shape[-1]
    if pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots "
                           f"with shape {list(pivots.shape)} instead")
    if B.shape[-2 if left else -1] != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX' if left else 'XA'} = B ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if not left:  # X A = B is A^T X^T = B^T
        return _lu_substitute(LU, pivots, B.mT, not adjoint).mT
    return _lu_substitute(LU, pivots, B, adjoint)


def _lu_substitute(LU: Tensor, pivots: Tensor, B: Tensor, adjoint: bool) -> Tensor:
    """X with ``A X = B`` (``A^T X = B`` with ``adjoint``) for ``A = P L U`` in compact form (shapes checked)."""
    n = LU.shape[-1]
    batch = broadcast_shapes("linalg.lu_solve", tuple(LU.shape[:-2]), tuple(B.shape[:-2]))
    order = _row_order(pivots, n).expand((*batch, n)).unsqueeze(-1).expand((*batch, n, B.shape[-1]))
    LU = LU.expand((*batch, n, n))
    B = B.expand((*batch, *B.shape[-2:]))
    if not adjoint:
        # L Y = P^T B (unit diagonal), then U X = Y.
        Y = solve_triangular(LU, F.gather(B, -2, order), upper=False, unitriangular=True)
        return solve_triangular(LU, Y, upper=True)
    # A^T = U^T L^T P^T: U^T Y = B, L^T Z = Y, and X = P Z (row order[i] of X is row i of Z).
    Y = solve_triangular(LU.mT, B, upper=False)
    Z = solve_triangular(LU.mT, Y, upper=True, unitriangular=True)
    return F.gather(Z, -2, F.argsort(order, -2))


@one_op("cholesky_solve")
def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with ``A X = B`` for ``A = L L^T`` given its Cholesky factor L (``U^T U`` when upper), B (..., n, k)."""
    check_tensors("cholesky_solve", input=B, input2=L)
    _check_float("cholesky_solve", L)
    _check_square("cholesky_solve", L)
    if B.ndim < 2:
        raise RuntimeError(f"cholesky_solve: b should have at least 2 dimensions, but has {B.ndim} dimensions "
                           "instead")
    return _CholeskySolve.apply(B, L, upper)


class _CholeskySolve(Function):
    """Forward by two triangular solves; backward by torch's formula, which (unlike the triangular solves'
    own gradient) also fills the unread triangle of the factor: ``gL = -(G + G^T) L`` with ``G = gX X^T``."""

    @staticmethod
    def forward(ctx: Any, B: Tensor, L: Tensor, upper: bool) -> Tensor:
        lower = L.mT if upper else L
        X = solve_triangular(lower.mT, solve_triangular(lower, B, upper=False), upper=True)
        ctx.save_for_backward(L, X)
        ctx.upper = upper
        return X

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        L, X = ctx.saved_tensors
        grad_B = _CholeskySolve.apply(grad, L, ctx.upper) if ctx.needs_input_grad[0] else None
        grad_L = None
        if ctx.needs_input_grad[1]:
            common = grad_B @ X.mT if grad_B is not None else _CholeskySolve.apply(grad, L, ctx.upper) @ X.mT
            common = common + common.mT
            grad_L = -(L @ common) if ctx.upper else -(common @ L)
        return grad_B, grad_L, None


@one_op("cholesky_inverse")
def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """Inverse of ``A = L L^T`` (``U^T U`` when upper) from its Cholesky factor."""
    _check_square("cholesky_inverse", L)
    n = L.shape[-1]
    eye = (F.arange_like(n, L).unsqueeze(1) == F.arange_like(n, L).unsqueeze(0)).to(L.dtype)
    return cholesky_solve(eye.expand(L.shape), L, upper)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` as a tensor product: ``tensordot(tensorinv(A, ind), A, ind)`` is the identity. The first
    ``ind`` dims of ``A`` and the others must hold as many elements; the result has shape
    ``A.shape[ind:] + A.shape[:ind]`` (torch.linalg.tensorinv)."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """``X`` such that ``tensordot(A, X, X.ndim) == B``: ``X`` has shape ``A.shape[B.ndim:]`` (after ``dims`` of
    ``A`` are moved to its end), solved as one square system (torch.linalg.tensorsolve)."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    shape = A.shape[B.ndim:]
    rows, cols = math.prod(A.shape[:B.ndim]), math.prod(shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(shape)
