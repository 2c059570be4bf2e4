"""``genesis.linalg``: torch.linalg's norms, products and matrix functions, written over Genesis ops.

Everything here is a composite of differentiable Genesis ops, so it runs on every device and has autograd.
Decompositions that need pivoting (det, slogdet, inv, solve) use Gaussian elimination with partial pivoting in
``n`` vectorized steps over the batch: exact in exact arithmetic and accurate for well-conditioned matrices of
modest size, but not a LAPACK replacement for large ones.
"""

from __future__ import annotations

import math
from typing import Any

from genesis import dtypes
from genesis import functional as F
from genesis.autograd import Function
from genesis.functional.extra_ops import _cross, _graph_norm
from genesis.ndarray import normalize_dim
from genesis.tensor import Tensor


def _check_float(op: str, x: Tensor) -> None:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {x.dtype.name}")


def vector_norm(x: Tensor, ord: float = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all elements when None); ord inf/-inf give max/min of ``|x|``,
    ord 0 the number of non-zeros."""
    if dtype is not None:
        x = x.to(dtypes.to_dtype(dtype))
    _check_float("linalg.vector_norm", x)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if x.numel() == 0 and ord < 0:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
                           "operation does not have an identity")
    if isinstance(dim, int):
        dim = (dim,)
    return _graph_norm(x, ord, dim, keepdim)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """Matrix norm over the two ``dim``: "fro", "nuc" (sum of singular values), inf / -inf (max / min row sum of
    ``|A|``), 1 / -1 (max / min column sum), 2 / -2 (largest / smallest singular value)."""
    if dtype is not None:
        A = A.to(dtypes.to_dtype(dtype))
    _check_float("linalg.matrix_norm", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {tuple(dim)}")
    d0, d1 = normalize_dim("linalg.matrix_norm", dim[0], A.ndim), normalize_dim("linalg.matrix_norm", dim[1], A.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return F.norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        moved = F.movedim(A, (d0, d1), (-2, -1))
        values = svdvals(moved)
        out = F.sum(values, -1) if ord == "nuc" else (values[..., 0] if ord == 2 else values[..., -1])
        if keepdim:
            out = out.unsqueeze(-1).unsqueeze(-1)
            out = F.movedim(out, (-2, -1), (d0, d1))
        return out
    if ord not in (math.inf, -math.inf, 1, -1):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    # inf sums along the columns (over d1) and takes the extreme row; 1 the reverse.
    summed, other = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)
    sums = F.sum(A.abs(), summed, keepdim=True)
    out = F.amax(sums, other, keepdim=True) if ord > 0 else F.amin(sums, other, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``vector_norm`` or ``matrix_norm`` as torch.linalg.norm chooses: a matrix norm for a 2-tuple ``dim`` or
    for 2-d input with ``ord`` given and no ``dim``; the 2-norm of the flattened input when both are None."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.ndim != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A.ndim}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: ord {ord!r} is a matrix norm; it needs a 2-d input or a 2-tuple dim")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default the last), broadcasting the other dims."""
    return _cross("linalg.cross", input, other, dim)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products of vectors along ``dim``, broadcasting the other dims."""
    return F.sum(x * y, dim)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Alias of ``genesis.matmul``."""
    return F.matmul(input, other)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The ``offset`` diagonal of the matrices in ``dim1``, ``dim2`` (a view)."""
    return A.diagonal(offset, dim1, dim2)


def _check_square(op: str, A: Tensor) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _eliminate(A: Tensor, B: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
    """Gaussian elimination with partial pivoting of (..., n, n) ``A``, applying the same row operations to
    ``B`` (..., n, k). Returns (upper-triangular U, the sign of the row permutation, transformed B)."""
    n = A.shape[-1]
    sign = F.ones_like_bool(A[..., 0, 0]).to(A.dtype)
    rows = F.arange_like(n, A)
    for k in range(n):
        # Pivot: the row at or below k with the largest |A[i, k]| (chosen on detached values).
        column = F.where(rows >= k, A[..., :, k].detach().abs(), -1.0)
        pivot = column.argmax(-1)  # (...)
        swapped = pivot != k
        sign = F.where(swapped, -sign, sign)
        # Permutation exchanging rows k and pivot, as gather indices per batch.
        order = F.where(rows == k, pivot.unsqueeze(-1), F.where(rows == pivot.unsqueeze(-1), k, rows))
        A = F.gather(A, -2, order.unsqueeze(-1).expand(A.shape))
        if B is not None:
            B = F.gather(B, -2, order.unsqueeze(-1).expand(B.shape))
        head = A[..., k, k].unsqueeze(-1)  # (..., 1)
        below = (rows > k).to(A.dtype)  # (n,)
        factors = A[..., :, k] / F.where(head == 0, 1.0, head) * below  # (..., n)
        A = A - factors.unsqueeze(-1) * A[..., k, :].unsqueeze(-2)
        if B is not None:
            B = B - factors.unsqueeze(-1) * B[..., k, :].unsqueeze(-2)
    return A, sign, B


def det(A: Tensor) -> Tensor:
    """Determinant of square matrices (..., n, n), by Gaussian elimination with partial pivoting."""
    _check_float("linalg.det", A)
    _check_square("linalg.det", A)
    if A.shape[-1] == 0:
        return F.ones_like_bool(A[..., 0, 0] if A.shape[-2] else A.sum((-2, -1))).to(A.dtype)
    upper, sign, _ = _eliminate(A, None)
    return sign * F.prod(upper.diagonal(0, -2, -1), -1)


class SlogdetResult(tuple):
    """(sign, logabsdet) with attribute access, as torch.return_types.slogdet."""

    @property
    def sign(self) -> Tensor:
        return self[0]

    @property
    def logabsdet(self) -> Tensor:
        return self[1]


def slogdet(A: Tensor) -> SlogdetResult:
    """(sign, log|det|) of square matrices; a singular matrix gives (0, -inf)."""
    _check_float("linalg.slogdet", A)
    _check_square("linalg.slogdet", A)
    upper, sign, _ = _eliminate(A, None)
    diag = upper.diagonal(0, -2, -1)
    logabs = F.sum(F.log(diag.abs()), -1)
    sign = sign * F.prod(F.sign(diag.detach()), -1)
    return SlogdetResult((sign, logabs))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` when left is False); B (..., n, k) or a vector (..., n).

    RuntimeError for a singular A, as torch.
    """
    _check_float("linalg.solve", A)
    _check_square("linalg.solve", A)
    if not left:
        return solve(A.mT, B.mT).mT
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {rhs.shape[-2]}x{rhs.shape[-1]})")
    batch = tuple(F.broadcast_tensors(A[..., 0, 0], rhs[..., 0, 0])[0].shape)
    A = A.expand((*batch, *A.shape[-2:]))
    rhs = rhs.expand((*batch, *rhs.shape[-2:])).to(A.dtype)
    upper, _, rhs = _eliminate(A, rhs)
    diag = upper.diagonal(0, -2, -1)
    if bool((diag == 0).any().item()):
        raise RuntimeError("linalg.solve: The solver failed because the input matrix is singular.")
    X = _substitute(upper, rhs, upper=True, unit=False)
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


def inv(A: Tensor) -> Tensor:
    """Inverse of square matrices (..., n, n); RuntimeError for a singular one."""
    _check_float("linalg.inv", A)
    _check_square("linalg.inv", A)
    n = A.shape[-1]
    eye = (F.arange_like(n, A).unsqueeze(1) == F.arange_like(n, A).unsqueeze(0)).to(A.dtype)
    return solve(A, eye.expand(A.shape))


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
            raise RuntimeError(f"linalg.cholesky: The factorization could not be completed because the input is not "
                               f"positive-definite (the leading minor of order {j + 1} is not positive-definite).")
        root = F.sqrt(pivot).unsqueeze(-1)
        columns.append(F.where(rows >= j, v / root, 0.0))
    L = F.stack(columns, -1) if n else A.clone()
    return L.mT if upper else L


class QRResult(tuple):
    """(Q, R) with attribute access, as torch.return_types.linalg_qr."""

    @property
    def Q(self) -> Tensor:  # noqa: N802 - torch's name
        return self[0]

    @property
    def R(self) -> Tensor:  # noqa: N802 - torch's name
        return self[1]


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
        return QRResult((Q, R))
    if mode == "r":
        return QRResult((F.zeros_like_detached(A).reshape(-1)[:0], R[..., :k, :]))
    return QRResult((Q[..., :, :k], R[..., :k, :]))


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


def cond(A: Tensor, p: Any = None) -> Tensor:
    """Condition number: ``S_max / S_min`` for p None or 2 (``S_min / S_max`` for -2), else
    ``norm(A, p) * norm(inv(A), p)`` for square A."""
    _check_float("linalg.cond", A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.cond: The input tensor A must have at least 2 dimensions, got {A.ndim}")
    if p in (None, 2, -2):
        S = svdvals(A)
        return S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
    _check_square("linalg.cond", A)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


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


__all__ = ["vector_norm", "matrix_norm", "norm", "cross", "vecdot", "matmul", "diagonal", "det", "slogdet", "logdet",
           "solve", "inv", "cholesky", "qr", "matrix_power",
           "solve_triangular", "multi_dot", "eigh", "eigvalsh", "svd",
           "svdvals", "pinv", "matrix_rank", "cond"]
