"""torch's older linear-algebra spellings, still common in scripts, over ``genesis.linalg``: ``svd`` (returning V, not
Vh), ``qr(some=)``, ``cholesky(upper=)``, ``triangular_solve`` (returning the solution and a copy of A),
``lu`` / ``lu_solve`` / ``lu_unpack`` (LAPACK's packed factors and 1-based int32 pivots), ``chain_matmul``,
``frobenius_norm`` and ``nuclear_norm``; ``eig``, removed from torch, raises as torch's.

They warn where torch warns (deprecated in favour of ``torch.linalg``) and differentiate through the ``genesis.linalg``
composites they call, so they run on every device.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

from genesis import dtypes
from genesis import ops as F
from genesis.linalg import matrix_norm, vector_norm
from genesis.linalg.matrix_functions import multi_dot
from genesis.linalg.solvers import _check_float, _check_square, _row_order, lu_factor_ex, solve_triangular
from genesis.linalg.solvers import cholesky as _cholesky
from genesis.linalg.solvers import lu_solve as _lu_solve
from genesis.linalg.solvers import qr as _qr
from genesis.linalg.spectral import svd as _svd
from genesis.linalg.spectral import svdvals
from genesis.ndarray import broadcast_shapes
from genesis.ops._args import check_tensors
from genesis.ops.autocast import one_op
from genesis.tensor import Tensor


class SVDResult(NamedTuple):
    """(U, S, V), as torch.return_types.svd."""

    U: Tensor
    S: Tensor
    V: Tensor


class QRResult(NamedTuple):
    """(Q, R), as torch.return_types.qr."""

    Q: Tensor
    R: Tensor


class TriangularSolveResult(NamedTuple):
    """(solution, cloned_coefficient), as torch.return_types.triangular_solve."""

    solution: Tensor
    cloned_coefficient: Tensor


class LUWithInfoResult(NamedTuple):
    """(LU, pivots, info), as torch.return_types._lu_with_info (``lu(..., get_infos=True)``)."""

    LU: Tensor
    pivots: Tensor
    info: Tensor


class LUUnpackResult(NamedTuple):
    """(P, L, U), as torch.return_types.lu_unpack."""

    P: Tensor
    L: Tensor
    U: Tensor


def _deprecated(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)


def _check_floating(op: str, *tensors: Tensor) -> None:
    """torch's kernels are not implemented for integer matrices: NotImplementedError naming the dtype."""
    for t in tensors:
        if not t.dtype.is_floating_point:
            raise NotImplementedError(f"{op}: not implemented for '{t.dtype.name}' (floating matrices only)")


@one_op("svd")
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SVDResult:
    """``input = U diag(S) V^T`` with singular values S descending and V itself (``linalg.svd`` returns V^T).

    ``some=True``: U (..., m, k), V (..., n, k), k = min(m, n); ``some=False`` completes U and V to square
    orthogonal matrices (the added columns carry no gradient, as torch's). ``compute_uv=False``: S only, with U and
    V zero-filled (..., m, m) and (..., n, n). Singular vectors are defined up to sign (LAPACK's may differ).
    """
    _check_float("linalg.svd", input)
    if input.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {input.ndim} dimensions "
                           "instead")
    m, n = input.shape[-2], input.shape[-1]
    batch = tuple(input.shape[:-2])
    if not compute_uv:
        zeros = F.zeros_like_detached(input)
        U = zeros.new_zeros((*batch, m, m))
        V = zeros.new_zeros((*batch, n, n))
        return SVDResult(U, svdvals(input), V)
    U, S, Vh = _svd(input, full_matrices=not some)
    return SVDResult(U, S, Vh.mT)


@one_op("qr")
def qr(input: Tensor, some: bool = True) -> QRResult:
    """``linalg.qr`` with ``mode="reduced"`` (``some=True``) or ``"complete"``; deprecated in torch."""
    _deprecated("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch release.\n"
                "The boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    Q, R = _qr(input, "reduced" if some else "complete")
    return QRResult(Q, R)


@one_op("cholesky")
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """The Cholesky factor L of symmetric positive-definite matrices (``L^T`` with ``upper``); deprecated in torch.
    ``genesis.linalg.LinAlgError`` (a RuntimeError) where a matrix is not positive-definite."""
    _deprecated("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\nand\n"
                "U = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
                "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.")
    return _cholesky(input, upper=upper)


@one_op("triangular_solve")
def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> TriangularSolveResult:
    """X with ``A X = b`` (``A^T X = b`` with ``transpose``) for triangular A (..., m, m) and b (..., m, k), batch
    dims broadcast; only the ``upper`` (or lower) triangle of A is read, its diagonal taken as ones when
    ``unitriangular``. Returns (X, a copy of A broadcast to the batch); deprecated in torch."""
    check_tensors("triangular_solve", input=b, A=A)
    _deprecated("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
                "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
                "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced "
                "with\nX = torch.linalg.solve_triangular(A, B).")
    if b.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has {b.ndim} "
                           "dimensions instead")
    if A.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has {A.ndim} "
                           "dimensions instead")
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {b.dtype.name} and A of "
                           f"type {A.dtype.name} instead.")
    _check_floating("triangular_solve", b)
    _check_square("triangular_solve", A)
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} by "
                           f"{A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    batch = broadcast_shapes("triangular_solve", tuple(b.shape[:-2]), tuple(A.shape[:-2]))
    A = A.expand((*batch, *A.shape[-2:]))
    b = b.expand((*batch, *b.shape[-2:]))
    # A^T's triangle is the other one: solving with A^T reads the same entries of A.
    coefficient, triangle = (A.mT, not upper) if transpose else (A, upper)
    X = solve_triangular(coefficient, b, upper=triangle, unitriangular=unitriangular)
    return TriangularSolveResult(X, A.clone())


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out: Any = None) -> Any:
    """LU factorization with partial pivoting in LAPACK's packed form: ``(LU, pivots)``, or ``(LU, pivots, info)``
    with ``get_infos`` (info: int32 per matrix, 0 or the 1-based index of the first zero pivot of U). Singular
    matrices factor without an error, as torch's; deprecated in torch (``linalg.lu_factor``)."""
    _deprecated("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
                "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
                "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\n"
                "LU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)")
    if out is not None:
        raise TypeError("lu: out= is not supported by Genesis; use the returned tensors")
    _check_floating("lu", A)
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    return LUWithInfoResult(LU, pivots, info) if get_infos else (LU, pivots)


@one_op("lu_solve")
def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """X with ``A X = b`` given ``lu(A)``'s packed factors and pivots (b (..., m, k), batch dims broadcast);
    deprecated in torch (``linalg.lu_solve``)."""
    _deprecated("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future PyTorch "
                "release.\nNote that torch.linalg.lu_solve has its arguments reversed.\n"
                "X = torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)")
    return _lu_solve(LU_data, LU_pivots, b)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True) -> LUUnpackResult:
    """(P, L, U) with ``A = P L U`` from packed LU factors (..., m, n): L (..., m, k) unit lower triangular, U
    (..., k, n), P (..., m, m), k = min(m, n); the parts not asked for (``unpack_data``, ``unpack_pivots``) are
    empty tensors, as torch's."""
    if LU_pivots.dtype is not dtypes.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    if LU_data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = F.zeros_like_detached(LU_data).reshape(-1)[:0]
    L, U, P = empty, empty, empty
    rows = F.arange_like(m, LU_data)
    if unpack_data:
        eye = (rows.unsqueeze(1) == rows.unsqueeze(0)).to(LU_data.dtype)
        L = F.tril(LU_data[..., :, :k], -1) + eye[:, :k]
        U = F.triu(LU_data[..., :k, :])
    if unpack_pivots:
        order = _row_order(LU_pivots, m)
        P = (rows.unsqueeze(-1) == order.unsqueeze(-2)).to(LU_data.dtype)  # P[order[i], i] = 1
    return LUUnpackResult(P, L, U)


def chain_matmul(*matrices: Tensor, out: Any = None) -> Tensor:
    """The product of 2-D matrices, left to right (``linalg.multi_dot`` of them); deprecated in torch."""
    _deprecated("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                "parameters.")
    if out is not None:
        raise TypeError("chain_matmul: out= is not supported by Genesis; use the returned tensor")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(list(matrices))


def eig(self: Tensor, eigenvectors: bool = False) -> Any:
    """torch.eig, removed from torch since 1.9: raises RuntimeError, as torch, pointing to ``linalg.eig`` and
    ``linalg.eigvals`` (complex results rather than real tensors mimicking complex ones)."""
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. `torch.linalg.eig` returns "
                       "complex tensors of dtype `cfloat` or `cdouble` rather than real tensors mimicking complex "
                       "tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)"
                       "\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\nL_complex, "
                       "V_complex = torch.linalg.eig(A)")


def frobenius_norm(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """The 2-norm of ``input`` over ``dim`` (at most two dims): deprecated in torch for ``linalg.vector_norm``."""
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    warnings.warn("frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  "future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    return vector_norm(input, 2, dims, keepdim)


def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The sum of the singular values of the matrices over ``dim`` (the last two dims by default): deprecated in torch
    for ``linalg.matrix_norm(A, "nuc")``. ``nuclear_norm(input, keepdim)`` is accepted too, as torch's overload."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    warnings.warn("nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)
