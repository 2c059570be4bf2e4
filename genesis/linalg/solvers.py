"""Determinants, solvers and factorizations (LU-style elimination, Cholesky, QR) written over Genesis ops.

Each is a composite of differentiable Genesis ops, so it runs on every device and has autograd. They take O(n) to
O(n^2) Python steps per call: accurate for well-conditioned matrices of modest size, not a LAPACK replacement.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Function
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


def _pivoted(A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """LU factorization of square A: (combined LU, the sign of its row permutation, the row order)."""
    LU, order, pivots = _lu_steps(A)
    steps = F.arange_like(pivots.shape[-1], A) + 1
    swaps = F.sum(pivots.to(dtypes.int64) != steps, -1)
    sign = 1 - 2 * (swaps % 2).to(A.dtype)
    return LU, sign, order


def det(A: Tensor) -> Tensor:
    """Determinant of square matrices (..., n, n), from the LU factorization with partial pivoting."""
    _check_float("linalg.det", A)
    _check_square("linalg.det", A)
    if A.shape[-1] == 0:
        return F.ones_like_bool(A[..., 0, 0] if A.shape[-2] else A.sum((-2, -1))).to(A.dtype)
    LU, sign, _ = _pivoted(A)
    return sign * F.prod(LU.diagonal(0, -2, -1), -1)


class SlogdetResult(NamedTuple):
    """(sign, logabsdet) with attribute access, as torch.return_types.slogdet."""

    sign: Tensor
    logabsdet: Tensor


def slogdet(A: Tensor) -> SlogdetResult:
    """(sign, log|det|) of square matrices; a singular matrix gives (0, -inf)."""
    _check_float("linalg.slogdet", A)
    _check_square("linalg.slogdet", A)
    LU, sign, _ = _pivoted(A)
    diag = LU.diagonal(0, -2, -1)
    logabs = F.sum(F.log(diag.abs()), -1)
    sign = sign * F.prod(F.sign(diag.detach()), -1)
    return SlogdetResult(sign, logabs)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` when left is False); B (..., n, k) or a vector (..., n).

    LinAlgError (a RuntimeError) for a singular A, as torch.
    """
    return _solve("linalg.solve", A, B, left)


def _solve(op: str, A: Tensor, B: Tensor, left: bool) -> Tensor:
    """``solve`` for ``op`` (linalg.solve or linalg.inv), which its errors name."""
    _check_float(op, A)
    _check_square(op, A)
    if not left:
        return _solve(op, A.mT, B.mT, True).mT
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {rhs.shape[-2]}x{rhs.shape[-1]})")
    batch = tuple(F.broadcast_tensors(A[..., 0, 0], rhs[..., 0, 0])[0].shape)
    A = A.expand((*batch, *A.shape[-2:]))
    rhs = rhs.expand((*batch, *rhs.shape[-2:])).to(A.dtype)
    LU, _, order = _pivoted(A)
    if bool((LU.diagonal(0, -2, -1) == 0).any().item()):
        raise LinAlgError(f"{op}: The solver failed because the input matrix is singular.")
    # P^T A = L U: permute B's rows, then solve L Y = P^T B (unit diagonal) and U X = Y.
    permuted = F.gather(rhs, -2, order.unsqueeze(-1).expand(rhs.shape))
    X = _substitute(LU, _substitute(LU, permuted, upper=False, unit=True), upper=True, unit=False)
    return X.squeeze(-1) if vector else X


def _substitute(T: Tensor, B: Tensor, upper: bool, unit: bool) -> Tensor:
    """X with ``T X = B`` for triangular (..., n, n) T and (..., n, k) B, one row of X per step."""
    n = T.shape[-1]
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
    return _substitute(F.triu(A) if upper else F.tril(A), B, upper, unitriangular)


def inv(A: Tensor) -> Tensor:
    """Inverse of square matrices (..., n, n); LinAlgError (a RuntimeError) for a singular one."""
    _check_float("linalg.inv", A)
    _check_square("linalg.inv", A)
    n = A.shape[-1]
    eye = (F.arange_like(n, A).unsqueeze(1) == F.arange_like(n, A).unsqueeze(0)).to(A.dtype)
    return _solve("linalg.inv", A, eye.expand(A.shape), True)


def logdet(A: Tensor) -> Tensor:
    """``log(det(A))``: NaN where the determinant is negative, -inf where it is zero."""
    sign, logabs = slogdet(A)
    return F.where(sign < 0, math.nan, logabs)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """Cholesky factor L (lower triangular, positive diagonal) with ``A = L L^T`` of symmetric positive-definite
    matrices (..., n, n); only the lower triangle of A is read. ``upper=True`` returns ``L^T``.

    Computed column by column (n vectorized steps); RuntimeError as torch when a leading minor is not positive.
    """
    _check_float("linalg.cholesky", A)
    _check_square("linalg.cholesky", A)
    n = A.shape[-1]
    rows = F.arange_like(n, A)
    # Values from the lower triangle only; the gradient symmetrized, as torch's (A is taken as symmetric).
    lower = F.tril(A.detach())
    symmetric = (A + A.mT) * 0.5
    A = lower + F.tril(lower, -1).mT + (symmetric - symmetric.detach())
    columns: list[Tensor] = []
    for j in range(n):
        # Column j of L: (A[:, j] - L[:, :j] @ L[j, :j]) / L[j, j], zero above the diagonal.
        v = A[..., :, j]
        if j:
            done = F.stack(columns, -1)  # (..., n, j)
            v = v - (done * done[..., j, :].unsqueeze(-2)).sum(-1)
        pivot = v[..., j]
        if bool((pivot.detach() <= 0).any().item()) or bool(pivot.detach().isnan().any().item()):
            raise LinAlgError(f"linalg.cholesky: The factorization could not be completed because the input is not "
                               f"positive-definite (the leading minor of order {j + 1} is not positive-definite).")
        root = F.sqrt(pivot).unsqueeze(-1)
        columns.append(F.where(rows >= j, v / root, 0.0))
    L = F.stack(columns, -1) if n else A.clone()
    return L.mT if upper else L


class QRResult(NamedTuple):
    """(Q, R) with attribute access, as torch.return_types.linalg_qr."""

    Q: Tensor
    R: Tensor


def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """QR decomposition ``A = Q R`` of (..., m, n) matrices by Householder reflections, with LAPACK's sign
    convention (so the factors equal torch's): ``R[j, j] = -sign(x0) * |x|`` for the column x being reflected.

    mode "reduced": Q (..., m, k), R (..., k, n) with k = min(m, n); "complete": Q (..., m, m), R (..., m, n);
    "r": Q empty and R as "reduced". Differentiable through the reflections; torch's gradient agrees except at a
    column already zero below its diagonal (no reflection there, LAPACK's tau = 0), where torch differentiates the
    smooth branch of the factorization and Genesis treats the missing reflection as constant.
    """
    _check_float("linalg.qr", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.qr: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    rows = F.arange_like(m, A)
    eye = (rows.unsqueeze(1) == rows.unsqueeze(0)).to(A.dtype)
    Q = eye.expand((*A.shape[:-2], m, m))
    R = A
    for j in range(min(k, m - 1) if m > 1 else 0):
        below = (rows >= j).to(A.dtype)  # (m,)
        x = R[..., :, j] * below  # (..., m)
        alpha = x[..., j]
        tail = F.sqrt(F.sum(x * x, -1) - alpha * alpha).detach()
        reflect = tail > 0  # LAPACK leaves a column already zero below the diagonal alone (tau = 0)
        norm = F.sqrt(F.sum(x * x, -1))
        beta = F.where(alpha >= 0, -norm, norm)
        scale = F.where(reflect, alpha - beta, 1.0)
        v = F.where(rows == j, 1.0, x / scale.unsqueeze(-1)) * below  # (..., m), v[j] = 1
        tau = F.where(reflect, (beta - alpha) / F.where(reflect, beta, 1.0), 0.0)
        # H = I - tau v v^T applied to R from the left and accumulated into Q from the right.
        R = R - (tau.unsqueeze(-1) * v).unsqueeze(-1) * (v.unsqueeze(-2) @ R)
        Q = Q - (Q @ v.unsqueeze(-1)) * (tau.unsqueeze(-1) * v).unsqueeze(-2)
    R = F.triu(R)
    if mode == "complete":
        return QRResult(Q, R)
    if mode == "r":
        return QRResult(F.zeros_like_detached(A).reshape(-1)[:0], R[..., :k, :])
    return QRResult(Q[..., :, :k], R[..., :k, :])


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (the identity for n = 0, powers of the inverse for n < 0)."""
    _check_square("linalg.matrix_power", A)
    if n < 0:
        return matrix_power(inv(A), -n)
    size = A.shape[-1]
    result = None
    base = A
    # Binary exponentiation: log2(n) squarings.
    while n:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if n:
            base = F.matmul(base, base)
    if result is None:
        eye = (F.arange_like(size, A).unsqueeze(1) == F.arange_like(size, A).unsqueeze(0)).to(A.dtype)
        # The identity, attached to A's graph with a zero gradient (as torch).
        return F.where(F.ones_like_bool(A), eye, A)
    return result.clone() if result is A else result


def multi_dot(tensors: list[Tensor]) -> Tensor:
    """The product of a chain of matrices; the first may be a 1-d row vector and the last a 1-d column vector."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            raise RuntimeError(f"multi_dot(): tensor {i} must be {'1D or 2D' if len(allowed) == 2 else '2D'} but "
                               f"got {t.ndim}D")
    first, last = tensors[0], tensors[-1]
    chain = [first.unsqueeze(0) if first.ndim == 1 else first, *tensors[1:-1],
             last.unsqueeze(1) if last.ndim == 1 else last]
    out = chain[0]
    for t in chain[1:]:
        out = F.mm(out, t)
    if last.ndim == 1:
        out = out.squeeze(1)
    if first.ndim == 1:
        out = out.squeeze(0)
    return out


def matrix_exp(A: Tensor) -> Tensor:
    """Matrix exponential of (..., n, n) matrices by scaling and squaring of a Taylor series.

    A is scaled by 2^-s until its 1-norm is at most 1/2, the series summed to a degree whose remainder is below
    the dtype's precision (18 terms in float64, 10 otherwise), and the result squared s times; differentiable.
    """
    _check_square("linalg.matrix_exp", A)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point tensor as input. Got {A.dtype.name}")
    n = A.shape[-1]
    eye = (F.arange_like(n, A).unsqueeze(1) == F.arange_like(n, A).unsqueeze(0)).to(A.dtype)
    if A.numel() == 0:
        return A.clone()
    norm = float(F.amax(F.sum(A.detach().abs(), -2)).item())
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    X = A / (2 ** squarings) if squarings else A
    result = eye + X
    term = X
    for k in range(2, 19 if A.dtype is dtypes.float64 else 11):
        term = F.matmul(term, X) / k
        result = result + term
    for _ in range(squarings):
        result = F.matmul(result, result)
    return result


def _lu_steps(A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """LAPACK getrf on (..., m, n): the combined LU matrix (unit-lower multipliers below the diagonal), the final
    row order (int64, (..., m)) and the 1-based pivot of each step (int32, (..., k))."""
    m, n = A.shape[-2], A.shape[-1]
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


def lu_factor(A: Tensor, *, pivot: bool = True) -> tuple[Tensor, Tensor]:
    """(LU, pivots) of LU decomposition with partial pivoting, in LAPACK's compact form: U on and above the
    diagonal, L's multipliers below it, and ``pivots[i]`` (1-based, int32) the row swapped with row i at step i."""
    _check_float("linalg.lu_factor", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.lu_factor: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    if not pivot:
        raise NotImplementedError("linalg.lu_factor: LU without pivoting is not implemented in Genesis")
    LU, _, pivots = _lu_steps(A)
    return LUFactorResult(LU, pivots)


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


class LUResult(NamedTuple):
    """(P, L, U), as torch.return_types.linalg_lu."""

    P: Tensor
    L: Tensor
    U: Tensor


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with ``A X = B`` for ``A = L L^T`` given its Cholesky factor L (``U^T U`` when upper), B (..., n, k)."""
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


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """Inverse of ``A = L L^T`` (``U^T U`` when upper) from its Cholesky factor."""
    _check_square("cholesky_inverse", L)
    n = L.shape[-1]
    eye = (F.arange_like(n, L).unsqueeze(1) == F.arange_like(n, L).unsqueeze(0)).to(L.dtype)
    return cholesky_solve(eye.expand(L.shape), L, upper)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """Vandermonde matrices ``x[..., i] ** j`` for j < N (default the last dim's size), batched over leading dims."""
    if x.ndim == 0:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, got {n}")
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.int64)
    ones = F.where(F.ones_like_bool(x), 1, x).unsqueeze(-1)
    # Running products keep the gradient finite at x == 0, unlike x ** j.
    return F.cat([ones, x.unsqueeze(-1).expand((*x.shape, n - 1))], -1).cumprod(-1)
