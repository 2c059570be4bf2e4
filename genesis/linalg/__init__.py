"""``genesis.linalg``: torch.linalg's norms, products, solvers and decompositions, written over Genesis ops.

Almost everything here is a composite of differentiable Genesis ops (or, for eigh and svd, Jacobi rotations with
the analytic backward), so it runs on every device and has autograd. Solvers live in ``solvers``, symmetric eigen
and singular value decompositions in ``spectral``; the general eigendecomposition (``nonsymmetric``) and the LDL
factorization (``ldl``) run on backend primitives (LAPACK's work on the CPU); matrix powers, exponentials and
chained products in ``matrix_functions``, torch's randomized ``svd_lowrank`` / ``pca_lowrank`` in ``lowrank``.
"""

from __future__ import annotations

import math
from typing import Any

from genesis import dtypes
from genesis import ops as F
from genesis.linalg.householder import householder_product
from genesis.linalg.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from genesis.linalg.matrix_functions import matrix_exp, matrix_power, multi_dot, vander
from genesis.linalg.nonsymmetric import eig, eigvals
from genesis.linalg.solvers import (
    LinAlgError,
    _check_float,
    _check_square,
    cholesky,
    cholesky_ex,
    det,
    inv,
    inv_ex,
    logdet,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    qr,
    slogdet,
    solve,
    solve_ex,
    solve_triangular,
    tensorinv,
    tensorsolve,
)
from genesis.linalg.spectral import eigh, eigvalsh, lstsq, matrix_rank, pinv, svd, svdvals
from genesis.ndarray import normalize_dim
from genesis.ops.autocast import one_op
from genesis.ops.linalg import _cross, _graph_norm
from genesis.tensor import Tensor


def vector_norm(x: Tensor, ord: float = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all elements when None); ord inf/-inf give max/min of ``|x|``,
    ord 0 the number of non-zeros."""
    if dtype is not None:
        x = x.to(dtypes.to_dtype(dtype))
    if x.is_complex():
        x = x.abs()  # the norms of a complex vector are its magnitudes' (real, as torch's)
    _check_float("linalg.vector_norm", x)
    if isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not str (got {ord!r})")
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
    if A.is_complex():
        if ord in ("nuc", 2, -2):
            raise RuntimeError(f"linalg.matrix_norm: ord {ord!r} of a complex matrix needs its singular values, which "
                               "Genesis computes for real matrices only")
        A = A.abs()  # Frobenius, row and column sums of magnitudes
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


@one_op("linalg_vecdot")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products of vectors along ``dim``, broadcasting the other dims."""
    return F.sum(x * y, dim)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Alias of ``genesis.matmul``."""
    return F.matmul(input, other)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The ``offset`` diagonal of the matrices in ``dim1``, ``dim2`` (a view)."""
    return A.diagonal(offset, dim1, dim2)


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


__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "cross", "vecdot", "matmul", "diagonal", "det",
           "slogdet", "logdet",
           "solve", "inv", "cholesky", "qr", "matrix_power",
           "solve_triangular", "multi_dot", "eigh", "eigvalsh", "svd",
           "svdvals", "pinv", "matrix_rank", "cond", "matrix_exp", "lstsq", "lu",
           "lu_factor", "vander", "cholesky_ex", "inv_ex", "solve_ex", "lu_factor_ex", "lu_solve", "tensorinv",
           "tensorsolve"]
__all__ += ["householder_product", "eig", "eigvals", "ldl_factor", "ldl_factor_ex", "ldl_solve"]
