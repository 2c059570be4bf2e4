"""The Cholesky and LU factorizations and triangular solves of real matrices on the backends' libraries (LAPACK on
the CPU, cuSOLVER and cuBLAS on CUDA), with torch's analytic gradients: one graph node per call, where the composites of
:mod:`genesis.linalg.solvers` (kept for complex matrices) record O(n) Genesis ops. Their gradients are written in
Genesis ops, so they are differentiable again (``create_graph``).
"""

from __future__ import annotations

from typing import Any

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Primitive
from genesis.ndarray import NDArray
from genesis.tensor import Tensor

#: The dtypes the backends' libraries factor and solve in.
DTYPES = (dtypes.float32, dtypes.float64)


class CholeskyFactor(Primitive):
    """(L, info) of ``A = L L^T``, A read from its lower triangle. Backward (torch's ``cholesky_backward``):
    ``gA = L^-T Φ(L^T gL) L^-1`` symmetrized, Φ the lower triangle with its diagonal halved."""

    @staticmethod
    def forward(ctx: Any, A: NDArray) -> tuple[NDArray, NDArray]:
        L, info = A.backend.cholesky(A)
        if ctx.needs_input_grad:
            ctx.save_for_backward(L)
            ctx.set_materialize_grads(False)  # info has no gradient: no zeros made for it
        return L, info

    @staticmethod
    def backward(ctx: Any, grad_L: Tensor | None, grad_info: Tensor | None) -> Tensor | None:
        if grad_L is None:
            return None
        (L,) = ctx.saved_tensors
        g = F.tril(L.mT @ grad_L)
        g = 0.5 * (g + F.tril(g, -1).mT)
        g = triangular_solve(L.mT, g, upper=True)  # L^-T g
        return triangular_solve(L.mT, g.mT, upper=True).mT  # (L^-T g) L^-1


class TriangularSolve(Primitive):
    """X with ``A X = B`` for triangular A (one triangle read). Backward (torch's): ``gB = A^-T gX`` and
    ``gA = -gB X^T`` restricted to A's triangle (its diagonal excluded when unitriangular)."""

    @staticmethod
    def forward(ctx: Any, A: NDArray, B: NDArray, upper: bool, unitriangular: bool) -> NDArray:
        X = A.backend.triangular_solve(A, B, upper, unitriangular)
        needs = ctx.needs_input_grad
        if needs:
            ctx.save_for_backward(A, X if needs[0] else None)
            ctx.flags = (upper, unitriangular)
        return X

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None, None]:
        A, X = ctx.saved_tensors
        upper, unit = ctx.flags
        grad_B = triangular_solve(A.mT, grad, upper=not upper, unitriangular=unit)
        grad_A = None
        if ctx.needs_input_grad[0]:
            grad_A = -(grad_B @ X.mT)
            grad_A = F.triu(grad_A, 1 if unit else 0) if upper else F.tril(grad_A, -1 if unit else 0)
        return grad_A, grad_B if ctx.needs_input_grad[1] else None, None, None


class LUFactor(Primitive):
    """(LU, pivots, info) of square A with row pivoting, plus the row order (int64) the pivots apply. Backward
    (torch's for square A = P L U): ``gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T``, gL and gU the parts of
    the packed gradient below and on/above the diagonal."""

    @staticmethod
    def forward(ctx: Any, A: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        backend = A.backend
        LU, pivots, info = backend.lu_factor(A)
        order = backend.pivot_order(pivots, A.shape[-1])
        if ctx.needs_input_grad:
            ctx.save_for_backward(LU, order)
            ctx.set_materialize_grads(False)
        return LU, pivots, order, info

    @staticmethod
    def backward(ctx: Any, grad: Tensor | None, *integer_outputs: Tensor | None) -> Tensor | None:
        if grad is None:
            return None
        LU, order = ctx.saved_tensors
        n = LU.shape[-1]
        rows = F.arange_like(n, LU)
        L = F.tril(LU, -1) + (rows.unsqueeze(1) == rows.unsqueeze(0)).to(LU.dtype)
        U = F.triu(LU)
        g = F.tril(L.mT @ grad, -1) + F.triu(grad @ U.mT)
        g = triangular_solve(L.mT, g, upper=True, unitriangular=True)  # L^-T g
        g = triangular_solve(U, g.mT, upper=True).mT  # (L^-T g) U^-T
        P = (rows.unsqueeze(-1) == order.unsqueeze(-2)).to(LU.dtype)  # P[order[i], i] = 1
        return P @ g


def lu_factor(A: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(LU, pivots, order, info) of real square (..., n, n) A (float32 or float64), LAPACK's getrf: LU compact,
    pivots int32 1-based, order int64 (row i of ``P^T A`` is row ``order[i]`` of A), info int32 per matrix. No host
    synchronization."""
    return LUFactor.apply(A)


def cholesky(A: Tensor) -> tuple[Tensor, Tensor]:
    """(L, info) of real (..., n, n) A (float32 or float64): L lower triangular, info int32 per matrix (0, or the
    order of the first leading minor that is not positive-definite). No host synchronization."""
    return CholeskyFactor.apply(A)


def triangular_solve(A: Tensor, B: Tensor, upper: bool, unitriangular: bool = False) -> Tensor:
    """X with ``A X = B`` for triangular (..., n, n) A and (..., n, k) B of one real dtype, batch dims equal."""
    return TriangularSolve.apply(A, B, upper, unitriangular)
